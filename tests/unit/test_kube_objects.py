"""Layers 12-14 rendered by the roles' own templates (render mode, nothing
applied) for inventories/example, then validated: core objects with
kubernetes-validate (strict), custom resources against the upstream CRD
schemas in ../shared/schemas/crds (unknown fields refused), the
NetworkAttachmentDefinition CRD the multus role applies against the shared
definition, and bad input failing before anything is written."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.reference import CRDS

pytestmark = pytest.mark.layers(12, 13, 14)

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = REPO / "playbooks" / "render.yml"
LAYERS = ("--tags", "layer12,layer13,layer14")
EXAMPLE = REPO / "inventories" / "example" / "hosts.yml"
ENV = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"),
           ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PYTHONPATH=str(REPO))
BIN = Path(sys.executable).parent
# The oldest Kubernetes minor the roles are written for, and the newest schema kubernetes-validate has.
KUBE_VERSIONS = ("1.32.0", kubernetes_validate.latest_version())
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def render(out, *args):
    """playbooks/render.yml, layers 12-14 unless ``args`` name their own tags."""
    layers = () if "--tags" in args else LAYERS
    cmd = [str(BIN / "ansible-playbook"), "-i", str(EXAMPLE), str(PLAYBOOK), *layers, "-e", f"gpufabric_render_dir={out}",
           *args]
    return subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True)


def load_dir(out):
    objs = []
    for path in sorted(Path(out).rglob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        assert len(docs) == 1, f"{path}: {len(docs)} documents, one object per file"
        objs.append((path, docs[0]))
    return objs


def crd_index():
    index = {}
    for path in CRDS.glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for ver in crd["spec"]["versions"]:
            index[(f"{group}/{ver['name']}", kind)] = (path, crd["spec"]["scope"], ver["schema"]["openAPIV3Schema"])
    return index


def strict(schema):
    """The CRD schema with unknown fields refused (as a server with strict
    field validation does), except where the schema preserves them."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if "properties" in out and "additionalProperties" not in out \
                and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def file_name(obj):
    meta = obj["metadata"]
    ns = f"{meta['namespace']}-" if meta.get("namespace") else ""
    return f"{obj['kind'].lower()}-{ns}{meta['name']}.yaml"


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    out = tmp_path_factory.mktemp("render") / "out"
    proc = render(out)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def variant(tmp_path_factory):
    """Cilium with native routing and the NVIDIA Network Operator."""
    out = tmp_path_factory.mktemp("render") / "out"
    proc = render(out, "-e", "cni_plugin=cilium", "-e", "cni_encapsulation=none",
                  "-e", "sriov_operator_provider=nvidia-network-operator",
                  "-e", json.dumps({"gpufabric_tenants": [{"namespace": "team-a", "mtu": 4200, "ipam": {
                      "type": "whereabouts", "ranges": ["192.168.100.0/24", "192.168.101.0/24"]}}]}))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return out


def objects(out):
    return [(p, o) for p, o in load_dir(out) if not p.name.startswith("helmvalues-")]


def check_object(path, obj, crds):
    assert path.name == file_name(obj), f"{path.name} should be {file_name(obj)}"
    meta = obj["metadata"]
    assert DNS_SUBDOMAIN.match(meta["name"]) and len(meta["name"]) <= 253, meta["name"]
    for key, value in (meta.get("labels") or {}).items():
        prefix, _, name = key.rpartition("/")
        assert LABEL_NAME.match(name) and len(name) <= 63 and (not prefix or DNS_SUBDOMAIN.match(prefix)), key
        assert isinstance(value, str) and LABEL_VALUE.match(value) and len(value) <= 63, (key, value)
    key = (obj["apiVersion"], obj["kind"])
    if key in crds:
        src, scope, schema = crds[key]
        assert ("namespace" in meta) == (scope == "Namespaced"), f"{path.name}: scope {scope}"
        jsonschema.validate(obj, strict(schema))
        return "crd"
    if "/" not in obj["apiVersion"] or obj["apiVersion"].split("/")[0].endswith(".k8s.io") \
            or obj["apiVersion"].split("/")[0] in ("apps", "batch"):
        for version in KUBE_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)
        return "core"
    return "other"


def test_render_writes_each_layer_into_its_directory(example):
    dirs = sorted(p.name for p in example.iterdir())
    assert dirs == ["12-cni", "13-multus", "14-sriov_operator"]
    names = {p.relative_to(example).as_posix() for p, _ in load_dir(example)}
    assert {"12-cni/helmvalues-tigera-operator.yaml", "12-cni/installation-default.yaml",
            "13-multus/customresourcedefinition-network-attachment-definitions.k8s.cni.cncf.io.yaml",
            "13-multus/daemonset-kube-system-kube-multus-ds.yaml", "13-multus/helmvalues-whereabouts.yaml",
            "14-sriov_operator/helmvalues-sriov-network-operator.yaml",
            "14-sriov_operator/namespace-team-a.yaml"} <= names


def test_every_object_validates(example):
    crds = crd_index()
    kinds = {}
    for path, obj in objects(example):
        kinds.setdefault(check_object(path, obj, crds), set()).add(obj["kind"])
    assert kinds["crd"] == {"SriovNetworkNodePolicy", "SriovNetwork"}
    assert kinds["core"] == {"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "ServiceAccount",
                             "ConfigMap", "DaemonSet", "Namespace", "Node"}
    # Calico's Installation has no schema in ../shared; its fields are checked below.
    assert kinds["other"] == {"Installation"}


def test_every_object_of_the_variant_validates(variant):
    crds = crd_index()
    kinds = {}
    for path, obj in objects(variant):
        kinds.setdefault(check_object(path, obj, crds), set()).add(obj["kind"])
    assert kinds["crd"] == {"NicClusterPolicy", "NetworkAttachmentDefinition"}


def test_strict_schema_refuses_an_unknown_field(example):
    crds = crd_index()
    path, pol = [(p, o) for p, o in objects(example) if o["kind"] == "SriovNetworkNodePolicy"][0]
    pol["spec"]["nicSelector"]["pfName"] = ["enp59s0f0np0"]          # a typo of pfNames
    with pytest.raises(jsonschema.ValidationError):
        check_object(path, pol, crds)


def test_nad_crd_in_the_role_equals_the_upstream_definition(example):
    shared = yaml.safe_load((CRDS / "k8s.cni.cncf.io_networkattachmentdefinitions.yaml").read_text())
    ours = yaml.safe_load((example / "13-multus" /
                           "customresourcedefinition-network-attachment-definitions.k8s.cni.cncf.io.yaml").read_text())
    assert ours == shared


def test_policies_come_from_the_layer6_data(example):
    nics = yaml.safe_load((REPO / "inventories/example/group_vars/gpu_workers.yml").read_text())["gpufabric_nics"][0]
    pols = [o for _, o in objects(example) if o["kind"] == "SriovNetworkNodePolicy"]
    assert sorted(p["spec"]["resourceName"] for p in pols) == ["gpu_rail0", "gpu_rail1"]
    vendor, device = nics["match"]["vendor_device"].split(":")
    for p in pols:
        spec = p["spec"]
        assert spec["numVfs"] == nics["num_vfs"] and spec["mtu"] == nics["vf_mtu"]
        assert spec["nicSelector"]["vendor"] == vendor and spec["nicSelector"]["deviceID"] == device
        assert spec["externallyManaged"] is True and spec["isRdma"] is True and spec["deviceType"] == "netdevice"
    nodes = [o for _, o in objects(example) if o["kind"] == "Node"]
    assert len(nodes) == 8
    selector = pols[0]["spec"]["nodeSelector"]
    assert all(n["metadata"]["labels"] == selector for n in nodes)


def test_tenant_networks_and_namespaces(example):
    nets = {o["metadata"]["name"]: o for _, o in objects(example) if o["kind"] == "SriovNetwork"}
    assert sorted(nets) == ["team-a-gpu-rail0", "team-a-gpu-rail1", "team-b-gpu-rail0", "team-b-gpu-rail1"]
    assert nets["team-b-gpu-rail1"]["spec"]["vlan"] == 200 and nets["team-b-gpu-rail1"]["spec"]["vlanQoS"] == 3
    assert json.loads(nets["team-a-gpu-rail1"]["spec"]["ipam"]) == {"type": "whereabouts", "range": "192.168.101.0/24"}
    ns = {o["metadata"]["name"] for _, o in objects(example) if o["kind"] == "Namespace"}
    assert ns == {"sriov-network-operator", "team-a", "team-b"}


def test_calico_installation_mtu_is_underlay_minus_vxlan(example):
    inst = yaml.safe_load((example / "12-cni" / "installation-default.yaml").read_text())
    assert inst["apiVersion"] == "operator.tigera.io/v1" and inst["metadata"]["name"] == "default"
    net = inst["spec"]["calicoNetwork"]
    assert net["mtu"] == 9000 - 50
    assert net["nodeAddressAutodetectionV4"] == {"kubernetes": "NodeInternalIP"}
    pool = net["ipPools"][0]
    # the enums of the upstream Installation CRD (operator.tigera.io_installations.yaml, Calico v3.32)
    assert pool["encapsulation"] in ("IPIPCrossSubnet", "IPIP", "VXLAN", "VXLANCrossSubnet", "None")
    assert pool["natOutgoing"] in ("Enabled", "Disabled")
    assert set(pool) <= {"name", "cidr", "encapsulation", "natOutgoing", "nodeSelector", "blockSize"}
    values = yaml.safe_load((example / "12-cni" / "helmvalues-tigera-operator.yaml").read_text())
    assert values["installation"]["enabled"] is False


def test_multus_daemonset_and_config(example):
    ds = yaml.safe_load((example / "13-multus" / "daemonset-kube-system-kube-multus-ds.yaml").read_text())
    c = ds["spec"]["template"]["spec"]["containers"][0]
    assert c["image"].endswith("-thick") and c["command"] == ["/usr/src/multus-cni/bin/multus-daemon"]
    cm = yaml.safe_load((example / "13-multus" / "configmap-kube-system-multus-daemon-config.yaml").read_text())
    conf = json.loads(cm["data"]["daemon-config.json"])
    assert conf["multusConfigFile"] == "auto" and conf["socketDir"] == "/host/run/multus/"


def test_operator_values(example):
    v = yaml.safe_load((example / "14-sriov_operator" / "helmvalues-sriov-network-operator.yaml").read_text())
    assert v["sriovOperatorConfig"]["deploy"] is True
    assert v["sriovOperatorConfig"]["disablePlugins"] == ["mellanox"]
    assert v["operator"]["resourcePrefix"] == "openshift.io"


def test_variant_cilium_mtu_and_nvidia_objects(variant):
    v = yaml.safe_load((variant / "12-cni" / "helmvalues-cilium.yaml").read_text())
    assert v["MTU"] == 9000 and v["routingMode"] == "native" and "tunnelProtocol" not in v
    assert not (variant / "12-cni" / "installation-default.yaml").exists()
    ncp = yaml.safe_load((variant / "14-sriov_operator" / "nicclusterpolicy-nic-cluster-policy.yaml").read_text())
    cfg = json.loads(ncp["spec"]["rdmaSharedDevicePlugin"]["config"])
    assert [c["resourceName"] for c in cfg["configList"]] == ["gpu_rail0", "gpu_rail1"]
    nad = yaml.safe_load((variant / "14-sriov_operator" /
                          "networkattachmentdefinition-team-a-team-a-gpu-rail1.yaml").read_text())
    conf = json.loads(nad["spec"]["config"])
    assert conf["master"] == "enp134s0f0np0" and conf["mtu"] == 4200
    assert nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == "rdma/gpu_rail1"
    values = yaml.safe_load((variant / "14-sriov_operator" / "helmvalues-network-operator.yaml").read_text())
    assert values["sriovNetworkOperator"]["enabled"] is False


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("args, needle", [
    (["-e", "cni_mtu=9000"],
     "cni_mtu 9000 is larger than the underlay MTU allows: cni_underlay_mtu 9000 minus the vxlan overhead 50 = 8950"),
    (["-e", json.dumps({"gpufabric_nics": [{"match": {"vendor_device": "15b3:1021"}, "num_vfs": 8,
                                            "resource_prefix": "gpu/rail"}]}), "--tags", "layer14"],
     "gpufabric_nics[0].resource_prefix: resource name 'gpu/rail0' is not a valid extended resource name"),
    (["-e", json.dumps({"gpufabric_tenants": [{"namespace": "Team_A", "ipam": {
        "type": "whereabouts", "ranges": ["10.0.0.0/24", "10.0.1.0/24"]}}]}), "--tags", "layer14"],
     "gpufabric_tenants[0].namespace 'Team_A' is not a DNS label"),
    (["-e", json.dumps({"gpufabric_tenants": [{"namespace": "team-a", "mtu": 9100, "ipam": {
        "type": "whereabouts", "ranges": ["10.0.0.0/24", "10.0.1.0/24"]}}]}), "--tags", "layer14"],
     "gpufabric_tenants[0].mtu 9100 is larger than the underlay MTU 9000"),
])
def test_bad_input_fails_before_anything_is_written(tmp_path, args, needle):
    out = tmp_path / "out"
    proc = render(out, *args)
    assert proc.returncode != 0
    assert needle in proc.stdout, proc.stdout[-3000:]
    assert not out.exists() or not any(out.rglob("*")), sorted(out.rglob("*"))
