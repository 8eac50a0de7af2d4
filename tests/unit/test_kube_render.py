"""Render mode of the Kubernetes layers (playbooks/render.yml): what the
roles would install and apply, rendered by their own templates for the
example inventory and for a twin rack's inventory (generated without
starting the twin), then checked offline:

* core Kubernetes objects with kubernetes-validate (strict, Kubernetes 1.34),
  every object in a file named <kind>-[<namespace>-]<name>.yaml;
* kubeadm's InitConfiguration/ClusterConfiguration/JoinConfiguration and the
  KubeletConfigurations against schemas of their documented fields
  (tests/unit/schemas, sources named in each schema's description);
* containerd's config.toml with tomllib;
* bad input fails in the first play, before anything is written, naming the
  variable.

No managed host is reachable from here (the example's addresses are not
routed, the twin inventory's containers do not exist): a render that tried
to contact one would fail."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from ansible_collections.gpufabric.stack.plugins.filter.kube import kube_object_file
from ansible_collections.gpufabric.stack.plugins.plugin_utils.kube_checks import containerd_settings
from tests.integration.twinlab import recap

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SCHEMAS = Path(__file__).parent / "schemas"
K8S = "1.34"
ENV = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"),
           ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PYTHONPATH=str(REPO))
EXAMPLE = REPO / "inventories" / "example" / "hosts.yml"

pytestmark = [pytest.mark.slow, pytest.mark.layers(11, 12, 13, 14, 15)]


def render(inventory, dest, *extra):
    return subprocess.Popen([str(BIN / "ansible-playbook"), "-i", str(inventory), str(REPO / "playbooks" / "render.yml"),
                             "-e", f"gpufabric_render_dir={dest}", *extra],
                            cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc):
    out, _ = proc.communicate()
    return proc.returncode, out


def inventory(path):
    """{group: set of hosts} of a YAML inventory (children resolved by name)."""
    data = yaml.safe_load(Path(path).read_text())
    direct, children = {}, {}

    def walk(name, node):
        node = node or {}
        direct.setdefault(name, set()).update(node.get("hosts") or {})
        children.setdefault(name, set()).update(node.get("children") or {})
        for child, sub in (node.get("children") or {}).items():
            walk(child, sub)

    walk("all", data["all"])

    def hosts(name):
        return direct.get(name, set()).union(*(hosts(c) for c in children.get(name, ())))

    return {name: hosts(name) for name in direct}


@pytest.fixture(scope="module")
def twin_inventory(tmp_path_factory):
    inv = tmp_path_factory.mktemp("twin-inventory") / "render"
    subprocess.run([sys.executable, "-m", "simlab", "inventory", "--name", "render", "--nodes", "4", "--switches", "2",
                    "--inventory", str(inv)], cwd=REPO, env=ENV, check=True, capture_output=True)
    assert not subprocess.run(["podman", "container", "exists", "simlab-render-node01"], env=ENV,
                              capture_output=True).returncode == 0, "a live lab named 'render' would be reachable"
    return inv / "hosts.yml"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, twin_inventory):
    """{name: (render dir, inventory groups)}, both renders run side by side."""
    out = tmp_path_factory.mktemp("rendered")
    procs = {"example": (render(EXAMPLE, out / "example"), EXAMPLE),
             "twin": (render(twin_inventory, out / "twin"), twin_inventory)}
    result = {}
    for name, (proc, inv) in procs.items():
        rc, log = finish(proc)
        assert rc == 0, f"render of {name} failed:\n{log[-6000:]}"
        rec = recap(log)
        assert rec and all(r["failed"] == 0 and r["unreachable"] == 0 for r in rec.values()), log[-3000:]
        result[name] = (out / name, inventory(inv))
    return result


def objects(root):
    """(path, object) for every Kubernetes object file (the layer directories' top level)."""
    out = []
    for layer in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(layer.glob("*.yaml")):
            if path.name.startswith("helmvalues-"):
                continue
            docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
            assert len(docs) == 1, f"{path}: one object per file, found {len(docs)}"
            out.append((path, docs[0]))
    return out


def schema(name):
    return json.loads((SCHEMAS / name).read_text())


KUBEADM = schema("kubeadm-v1beta4.json")
KUBELET = schema("kubelet-config-v1beta1.json")
SCHEMA_BY_API = {"kubeadm.k8s.io/v1beta4": KUBEADM, "kubelet.config.k8s.io/v1beta1": KUBELET}


@pytest.mark.parametrize("name", ["example", "twin"])
def test_every_object_file_follows_the_naming_convention(rendered, name):
    root, _ = rendered[name]
    found = objects(root)
    assert found
    for path, obj in found:
        assert path.name == kube_object_file(obj), path


@pytest.mark.parametrize("name", ["example", "twin"])
def test_core_objects_are_valid_kubernetes(rendered, name):
    root, _ = rendered[name]
    core = 0
    for path, obj in objects(root):
        try:
            kubernetes_validate.validate(obj, K8S, strict=True)
            core += 1
        except kubernetes_validate.SchemaNotFoundError:
            continue   # a custom resource: layers 12-14 check theirs against the CRD schemas
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{path}: {exc.message}")
    assert core > 0


def test_nvidia_runtimeclass_where_gpus_are(rendered):
    root, _ = rendered["example"]
    rc = yaml.safe_load((root / "11-kubeadm" / "runtimeclass-nvidia.yaml").read_text())
    assert rc == {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"}
    kubernetes_validate.validate(rc, K8S, strict=True)


@pytest.mark.parametrize("name", ["example", "twin"])
def test_kubeadm_configs_match_the_documented_fields(rendered, name):
    root, groups = rendered[name]
    kube_hosts = sorted(groups["kube_control_plane"] | groups["kube_node"])
    inits, joins = [], []
    for host in kube_hosts:
        d = root / "11-kubeadm" / host
        for path in sorted(d.glob("kubeadm-*.yaml")) + [d / "kubelet-config.yaml"] + sorted(d.glob("patches/*.yaml")):
            for doc in (x for x in yaml.safe_load_all(path.read_text()) if x):
                jsonschema.validate(doc, SCHEMA_BY_API[doc["apiVersion"]])
                (inits if doc["kind"] == "InitConfiguration" else joins if doc["kind"] == "JoinConfiguration" else []).append(
                    (host, doc))
    first_cp = sorted(groups["kube_control_plane"])[0] if name == "example" else "node01"
    assert [h for h, _ in inits] == [first_cp]
    assert sorted(h for h, _ in joins) == [h for h in kube_hosts if h != first_cp]
    init_docs = list(yaml.safe_load_all((root / "11-kubeadm" / first_cp / "kubeadm-init.yaml").read_text()))
    cluster = next(d for d in init_docs if d and d["kind"] == "ClusterConfiguration")
    assert cluster["networking"]["podSubnet"] == "10.244.0.0/16"
    assert cluster["kubernetesVersion"] == "v1.34.1"
    for host, join in joins:
        assert join["discovery"]["bootstrapToken"]["apiServerEndpoint"] == cluster["controlPlaneEndpoint"]
        assert join["nodeRegistration"]["name"] == host
        assert join["patches"]["directory"] == "/etc/kubernetes/gpufabric/patches"


def test_schemas_reject_fields_kubeadm_does_not_know():
    bad = {"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "ClusterConfiguration",
           "apiServer": {"timeoutForControlPlane": "4m"}}      # v1beta3 field, moved to timeouts in v1beta4
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, KUBEADM)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
                             "topologyManagerPolicy": "single-numa"}, KUBELET)


@pytest.mark.parametrize("name", ["example", "twin"])
def test_topology_and_cpu_manager_only_on_gpu_workers(rendered, name):
    root, groups = rendered[name]
    gpu_workers = groups["kube_node"] & groups["gpu_workers"]
    assert gpu_workers
    for host in sorted(groups["kube_control_plane"] | groups["kube_node"]):
        cfg = yaml.safe_load((root / "11-kubeadm" / host / "kubelet-config.yaml").read_text())
        assert cfg["cgroupDriver"] == "systemd"
        assert cfg["containerRuntimeEndpoint"] == "unix:///run/containerd/containerd.sock"
        patch = root / "11-kubeadm" / host / "patches" / "kubeletconfiguration+strategic.yaml"
        if host in gpu_workers:
            assert cfg["topologyManagerPolicy"] == "single-numa-node", host
            assert cfg["cpuManagerPolicy"] == "static" and cfg["reservedSystemCPUs"], host
            assert yaml.safe_load(patch.read_text())["topologyManagerPolicy"] == "single-numa-node"
        else:
            assert cfg["topologyManagerPolicy"] == "none" and cfg["cpuManagerPolicy"] == "none", host
            assert not patch.exists()


@pytest.mark.parametrize("name", ["example", "twin"])
def test_containerd_config_has_the_systemd_cgroup_driver(rendered, name):
    root, groups = rendered[name]
    for host in sorted(groups["kube_control_plane"] | groups["kube_node"]):
        d = root / "10-container_runtime" / host
        cfg = tomllib.loads((d / "config.toml").read_text())
        s = containerd_settings(cfg)
        assert s["version"] == 2 and s["runtimes"]["runc"]["systemd_cgroup"] is True
        assert all(r["systemd_cgroup"] is True for r in s["runtimes"].values())
        assert s["cni_bin_dirs"] == ["/opt/cni/bin"]
        gpu = host in groups["gpu_workers"]
        assert ("nvidia" in s["runtimes"]) is gpu, host
        assert s["default_runtime"] == ("nvidia" if gpu else "runc")
        assert (d / "modules-load.conf").read_text().split("\n")[-3:] == ["overlay", "br_netfilter", ""]
        assert "net.ipv4.ip_forward=1" in (d / "sysctl.conf").read_text().splitlines()


def test_containerd_2_config_version_3(tmp_path):
    rc, log = finish(render(EXAMPLE, tmp_path, "--tags", "layer10", "-e", "container_runtime_config_version=3"))
    assert rc == 0, log[-4000:]
    cfg = tomllib.loads((tmp_path / "10-container_runtime" / "gpu-a01" / "config.toml").read_text())
    s = containerd_settings(cfg)
    assert s["version"] == 3 and s["default_runtime"] == "nvidia"
    assert s["runtimes"]["runc"]["systemd_cgroup"] is True and s["runtimes"]["nvidia"]["systemd_cgroup"] is True
    assert s["sandbox_image"] == "registry.k8s.io/pause:3.10.1"
    assert not (tmp_path / "11-kubeadm").exists()


@pytest.mark.parametrize("extra,words", [
    (["-e", "gpufabric_kube_pod_cidr=10.10.0.0/16"],
     "gpufabric_kube_pod_cidr (kubeadm_pod_subnet) 10.10.0.0/16 overlaps the node network 10.10.0.0/24"),
    (["-e", "gpufabric_kube_service_cidr=10.244.0.0/20"],
     "gpufabric_kube_pod_cidr (kubeadm_pod_subnet) 10.244.0.0/16 overlaps gpufabric_kube_service_cidr"),
    (["-e", "gpufabric_kube_version=1.34"], "gpufabric_kube_version (kubeadm_kubernetes_version): '1.34' is not"),
    (["-e", "gpufabric_kube_version=1.29.3"], "v1beta4 configs these roles render need kubeadm 1.31 or newer"),
    (["-e", '{"kubeadm_gpu_worker_kubelet_config": {"cpuManagerPolicy": "static"}}'],
     "cpuManagerPolicy static but no reservedSystemCPUs"),
])
def test_bad_input_fails_before_anything_is_rendered(tmp_path, extra, words):
    rc, log = finish(render(EXAMPLE, tmp_path / "out", *extra))
    assert rc != 0
    flat = " ".join(log.split())
    assert words in flat, log[-3000:]
    assert "Render the node layers" not in log
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_bad_input_on_the_twin_inventory_names_the_roce_address(tmp_path, twin_inventory):
    rc, log = finish(render(twin_inventory, tmp_path / "out", "--tags", "layer11",
                            "-e", "gpufabric_kube_service_cidr=172.30.0.0/16"))
    assert rc != 0
    assert "overlaps the node address 172.30.0.1 (roce_addresses.enp59s0f0np0 of node01)" in " ".join(log.split())
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
