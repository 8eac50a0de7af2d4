"""Layer 9 (rdma_check) on a live 2-node, 2-switch twin: the role and the
doctor's layer 9 check on a healthy RoCE chain, with a PF link down on node02,
and with node02's first PF on the wrong PFC priority.

Each scenario runs one playbook: the role (its failure rescued and recorded,
so the doctor check runs in the same play), then the doctor's layer 9 check
through roles/doctor/tasks/layers.yml; both write what they found per node."""

import json
import re
import time

import pytest

from tests.integration.twinlab import ROCE_PFS, recap, require_twin, roce_host_by_hand, roce_rack

pytestmark = [pytest.mark.twin, pytest.mark.layers(9)]

PFS = ROCE_PFS
LINE_GBPS = 400.0

PLAY = """
- name: Layer 9, the role then the doctor's check
  hosts: gpu_workers
  gather_facts: false
  tasks:
    - name: The role
      block:
        - name: Run rdma_check
          ansible.builtin.include_role:
            name: gpufabric.stack.rdma_check
      rescue:
        - name: Record the failure
          ansible.builtin.set_fact:
            role_error: "{{ ansible_failed_result.msg }}"
      always:
        - name: Write what the role found
          ansible.builtin.copy:
            content: "{{ {'results': rdma_check_results | default(none), 'error': role_error | default(none)} | to_json }}"
            dest: "{{ out_dir }}/role-{{ inventory_hostname }}.json"
            mode: "0644"
          delegate_to: localhost

    - name: Read the node once, as validate.yml does (its NICs come with layer 5)
      gpufabric.stack.doctor:
        layers: [5]
      register: doctor_node

    - name: The doctor's layer 9
      ansible.builtin.include_role:
        name: gpufabric.stack.doctor
        tasks_from: layers
      vars:
        doctor_layers:
          - {layer: 9, role: rdma_check}

    - name: Write the doctor's results
      ansible.builtin.copy:
        content: "{{ doctor_results | to_json }}"
        dest: "{{ out_dir }}/doctor-{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost

    - name: Write how many modules the doctor's check of links and GIDs ran on the node
      ansible.builtin.copy:
        content: "{{ rdma_check_linked.module_executions | default(none) | to_json }}"
        dest: "{{ out_dir }}/links-read-{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost
"""


ROLE_ONLY = """
- name: Layer 9, the role alone
  hosts: gpu_workers
  gather_facts: false
  roles:
    - role: gpufabric.stack.rdma_check
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    require_twin()
    t = roce_rack(tmp_path_factory, "rc")
    play = tmp_path_factory.mktemp("play")
    (play / "layer09.yml").write_text(PLAY)
    (play / "role.yml").write_text(ROLE_ONLY)
    yield t, play
    t.down()


def run(lab, tag, *args):
    """Run the scenario playbook -> (recap, stdout, {node: role}, {node: layer 9 doctor result})."""
    t, play = lab
    out = play / tag
    out.mkdir()
    proc = t.playbook(str(play / "layer09.yml"), "-e", f"out_dir={out}", "-e", "rdma_check_gpu_memory=true", *args)
    role, doctor = {}, {}
    for node in ("node01", "node02"):
        path = out / f"role-{node}.json"
        assert path.exists(), f"{node} wrote no role result:\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}"
        role[node] = json.loads(path.read_text())
        results = json.loads((out / f"doctor-{node}.json").read_text())
        doctor[node] = next(r for r in results if r["layer"] == 9)
    return recap(proc.stdout), proc.stdout, role, doctor


def stray_servers(t):
    """ib_write_bw processes left on the nodes (the role must leave none)."""
    left = {}
    for node in ("node01", "node02"):
        ps = t.sh(node, "ps -eo pid,args", check=False).stdout
        left[node] = [line for line in ps.splitlines() if "ib_write_bw" in line]
    return {n: v for n, v in left.items() if v}


def pair(results, rail_pf, memory=None):
    """The pairs a node sent on from rail_pf, from host memory (or ``cuda``:
    from GPU memory)."""
    return [p for p in results["pairs"] if p["client"]["pf"] == rail_pf and p.get("memory") == memory]


@pytest.mark.parametrize("calls", ["one", "three"])
def test_healthy_chain_passes_the_gate(lab, calls):
    """A round in one call per node (the play fits in its forks: the default)
    and in three calls in lockstep."""
    rc, stdout, role, doctor = run(lab, "healthy-" + calls, "-e", "rdma_check_round_calls=" + calls)
    # in one call the round is one task (round.yml), in three calls three (round_in_steps.yml); the
    # doctor's one-round form is imported, so in three calls its task is there and skipped on every node
    one = [part.split("TASK [", 1)[0]
           for part in stdout.split("TASK [gpufabric.stack.rdma_check : Run the round in one call]")[1:]]
    ran_in_one = [part for part in one if "ok: [" in part or "changed: [" in part]
    assert bool(ran_in_one) == (calls == "one"), one
    assert all("ok: [" not in part and "changed: [" not in part for part in one) == (calls == "three"), one
    for step in ("Start the ib_write_bw servers and wait until they listen",
                 "Run the ib_write_bw clients against the servers that listen",
                 "Collect the servers, stopping those still running"):
        if calls == "one":
            assert step not in stdout
        else:
            ran = stdout.split(step, 1)[1].split("TASK [", 1)[0]
            assert "ok: [node01]" in ran and "ok: [node02]" in ran, ran
    # one round (each pair from GPU memory, every one meeting the gate: none runs again from host
    # memory), for the role and for the doctor
    key = "Run the round in one call" if calls == "one" else "Run the ib_write_bw clients"
    ran = [part.split("TASK [", 1)[0] for part in stdout.split(key)[1:]]
    assert len([part for part in ran if "ok: [node01]" in part]) == 2, ran
    assert rc["node01"]["failed"] == 0 and rc["node02"]["failed"] == 0, stdout[-4000:]
    assert rc["node01"]["rescued"] == 0 and rc["node02"]["rescued"] == 0, stdout[-4000:]
    for node, peer in (("node01", "node02"), ("node02", "node01")):
        res = role[node]["results"]
        assert res["passed"] and res["failures"] == [] and res["warnings"] == []
        assert [p["ok"] for p in res["links"]] == [True, True]
        assert [(p["switch"], p["gid_index"]) for p in res["links"]] == [("leaf1", 3), ("leaf2", 3)]
        # a ring of two: each node sends to the other on both rails, from the GPU beside each NIC
        # (each rail's NIC shares its PCIe switch with one GPU)
        assert sorted((p["rail"], p.get("memory") or "host", p["server"]["node"]) for p in res["pairs"]) == [
            ("leaf1", "cuda", peer), ("leaf2", "cuda", peer)]
        for p in res["pairs"]:
            assert p["status"] == "pass", p["message"]
            assert p["line_gbps"] == LINE_GBPS and p["bw_gbps"] >= 0.90 * LINE_GBPS
            assert p["bw_gbps"] < LINE_GBPS and p["mtu"] == 4096
        assert [p["client"]["gpu"]["pci_address"] for p in res["pairs"] if p.get("memory")] == [
            "0000:3a:00.0", "0000:85:00.0"]
        assert all(p["message"].startswith(f"{node} GPU ") for p in res["pairs"] if p.get("memory"))
        d = doctor[node]
        assert d["status"] == "pass" and d["name"] == "rdma_check", d
        assert d["reason"] == "2 PF(s) up with a RoCE v2 GID; 2 pair(s) at or above 90% of line rate"
    # the doctor's layer 9 takes the NICs from the doctor's one read of the node: its check of
    # links and GIDs executes no module there
    out = lab[1] / ("healthy-" + calls)
    assert [json.loads((out / f"links-read-{n}.json").read_text()) for n in ("node01", "node02")] == [0, 0]
    assert stray_servers(lab[0]) == {}


def test_link_down_names_layer_device_and_cause(lab):
    t = lab[0]
    since = time.time()
    t.fault("node02", "link-down")
    try:
        t.settle("node02", since)
        rc, stdout, role, doctor = run(lab, "link-down")
    finally:
        since = time.time()
        t.fault("node02", "clear")
        t.settle("node02", since)
    # the role fails node02 on its own PF and lets node01 pass
    assert rc["node02"]["rescued"] == 1 and rc["node01"]["rescued"] == 0, stdout[-4000:]
    err = role["node02"]["error"]
    assert err.startswith("layer 9 rdma_check on node02: node02 enp59s0f0np0 (0000:3b:00.0, rocep59s0f0, "
                          "cabled to leaf1 ethernet 1/2): link down"), err
    assert "operstate down" in err and "RDMA port DOWN" in err
    assert "enp134s0f0np0" not in err           # the other rail is fine
    assert role["node01"]["error"] is None and role["node01"]["results"]["passed"]
    # pairs over the dead PF are not run; the other rail is measured
    n1 = role["node01"]["results"]
    blocked = pair(n1, "enp59s0f0np0")
    assert [p["status"] for p in blocked] == ["blocked"]
    assert "server node02 enp59s0f0np0: link down" in blocked[0]["message"]
    assert [p["status"] for p in pair(n1, "enp134s0f0np0", "cuda")] == ["pass"]
    assert [p["status"] for p in pair(role["node02"]["results"], "enp134s0f0np0", "cuda")] == ["pass"]
    # the doctor: layer 9 fails on node02 naming the PF; node01 warns naming the pair
    d2 = doctor["node02"]
    assert d2["layer"] == 9 and d2["status"] == "fail", d2
    assert re.match(r"^node02 enp59s0f0np0 \(0000:3b:00.0, rocep59s0f0, cabled to leaf1 ethernet 1/2\): link down",
                    d2["reason"]), d2["reason"]
    assert "leaf1 ethernet 1/2" in d2["remediation"] and "enp59s0f0np0" in d2["remediation"]
    d1 = doctor["node01"]
    assert d1["status"] == "warn", d1
    assert d1["reason"].startswith("node01 enp59s0f0np0 -> node02 enp59s0f0np0 (leaf1 ethernet 1/1 <-> "
                                   "leaf1 ethernet 1/2): not tested, server node02 enp59s0f0np0: link down")
    assert stray_servers(t) == {}


def test_host_pfc_mismatch_fails_the_pair_naming_both_ends(lab):
    t = lab[0]
    since = time.time()
    t.fault("node02", "host-pfc-mismatch")
    try:
        t.settle("node02", since)
        rc, stdout, role, doctor = run(lab, "pfc-mismatch")
    finally:
        t.fault("node02", "clear")
        roce_host_by_hand(t, "node02")
    assert rc["node01"]["rescued"] == 1 and rc["node02"]["rescued"] == 1, stdout[-4000:]
    want = {
        "node01": "node01 enp59s0f0np0 -> node02 enp59s0f0np0 (leaf1 ethernet 1/1 <-> leaf1 ethernet 1/2)",
        "node02": "node02 enp59s0f0np0 -> node01 enp59s0f0np0 (leaf1 ethernet 1/2 <-> leaf1 ethernet 1/1)",
    }
    for node, label in want.items():
        res = role[node]["results"]
        assert all(p["ok"] for p in res["links"])          # links and GIDs are fine
        slow = pair(res, "enp59s0f0np0")[0]
        assert slow["status"] == "fail" and slow["bw_gbps"] < 0.90 * LINE_GBPS
        assert slow["message"].startswith(label + ": ") and "is under the gate of 360.00 Gb/s" in slow["message"]
        # slow from GPU memory, then from host memory too: the fabric, not the GPU's path
        from_gpu = pair(res, "enp59s0f0np0", "cuda")[0]
        assert from_gpu["status"] == "fail"
        assert res["failures"] == [slow["message"], from_gpu["message"] + "; from host memory the same pair fails "
                                   "too: the fabric first (%s)" % slow["message"]]
        assert role[node]["error"] == f"layer 9 rdma_check on {node}: {'; '.join(res['failures'])}"
        assert [p["status"] for p in pair(res, "enp134s0f0np0", "cuda")] == ["pass"]
        assert pair(res, "enp134s0f0np0") == []     # met the gate from GPU memory: not run again
        d = doctor[node]
        assert d["status"] == "fail" and d["reason"].startswith(label + ": "), d
        assert "layer 8" in d["remediation"]
    assert stray_servers(t) == {}


def set_acs(t, node, port, word):
    """What setpci -s <port> ECAP_ACS+0x6.w=<word> does: the ACS control
    word written to the port's config space (the twin's ACS capability is at
    0x148, its control word at +6)."""
    t.sh(node, "python3 -c \"import os; fd = os.open('/run/simlab/sys/bus/pci/devices/%s/config', os.O_WRONLY); "
               "os.pwrite(fd, bytes([%d, 0]), 0x14e)\"" % (port, word))


def test_acs_redirect_on_a_gpus_switch_slows_only_its_runs_from_gpu_memory(lab):
    """ACS turned back on at the switch port of node02's first GPU (as a BIOS
    or a setpci would): peer traffic between that GPU and its NIC goes up to
    the root complex. Both directions of that rail fall short from GPU memory
    while the same pairs pass from host memory: layer 9 names the GPUs and
    the GPU's path, not the fabric."""
    t = lab[0]
    try:
        set_acs(t, "node02", "0000:39:00.0", 0x1d)
        rc, stdout, role, doctor = run(lab, "acs-redirect")
    finally:
        set_acs(t, "node02", "0000:39:00.0", 0x11)
    assert rc["node01"]["rescued"] == 1 and rc["node02"]["rescued"] == 1, stdout[-4000:]
    for node in ("node01", "node02"):
        res = role[node]["results"]
        # only the pair short from GPU memory runs again from host memory
        assert [(p["client"]["pf"], p["status"]) for p in res["pairs"] if not p.get("memory")] == [
            ("enp59s0f0np0", "pass")]
        slow = pair(res, "enp59s0f0np0", "cuda")[0]
        assert slow["status"] == "fail" and slow["bw_gbps"] < 0.5 * LINE_GBPS, slow["message"]
        assert "GPU 0000:3a:00.0 via enp59s0f0np0" in slow["message"]
        assert res["failures"] == [slow["message"] + "; from host memory the same pair gives %.2f Gb/s, meeting the "
                                   "gate: the GPU's path (GPUDirect RDMA, layer 5; ACS on the PCIe switch, layer 3), "
                                   "not the fabric" % pair(res, "enp59s0f0np0")[0]["bw_gbps"]]
        assert pair(res, "enp134s0f0np0", "cuda")[0]["status"] == "pass"
        d = doctor[node]
        assert d["status"] == "fail" and "from GPU memory" in d["reason"], d
        assert "layer 3" in d["remediation"] and "0000:3a:00.0" in d["remediation"]
    assert stray_servers(t) == {}


@pytest.mark.parametrize("calls", ["one", "three"])
def test_servers_whose_client_never_connects_are_stopped(lab, calls):
    """Clients sent to an address nobody serves: their servers wait in vain
    until the end of the round, which stops them (the long timeout makes
    sure `timeout` is not what ends them). In one call, a refused client
    tries again for the listen timeout, and a server without its client when
    no client can come any more is stopped."""
    t, play = lab
    # from host memory only: the runs from GPU memory would wait for the same address again
    extra = json.dumps({"rdma_check_addresses": {"enp59s0f0np0": "10.9.9.9"}, "rdma_check_timeout": 600,
                        "rdma_check_listen_timeout": 10, "rdma_check_round_calls": calls,
                        "rdma_check_gpu_memory": False})
    proc = t.playbook(str(play / "role.yml"), "-e", extra)
    rc = recap(proc.stdout)
    assert rc["node01"]["failed"] == 1 and rc["node02"]["failed"] == 1, proc.stdout[-4000:]
    assert ("layer 9 rdma_check on node01: node01 enp59s0f0np0 -> node02 enp59s0f0np0 (leaf1 ethernet 1/1 <-> "
            "leaf1 ethernet 1/2): ib_write_bw failed (rc 1): Couldn't connect to 10.9.9.9:18515") in proc.stdout
    task = "Run the round in one call" if calls == "one" else "Collect the servers, stopping those still running"
    stop = proc.stdout.split(task, 1)[1].split("TASK [", 1)[0]
    assert "changed: [node01]" in stop and "changed: [node02]" in stop, stop
    flat = " ".join(proc.stdout.split())        # the report's lines are wrapped
    assert "node01 enp134s0f0np0 -> node02 enp134s0f0np0 (leaf2 swp1 <-> leaf2 swp2): " in flat   # rail 1 ran
    assert "Gb/s meets the gate of 360.00 Gb/s" in flat
    assert stray_servers(t) == {}


def test_a_plan_that_gives_a_nic_to_a_gpu_of_the_other_socket_fails_that_pf(lab):
    """node02's cabling entries name each other's GPU: GPU2 (NUMA 0) for the
    NIC below GPU4's switch on NUMA 1 and the other way round. The role and
    the doctor fail node02 at layer 9 on both PFs, naming the GPU, how it
    reaches the NIC and whose rail the NIC is; node01 passes."""
    import yaml
    t, play = lab
    cabling = yaml.safe_load((t.inventory / "group_vars" / "all" / "fabric.yml").read_text())["gpufabric_cabling"]
    mine = {c["pci_address"]: c["gpu"] for c in cabling if c["node"] == "node02"}
    assert mine == {"0000:3b:00.0": 2, "0000:86:00.0": 4}, mine      # the twin's plan names the GPUs as they are
    for c in cabling:
        if c["node"] == "node02":
            c["gpu"] = 4 if c["gpu"] == 2 else 2
    extra = play / "crossed.json"
    extra.write_text(json.dumps({"gpufabric_cabling": cabling}))
    rc, stdout, role, doctor = run(lab, "crossed", "-e", f"@{extra}", "-e", "rdma_check_bandwidth=false",
                                   "-e", "rdma_check_doctor_bandwidth=false")
    assert rc["node02"]["rescued"] == 1 and rc["node01"]["rescued"] == 0, stdout[-4000:]
    err = role["node02"]["error"]
    assert ("node02 enp59s0f0np0 (0000:3b:00.0, rocep59s0f0, cabled to leaf1 ethernet 1/2): gpufabric_cabling makes "
            "it GPU4's rail, but GPU4 0000:85:00.0 (NUMA 1) reaches it across the socket interconnect (SYS)") in err, err
    d2 = doctor["node02"]
    assert d2["status"] == "fail" and "GPU4's rail (below its PCIe switch), and GPU2's own NIC is rocep59s0f0" \
        in " ".join(d2["evidence"]), d2
    assert "gpu: <index>" in d2["remediation"] and "node02 enp59s0f0np0" in d2["remediation"]
    assert doctor["node01"]["status"] == "pass", doctor["node01"]


def test_layers_4_5_6_8_and_9_take_layer_3s_reading_unless_something_changed(lab):
    """site.yml layers 3 to 9: layer 3 reads the node with what
    layer 5 asks, layer 5 with what layer 9 asks (each GPU's rail, the LLDP
    neighbours) and with what the doctor's layer 4, 6 and 8 checks read
    (also_layers: the firmware queries, the VF module's own run in check mode,
    the host QoS, the boot files), so in a run where nothing changed the node
    is read once, by layer 3, layers 4, 6 and 8 execute nothing (the
    mlx_config, sriov_vf and roce_qos actions judge the node from that
    reading) and layer 9 only its round on each
    node; a leaf that changed in the run (its MTU put back) makes layer 9 read
    the nodes again; a node whose host PFC drifted gets layer 8's module,
    which repairs it, and then layer 9 reads that node again."""
    from simlab.lab import lab_dir
    from simlab.switches import load_switch, save_switch
    t, play = lab
    tags = ("--tags", "layer03,layer04,layer05,layer06,layer07,layer08,layer09")
    first = t.playbook("playbooks/site.yml", *tags)
    assert all(r["failed"] == 0 for r in recap(first.stdout).values()), first.stdout[-4000:]

    def counted(name):
        counts = play / f"{name}-counts.json"
        proc = t.playbook("playbooks/site.yml", *tags,
                          env={"ANSIBLE_CALLBACKS_ENABLED": "gpufabric.stack.task_counter",
                               "GPUFABRIC_TASK_COUNTER_FILE": str(counts)})
        rc = recap(proc.stdout)
        assert all(r["failed"] == 0 for r in rc.values()), proc.stdout[-4000:]
        hosts = json.loads(counts.read_text())["hosts"]
        return rc, proc.stdout, {n: dict((role, hosts[n]["by_role"].get(role, 0)) for role in
                                         ("kernel", "nic_firmware", "rdma_drivers", "sriov_vfs", "roce_host",
                                          "rdma_check"))
                                 for n in ("node01", "node02")}

    rc, stdout, by_role = counted("same")
    assert {h: r["changed"] for h, r in rc.items()} == {"node01": 0, "node02": 0, "leaf1": 0, "leaf2": 0}, stdout[-4000:]
    # one read of the node (layer 3's; its other run is setup for the OS family, no fact cache here), then one round
    assert by_role == dict.fromkeys(("node01", "node02"), {"kernel": 2, "nic_firmware": 0, "rdma_drivers": 0, "sriov_vfs": 0, "roce_host": 0,
                                                           "rdma_check": 1}), by_role

    sw = lab_dir(t.name) / "switches"
    leaf1 = load_switch(sw, "leaf1")
    for line in ("enable", "configure terminal", "interface ethernet 1/1 mtu 1500 force"):
        leaf1.handle(line)
    save_switch(sw, leaf1)
    rc, stdout, by_role = counted("switch")
    assert rc["leaf1"]["changed"] == 1 and rc["leaf2"]["changed"] == 0, stdout[-4000:]
    # layer 9 reads the nodes again: the read and the round
    assert by_role == dict.fromkeys(("node01", "node02"), {"kernel": 2, "nic_firmware": 0, "rdma_drivers": 0, "sriov_vfs": 0, "roce_host": 0,
                                                           "rdma_check": 2}), by_role

    t.fault("node02", "host-pfc-mismatch")
    rc, stdout, by_role = counted("qos")
    assert {h: r["changed"] for h, r in rc.items()} == {"node01": 0, "node02": 1, "leaf1": 0, "leaf2": 0}, stdout[-4000:]
    assert by_role == {"node01": {"kernel": 2, "nic_firmware": 0, "rdma_drivers": 0, "sriov_vfs": 0, "roce_host": 0, "rdma_check": 1},
                       "node02": {"kernel": 2, "nic_firmware": 0, "rdma_drivers": 0, "sriov_vfs": 0, "roce_host": 1, "rdma_check": 2}}, by_role
    t.fault("node02", "clear")
    qos = t.sh("node02", "mlnx_qos -i enp59s0f0np0").stdout
    assert [line.split()[1:] for line in qos.splitlines() if line.split()[:1] == ["enabled"]] == \
        [["0", "0", "0", "1", "0", "0", "0", "0"]], qos
