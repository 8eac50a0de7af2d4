"""The kubernetes path of roles/node_maintenance (status, cordon, drain,
uncordon) on recorded API responses: a stand-in kubernetes.core collection
(k8s_info, k8s_drain, k8s), first on the collections path, answers from a
scripted API state built from tests/unit/fixtures/kube/rollout and logs every
call, so the role's real task files run without a cluster."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.layers(11)

REPO = Path(__file__).resolve().parents[2]
FIX = Path(__file__).parent / "fixtures" / "kube" / "rollout"

COMMON = r'''
import json
import os

from ansible.module_utils.basic import AnsibleModule

D = os.environ["FAKE_K8S_DIR"]


def load():
    with open(os.path.join(D, "state.json")) as f:
        return json.load(f)


def save(state):
    with open(os.path.join(D, "state.json"), "w") as f:
        json.dump(state, f)


def log(call):
    with open(os.path.join(D, "calls.jsonl"), "a") as f:
        f.write(json.dumps(call) + "\n")


def module(**spec):
    base = dict(kubeconfig=dict(type="raw"), context=dict(type="str"))
    base.update(spec)
    return AnsibleModule(argument_spec=base, supports_check_mode=True)
'''

K8S_INFO = COMMON + r'''
m = module(kind=dict(type="str", required=True), name=dict(type="str"), namespace=dict(type="str"),
           api_version=dict(type="str", default="v1"))
p = m.params
st = load()
log({"module": "k8s_info", "kind": p["kind"], "api_version": p["api_version"], "name": p["name"]})
if p["kind"] == "Node":
    node = st.get("node")
    m.exit_json(changed=False, api_found=True, resources=[node] if node and node["metadata"]["name"] == p["name"] else [])
key = "%s/%s" % (p["api_version"], p["kind"])
seq = st.setdefault("reads", {}).get(key)
if not seq:
    m.exit_json(changed=False, api_found=False, resources=[])
answer = seq.pop(0) if len(seq) > 1 else seq[0]
save(st)
m.exit_json(**answer)
'''

K8S_DRAIN = COMMON + r'''
m = module(state=dict(type="str", default="drain"), name=dict(type="str", required=True),
           delete_options=dict(type="dict", default={}), pod_selectors=dict(type="list", elements="str"))
p = m.params
st = load()
log({"module": "k8s_drain", "state": p["state"], "name": p["name"], "delete_options": p["delete_options"],
     "pod_selectors": p["pod_selectors"]})
node = st["node"]
spec = node.setdefault("spec", {})
if p["state"] == "cordon":
    was = spec.get("unschedulable")
    spec["unschedulable"] = True
    save(st)
    m.exit_json(changed=not was, result="node %s %smarked unschedulable." % (p["name"], "already " if was else ""))
if p["state"] == "uncordon":
    was = spec.get("unschedulable")
    spec.pop("unschedulable", None)
    save(st)
    m.exit_json(changed=bool(was), result="node %s %smarked schedulable." % (p["name"], "" if was else "already "))
drains = st.get("drains") or []
answer = drains.pop(0) if drains else {"changed": True, "result": "node %s marked unschedulable." % p["name"]}
if p["delete_options"].get("disable_eviction") and answer.get("failed") and "budget" in answer.get("msg", ""):
    answer = {"changed": True, "result": "node %s already marked unschedulable. 2 Pod(s) deleted from node." % p["name"]}
spec["unschedulable"] = True
save(st)
if answer.get("failed"):
    m.fail_json(**{k: v for k, v in answer.items() if k != "failed"})
m.exit_json(**answer)
'''

K8S = COMMON + r'''
m = module(state=dict(type="str", default="present"), kind=dict(type="str"), name=dict(type="str"),
           definition=dict(type="raw"))
p = m.params
st = load()
log({"module": "k8s", "state": p["state"], "kind": p["kind"], "name": p["name"], "definition": p["definition"]})
ann = st["node"]["metadata"].setdefault("annotations", {})
for k, v in ((p["definition"] or {}).get("metadata", {}).get("annotations") or {}).items():
    if v is None:
        ann.pop(k, None)
    else:
        ann[k] = v
save(st)
m.exit_json(changed=True, result=st["node"])
'''

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    gpufabric_kube_backend: kubernetes
    kube_node_name: gpu-a02
    node_maintenance_wait_delay: 0
    node_maintenance_wait_retries: 5
    node_maintenance_drain_retry_delay: 0
    rollout_id: "4711"
  tasks:
    - name: Run the operations in order
      ansible.builtin.include_role:
        name: gpufabric.stack.node_maintenance
      vars:
        node_maintenance_op: "{{ item }}"
      loop: "{{ ops }}"
    - name: Show the outcome
      ansible.builtin.debug:
        msg: "{{ {'status': node_maintenance_status | default(none), 'drain': node_maintenance_drain | default(none)} | to_json }}"
"""


def load(name):
    return json.loads((FIX / name).read_text())


@pytest.fixture
def kube(tmp_path):
    mods = tmp_path / "fake" / "ansible_collections" / "kubernetes" / "core" / "plugins" / "modules"
    mods.mkdir(parents=True)
    (mods.parent.parent / "meta").mkdir()
    (mods.parent.parent / "meta" / "runtime.yml").write_text("---\nrequires_ansible: '>=2.15'\n")
    for name, text in (("k8s_info", K8S_INFO), ("k8s_drain", K8S_DRAIN), ("k8s", K8S)):
        (mods / f"{name}.py").write_text("#!/usr/bin/python\n" + text)
    api = tmp_path / "api"
    api.mkdir()
    (tmp_path / "play.yml").write_text(PLAYBOOK)

    def run(state, ops, *extra):
        (api / "state.json").write_text(json.dumps(state))
        (api / "calls.jsonl").write_text("")
        env = dict(os.environ, FAKE_K8S_DIR=str(api), ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
                   ANSIBLE_COLLECTIONS_PATH=f"{tmp_path / 'fake'}:{REPO / '.build'}",
                   ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_NOCOLOR="1", PYTHONPATH=str(REPO))
        proc = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", "localhost,",
                               str(tmp_path / "play.yml"), "-e", json.dumps({"ops": ops}), *extra],
                              cwd=REPO, env=env, capture_output=True, text=True)
        out = json.loads(proc.stdout)
        tasks = [t for p in out["plays"] for t in p["tasks"]]
        shown = [t["hosts"]["localhost"] for t in tasks if t["task"]["name"] == "Show the outcome"]
        failed = [t["hosts"]["localhost"].get("msg") for t in tasks if t["hosts"]["localhost"].get("failed")]
        calls = [json.loads(line) for line in (api / "calls.jsonl").read_text().splitlines()]
        return {"rc": proc.returncode, "outcome": json.loads(shown[0]["msg"]) if shown else None,
                "failed": failed, "calls": calls, "api": json.loads((api / "state.json").read_text())}
    return run


def test_cordon_drain_uncordon_of_a_schedulable_node(kube):
    state = {"node": load("node-schedulable.json"),
             "reads": {"sriovnetwork.openshift.io/v1/SriovNetworkNodeState": [load("sriovnetworknodestate-idle.k8s_info.json")]}}
    r = kube(state, ["status", "cordon", "drain", "uncordon"])
    assert r["rc"] == 0, r["failed"]
    assert r["outcome"]["status"]["action"] == "drain" and r["outcome"]["status"]["uncordon"] is True
    assert r["outcome"]["drain"]["drained"] is True
    steps = [(c["module"], c.get("state") or c.get("kind")) for c in r["calls"]]
    assert steps == [("k8s_info", "Node"), ("k8s_info", "SriovNetworkNodeState"), ("k8s_info", "NodeMaintenance"),
                     ("k8s_info", "NodeMaintenance"),
                     ("k8s", "patched"), ("k8s_drain", "cordon"), ("k8s_drain", "drain"),
                     ("k8s_drain", "uncordon"), ("k8s", "patched")]
    # the mark goes on before the cordon and comes off after the uncordon
    assert r["calls"][4]["definition"] == {"metadata": {"annotations": {"gpufabric.stack/rollout": "4711"}}}
    assert r["calls"][-1]["definition"] == {"metadata": {"annotations": {"gpufabric.stack/rollout": None}}}
    assert r["calls"][6]["delete_options"] == {"ignore_daemonsets": True, "delete_emptydir_data": True, "force": False,
                                               "wait_timeout": 300, "wait_sleep": 5}
    assert "gpufabric.stack/rollout" not in r["api"]["node"]["metadata"]["annotations"]
    assert not r["api"]["node"]["spec"].get("unschedulable")


def test_status_waits_while_the_sriov_operator_drains_then_decides(kube):
    draining = load("sriovnetworknodestate-draining.k8s_info.json")
    idle = load("sriovnetworknodestate-idle.k8s_info.json")
    state = {"node": load("node-schedulable.json"),
             "reads": {"sriovnetwork.openshift.io/v1/SriovNetworkNodeState": [draining, draining, idle]}}
    r = kube(state, ["status"])
    assert r["rc"] == 0, r["failed"]
    reads = [c for c in r["calls"] if c.get("kind") == "SriovNetworkNodeState"]
    assert len(reads) == 3
    assert r["outcome"]["status"]["action"] == "drain"


def test_status_joins_a_ready_nvidia_node_maintenance(kube):
    state = {"node": load("node-cordoned-by-admin.json"),
             "reads": {"maintenance.nvidia.com/v1alpha1/NodeMaintenance": [load("nodemaintenance-nvidia-ready.k8s_info.json")]}}
    r = kube(state, ["status"])
    assert r["outcome"]["status"]["action"] == "join" and r["outcome"]["status"]["uncordon"] is False


def test_status_of_a_missing_node_is_blocked(kube):
    state = {"node": load("node-schedulable.json")}
    r = kube(state, ["status"], "-e", "kube_node_name=gpu-a09")
    assert r["outcome"]["status"]["action"] == "blocked" and "gpu-a09" in r["outcome"]["status"]["reason"]


def test_drain_refused_by_pdb_retries_then_fails_naming_the_fallback(kube):
    pdb = load("drain-pdb.k8s_drain.json")
    state = {"node": load("node-cordoned-by-rollout.json"), "drains": [pdb, pdb, pdb, pdb]}
    r = kube(state, ["drain"], "-e", "node_maintenance_drain_retries=2")
    assert r["rc"] != 0
    assert [c["state"] for c in r["calls"]] == ["drain", "drain", "drain"]
    assert any("drain of node gpu-a02 failed (pdb)" in (m or "") and "disruption budget" in m
               and "node_maintenance_drain_fallback: true would delete the pods" in m for m in r["failed"]), r["failed"]


def test_drain_falls_back_to_deleting_pods(kube):
    pdb = load("drain-pdb.k8s_drain.json")
    state = {"node": load("node-cordoned-by-rollout.json"), "drains": [pdb, pdb]}
    r = kube(state, ["drain"], "-e", "node_maintenance_drain_retries=1", "-e", "node_maintenance_drain_fallback=true")
    assert r["rc"] == 0, r["failed"]
    assert [c["delete_options"].get("disable_eviction", False) for c in r["calls"]] == [False, False, True]
    assert r["outcome"]["drain"]["drained"] and r["outcome"]["drain"]["disable_eviction"] is True


def test_drain_timeout_is_retried_and_unmanaged_pods_are_not(kube):
    state = {"node": load("node-cordoned-by-rollout.json"),
             "drains": [load("drain-timeout.k8s_drain.json"), load("drain-ok.k8s_drain.json")]}
    r = kube(state, ["drain"])
    assert r["rc"] == 0 and len(r["calls"]) == 2 and r["outcome"]["drain"]["evicted"] == 3
    state["drains"] = [load("drain-unmanaged.k8s_drain.json"), load("drain-ok.k8s_drain.json")]
    r = kube(state, ["drain"], "-e", "node_maintenance_drain_fallback=true")
    assert r["rc"] != 0 and len(r["calls"]) == 1
    assert any("(unmanaged)" in (m or "") for m in r["failed"])
