"""The doctor's layer 12-14 checks (plugins/plugin_utils/kube_checks.py) on
API objects in the shape kubectl and kubernetes.core.k8s_info return."""

import copy
import json
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils import kube_checks as kc

pytestmark = pytest.mark.layers(12, 13, 14)

FIX = Path(__file__).parent / "fixtures" / "kube"


def load(name):
    data = json.loads((FIX / name).read_text())
    return data["items"] if data.get("kind") == "List" else data


@pytest.fixture
def node():
    return load("node-gpu-a01.json")


EXPECTED_NADS = [{"namespace": "team-a", "name": "team-a-gpu-rail0", "resource": "gpu_rail0"},
                 {"namespace": "team-a", "name": "team-a-gpu-rail1", "resource": "gpu_rail1"}]
RESOURCES = ["openshift.io/gpu_rail0", "openshift.io/gpu_rail1"]


# ---------------------------------------------------------------- layer 12

def test_cni_pass_with_calico_ready_and_mtu_as_intended(node):
    r = kc.check_cni("gpu-a01", node, load("pods-calico-node.json"), "calico", 8950, load("installation-default.json"))
    assert r["status"] == "pass" and r["layer"] == 12 and r["name"] == "cni", r
    assert "calico-node-7xkq2 Ready" in r["evidence"]
    assert "NetworkUnavailable False (CalicoIsUp)" in r["evidence"]
    assert any("status.mtu: 8950" in e for e in r["evidence"])


def test_cni_mtu_drift_from_the_intent_fails(node):
    r = kc.check_cni("gpu-a01", node, load("pods-calico-node.json"), "calico", 8930, load("installation-default.json"))
    assert r["status"] == "fail" and "MTU 8950 differs from the intent 8930" in r["reason"]


def test_cni_not_initialised_names_the_kubelet_message():
    r = kc.check_cni("gpu-a02", load("node-gpu-a02-cni-not-ready.json"), [], "calico")
    assert r["status"] == "fail"
    assert r["reason"].startswith("node gpu-a02 NotReady: container runtime network not ready")
    assert "cni plugin not initialized" in r["reason"]


def test_cni_crashlooping_agent_names_pod_and_restarts(node):
    # the node object still says Ready (kubelet keeps the last CNI config); the pod tells
    other = copy.deepcopy(node)
    other["metadata"]["name"] = "gpu-a02"
    r = kc.check_cni("gpu-a02", other, load("pods-calico-node.json"), "calico")
    assert r["status"] == "fail"
    assert "calico-node-b9z4m not ready: container calico-node CrashLoopBackOff" in r["reason"]
    assert "(restarts 14)" in r["reason"]


def test_cni_network_unavailable_true_fails(node):
    n = copy.deepcopy(node)
    cond = kc.condition(n, "NetworkUnavailable")
    cond.update(status="True", reason="NoRouteCreated", message="Node created without a route")
    r = kc.check_cni("gpu-a01", n, load("pods-calico-node.json"), "calico")
    assert r["status"] == "fail" and "NetworkUnavailable: NoRouteCreated" in r["reason"]


def test_cni_no_agent_pod_on_the_node(node):
    pods = [p for p in load("pods-calico-node.json") if p["spec"]["nodeName"] != "gpu-a01"]
    r = kc.check_cni("gpu-a01", node, pods, "calico")
    assert r["status"] == "fail" and r["reason"] == "no calico-node pod on node gpu-a01"


def test_cilium_device_mtu_from_its_configmap(node):
    pod = copy.deepcopy(load("pods-calico-node.json")[0])
    pod["metadata"]["labels"] = {"k8s-app": "cilium"}
    cfg = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"},
           "data": {"mtu": "9000", "routing-mode": "tunnel", "tunnel-protocol": "vxlan"}}
    assert kc.check_cni("gpu-a01", node, [pod], "cilium", 9000, cilium_config=cfg)["status"] == "pass"
    r = kc.check_cni("gpu-a01", node, [pod], "cilium", 1500, cilium_config=cfg)
    assert r["status"] == "fail" and "cilium MTU 9000" in r["reason"]


def test_missing_node_and_api_errors():
    assert kc.check_cni("gpu-a09", None, [])["reason"] == "node gpu-a09 is not registered in the cluster"
    r = kc.check_multus("gpu-a01", None, None, None, [], api_error="Failed to load kubeconfig due to ...")
    assert r["status"] == "fail" and r["reason"].startswith("Kubernetes API: Failed to load kubeconfig")


# ---------------------------------------------------------------- layer 13

def test_multus_ready_on_node_warns_when_another_node_lags(node):
    r = kc.check_multus("gpu-a01", node, load("crd-network-attachment-definitions.json"),
                        load("daemonset-kube-multus-ds.json"), load("pods-multus.json"))
    assert r["status"] == "warn" and r["layer"] == 13
    assert "2 of 3 Multus pods are ready" in r["reason"]
    ds = load("daemonset-kube-multus-ds.json")
    ds["status"].update(numberReady=3, numberAvailable=3, numberUnavailable=0)
    r = kc.check_multus("gpu-a01", node, load("crd-network-attachment-definitions.json"), ds, load("pods-multus.json"))
    assert r["status"] == "pass"


def test_multus_crashloop_on_the_node(node):
    r = kc.check_multus("gpu-a02", node, load("crd-network-attachment-definitions.json"),
                        load("daemonset-kube-multus-ds.json"), load("pods-multus.json"))
    assert r["status"] == "fail" and "kube-multus-ds-x2w7j not ready: container kube-multus CrashLoopBackOff" in r["reason"]


def test_multus_crd_missing_or_not_established(node):
    r = kc.check_multus("gpu-a01", node, None, load("daemonset-kube-multus-ds.json"), load("pods-multus.json"))
    assert r["status"] == "fail" and "CRD network-attachment-definitions.k8s.cni.cncf.io missing" == r["reason"]
    crd = load("crd-network-attachment-definitions.json")
    kc.condition(crd, "Established").update(status="False", message="not all names are accepted")
    r = kc.check_multus("gpu-a01", node, crd, load("daemonset-kube-multus-ds.json"), load("pods-multus.json"))
    assert r["status"] == "fail" and "not established: not all names are accepted" in r["reason"]


def test_multus_daemonset_missing(node):
    r = kc.check_multus("gpu-a01", node, load("crd-network-attachment-definitions.json"), None, [])
    assert r["status"] == "fail" and r["reason"] == "Multus DaemonSet missing"


# ---------------------------------------------------------------- layer 14

def check14(node, **kw):
    args = dict(operator_pods=load("pods-sriov-network-operator.json"), resources=RESOURCES,
                expected_nads=EXPECTED_NADS, nads=load("nads.json"),
                node_state=load("sriovnetworknodestate-gpu-a01.json"))
    args.update(kw)
    return kc.check_sriov_operator(node["metadata"]["name"], node, **args)


def test_operator_pass(node):
    r = check14(node)
    assert r["status"] == "pass" and r["layer"] == 14 and r["name"] == "sriov_operator", r
    assert "allocatable openshift.io/gpu_rail0: 8" in r["evidence"]
    assert "SriovNetworkNodeState sriov-network-operator/gpu-a01: syncStatus Succeeded" in r["evidence"]


def test_allocatable_zero_names_resource_and_node(node):
    n = copy.deepcopy(node)
    n["status"]["allocatable"]["openshift.io/gpu_rail1"] = "0"
    r = check14(n)
    assert r["status"] == "fail" and r["reason"] == "allocatable openshift.io/gpu_rail1 is 0 on gpu-a01"
    del n["status"]["allocatable"]["openshift.io/gpu_rail0"]
    assert check14(n)["reason"] == "allocatable openshift.io/gpu_rail0 is 0 on gpu-a01"


def test_nad_missing_in_a_tenant_namespace(node):
    want = EXPECTED_NADS + [{"namespace": "team-b", "name": "team-b-gpu-rail1", "resource": "gpu_rail1"}]
    r = check14(node, expected_nads=want)
    assert r["status"] == "fail"
    assert r["reason"] == "NetworkAttachmentDefinition team-b/team-b-gpu-rail1 missing in tenant namespace team-b"


def test_nad_with_another_resource_fails(node):
    nads = load("nads.json")
    nads[1]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] = "openshift.io/gpu_rail0"
    r = check14(node, nads=nads)
    assert r["status"] == "fail" and "team-a/team-a-gpu-rail1 requests 'openshift.io/gpu_rail0'" in r["reason"]


def test_sync_failed_reports_the_operator_error():
    node = load("node-gpu-a01.json")
    node["metadata"]["name"] = "gpu-a02"
    pods = load("pods-sriov-network-operator.json")
    dp = copy.deepcopy([p for p in pods if p["metadata"]["labels"].get("app") == "sriov-device-plugin"][0])
    dp["spec"]["nodeName"] = "gpu-a02"
    r = check14(node, operator_pods=pods + [dp], node_state=load("sriovnetworknodestate-gpu-a02-failed.json"))
    assert r["status"] == "fail"
    assert "operator sync failed on gpu-a02" in r["reason"]
    assert "number of request virtual functions 8 is not equal to configured virtual functions 4" in r["reason"]


def test_device_plugin_missing_on_the_node(node):
    node = copy.deepcopy(node)
    node["metadata"]["name"] = "gpu-a02"
    r = check14(node)
    assert r["status"] == "fail" and r["reason"].startswith("no sriov-device-plugin pod on node gpu-a02")


def test_operator_controller_not_ready(node):
    pods = load("pods-sriov-network-operator.json")
    ctl = pods[0]
    ctl["status"]["conditions"][2]["status"] = "False"
    ctl["status"]["containerStatuses"][0].update(ready=False, state={"waiting": {"reason": "ImagePullBackOff",
                                                                               "message": "Back-off pulling image"}})
    r = check14(node, operator_pods=pods)
    assert r["status"] == "fail"
    assert "sriov-network-operator-6c8b9d7f5c-h2kqz not ready: container sriov-network-operator ImagePullBackOff" in r["reason"]


def test_operator_absent(node):
    r = check14(node, operator_pods=[])
    assert r["status"] == "fail" and "no pod in its namespace" in r["reason"]


def test_sync_in_progress_warns(node):
    st = load("sriovnetworknodestate-gpu-a01.json")
    st["status"]["syncStatus"] = "InProgress"
    assert check14(node, node_state=st)["status"] == "warn"


def test_nvidia_provider_rdma_shared_dp_and_policy_state(node):
    pods = load("pods-sriov-network-operator.json")
    ctl = copy.deepcopy(pods[0])
    ctl["metadata"].update(name="network-operator-7d9f8c6b5-abcde", namespace="nvidia-network-operator")
    dp = copy.deepcopy(pods[3])
    dp["metadata"].update(name="rdma-shared-dp-ds-2lq9x", namespace="nvidia-network-operator",
                          labels={"app": "rdma-shared-dp", "ds-owner": "nic-cluster-policy"})
    n = copy.deepcopy(node)
    n["status"]["allocatable"].update({"rdma/gpu_rail0": "63", "rdma/gpu_rail1": "63"})
    ncp = {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "metadata": {"name": "nic-cluster-policy"},
           "status": {"state": "ready", "appliedStates": [{"name": "state-RDMA-device-plugin", "state": "ready"}]}}
    args = dict(operator_pods=[ctl, dp], resources=["rdma/gpu_rail0", "rdma/gpu_rail1"], expected_nads=[], nads=[],
                provider="nvidia-network-operator", node_state=None, nic_cluster_policy=ncp)
    assert kc.check_sriov_operator("gpu-a01", n, **args)["status"] == "pass"
    ncp["status"] = {"state": "notReady", "appliedStates": [
        {"name": "state-RDMA-device-plugin", "state": "notReady", "message": "DaemonSet not ready"}]}
    r = kc.check_sriov_operator("gpu-a01", n, **args)
    assert r["status"] == "fail" and "state-RDMA-device-plugin notReady DaemonSet not ready" in r["reason"]


def test_node_without_resources_needs_no_device_plugin(node):
    n = copy.deepcopy(node)
    n["metadata"]["name"] = "cp-01"
    r = check14(n, resources=[], expected_nads=[], node_state=None)
    assert r["status"] == "pass", r
