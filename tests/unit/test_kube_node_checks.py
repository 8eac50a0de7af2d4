"""Layers 10-11: the inventory's Kubernetes intent checked before any change
(plugins/plugin_utils/kubeadm/kube_intent.py), and the doctor's layer 10 and 11
verdicts (plugins/plugin_utils/kube_checks.py, through plugins/filter/kube.py)
on recorded containerd config dumps, Node objects and kubelet configs."""

import copy
import json
import tomllib
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.stack.plugins.filter import kube as F
from ansible_collections.gpufabric.stack.plugins.plugin_utils import kube_checks as kc
from ansible_collections.gpufabric.stack.plugins.plugin_utils.kubeadm import kube_intent as ki
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import container_runtime as container_runtime_check
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import kubeadm as kubeadm_check

pytestmark = pytest.mark.layers(10, 11)

FIX = Path(__file__).parent / "fixtures" / "kube"
SCHEMAS = Path(__file__).parent / "schemas"
K8S = "1.34"


def load(name):
    return json.loads((FIX / name).read_text())


def dump(name):
    return (FIX / name).read_text()


# ------------------------------------------------------------ intent: versions

@pytest.mark.parametrize("text,want", [("1.34.1", (1, 34, 1)), ("v1.34.1", (1, 34, 1)),
                                       ("v1.31.5+k3s1", (1, 31, 5)), (" 1.35.0 ", (1, 35, 0))])
def test_parse_version(text, want):
    assert ki.parse_version(text) == want


@pytest.mark.parametrize("text", ["1.34", "latest", "", None, "1.34.x", "v1..3"])
def test_version_errors_name_the_variable_and_value(text):
    errors = ki.version_errors(text, "gpufabric_kube_version")
    assert len(errors) == 1 and errors[0].startswith("gpufabric_kube_version")
    assert repr(text) in errors[0]


def test_version_before_v1beta4_is_refused():
    errors = ki.version_errors("1.30.4")
    assert errors and "1.31" in errors[0] and "v1beta4" in errors[0]
    assert ki.version_errors("1.31.0") == [] and ki.version_errors("v1.34.1") == []


def test_minor_is_the_pkgs_channel():
    assert F.kube_minor("1.34.1") == "1.34" and F.kube_minor("v1.31.0") == "1.31"
    with pytest.raises(AnsibleFilterError):
        F.kube_minor("one")


@pytest.mark.parametrize("server,kubelet,ok", [
    ("v1.34.1", "v1.34.1", True), ("v1.34.1", "v1.31.0", True), ("v1.34.1", "v1.30.14", False),
    ("v1.34.1", "v1.35.0", False), ("v1.34.1", "v1.34.9", True),
])
def test_kubelet_skew_policy(server, kubelet, ok):
    errors = ki.skew_errors(server, kubelet, "gpu-a01")
    assert (errors == []) is ok
    if not ok:
        assert "gpu-a01" in errors[0] and kubelet in errors[0]


def test_upgrade_policy_one_minor_at_a_time_and_no_downgrade():
    assert ki.upgrade_errors("v1.33.4", "1.34.1") == []
    assert ki.upgrade_errors("v1.34.1", "1.34.1") == []
    assert "one minor" in ki.upgrade_errors("v1.32.0", "1.34.1")[0]
    assert "downgrade" in ki.upgrade_errors("v1.34.1", "1.33.9")[0]


# ------------------------------------------------------------ intent: addresses

NODES = [{"variable": "gpufabric_node_networks", "value": "10.10.0.0/24"},
         {"variable": "ansible_host of gpu-a01", "value": "10.10.0.11"},
         {"variable": "ansible_host of node01", "value": "simlab-lab-node01"}]


def test_sound_plan_has_no_errors():
    assert ki.network_errors("10.244.0.0/16", "10.96.0.0/12", NODES, node_count=9) == []


def test_pod_cidr_overlapping_the_node_network_names_both():
    errors = ki.network_errors("10.10.0.0/16", "10.96.0.0/12", NODES)
    assert any("gpufabric_kube_pod_cidr 10.10.0.0/16 overlaps the node network 10.10.0.0/24 (gpufabric_node_networks)"
               == e for e in errors), errors
    assert any("node address 10.10.0.11 (ansible_host of gpu-a01)" in e for e in errors)


def test_service_cidr_overlapping_pods_or_a_roce_address():
    errors = ki.network_errors("10.96.0.0/16", "10.96.0.0/12", NODES)
    assert errors[0] == "gpufabric_kube_pod_cidr 10.96.0.0/16 overlaps gpufabric_kube_service_cidr 10.96.0.0/12"
    roce = [{"variable": "roce_addresses.enp59s0f0np0 of node01", "value": "172.30.0.1"}]
    errors = ki.network_errors("10.244.0.0/16", "172.30.0.0/16", roce)
    assert errors == ["gpufabric_kube_service_cidr 172.30.0.0/16 overlaps the node address 172.30.0.1 "
                      "(roce_addresses.enp59s0f0np0 of node01)"]


def test_cidr_that_is_not_a_network_is_named():
    errors = ki.network_errors("10.244.0.1/16", "10.96.0.0/12", [], pod_variable="gpufabric_kube_pod_cidr (kubeadm_pod_subnet)")
    assert errors and errors[0].startswith("gpufabric_kube_pod_cidr (kubeadm_pod_subnet) '10.244.0.1/16' is not a network")


def test_pod_cidr_too_small_for_the_nodes():
    errors = ki.network_errors("10.244.0.0/22", "10.96.0.0/12", [], node_count=9, node_cidr_mask_size=24)
    assert errors == ["gpufabric_kube_pod_cidr 10.244.0.0/22 has room for 4 per-node /24 blocks, "
                      "the inventory has 9 Kubernetes nodes"]
    assert "cannot be cut" in ki.network_errors("10.244.0.0/26", "10.96.0.0/12", [], node_cidr_mask_size=24)[0]


def test_node_networks_skip_host_names_and_read_only_the_named_variables():
    class Strict(dict):
        def __getitem__(self, key):
            if key == "vault_secret":
                raise AssertionError("read a variable it does not need")
            return dict.__getitem__(self, key)

    hv = {"cp-01": Strict(ansible_host="10.10.0.5", vault_secret="x"),
          "node01": Strict(ansible_host="simlab-lab-node01", roce_addresses={"enp59s0f0np0": "172.30.0.1"})}
    out = F.kube_node_networks(hv, ["cp-01", "node01"], ["10.10.0.0/24"])
    assert {"variable": "ansible_host of cp-01", "value": "10.10.0.5"} in out
    assert {"variable": "roce_addresses.enp59s0f0np0 of node01", "value": "172.30.0.1"} in out
    assert ki.network_errors("10.244.0.0/16", "10.96.0.0/12", out) == []


def test_cluster_dns_is_the_tenth_service_address():
    assert F.kube_cluster_dns("10.96.0.0/12") == "10.96.0.10"
    assert F.kube_cluster_dns("172.20.0.0/16") == "172.20.0.10"


def test_kube_address_tells_ips_from_names():
    assert F.kube_address("10.10.0.5") == "10.10.0.5"
    assert F.kube_address("simlab-lab-node01") == "" and F.kube_address(None) == ""


def test_join_command_parse():
    text = ("kubeadm join 10.10.0.5:6443 --token 7xk2qe.q9w4l1z0c8m3v5b6 \\\n"
            "\t--discovery-token-ca-cert-hash sha256:" + "ab12" * 16 + " \n")
    assert F.kube_join_parse(text) == {"token": "7xk2qe.q9w4l1z0c8m3v5b6", "ca_cert_hash": "sha256:" + "ab12" * 16}
    with pytest.raises(AnsibleFilterError):
        F.kube_join_parse("kubeadm join 10.10.0.5:6443")


@pytest.mark.parametrize("text,want", [
    ("containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3", 2),
    ("containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da", 2),
    ("containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7193e4e490e9fbdc236c0e811ccaba3376", 3),
])
def test_containerd_config_version(text, want):
    assert F.containerd_config_version(text) == want


def test_object_file_names():
    assert F.kube_object_file({"kind": "RuntimeClass", "metadata": {"name": "nvidia"}}) == "runtimeclass-nvidia.yaml"
    assert F.kube_object_file({"kind": "ConfigMap", "metadata": {"name": "a", "namespace": "kube-system"}}) \
        == "configmap-kube-system-a.yaml"
    with pytest.raises(AnsibleFilterError):
        F.kube_object_file({"kind": "ConfigMap", "metadata": {}})


def test_config_drift_names_keys():
    live = yaml.safe_load(dump("kubelet-config-gpu-worker.yaml"))
    wanted = dict(live, topologyManagerPolicy="restricted")
    assert ki.config_drift(live, wanted, ["cgroupDriver", "topologyManagerPolicy"]) == [
        {"key": "topologyManagerPolicy", "live": "single-numa-node", "wanted": "restricted"}]


# ------------------------------------------------------------ layer 10

SETTINGS = {"cni_required": ["loopback", "bridge", "host-local", "portmap"], "gpu_count": "8", "nvidia_mode": "auto",
            "nvidia_runtime_path": "/usr/bin/nvidia-container-runtime"}


def rt_facts(**kw):
    """What gpufabric.stack.container_runtime_facts returns for a healthy node
    (with the captured config dump), as tasks/check.yml passes it."""
    facts = {
        "unit_exists": True, "active": "active", "started_at": 1790000600.0,
        "ctr_rc": 0, "ctr_output": "Client:\n  Version:  1.6.20~ds1\n\nServer:\n  Version:  1.6.20~ds1\n",
        "config_dump": dump("containerd-1.6-config-dump-layer10.toml"),
        "config_error": "", "config_path": "/etc/containerd/config.toml", "config_mtime": 1790000550.5,
        "modules": {"overlay": True, "br_netfilter": True},
        "sysctls": {"net.bridge.bridge-nf-call-iptables": ["1", "1"], "net.ipv4.ip_forward": ["1", "1"]},
        "swaps": [], "kubelet_config": "", "cni_plugins": ["bridge", "host-local", "loopback", "portmap"],
        "nvidia_binary": False,
    }
    facts.update(kw)
    return facts


def check10(facts, **settings):
    return container_runtime_check.judge(facts, dict(SETTINGS, **settings))


def test_layer10_pass_on_the_captured_dump():
    r = check10(rt_facts())
    assert r["layer"] == 10 and r["name"] == "container_runtime" and r["status"] == "pass", r
    assert "runtime runc: SystemdCgroup = true" in r["evidence"]
    assert "ctr version: server 1.6.20~ds1" in r["evidence"]
    assert any("NVIDIA container toolkit not installed" in e for e in r["evidence"])


def test_layer10_debian_default_config_fails_on_systemd_cgroup():
    r = check10(rt_facts(config_dump=dump("containerd-1.6-config-dump-debian-default.toml")))
    assert r["status"] == "fail" and "SystemdCgroup is not true for runtime runc" in r["reason"], r


def test_layer10_systemd_cgroup_false_in_the_live_config():
    text = dump("containerd-1.6-config-dump-layer10.toml").replace("SystemdCgroup = true", "SystemdCgroup = false")
    r = check10(rt_facts(config_dump=text))
    assert r["status"] == "fail" and "SystemdCgroup" in r["reason"] and "/etc/containerd/config.toml" in r["reason"]


def test_layer10_a_dump_that_is_not_toml_is_named():
    r = check10(rt_facts(config_dump="version = 2\n[plugins\n"))
    assert r["status"] == "fail" and "config does not load: not TOML" in r["reason"], r


KUBELET_CGROUPFS = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: cgroupfs\n"


@pytest.mark.parametrize("kw,settings,words", [
    ({"unit_exists": False}, {}, "not installed"),
    ({"active": "failed"}, {}, "containerd is failed"),
    ({"ctr_rc": 1, "ctr_output": "ctr: failed to dial \"/run/containerd/containerd.sock\": connection refused"}, {},
     "does not answer on its socket: ctr: failed to dial"),
    ({"ctr_rc": 127, "ctr_output": "\nctr: command not found"}, {}, "does not answer on its socket: ctr: command not found"),
    ({"config_dump": "", "config_error": "failed to load TOML: (14, 3): unexpected token"}, {}, "config does not load"),
    ({"kubelet_config": KUBELET_CGROUPFS}, {}, "cgroup driver mismatch: kubelet cgroupDriver is cgroupfs"),
    ({"modules": {"overlay": True, "br_netfilter": False}}, {}, "kernel module br_netfilter not loaded"),
    ({"sysctls": {"net.ipv4.ip_forward": ["0", "1"]}}, {}, "net.ipv4.ip_forward is 0, Kubernetes needs 1"),
    ({"sysctls": {"net.bridge.bridge-nf-call-iptables": [None, "1"]}}, {}, "net.bridge.bridge-nf-call-iptables is absent"),
    ({"swaps": ["/dev/sda3"]}, {}, "swap is on (/dev/sda3)"),
    ({"cni_plugins": ["bridge"]}, {}, "CNI plugin loopback missing from /opt/cni/bin"),
    ({}, {"nvidia_mode": "enabled"}, "8 GPUs but /usr/bin/nvidia-container-runtime is missing"),
    ({"nvidia_binary": True}, {}, "containerd has no nvidia runtime"),
])
def test_layer10_failures_name_the_cause(kw, settings, words):
    r = check10(rt_facts(**kw), **settings)
    assert r["status"] == "fail" and words in r["reason"], r
    assert r["remediation"]


def test_layer10_kubelet_on_systemd_passes_and_is_evidence():
    r = check10(rt_facts(kubelet_config=KUBELET_CGROUPFS.replace("cgroupfs", "systemd")))
    assert r["status"] == "pass" and "kubelet cgroupDriver systemd" in r["evidence"], r


def test_layer10_config_newer_than_the_daemon_warns():
    r = check10(rt_facts(config_mtime=1790000900.0))   # the daemon became active at 1790000600
    assert r["status"] == "warn" and "changed after containerd started" in r["reason"]


def test_layer10_gpu_host_with_toolkit_and_runtime_passes():
    cfg = tomllib.loads(dump("containerd-1.6-config-dump-layer10.toml"))
    runtimes = cfg["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
    runtimes["nvidia"] = copy.deepcopy(runtimes["runc"])
    runtimes["nvidia"]["options"]["BinaryName"] = "/usr/bin/nvidia-container-runtime"
    facts = {"active": "active", "config": cfg, "modules": {"overlay": True, "br_netfilter": True},
             "sysctls": {"net.ipv4.ip_forward": ["1", "1"]}, "gpu_count": 8, "nvidia_mode": "auto", "nvidia_binary": True,
             "cni_plugins": ["loopback"], "cni_required": ["loopback"]}
    r = kc.check_container_runtime(facts)
    assert r["status"] == "pass" and "runtime nvidia: SystemdCgroup = true" in r["evidence"], r
    runtimes["nvidia"]["options"]["SystemdCgroup"] = False
    r = kc.check_container_runtime(facts)
    assert r["status"] == "fail" and "runtime nvidia" in r["reason"]


def test_containerd_settings_reads_both_config_versions():
    v2 = kc.containerd_settings(tomllib.loads(dump("containerd-1.6-config-dump-layer10.toml")))
    assert v2["version"] == 2 and v2["default_runtime"] == "runc" and v2["cni_bin_dirs"] == ["/opt/cni/bin"]
    assert v2["sandbox_image"] == "registry.k8s.io/pause:3.10.1"
    v3 = kc.containerd_settings({"version": 3, "plugins": {
        "io.containerd.cri.v1.images": {"pinned_images": {"sandbox": "registry.k8s.io/pause:3.10.1"}},
        "io.containerd.cri.v1.runtime": {"cni": {"bin_dirs": ["/opt/cni/bin"]}, "containerd": {
            "default_runtime_name": "nvidia", "runtimes": {"nvidia": {"runtime_type": "io.containerd.runc.v2",
                                                                       "options": {"SystemdCgroup": True}}}}}}})
    assert v3["default_runtime"] == "nvidia" and v3["runtimes"]["nvidia"]["systemd_cgroup"] is True
    assert v3["cni_bin_dirs"] == ["/opt/cni/bin"] and v3["sandbox_image"].endswith("3.10.1")


# ------------------------------------------------------------ layer 11

@pytest.fixture(scope="module")
def wanted_gpu():
    live = yaml.safe_load(dump("kubelet-config-gpu-worker.yaml"))
    return {k: live[k] for k in ("apiVersion", "kind", "cgroupDriver", "containerRuntimeEndpoint", "cpuManagerPolicy",
                                 "reservedSystemCPUs", "topologyManagerPolicy", "topologyManagerScope")}


@pytest.mark.parametrize("name", ["node-gpu-b01-kubelet-v1.30.json",
                                  "node-gpu-b02-kubelet-stopped.json", "node-cp-01-disk-pressure.json"])
def test_node_fixtures_are_valid_nodes(name):
    kubernetes_validate.validate(load(name), K8S, strict=True)   # raises on an invalid object


def test_kubelet_fixture_matches_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((SCHEMAS / "kubelet-config-v1beta1.json").read_text())
    jsonschema.validate(yaml.safe_load(dump("kubelet-config-gpu-worker.yaml")), schema)


def layer11(host, nodes, server="v1.34.1", kubelet=None, wanted=None, errors=None):
    """Layer 11's check file on the reading the doctor action hands it: the
    cluster's answers (the API server's version, the Nodes) and the node's
    kubelet configuration from the node's one read."""
    answers = {kc.query_key(kc.query(kc.VERSION)): {"version": {"server": {"kubernetes": {"gitVersion": server}}}},
               kc.query_key(kc.query("Node")): {"resources": nodes}}
    for kind, error in (errors or {}).items():
        answers[kc.query_key(kc.query(kind))] = {"error": error}
    reading = {"cluster": {"answers": answers},
               "nic_facts": {"contents": {kubeadm_check.KUBELET_CONFIG: kubelet}}}
    intent = {"kubeadm_kubeconfig": "/etc/kubernetes/admin.conf", "kubeadm_node_name": host,
              "kubeadm_kubernetes_version": "1.34.1", "kubeadm_kubelet_effective": wanted or {}}
    assert kubeadm_check.reads(intent, host) == {
        "cluster": {"kubeconfig": "/etc/kubernetes/admin.conf", "queries": list(kubeadm_check.QUERIES)},
        "nic_facts": {"contents": [kubeadm_check.KUBELET_CONFIG]}}
    return kubeadm_check.check(reading, intent, host)


def test_layer11_ready_gpu_worker_passes(wanted_gpu):
    others = [load("node-gpu-b02-kubelet-stopped.json")]
    r = layer11("gpu-a01", others + [load("node-gpu-a01.json")], kubelet=dump("kubelet-config-gpu-worker.yaml"),
                wanted=wanted_gpu)
    assert r["layer"] == 11 and r["name"] == "kubeadm" and r["status"] == "pass", r
    assert "kubelet topologyManagerPolicy: single-numa-node" in r["evidence"]
    assert "kubelet cpuManagerPolicy: static" in r["evidence"]


def test_layer11_gpu_worker_without_the_topology_manager_fails(wanted_gpu):
    live = yaml.safe_load(dump("kubelet-config-gpu-worker.yaml"))
    live.pop("topologyManagerPolicy")
    r = kc.check_kubeadm("gpu-a01", load("node-gpu-a01.json"), "v1.34.1", "1.34.1", live, wanted_gpu)
    assert r["status"] == "fail"
    assert r["reason"] == "kubelet topologyManagerPolicy is unset (default), the inventory wants single-numa-node"
    live["topologyManagerPolicy"], live["cpuManagerPolicy"] = "single-numa-node", "none"
    r = kc.check_kubeadm("gpu-a01", load("node-gpu-a01.json"), "v1.34.1", "1.34.1", live, wanted_gpu)
    assert r["status"] == "fail" and r["reason"].startswith("kubelet cpuManagerPolicy is none")


def test_layer11_skipped_without_a_cluster():
    r = kc.skipped(11, "no cluster: /etc/kubernetes/admin.conf not found on node01")
    assert r["status"] == "skipped" and r["reason"] == "no cluster: /etc/kubernetes/admin.conf not found on node01"
    assert r["remediation"] == "initialise the cluster: site.yml --tags layer11"
    assert kc.skipped(12, "x")["remediation"] == "initialise the cluster (layer 11), then site.yml --tags layer12"


def test_layer11_unregistered_node_and_api_errors():
    r = layer11("gpu-a07", [load("node-gpu-a01.json")])
    assert r["status"] == "fail" and r["reason"] == "node gpu-a07 is not registered in the cluster"
    r = layer11("gpu-a01", [], errors={"Node": "Failed to import the required Python library (kubernetes)"})
    assert r["status"] == "fail" and r["reason"] == "Kubernetes API: Failed to import the required Python library (kubernetes)"


def test_layer11_judges_the_kubelet_configuration_the_node_read_returned(wanted_gpu):
    live = yaml.safe_load(dump("kubelet-config-gpu-worker.yaml"))
    live.pop("topologyManagerPolicy")
    r = layer11("gpu-a01", [load("node-gpu-a01.json")], kubelet=yaml.safe_dump(live), wanted=wanted_gpu)
    assert r["status"] == "fail", r
    assert r["reason"] == "kubelet topologyManagerPolicy is unset (default), the inventory wants single-numa-node"
    # not read (no kubelet configuration on the node): the Node alone is judged
    r = layer11("gpu-a01", [load("node-gpu-a01.json")], kubelet=None, wanted=wanted_gpu)
    assert r["status"] == "pass" and not any(e.startswith("kubelet cpuManagerPolicy") for e in r["evidence"]), r


def test_layer11_kubelet_stopped_fails():
    r = kc.check_kubeadm("gpu-b02", load("node-gpu-b02-kubelet-stopped.json"), "v1.34.1", "1.34.1")
    assert r["status"] == "fail" and r["reason"] == "node gpu-b02: kubelet stopped posting status (Ready NodeStatusUnknown)"


def test_layer11_not_ready_for_want_of_a_cni_is_left_to_layer12():
    r = kc.check_kubeadm("gpu-a02", load("node-gpu-a02-cni-not-ready.json"), "v1.34.1", "1.34.1")
    assert r["status"] == "warn" and "layer 12" in r["reason"] and "cni plugin not initialized" in r["reason"]


def test_layer11_kubelet_four_minors_behind_fails():
    r = kc.check_kubeadm("gpu-b01", load("node-gpu-b01-kubelet-v1.30.json"), "v1.34.1", "1.34.1")
    assert r["status"] == "fail" and r["reason"].startswith("version skew: kubelet v1.30.14 on gpu-b01 is 4 minor")


def test_layer11_kubelet_newer_than_the_api_server_fails():
    node = load("node-gpu-a01.json")
    node["status"]["nodeInfo"]["kubeletVersion"] = "v1.35.0"
    r = kc.check_kubeadm("gpu-a01", node, "v1.34.1", "1.34.1")
    assert r["status"] == "fail" and "newer than kube-apiserver v1.34.1" in r["reason"]


def test_layer11_pressure_cordon_and_version_warn():
    r = kc.check_kubeadm("cp-01", load("node-cp-01-disk-pressure.json"), "v1.34.1", "1.34.1")
    assert r["status"] == "warn" and r["reason"] == "node cp-01 has DiskPressure"
    node = load("node-gpu-a01.json")
    node["spec"]["unschedulable"] = True
    assert "cordoned" in kc.check_kubeadm("gpu-a01", node, "v1.34.1", "1.34.1")["reason"]
    node["spec"]["unschedulable"] = False
    r = kc.check_kubeadm("gpu-a01", node, "v1.34.1", "1.34.2")
    assert r["status"] == "warn" and r["reason"] == "kubelet v1.34.1, the inventory wants 1.34.2"


def test_kube_object_files_are_host_files_entries_one_per_object():
    objs = [{"kind": "RuntimeClass", "metadata": {"name": "nvidia"}},
            {"kind": "ConfigMap", "metadata": {"name": "a", "namespace": "kube-system"}}]
    got = F.kube_object_files(objs, "/r/11-kubeadm/", "documents.yaml.j2", "kubeadm_documents", listed=True)
    assert got == [{"path": "/r/11-kubeadm/runtimeclass-nvidia.yaml", "template": "documents.yaml.j2",
                    "vars": {"kubeadm_documents": [objs[0]]}, "owner": None, "group": None},
                   {"path": "/r/11-kubeadm/configmap-kube-system-a.yaml", "template": "documents.yaml.j2",
                    "vars": {"kubeadm_documents": [objs[1]]}, "owner": None, "group": None}]
    assert F.kube_object_files(objs[:1], "/r", "o.j2", "obj")[0]["vars"] == {"obj": objs[0]}
    with pytest.raises(AnsibleFilterError, match="kube_object_files: a list of objects is wanted"):
        F.kube_object_files({"kind": "x"}, "/r", "o.j2", "obj")
