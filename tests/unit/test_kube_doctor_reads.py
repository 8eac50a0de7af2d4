"""The doctor's checks of layers 11-14 (plugin_utils/checks/kubeadm.py,
cni.py, multus.py and sriov_operator.py, read by the doctor action once for
the play, as roles/doctor/tasks/layers.yml runs it) run by ansible-playbook against
recorded API objects: a stand-in for kubernetes.core's k8s_info and k8s_cluster_info
(tests/unit/fixtures/fake_k8s) answers from tests/unit/fixtures/kube and logs
every call. Two GPU nodes, gpu-a01 (healthy) and gpu-a02 (its CNI not ready,
its SR-IOV sync failed), and a control-plane host, all local connections.

Each distinct object is read once for the play, on the control-plane host,
whichever layers want it, and every node still gets the verdict on its own
objects."""

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.layers(11, 12, 13, 14)

REPO = Path(__file__).resolve().parents[1].parent
FIXTURES = REPO / "tests" / "unit" / "fixtures"
KUBE = FIXTURES / "kube"

PLAY = """
- name: The doctor's layers 11-14 against recorded API objects
  hosts: gpu_workers
  gather_facts: false
  tasks:
    - name: Read the cluster once and check layers 11-14 on every node
      gpufabric.stack.doctor:
        layers: "{{ 'gpu_workers' | gpufabric.stack.doctor_layers('cluster') | map(attribute='layer') | list }}"
      register: doctor_cluster
      run_once: true
      delegate_to: "{{ groups['kube_control_plane'] | first }}"

    - name: Write the results
      ansible.builtin.copy:
        content: "{{ doctor_cluster.hosts[inventory_hostname] | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost
"""


def objects():
    out = []
    for path in sorted(KUBE.glob("*.json")):
        data = json.loads(path.read_text())
        out.extend(data.get("items", [data]) if isinstance(data, dict) else data)
    return out


def run_doctor(tmp, play, *args):
    """The play run over the two nodes and the control-plane host: (each
    node's records by layer, the API calls made, the process)."""
    (tmp / "objects.json").write_text(json.dumps(objects()))
    (tmp / "admin.conf").write_text("apiVersion: v1\nkind: Config\n")
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    nics = [{"vendor": "0x15b3", "num_vfs": 8}]
    inventory = {"all": {
        "vars": dict(local, gpufabric_kubeconfig=str(tmp / "admin.conf"), gpufabric_tenants=[]),
        "children": {
            "kube_control_plane": {"hosts": {"cp-01": {}}},
            "kube_node": {"hosts": {"gpu-a01": {}, "gpu-a02": {}}},
            "gpu_workers": {"hosts": {"gpu-a01": {"gpufabric_nics": nics}, "gpu-a02": {"gpufabric_nics": nics}}}}}}
    (tmp / "hosts.yml").write_text(json.dumps(inventory))
    (tmp / "play.yml").write_text(play)
    log = tmp / "calls.jsonl"
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH="%s:%s" % (FIXTURES / "fake_k8s", REPO / ".build"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PYTHONPATH=str(REPO),
               FAKE_K8S_OBJECTS=str(tmp / "objects.json"), FAKE_K8S_LOG=str(log))
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(tmp / "hosts.yml"),
                           str(tmp / "play.yml"), "-e", "out=%s" % tmp] + list(args),
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    results = {h: {r["layer"]: r for r in json.loads((tmp / (h + ".json")).read_text())}
               for h in ("gpu-a01", "gpu-a02")}
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return results, calls, proc


@pytest.fixture(scope="module")
def doctor(tmp_path_factory):
    return run_doctor(tmp_path_factory.mktemp("kube-doctor"), PLAY)


def test_each_object_is_read_once_for_the_play_and_not_per_node_or_layer(doctor):
    _, calls, _ = doctor
    kinds = Counter(c["kind"] for c in calls)
    # kubeadm, cni, multus and sriov_operator all judge the Nodes: one list
    assert kinds["Node"] == 1, calls
    # the CNI agents, the Multus pods and the operator's pods: three selections
    assert kinds["Pod"] == 3 and kinds["ClusterInfo"] == 1, calls
    assert kinds["SriovNetworkNodeState"] == 1, calls
    assert len(calls) == len(set(json.dumps(c, sort_keys=True) for c in calls)), calls
    assert all(not c.get("field_selectors") for c in calls if "field_selectors" in c), calls
    assert [c["name"] for c in calls if c["kind"] in ("Node", "SriovNetworkNodeState")] == [None] * 2, calls


def test_every_node_gets_the_verdict_on_its_own_objects(doctor):
    results, _, _ = doctor
    a01, a02 = results["gpu-a01"], results["gpu-a02"]
    # layer 11: each node's own Node (gpu-a02's kubelet is not ready)
    assert "Ready True (KubeletReady)" in a01[11]["evidence"], a01[11]
    assert "Ready False (KubeletNotReady)" in a02[11]["evidence"], a02[11]
    # layer 12: gpu-a01 judged on its own calico-node pod; gpu-a02's Node is not ready for the CNI
    assert "calico-node-7xkq2 Ready" in a01[12]["evidence"], a01[12]
    assert not any("b9z4m" in e for e in a01[12]["evidence"]), a01[12]
    assert a02[12]["status"] == "fail" and a02[12]["reason"].startswith("node gpu-a02 NotReady: "), a02[12]
    # layer 13: each node's own Multus pod
    assert a01[13]["status"] == "warn" and "kube-multus-ds-4tq8d Ready" in a01[13]["evidence"], a01[13]
    assert a02[13]["status"] == "fail", a02[13]
    assert a02[13]["reason"].startswith("Multus pod on gpu-a02: kube-multus-ds-x2w7j not ready"), a02[13]
    # layer 14: each node's own config daemon and SriovNetworkNodeState
    assert a01[14]["status"] == "pass" and "sriov-network-config-daemon-5kz9w Ready" in a01[14]["evidence"], a01[14]
    assert a02[14]["status"] == "fail" and a02[14]["reason"].startswith("operator sync failed on gpu-a02: "), a02[14]
    assert "SriovNetworkNodeState sriov-network-operator/gpu-a02: syncStatus Failed" in a02[14]["evidence"], a02[14]


FAILED_BELOW = PLAY.replace("""  tasks:
""", """  tasks:
    - name: The node layers of the hosts in failed_below failed in this run, at layer 5
      ansible.builtin.set_fact:
        doctor_node:
          results:
            - {layer: 4, name: nic_firmware, status: pass, reason: ok, evidence: [], remediation: ""}
            - {layer: 5, name: rdma_drivers, status: fail, reason: mlx5_ib not loaded, evidence: [], remediation: ""}
            - {layer: 6, name: sriov_vfs, status: fail, reason: checked all the same, evidence: [], remediation: ""}
      when: inventory_hostname in failed_below

""", 1)


def test_a_node_whose_lower_layers_failed_is_blocked_and_not_read_for(tmp_path):
    assert FAILED_BELOW != PLAY
    (tmp_path / "one").mkdir()
    (tmp_path / "both").mkdir()
    results, calls, _ = run_doctor(tmp_path / "one", FAILED_BELOW, "-e", json.dumps({"failed_below": ["gpu-a02"]}))
    a01, a02 = results["gpu-a01"], results["gpu-a02"]
    assert [(n, r["status"], r["reason"]) for n, r in sorted(a02.items())] == [
        (n, "blocked", "blocked by layer 5") for n in (11, 12, 13, 14)]
    # the other node is judged as ever, on its own objects
    assert "Ready True (KubeletReady)" in a01[11]["evidence"], a01[11]
    assert a01[14]["status"] == "pass", a01[14]
    assert calls, "gpu-a01's objects were not read"
    # every node blocked: the API is not read at all
    results, calls, _ = run_doctor(tmp_path / "both", FAILED_BELOW, "-e",
                                   json.dumps({"failed_below": ["gpu-a01", "gpu-a02"]}))
    assert calls == []
    assert {r["reason"] for h in results.values() for r in h.values()} == {"blocked by layer 5"}
