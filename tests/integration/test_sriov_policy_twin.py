"""Layer 14 against a live twin: the SriovNetworkNodePolicies rendered from
the twin's inventory must match what layer 6 configured on every node, as
nic_facts reads it (vendor/device, PF names, VF counts, resource names); a
wrong inventory is reported with node, PF and field; without a cluster the
doctor's layers 12-14 say 'skipped' and why."""

import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.stack.plugins.plugin_utils.sriov_operator import sriov_policy as sp

pytestmark = [pytest.mark.twin, pytest.mark.layers(12, 13, 14)]

SYSFS = "/run/simlab/sys"
NODES = ("node01", "node02")
RENDER = "playbooks/render.yml"


def facts(twin, node):
    res = twin.module(node, "gpufabric.stack.nic_facts", {"sysfs_root": SYSFS, "vendor": "15b3"})
    assert res.get("failed") is not True, res
    return res["nics"]


def inventory_nics(twin):
    return yaml.safe_load((twin.inventory / "group_vars" / "gpu_workers.yml").read_text())["gpufabric_nics"]


def rendered(out):
    objs = [yaml.safe_load(p.read_text()) for p in sorted((Path(out) / "14-sriov_operator").glob("*.yaml"))
            if not p.name.startswith("helmvalues-")]
    policies = [o for o in objs if o["kind"] == "SriovNetworkNodePolicy"]
    labels = {o["metadata"]["name"]: o["metadata"]["labels"] for o in objs if o["kind"] == "Node"}
    return policies, labels, objs


@pytest.fixture(scope="module")
def layer6(twin):
    """The twin's nodes with the VFs layer 6 creates and the PF MTU layer 8 sets;
    the PF MTUs are put back afterwards."""
    want = inventory_nics(twin)[0]["num_vfs"]
    if any((pf["sriov"]["numvfs"] or 0) != want for n in NODES for pf in facts(twin, n)):
        twin.playbook("playbooks/site.yml", "--tags", "layer06", check=True)
    mtu = yaml.safe_load((twin.inventory / "group_vars" / "all" / "fabric.yml").read_text())["gpufabric_roce"]["host_mtu"]
    before = {}
    for node in NODES:
        for pf in facts(twin, node):
            before[(node, pf["name"])] = pf["mtu"]
            twin.sh(node, f"echo {mtu} > {SYSFS}/class/net/{pf['name']}/mtu")
    yield {n: facts(twin, n) for n in NODES}
    for (node, name), value in before.items():
        twin.sh(node, f"echo {value} > {SYSFS}/class/net/{name}/mtu", check=False)


def test_rendered_policies_match_every_node(twin, layer6, tmp_path):
    proc = twin.playbook(RENDER, "--tags", "layer12,layer13,layer14", "-e", f"gpufabric_render_dir={tmp_path}")
    assert proc.returncode == 0, proc.stdout[-3000:]
    policies, labels, objs = rendered(tmp_path)
    assert sorted(p["spec"]["resourceName"] for p in policies) == ["gpu_rail0", "gpu_rail1"]
    nics = inventory_nics(twin)
    for node in NODES:
        pfs = layer6[node]
        assert all(pf["sriov"]["numvfs"] == 8 for pf in pfs)
        assert sp.check_policies(policies, node, labels[node], pfs, nics) == []
        # what the check compared: the policy of rail r selects the node's r-th PF by name and device
        for rail, pf in enumerate(pfs):
            pol = [p for p in policies if p["spec"]["resourceName"] == f"gpu_rail{rail}"][0]["spec"]
            assert pf["name"] in pol["nicSelector"]["pfNames"]
            assert pf["vendor_device"] == f"{pol['nicSelector']['vendor']}:{pol['nicSelector']['deviceID']}"
            assert pol["numVfs"] == pf["sriov"]["numvfs"] <= pf["sriov"]["totalvfs"]
    nets = [o for o in objs if o["kind"] == "SriovNetwork"]
    assert [(n["metadata"]["name"], n["spec"]["networkNamespace"]) for n in nets] == [
        ("team-a-gpu-rail0", "team-a"), ("team-a-gpu-rail1", "team-a")]


def test_wrong_inventory_is_reported_with_node_pf_and_field(twin, layer6, tmp_path):
    nics = inventory_nics(twin)
    wrong = [dict(nics[0], num_vfs=4)]
    proc = twin.playbook(RENDER, "--tags", "layer14", "-e", f"gpufabric_render_dir={tmp_path}",
                         "-e", json.dumps({"gpufabric_nics": wrong}))
    assert proc.returncode == 0, proc.stdout[-3000:]
    policies, labels, _ = rendered(tmp_path)
    found = []
    for node in NODES:
        for m in sp.check_policies(policies, node, labels[node], layer6[node], wrong):
            found.append((m["node"], m["pf"], m["field"], m["want"], m["have"]))
    assert sorted(found) == sorted((node, pf["name"], "numVfs", 4, 8) for node in NODES for pf in layer6[node])


def test_pf_names_that_differ_from_the_cabling_are_reported(twin, layer6, tmp_path):
    cabling = yaml.safe_load((twin.inventory / "group_vars" / "all" / "fabric.yml").read_text())["gpufabric_cabling"]
    for c in cabling:
        if c["node"] == "node02" and c["pci_address"].endswith("86:00.0"):
            c["pf"] = "ens6f0np0"
    proc = twin.playbook(RENDER, "--tags", "layer14", "-e", f"gpufabric_render_dir={tmp_path}",
                         "-e", json.dumps({"gpufabric_cabling": cabling}))
    assert proc.returncode == 0, proc.stdout[-3000:]
    policies, labels, _ = rendered(tmp_path)
    nics = inventory_nics(twin)
    assert sp.check_policies(policies, "node01", labels["node01"], layer6["node01"], nics) == []
    out = sp.check_policies(policies, "node02", labels["node02"], layer6["node02"], nics)
    assert ("node02", "-", "nicSelector") in [(m["node"], m["pf"], m["field"]) for m in out]
    assert ("node02", "enp134s0f0np0", "policy") in [(m["node"], m["pf"], m["field"]) for m in out]


def test_doctor_layers_12_to_14_skip_without_a_cluster(twin, tmp_path):
    proc = twin.playbook("tests/integration/fixtures/kube_doctor.yml", "-e", f"kube_doctor_out={tmp_path}")
    assert proc.returncode == 0, proc.stdout[-3000:]
    for node in NODES:
        results = json.loads((tmp_path / f"{node}.json").read_text())
        assert [(r["layer"], r["name"], r["status"]) for r in results] == [
            (12, "cni", "skipped"), (13, "multus", "skipped"), (14, "sriov_operator", "skipped")]
        assert all(r["reason"] == "no cluster: /etc/kubernetes/admin.conf not found on node01" for r in results)


def test_doctor_reads_the_api_through_the_control_plane_host(twin, tmp_path):
    """With a kubeconfig on the control-plane host the checks call
    kubernetes.core.k8s_info there; the twin node has no Python kubernetes
    library, so every layer names the API read that failed instead of
    passing or skipping."""
    twin.sh("node01", "mkdir -p /etc/kubernetes && printf 'apiVersion: v1\\nkind: Config\\n' > /etc/kubernetes/admin.conf")
    try:
        proc = twin.playbook("tests/integration/fixtures/kube_doctor.yml", "-e", f"kube_doctor_out={tmp_path}")
        assert proc.returncode == 0, proc.stdout[-3000:]
        for node in NODES:
            results = json.loads((tmp_path / f"{node}.json").read_text())
            assert [(r["layer"], r["status"]) for r in results] == [(12, "fail"), (13, "fail"), (14, "fail")]
            for r in results:
                assert r["reason"].startswith("Kubernetes API: ") and "kubernetes" in r["reason"], r
    finally:
        twin.sh("node01", "rm -f /etc/kubernetes/admin.conf", check=False)
