"""Layer 8 (host RoCE QoS) and the cross-layer chain on a live twin rack:
converge from the twin's defaults, idempotence, the values through the tools,
the boot unit across a reboot, the doctor's verdicts for host-pfc-mismatch and
a switch port without PFC, bad input, check mode; and, on a rack with one
node per driver stack (DOCA-OFED with mlnx-tools; inbox mlx5 with upstream
tools only), layers 5 and 8 through each stack's tools, the OFED driver's ECN
sysfs and the boot unit through dcb."""

import json
import time

import pytest

from tests.integration.twinlab import Twin, recap, require_twin, task_lines

pytestmark = [pytest.mark.twin, pytest.mark.layers(7, 8)]

SYSFS = "/run/simlab/sys"
PFS = ("enp59s0f0np0", "enp134s0f0np0")

CONVERGE = """
- name: Layer 7 on the leaves
  hosts: leaf_switches
  gather_facts: false
  roles:
    - role: gpufabric.stack.roce_switch
- name: Layer 8 on the GPU nodes
  hosts: gpu_workers
  gather_facts: false
  roles:
    - role: gpufabric.stack.roce_host
"""

HOST_ONLY = """
- name: Layer 8 on the GPU nodes
  hosts: gpu_workers
  gather_facts: false
  roles:
    - role: gpufabric.stack.roce_host
"""

# The doctor's order: the switches first (the doctor action reads each switch
# once, registered as doctor_node), then the nodes, whose layer 8 check
# compares each PF with its switch port.
SWITCH_CHECK = """
- name: Layer 7 checks
  hosts: leaf_switches
  gather_facts: false
  tasks:
    - name: Check the switch
      gpufabric.stack.doctor:
      register: doctor_node
"""
CHECK = SWITCH_CHECK + """- name: Layer 8 checks
  hosts: gpu_workers
  gather_facts: false
  tasks:
    - name: Check the host
      gpufabric.stack.doctor: {layers: [8]}
      register: layer8
    - name: Write the verdict
      ansible.builtin.copy:
        content: "{{ {'result': layer8.results[0], 'chain': layer8.details['8'].chain} | to_json }}"
        dest: "{{ verdict_dir }}/{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost
"""


def lab_up(tmp_path_factory, prefix, *args):
    require_twin()
    twin = Twin.up(tmp_path_factory, prefix, *args)
    play = tmp_path_factory.mktemp("play")
    for fname, text in (("converge.yml", CONVERGE), ("host.yml", HOST_ONLY), ("check.yml", CHECK)):
        (play / fname).write_text(text)
    (play / "verdicts").mkdir()
    return twin, play


LAYER5 = """
- name: Layer 5 on the GPU nodes
  hosts: gpu_workers
  gather_facts: false
  roles:
    - role: gpufabric.stack.rdma_drivers
"""
STACKS = LAYER5 + CONVERGE

CHECK_5_8 = SWITCH_CHECK + """- name: Layers 5 and 8
  hosts: gpu_workers
  gather_facts: false
  tasks:
    - name: Check the host
      gpufabric.stack.doctor: {layers: [5, 8]}
      register: layers
    - name: Write the verdicts
      ansible.builtin.copy:
        content: "{{ layers.results | to_json }}"
        dest: "{{ verdict_dir }}/{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost
"""


def verdicts_5_8(twin, play):
    out = play / "verdicts"
    for f in out.iterdir():
        f.unlink()
    twin.playbook(str(play / "check58.yml"), "-e", f"verdict_dir={out}", check=True)
    return dict((n, dict((r["layer"], r) for r in json.loads((out / f"{n}.json").read_text())))
                for n in ("node01", "node02"))


@pytest.fixture(scope="class")
def stacks_rack(tmp_path_factory):
    # class scope, first in the file: its lab is down before the 2-node rack comes up
    twin, play = lab_up(tmp_path_factory, "ro", "--nodes", "2", "--switches", "1", "--driver", "ofed,upstream")
    (play / "stacks.yml").write_text(STACKS)
    (play / "check58.yml").write_text(CHECK_5_8)
    yield twin, play
    twin.down()


@pytest.mark.layers(5)
class TestOneNodePerStack:
    def test_ofed_ecn_sysfs_is_set_and_kept_across_a_reboot(self, stacks_rack):
        ofed_ecn(*stacks_rack)

    def test_layers_5_and_8_converge_on_both_stacks_and_the_doctor_names_each_tools_fix(self, stacks_rack):
        twin, play = stacks_rack
        # node02 runs the inbox driver with upstream tools: no mlnx-tools, no ofed_info
        assert twin.sh("node02", "command -v mlnx_qos cma_roce_mode ofed_info || true").stdout.strip() == ""
        assert twin.sh("node01", "ofed_info -s").stdout.strip() == "OFED-internal-24.10-2.1.8.0:"
        first = twin.playbook(str(play / "stacks.yml"))
        assert all(recap(first.stdout)[n]["failed"] == 0 for n in ("node01", "node02", "leaf1")), first.stdout[-4000:]
        again = twin.playbook(str(play / "stacks.yml"))
        assert [recap(again.stdout)[n]["changed"] for n in ("node01", "node02", "leaf1")] == [0, 0, 0], \
            again.stdout[-4000:]
        # node02's QoS went through dcb and the RDMA-CM configfs
        pfc = twin.sh("node02", "dcb -N pfc show dev enp59s0f0np0 prio-pfc").stdout
        assert pfc == "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n"
        assert twin.sh("node02", "dcb -N app show dev enp59s0f0np0").stdout == "dscp-prio 26:3 48:6 \n"
        cfg = f"{SYSFS}/kernel/config/rdma_cm/rocep59s0f0/ports/1"
        ofed = [twin.sh("node01", f"{tool} -d mlx5_0").stdout.strip() for tool in ("cma_roce_mode", "cma_roce_tos")]
        assert twin.sh("node02", f"cat {cfg}/default_roce_mode {cfg}/default_roce_tos").stdout.split("\n")[:2] == ofed
        assert ofed[0] == "RoCE v2"
        v = verdicts_5_8(twin, play)
        assert v["node01"][5]["status"] == "pass" and v["node01"][5]["reason"].endswith(
            "; DOCA-OFED stack; GPUDirect RDMA by DMA-BUF; 2 of 8 GPU(s) with a NIC below their PCIe switch")
        assert "stack: OFED mlx5_core 24.10-2.1.8 (ofed_info OFED-internal-24.10-2.1.8.0)" in v["node01"][5]["evidence"]
        assert v["node02"][5]["status"] == "pass" and v["node02"][5]["reason"].endswith(
            "; inbox stack; GPUDirect RDMA by DMA-BUF; 2 of 8 GPU(s) with a NIC below their PCIe switch")
        assert [v[n][8]["status"] for n in ("node01", "node02")] == ["pass", "pass"], v
        # a PFC mismatch on each: named at layer 8 with the fix through that node's tool
        for node in ("node01", "node02"):
            twin.fault(node, "host-pfc-mismatch")
        v = verdicts_5_8(twin, play)
        for node in ("node01", "node02"):
            assert (v[node][8]["status"], v[node][8]["reason"]) == ("fail", f"{node} enp59s0f0np0 PFC {{4}} vs intent {{3}}")
        assert v["node01"][8]["remediation"].endswith("it runs (mlnx_qos): mlnx_qos -i enp59s0f0np0 --pfc 0,0,0,1,0,0,0,0")
        assert v["node02"][8]["remediation"].endswith(
            "it runs (dcb): dcb pfc set dev enp59s0f0np0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off")
        fixed = twin.playbook(str(play / "host.yml"))
        assert [recap(fixed.stdout)[n]["changed"] for n in ("node01", "node02")] == [1, 1], fixed.stdout[-3000:]
        for node in ("node01", "node02"):
            twin.fault(node, "clear")
        # the boot unit puts dcb's settings back after a reboot
        assert reboot(twin, "node02") == "active"
        assert twin.sh("node02", "dcb -N pfc show dev enp59s0f0np0 prio-pfc").stdout == pfc
        assert twin.sh("node02", "dcb -N app show dev enp59s0f0np0").stdout == "dscp-prio 26:3 48:6 \n"

    def test_ofed_userspace_over_inbox_modules_is_named_at_layer_5_by_the_doctor_and_the_role(self, stacks_rack):
        twin, play = stacks_rack
        refused = twin.simlab("fault", "node01", "ofed-userspace-over-inbox", check=False)
        assert refused.returncode != 0 and "needs a node on the inbox driver" in refused.stderr
        twin.fault("node02", "ofed-userspace-over-inbox")
        try:
            reason = ("OFED userspace (ofed_info: OFED-internal-24.10-2.1.8.0) over the inbox mlx5_core: "
                      "its kernel modules are missing")
            v = verdicts_5_8(twin, play)
            assert (v["node02"][5]["status"], v["node02"][5]["reason"]) == ("fail", reason), v["node02"][5]
            assert "dkms autoinstall -k" in v["node02"][5]["remediation"]
            assert v["node01"][5]["status"] == "pass"
            run = twin.playbook(str(play / "stacks.yml"), "--limit", "node02")
            assert recap(run.stdout)["node02"]["failed"] == 1
            assert f"node02: mlx5_core: {reason}. Fix: Install the DOCA-OFED kernel modules" in run.stdout
        finally:
            twin.fault("node02", "clear")
        assert twin.sh("node02", "command -v ofed_info || true").stdout.strip() == ""


    def test_gpudirect_by_the_closed_driver_loads_peermem_on_doca_and_is_named_impossible_on_inbox(self, stacks_rack):
        """The GPU driver's closed kernel modules on both nodes: no DMA-BUF.
        node01 (DOCA-OFED) has the peer-memory API: layer 5 names
        nvidia_peermem not loaded, the role loads and persists it, a re-run
        changes nothing. node02 (inbox) has no way to GPUDirect RDMA: named
        with both reasons, and the role fails before it changes anything."""
        twin, play = stacks_rack
        for node in ("node01", "node02"):
            twin.fault(node, "gpu-driver-closed")
        try:
            assert twin.sh("node01", f"cat {SYSFS}/module/nvidia/taint").stdout.strip() == "POE"
            v = verdicts_5_8(twin, play)
            assert (v["node01"][5]["status"], v["node01"][5]["reason"]) == (
                "fail", "GPUDirect RDMA by nvidia-peermem, and nvidia_peermem is not loaded"), v["node01"][5]
            assert "layer05" in v["node01"][5]["remediation"]
            assert any(e.startswith("GPUDirect: peer-memory API: ") and "memory_peers" in e
                       for e in v["node01"][5]["evidence"])
            assert (v["node02"][5]["status"], v["node02"][5]["reason"]) == (
                "fail", "no GPUDirect RDMA: the closed GPU kernel module (taint 'POE') has no DMA-BUF export; the RDMA "
                        "core has no peer-memory API (the inbox ib_core; nvidia-peermem needs DOCA-OFED or MLNX_OFED)")
            # by hand on the inbox node: kmod's unknown-symbol error
            tried = twin.sh("node02", "modprobe nvidia_peermem", check=False)
            assert tried.returncode == 1 and "could not insert 'nvidia_peermem': Unknown symbol" in tried.stderr
            before = twin.sh("node02", "cat /etc/modules-load.d/gpufabric-rdma.conf").stdout
            run = twin.playbook(str(play / "stacks.yml"))
            rc = recap(run.stdout)
            assert rc["node01"]["failed"] == 0 and rc["node02"]["failed"] == 1, run.stdout[-4000:]
            assert "node02: rdma_drivers_gpudirect auto: no GPUDirect RDMA: the closed GPU kernel module" in \
                " ".join(run.stdout.split())
            assert twin.sh("node02", "cat /etc/modules-load.d/gpufabric-rdma.conf").stdout == before
            assert "nvidia_peermem" in twin.sh("node01", f"ls {SYSFS}/module").stdout.split()
            assert "nvidia_peermem" in twin.sh("node01", "cat /etc/modules-load.d/gpufabric-rdma.conf").stdout.splitlines()
            again = twin.playbook(str(play / "stacks.yml"), "--limit", "node01")
            assert recap(again.stdout)["node01"]["changed"] == 0, again.stdout[-4000:]
            v = verdicts_5_8(twin, play)
            assert v["node01"][5]["status"] == "pass" and v["node01"][5]["reason"].endswith(
                "; GPUDirect RDMA by nvidia-peermem; 2 of 8 GPU(s) with a NIC below their PCIe switch"), v["node01"][5]
        finally:
            for node in ("node01", "node02"):
                twin.fault(node, "clear")
        # the open modules back: DMA-BUF again, and the boot file without nvidia_peermem
        back = twin.playbook(str(play / "stacks.yml"))
        assert all(recap(back.stdout)[n]["failed"] == 0 for n in ("node01", "node02")), back.stdout[-4000:]
        assert "nvidia_peermem" not in twin.sh("node01", "cat /etc/modules-load.d/gpufabric-rdma.conf").stdout.splitlines()


def ofed_ecn(twin, play):
    ecn = f"{SYSFS}/class/net/enp59s0f0np0/ecn"
    # ECN starts as the firmware has it (every priority); turn it off where RoCE runs
    assert twin.sh("node01", f"cat {ecn}/roce_np/enable/3").stdout.strip() == "1"
    twin.sh("node01", f"echo 0 > {ecn}/roce_np/enable/3; echo 0 > {ecn}/roce_rp/enable/3; "
                      f"echo 46 > {ecn}/roce_np/cnp_dscp")
    res = twin.module("node01", "gpufabric.stack.roce_qos",
                      {"sysfs_root": SYSFS, "node": "node01", "pfs": [{"name": "enp59s0f0np0"}],
                       "config": {"priority": 3, "dscp": 26, "host_mtu": 9000}, "state": "gathered"})
    assert res["gathered"]["enp59s0f0np0"]["driver"] == "ofed"
    assert "enp59s0f0np0 ECN roce_np on priority 3 off vs intent on" in res["drift"]
    assert "enp59s0f0np0 CNP DSCP 46 vs intent 48" in res["drift"]
    first = twin.playbook(str(play / "host.yml"))
    assert recap(first.stdout)["node01"]["failed"] == 0, first.stdout[-4000:]
    assert [twin.sh("node01", f"cat {ecn}/{p}").stdout.strip()
            for p in ("roce_np/enable/3", "roce_rp/enable/3", "roce_np/cnp_dscp")] == ["1", "1", "48"]
    assert twin.sh("node01", f"cat {SYSFS}/class/net/enp59s0f0np0/qos/trust").stdout.strip() == "dscp"
    second = twin.playbook(str(play / "host.yml"))
    assert recap(second.stdout)["node01"]["changed"] == 0, second.stdout[-3000:]
    script = twin.sh("node01", "cat /usr/local/libexec/gpufabric/roce-qos.sh").stdout
    assert 'put "$SYSFS/class/net/$PF/ecn/roce_np/enable/3" 1' in script
    # the firmware keeps ECN off on priority 3 from the next boot; the unit turns it on again
    twin.sh("node01", "mstconfig -d 0000:3b:00.0 -y set ROCE_CC_PRIO_MASK_P1=247")
    assert reboot(twin, "node01") == "active"
    row = [line.split() for line in twin.sh("node01", "mstconfig -d 0000:3b:00.0 -e q ROCE_CC_PRIO_MASK_P1").stdout
           .splitlines() if "ROCE_CC_PRIO_MASK_P1" in line][0]
    assert row[-2:] == ["247", "247"]          # current and next boot: priority 3 off in firmware
    assert [twin.sh("node01", f"cat {ecn}/{p}").stdout.strip()
            for p in ("roce_np/enable/3", "roce_rp/enable/3", "roce_np/cnp_dscp")] == ["1", "1", "48"]
    assert twin.sh("node01", f"cat {SYSFS}/class/net/enp59s0f0np0/qos/trust").stdout.strip() == "dscp"
    res = twin.module("node01", "gpufabric.stack.roce_qos",
                      {"sysfs_root": SYSFS, "node": "node01", "pfs": [{"vendor_device": "15b3:1021"}],
                       "config": {"priority": 3, "dscp": 26, "host_mtu": 9000}, "state": "gathered"})
    assert res["drift"] == [] and res["not_settable"] == []


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    twin, play = lab_up(tmp_path_factory, "rh", "--nodes", "2", "--switches", "2")
    yield twin, play
    twin.down()


def doctor(twin, play, nodes=("node01", "node02")):
    out = play / "verdicts"
    for f in out.iterdir():
        f.unlink()
    twin.playbook(str(play / "check.yml"), "-e", f"verdict_dir={out}", check=True)
    return dict((n, json.loads((out / f"{n}.json").read_text())) for n in nodes)


def reboot(twin, node, unit="gpufabric-roce-qos.service"):
    from simlab.lab import Lab
    Lab(twin.name).reboot(node)
    state = ""
    for _ in range(300):
        state = twin.sh(node, f"systemctl is-active {unit}", check=False).stdout.strip()
        if state in ("active", "failed"):
            break
        time.sleep(0.2)
    return state


def qos(twin, node, pf="enp59s0f0np0"):
    return twin.sh(node, f"mlnx_qos -i {pf}").stdout


def pfc_row(text):
    return [line.split()[1:] for line in text.splitlines() if line.split()[:1] == ["enabled"]][0]


def test_twin_default_fails_layer_8_and_roles_converge_idempotently(rack):
    twin, play = rack
    before = doctor(twin, play)
    for node in ("node01", "node02"):
        r = before[node]["result"]
        assert (r["layer"], r["status"]) == (8, "fail")
        assert r["reason"] == f"{node} enp59s0f0np0 trust pcp vs intent dscp"
    first = twin.playbook(str(play / "converge.yml"))
    rc = recap(first.stdout)
    assert all(r["failed"] == 0 for r in rc.values()), first.stdout[-4000:]
    assert rc["node01"]["changed"] > 0 and rc["node02"]["changed"] > 0
    second = twin.playbook(str(play / "converge.yml"))
    assert {h: r["changed"] for h, r in recap(second.stdout).items()} == \
        {"node01": 0, "node02": 0, "leaf1": 0, "leaf2": 0}, second.stdout[-4000:]
    for node in ("node01", "node02"):
        for pf, dev in zip(PFS, ("rocep59s0f0", "rocep134s0f0")):
            text = qos(twin, node, pf)
            assert "Priority trust state: dscp" in text
            assert pfc_row(text) == ["0", "0", "0", "1", "0", "0", "0", "0"]
            assert twin.sh(node, f"cma_roce_mode -d {dev} -p 1").stdout.strip() == "RoCE v2"
            assert twin.sh(node, f"cma_roce_tos -d {dev} -p 1").stdout.strip() == "106"
            assert " mtu 9000 " in twin.sh(node, f"ip link show dev {pf}").stdout
        assert twin.sh(node, "systemctl is-enabled gpufabric-roce-qos.service").stdout.strip() == "enabled"
    after = doctor(twin, play)
    for node in ("node01", "node02"):
        r = after[node]["result"]
        assert r["status"] == "pass", r
        assert after[node]["chain"]["checked"] == 2 and after[node]["chain"]["differences"] == []


def test_the_boot_files_are_sent_only_when_the_node_lacks_them(rack):
    twin, play = rack
    script = "/usr/local/libexec/gpufabric/roce-qos.sh"
    install = "gpufabric.stack.roce_host : Install the boot script and its systemd unit"
    # converged: the QoS call read the files and the unit, the install is left out
    same = twin.playbook(str(play / "host.yml"))
    assert task_lines(same.stdout, install) == ["skipping: [node01]", "skipping: [node02]"], same.stdout[-3000:]
    good = twin.sh("node01", f"sha256sum {script}").stdout.split()[0]
    twin.sh("node01", f"echo '# edited' >> {script}; chmod 0700 {script}; "
                      "systemctl disable gpufabric-roce-qos.service")
    fix = twin.playbook(str(play / "host.yml"), "--diff")
    rc = recap(fix.stdout)
    assert rc["node01"]["changed"] == 1 and rc["node02"]["changed"] == 0, fix.stdout[-3000:]
    assert task_lines(fix.stdout, install) == ["changed: [node01]", "skipping: [node02]"]
    assert "-# edited" in fix.stdout
    assert twin.sh("node01", f"sha256sum {script}").stdout.split()[0] == good
    assert twin.sh("node01", f"stat -c %a {script}").stdout.strip() == "755"
    assert twin.sh("node01", "systemctl is-enabled gpufabric-roce-qos.service").stdout.strip() == "enabled"


def test_the_boot_unit_applies_the_qos_after_a_reboot(rack):
    twin, play = rack
    assert reboot(twin, "node01") == "active"
    text = qos(twin, "node01")
    assert "Priority trust state: dscp" in text and pfc_row(text) == ["0", "0", "0", "1", "0", "0", "0", "0"]
    assert twin.sh("node01", "cma_roce_tos -d rocep134s0f0 -p 1").stdout.strip() == "106"
    assert twin.sh("node01", f"cat {SYSFS}/class/net/enp134s0f0np0/mtu").stdout.strip() == "9000"
    v = doctor(twin, play)
    assert v["node01"]["result"]["status"] == "pass", v["node01"]


def test_host_pfc_mismatch_names_node_pf_and_pfc_sets_and_is_repaired(rack):
    twin, play = rack
    twin.fault("node02", "host-pfc-mismatch")
    v = doctor(twin, play)
    assert v["node01"]["result"]["status"] == "pass"
    r = v["node02"]["result"]
    assert (r["layer"], r["status"]) == (8, "fail")
    assert r["reason"] == "node02 enp59s0f0np0 PFC {4} vs intent {3}"
    assert r["remediation"].startswith("run roce_host (tag layer08) on node02")
    chain = v["node02"]["chain"]["differences"]
    assert [d["text"] for d in chain] == ["node02 enp59s0f0np0 PFC {4} vs leaf1 ethernet 1/2 PFC {3}"]
    assert chain[0]["departs"] == "host" and chain[0]["layer"] == 8
    assert "node02 enp59s0f0np0 PFC {4} vs leaf1 ethernet 1/2 PFC {3}" in r["evidence"]
    # check mode shows the command and changes nothing
    dry = twin.playbook(str(play / "host.yml"), "--check", "--diff", "--limit", "node02")
    assert "mlnx_qos -i enp59s0f0np0 --pfc 0,0,0,1,0,0,0,0" in dry.stdout
    assert "-enp59s0f0np0 PFC {4}" in dry.stdout and "+enp59s0f0np0 PFC {3}" in dry.stdout
    assert pfc_row(qos(twin, "node02")) == ["0", "0", "0", "0", "1", "0", "0", "0"]
    fixed = twin.playbook(str(play / "host.yml"), "--limit", "node02")
    assert recap(fixed.stdout)["node02"]["changed"] == 1, fixed.stdout[-3000:]
    twin.fault("node02", "clear")
    assert pfc_row(qos(twin, "node02")) == ["0", "0", "0", "1", "0", "0", "0", "0"]
    assert doctor(twin, play)["node02"]["result"]["status"] == "pass"


def test_a_switch_port_without_pfc_fails_the_chain_on_the_cabled_nodes(rack):
    twin, play = rack
    twin.fault("leaf1", "switch-pfc-off")
    try:
        v = doctor(twin, play)
        for node, port in (("node01", "ethernet 1/1"), ("node02", "ethernet 1/2")):
            r = v[node]["result"]
            assert r["status"] == "fail"
            assert r["reason"] == f"{node} enp59s0f0np0 PFC {{3}} vs leaf1 {port} PFC {{}}"
            assert r["remediation"] == "run roce_switch (tag layer07) on leaf1"
            # the other rail (leaf2) is fine
            assert all(d["switch"] == "leaf1" for d in v[node]["chain"]["differences"])
    finally:
        twin.fault("leaf1", "clear")
        twin.playbook(str(play / "converge.yml"), check=True)


def test_bad_intent_fails_before_any_change(rack):
    twin, play = rack
    intent = {"priority": 9, "dscp": 26, "cnp_priority": 6, "cnp_dscp": 48, "trust": "dscp", "host_mtu": 9000}
    before = qos(twin, "node01")
    res = twin.playbook(str(play / "host.yml"), "--limit", "node01", "-e", json.dumps({"gpufabric_roce": intent}))
    assert res.returncode != 0
    assert "node01: gpufabric_roce.priority 9 is outside 0-7" in res.stdout
    assert qos(twin, "node01") == before


def test_inbox_firmware_with_ecn_off_on_the_priority_warns(rack):
    """Runs last on this rack: node01's firmware keeps ECN off on priority 3."""
    twin, play = rack
    twin.sh("node01", "mstconfig -d 0000:3b:00.0 -y set ROCE_CC_PRIO_MASK_P1=247")
    assert reboot(twin, "node01") == "active"
    r = doctor(twin, play)["node01"]["result"]
    assert r["status"] == "warn", r
    assert r["reason"] == ("node01 enp59s0f0np0 ECN roce_np on priority 3 off vs intent on "
                           "(firmware ROCE_CC_PRIO_MASK_P1)")
    assert "mlxconfig" in r["remediation"]
