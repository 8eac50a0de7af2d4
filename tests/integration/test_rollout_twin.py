"""Staged rollout (playbooks/rollout.yml) of a VF count change on a 6-node
twin in 3 batches of 2: the plan in check mode, a health gate that fails on a
node of batch 2 and stops the rollout there, and the re-run that resumes it;
drains refused by a PodDisruptionBudget, with and without the fallback.

No Kubernetes runs in the twin: its inventory points gpufabric_kube_backend at
the stand-in of roles/node_maintenance, which keeps each node's Node object and
a log of cordon/drain/uncordon in /var/lib/gpufabric/twin-kube on the node."""

import json
import re
import subprocess

import pytest
import yaml

from tests.integration.twinlab import BIN, ENV, REPO, Twin, require_twin, set_inventory_var

pytestmark = [pytest.mark.twin, pytest.mark.slow, pytest.mark.layers(6, 11)]

NODES = [f"node{i:02d}" for i in range(1, 7)]
BATCHES = [NODES[0:2], NODES[2:4], NODES[4:6]]
PF0 = "/run/simlab/sys/bus/pci/devices/0000:3b:00.0"
PF1 = "/run/simlab/sys/bus/pci/devices/0000:86:00.0"
TWIN_DIR = "/var/lib/gpufabric/twin-kube"
ANNOTATION = "gpufabric.stack/rollout"

HOOK = """---
- name: Log the {name} hook where the twin logs cordon, drain and uncordon
  ansible.builtin.lineinfile:
    path: {dir}/events.jsonl
    line: "{{{{ {{'op': '{name}', 'node': inventory_hostname, 'rollout': rollout_id | string}} | to_json }}}}"
    create: true
    mode: "0644"
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Six twin nodes with 8 VFs per PF, batches of two from the inventory,
    and hooks that log themselves next to the twin's maintenance log."""
    require_twin()
    t = Twin.up(tmp_path_factory, "ro", "--nodes", "6", "--switches", "2")
    inv = t.inventory
    hooks = tmp_path_factory.mktemp("rollout-hooks")
    try:
        for hook in ("pre-drain", "pre-uncordon"):
            (hooks / f"{hook}.yml").write_text(HOOK.format(name=hook, dir=TWIN_DIR))
        set_inventory_var(inv, "group_vars/gpu_workers.yml", "rollout_serial", 2)
        # the lab is converged for layers 1-6 only (the ready preset, then layer 6): gate on those
        set_inventory_var(inv, "group_vars/gpu_workers.yml", "rollout_gate_layers",
                          [{"layer": n, "role": r} for n, r in enumerate(
                              ["bmc", "bios", "kernel", "nic_firmware", "rdma_drivers", "sriov_vfs"], start=1)])
        set_inventory_var(inv, "group_vars/gpu_workers.yml", "rollout_pre_drain_hooks", [str(hooks / "pre-drain.yml")])
        set_inventory_var(inv, "group_vars/gpu_workers.yml", "rollout_pre_uncordon_hooks", [str(hooks / "pre-uncordon.yml")])
        t.playbook("playbooks/site.yml", "--tags", "layer06", "--limit", "gpu_workers", check=True)
        yield t
    finally:
        t.down()


def set_vfs(t, count, node=None):
    """The change being rolled out: num_vfs in the inventory (the pool's
    group_vars, or one node's host_vars)."""
    group = yaml.safe_load((t.inventory / "group_vars/gpu_workers.yml").read_text())
    nics = [dict(e, num_vfs=count) for e in group["gpufabric_nics"]]
    if node:
        (t.inventory / "host_vars").mkdir(exist_ok=True)
        set_inventory_var(t.inventory, f"host_vars/{node}.yml", "gpufabric_nics", nics)
    else:
        set_inventory_var(t.inventory, "group_vars/gpu_workers.yml", "gpufabric_nics", nics)


def rollout(t, *args):
    """rollout.yml on pool gpu_workers, layer 6; returns (rc, the json
    callback's document, stderr)."""
    cmd = [str(BIN / "ansible-playbook"), "-i", str(t.inventory / "hosts.yml"), str(REPO / "playbooks/rollout.yml"),
           "-e", "pool=gpu_workers", "--tags", "layer06", "-e", f"rollout_report_dir={t.reports}",
           "-e", "rdma_check_gpu_memory=false", *args]
    proc = subprocess.run(cmd, cwd=REPO, env=dict(ENV, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json"),
                          capture_output=True, text=True)
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"rollout.yml printed no json (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-3000:]}")
    return proc.returncode, doc, proc.stderr


def named(tk, task):
    """Task names in the json callback carry the role: 'role : name'."""
    name = tk["task"]["name"]
    return name == task or name.endswith(" : " + task)


def results(doc, task):
    """{host: result} of every run of the named task, over all batches."""
    out = {}
    for play in doc["plays"]:
        for tk in play["tasks"]:
            if named(tk, task):
                out.update(tk["hosts"])
    return out


def failures(doc):
    """{host: msg} of the rollout's final failure per host."""
    return {h: r["msg"] for h, r in results(doc, "Stop the rollout").items() if r.get("failed")}


def numvfs(t, node):
    return [int(t.sh(node, f"cat {pf}/sriov_numvfs").stdout) for pf in (PF0, PF1)]


def events(t, node):
    out = t.sh(node, f"cat {TWIN_DIR}/events.jsonl 2>/dev/null", check=False).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def ops(t, node):
    return [e["op"] for e in events(t, node)]


def node_state(t, node):
    out = t.sh(node, f"cat {TWIN_DIR}/state.json 2>/dev/null", check=False).stdout
    return json.loads(out)["node"] if out.strip() else None


def cordoned(t, node):
    st = node_state(t, node)
    return bool(st and st["spec"].get("unschedulable"))


def record(t, node):
    return json.loads((t.reports / "rollout" / f"{node}.json").read_text())


def test_check_diff_shows_plan_per_node_and_changes_nothing(lab):
    set_vfs(lab, 4)
    # a kernel argument only pool_b lacks: its layer 3 would reboot those nodes
    set_inventory_var(lab.inventory, "group_vars/pool_b.yml", "kernel_extra_args", ["pcie_aspm=off"])
    cmdline = {n: lab.sh(n, "cat /run/simlab/proc/cmdline").stdout for n in NODES}
    try:
        rc, doc, err = rollout(lab, "--tags", "layer03", "--check", "--diff")
    finally:
        (lab.inventory / "group_vars/pool_b.yml").unlink(missing_ok=True)
    assert rc == 0, err[-3000:]
    said = {h: r["msg"] for h, r in results(doc, "Say what happens to the node").items()}
    assert sorted(said) == NODES
    for b, batch in enumerate(BATCHES, start=1):
        for node in batch:
            msg = said[node]
            assert msg.startswith(f"{node} (batch {b} of 3): would change (layers 3, 6"), msg
            assert "would drain: yes (schedulable, no other maintenance)" in msg, msg
            if node in ("node04", "node05", "node06"):     # pool_b
                assert "would reboot: yes (kernel_missing_args)" in msg, msg
            else:
                assert msg.endswith("would reboot: no"), msg
    # the diff of layer 6 per node
    vf_diffs = [r["diff"] for r in results(doc, "Keep NetworkManager off the VFs, create them and set their per-VF settings").values() if r.get("diff")]
    vf_diffs = [d[0] if isinstance(d, list) else d for d in vf_diffs]
    assert len(vf_diffs) == 6
    assert all('"num_vfs": 4' in str(d["after"]) and '"num_vfs": 8' in str(d["before"]) for d in vf_diffs), vf_diffs[0]
    # nothing was touched
    for node in NODES:
        assert numvfs(lab, node) == [8, 8]
        assert events(lab, node) == [] and node_state(lab, node) is None
        assert lab.sh(node, "cat /run/simlab/proc/cmdline").stdout == cmdline[node]
        assert "pcie_aspm" not in lab.sh(node, "cat /etc/default/grub.d/gpufabric.cfg 2>/dev/null; true").stdout
    assert not (lab.reports / "rollout").exists()
    assert all(s["failures"] == 0 and s["unreachable"] == 0 for s in doc["stats"].values())


def test_failed_gate_stops_rollout_in_batch_2_and_rerun_resumes(lab):
    set_vfs(lab, 4)
    lab.fault("node04", "bmc-unreachable")          # layer 1 of node04's health gate fails
    rc, doc, err = rollout(lab)
    assert rc != 0

    # batch 1: hooks, cordon, drain, uncordon in order; the new VF count; schedulable again
    for node in BATCHES[0]:
        assert ops(lab, node) == ["pre-drain", "cordon", "drain", "pre-uncordon", "uncordon"], node
        assert numvfs(lab, node) == [4, 4]
        st = node_state(lab, node)
        assert not st["spec"].get("unschedulable") and ANNOTATION not in st["metadata"]["annotations"]
        assert record(lab, node)["outcome"] == "changed"
    # batch 2: node04 was changed, failed its gate and stays cordoned, named with the layer and the reason
    assert ops(lab, "node04") == ["pre-drain", "cordon", "drain"]
    assert cordoned(lab, "node04")
    assert node_state(lab, "node04")["metadata"]["annotations"][ANNOTATION] == record(lab, "node04")["rollout"]
    stop = failures(doc)
    assert list(stop) == ["node04"]
    msg = stop["node04"]
    assert re.search(r"^node04: rollout \S+ of pool gpu_workers stopped in batch 2 of 3 at 'Hold the node when the "
                     r"health gate fails: node04: health gate failed at layer 1 \(bmc\): BMC unreachable", msg), msg
    assert "node04 left cordoned; later batches untouched" in msg, msg
    rec = record(lab, "node04")
    assert rec["outcome"] == "failed" and rec["gate"]["layer"] == 1 and rec["cordoned"] is True
    # node03 went through its batch on its own
    assert ops(lab, "node03") == ["pre-drain", "cordon", "drain", "pre-uncordon", "uncordon"]
    # batch 3 untouched
    for node in BATCHES[2]:
        assert events(lab, node) == [] and numvfs(lab, node) == [8, 8]
        assert not (lab.reports / "rollout" / f"{node}.json").exists()

    # clear the fault and run the same rollout again: it resumes and finishes
    lab.fault("node04", "clear")
    rc, doc, err = rollout(lab)
    assert rc == 0, json.dumps(failures(doc))[:3000] + err[-2000:]
    said = {h: r["msg"] for h, r in results(doc, "Say what happens to the node").items()}
    for node in ("node01", "node02", "node03"):
        assert doc["stats"][node]["changed"] == 0, (node, doc["stats"][node])
        assert "no change" in said[node] and "drain: no" in said[node], said[node]
        assert ops(lab, node) == ["pre-drain", "cordon", "drain", "pre-uncordon", "uncordon"]   # not drained again
        assert record(lab, node)["outcome"] == "unchanged"
    assert "resume, no further change" in said["node04"] and "left cordoned by an earlier rollout" in said["node04"]
    assert ops(lab, "node04") == ["pre-drain", "cordon", "drain", "pre-drain", "drain", "pre-uncordon", "uncordon"]
    assert not cordoned(lab, "node04") and ANNOTATION not in node_state(lab, "node04")["metadata"]["annotations"]
    assert record(lab, "node04")["outcome"] == "changed" and record(lab, "node04")["resumed"] is True
    for node in BATCHES[2]:
        assert ops(lab, node) == ["pre-drain", "cordon", "drain", "pre-uncordon", "uncordon"]
        assert numvfs(lab, node) == [4, 4] and not cordoned(lab, node)
    runs = {e["rollout"] for n in NODES for e in events(lab, n)}
    assert len(runs) == 2


def test_drain_refused_by_disruption_budget_stops_or_falls_back(lab):
    """A pod's PodDisruptionBudget refuses the eviction: without the fallback
    the rollout stops before changing the node; with it the pods are deleted
    instead and the node is changed."""
    node = "node06"
    before = len(events(lab, node))
    vfs = numvfs(lab, node)
    set_vfs(lab, 2, node=node)
    refused = {"node": {"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": node, "annotations": {"simlab.gpufabric.stack/drain-refused": "pdb"}},
                        "spec": {}}, "objects": []}
    lab.sh(node, f"mkdir -p {TWIN_DIR} && echo '{json.dumps(refused)}' > {TWIN_DIR}/state.json")
    try:
        rc, doc, err = rollout(lab, "--limit", node, "-e", "node_maintenance_drain_retries=0")
        assert rc != 0
        stop = failures(doc)[node]
        assert "drain of node node06 failed (pdb)" in stop and "disruption budget" in stop
        assert "node_maintenance_drain_fallback: true would delete the pods" in stop
        assert numvfs(lab, node) == vfs and cordoned(lab, node)
        assert [e["op"] for e in events(lab, node)[before:]] == ["pre-drain", "cordon", "drain"]
        assert events(lab, node)[-1]["result"] == "pdb"

        rc, doc, err = rollout(lab, "--limit", node, "-e", "node_maintenance_drain_retries=0",
                               "-e", "node_maintenance_drain_fallback=true")
        assert rc == 0, json.dumps(failures(doc))[:3000] + err[-2000:]
        drains = [e for e in events(lab, node)[before:] if e["op"] == "drain"]
        assert [(e["result"], e["disable_eviction"]) for e in drains] == [("pdb", False), ("drained", True)]
        assert numvfs(lab, node) == [2, 2] and not cordoned(lab, node)
        assert record(lab, node)["drain"]["disable_eviction"] is True
    finally:
        (lab.inventory / f"host_vars/{node}.yml").unlink(missing_ok=True)
