"""Layer 14 from the layer 6 data: SriovNetworkNodePolicy generation, tenant
networks, input errors, and the comparison of policies with nic_facts of a
node (the twin's sysfs model stands in for a host)."""

import copy
import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.stack.plugins.plugin_utils.sriov_operator import sriov_policy as sp
from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic
from test_twin_kernel import make

pytestmark = pytest.mark.layers(14)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "inventories" / "example"


def example():
    nics = yaml.safe_load((EXAMPLE / "group_vars" / "gpu_workers.yml").read_text())["gpufabric_nics"]
    fabric = yaml.safe_load((EXAMPLE / "group_vars" / "all" / "fabric.yml").read_text())
    hosts = sorted({c["node"] for c in fabric["gpufabric_cabling"]})
    tenants = yaml.safe_load((EXAMPLE / "group_vars" / "all" / "kubernetes.yml").read_text())["gpufabric_tenants"]
    return {h: copy.deepcopy(nics) for h in hosts}, fabric["gpufabric_cabling"], tenants


def node_facts(tmp_path, numvfs=(8, 8), pf_mtu=9000):
    """nic_facts of a twin node (two ConnectX-7 PFs) with the given VF counts
    and the PF MTU layer 8 sets."""
    k, t, clock = make()
    for pci, n in zip(("0000:3b:00.0", "0000:86:00.0"), numvfs):
        if n:
            t.write(f"/bus/pci/devices/{pci}/sriov_numvfs", f"{n}\n".encode())
            clock.t += 1
    root = tmp_path / "sys"
    t.materialize(str(root))
    facts = sysfs_nic.discover(str(root))
    for pf in facts:
        pf["mtu"] = pf_mtu
    return facts


# ------------------------------------------------------------- generation

def test_example_inventory_gives_one_externally_managed_policy_per_rail():
    nodes, cabling, _ = example()
    plan = sp.generate(nodes, cabling, underlay_mtu=9000)
    assert plan["errors"] == []
    specs = {p["spec"]["resourceName"]: p["spec"] for p in plan["policies"]}
    assert sorted(specs) == ["gpu_rail0", "gpu_rail1"]
    rail0 = specs["gpu_rail0"]
    assert rail0["nicSelector"] == {"vendor": "15b3", "deviceID": "1021", "pfNames": ["enp59s0f0np0"]}
    assert specs["gpu_rail1"]["nicSelector"]["pfNames"] == ["enp134s0f0np0"]
    assert rail0["numVfs"] == 8 and rail0["mtu"] == 9000
    assert rail0["externallyManaged"] is True and rail0["isRdma"] is True and rail0["deviceType"] == "netdevice"
    # every node has the same layout: one profile, one label value on all eight
    assert len(set(json.dumps(v) for v in plan["node_labels"].values())) == 1 and len(plan["node_labels"]) == 8
    profile = plan["node_labels"]["gpu-a01"]["gpufabric.io/nic-profile"]
    assert rail0["nodeSelector"] == {"gpufabric.io/nic-profile": profile}
    assert {p["metadata"]["name"] for p in plan["policies"]} == {f"gpu-rail0-{profile}", f"gpu-rail1-{profile}"}
    assert plan["node_resources"]["gpu-b04"] == ["gpu_rail0", "gpu_rail1"]


def test_rail_follows_pci_order_not_cabling_order():
    nodes, cabling, _ = example()
    cabling = list(reversed(cabling))
    plan = sp.generate(nodes, cabling)
    pol = {p["spec"]["resourceName"]: p["spec"]["nicSelector"]["pfNames"] for p in plan["policies"]}
    assert pol == {"gpu_rail0": ["enp59s0f0np0"], "gpu_rail1": ["enp134s0f0np0"]}


def test_nodes_with_another_layout_get_their_own_profile_and_policies():
    nodes, cabling, _ = example()
    for h in ("gpu-b01", "gpu-b02", "gpu-b03", "gpu-b04"):
        nodes[h][0]["num_vfs"] = 4
    plan = sp.generate(nodes, cabling)
    assert plan["errors"] == []
    labels = plan["node_labels"]
    assert labels["gpu-a01"] == labels["gpu-a04"] != labels["gpu-b01"] == labels["gpu-b04"]
    by_profile = {}
    for p in plan["policies"]:
        by_profile.setdefault(p["spec"]["nodeSelector"]["gpufabric.io/nic-profile"], []).append(p["spec"]["numVfs"])
    assert sorted(by_profile.values()) == [[4, 4], [8, 8]]


def test_pci_address_match_selects_by_root_device_and_name_match_by_pf_name():
    _, cabling, _ = example()
    nodes = {"gpu-a01": [{"match": {"pci_address": "0000:86:00.0"}, "num_vfs": 4, "resource_prefix": "storage"},
                         {"match": {"name": "enp59s0f0np0"}, "num_vfs": 8, "resource_prefix": "gpu_rail"}]}
    plan = sp.generate(nodes, cabling, selector="rootDevices")
    specs = {p["spec"]["resourceName"]: p["spec"] for p in plan["policies"]}
    assert specs["storage1"]["nicSelector"] == {"rootDevices": ["0000:86:00.0"]}
    assert specs["gpu_rail0"]["nicSelector"] == {"rootDevices": ["0000:3b:00.0"]}
    plan = sp.generate(nodes, cabling)
    assert {p["spec"]["resourceName"]: p["spec"]["nicSelector"] for p in plan["policies"]}["gpu_rail0"] == \
        {"pfNames": ["enp59s0f0np0"]}


@pytest.mark.parametrize("mutate, needle", [
    (lambda n: n.update(resource_prefix="gpu.rail"), "gpufabric_nics[0].resource_prefix: resource name 'gpu.rail0' "
                                                      "is not a valid extended resource name"),
    (lambda n: n.update(resource_prefix="x" * 70), "longer than 63 characters"),
    (lambda n: n.update(num_vfs=0), "gpufabric_nics[0].num_vfs 0: a policy needs 1-128 VFs"),
    (lambda n: n.update(num_vfs=200), "gpufabric_nics[0].num_vfs 200"),
    (lambda n: n.update(vf_mtu=9100), "gpufabric_nics[0].vf_mtu 9100 is larger than the underlay MTU gpufabric_roce.host_mtu 9000"),
    (lambda n: n.update(match={"vendor_device": "15b3:9999", "name": "x"}), "must have exactly one of"),
])
def test_bad_nic_data_names_host_and_variable(mutate, needle):
    nodes, cabling, _ = example()
    for nics in nodes.values():
        mutate(nics[0])
    errors = sp.generate(nodes, cabling, underlay_mtu=9000)["errors"]
    assert any(needle in e for e in errors), errors
    assert all(e.startswith("gpu-") for e in errors)


def test_operator_prefix_must_be_a_domain_outside_kubernetes_io():
    nodes, cabling, _ = example()
    errs = sp.generate(nodes, cabling, operator_prefix="kubernetes.io")["errors"]
    assert errs == ["sriov_operator_resource_prefix: 'kubernetes.io' is reserved for Kubernetes; "
                    "extended resources must use another domain"]
    assert "not a DNS subdomain" in sp.generate(nodes, cabling, operator_prefix="Open_Shift")["errors"][0]


def test_node_missing_from_the_cabling_plan():
    nodes, cabling, _ = example()
    nodes["gpu-c01"] = nodes["gpu-a01"]
    errs = sp.generate(nodes, cabling)["errors"]
    assert errs == ["gpu-c01: gpufabric_cabling lists no PF of this node, so its rails (and the resource names of "
                    "gpufabric_nics resource_prefix) are unknown; add its PFs to gpufabric_cabling"]


def test_entry_that_selects_no_cabled_pf():
    _, cabling, _ = example()
    errs = sp.generate({"gpu-a01": [{"match": {"name": "ens9f9"}, "num_vfs": 2, "resource_prefix": "x"}]}, cabling)["errors"]
    assert errs[0].startswith("gpu-a01: gpufabric_nics[0].match name=ens9f9 selects no PF of this node")


# ---------------------------------------------------------------- tenants

def resources():
    nodes, cabling, _ = example()
    return sp.generate(nodes, cabling)["resources"]


def test_example_tenants_are_valid_and_get_one_network_per_rail():
    _, _, tenants = example()
    res = resources()
    assert sp.validate_tenants(tenants, res, underlay_mtu=9000) == []
    nets = sp.tenant_networks(tenants, res, roce_priority=3)
    assert [(n["metadata"]["name"], n["spec"]["resourceName"], n["spec"]["networkNamespace"]) for n in nets] == [
        ("team-a-gpu-rail0", "gpu_rail0", "team-a"), ("team-a-gpu-rail1", "gpu_rail1", "team-a"),
        ("team-b-gpu-rail0", "gpu_rail0", "team-b"), ("team-b-gpu-rail1", "gpu_rail1", "team-b")]
    assert json.loads(nets[1]["spec"]["ipam"]) == {"type": "whereabouts", "range": "192.168.101.0/24"}
    assert "vlan" not in nets[0]["spec"]
    assert nets[2]["spec"]["vlan"] == 200 and nets[2]["spec"]["vlanQoS"] == 3
    assert all(n["spec"]["spoofChk"] == "on" and n["spec"]["trust"] == "off" for n in nets)
    assert sp.expected_nads(tenants, res)[3] == {"namespace": "team-b", "name": "team-b-gpu-rail1", "resource": "gpu_rail1"}


def test_infiniband_tenants_get_sriov_ib_networks():
    _, _, tenants = example()
    nets = sp.tenant_networks(tenants[:1], resources(), link_type="ib")
    assert {n["kind"] for n in nets} == {"SriovIBNetwork"}
    assert "vlan" not in nets[0]["spec"] and "spoofChk" not in nets[0]["spec"]


@pytest.mark.parametrize("tenant, needle", [
    ({"namespace": "Team_A"}, "gpufabric_tenants[0].namespace 'Team_A' is not a DNS label"),
    ({"namespace": "a" * 64}, "is not a DNS label"),
    ({"namespace": "team-a", "mtu": 9216}, "gpufabric_tenants[0].mtu 9216 is larger than the underlay MTU 9000"),
    ({"namespace": "team-a", "vlan": 4095}, "gpufabric_tenants[0].vlan 4095 is outside 1-4094"),
    ({"namespace": "team-a", "resources": ["gpu rail0"]}, "gpufabric_tenants[0].resources[0]: resource name 'gpu rail0' "
                                                          "is not a valid extended resource name"),
    ({"namespace": "team-a", "resources": ["gpu_rail7"]}, "gpufabric_tenants[0].resources[0] 'gpu_rail7' is no resource"),
    ({"namespace": "team-a", "rails": [3]}, "gpufabric_tenants[0].rails[0] 3 is no rail of gpufabric_nics; known: 0, 1"),
    ({"namespace": "team-a", "ipam": {"type": "dhcp", "ranges": ["10.0.0.0/24", "10.0.1.0/24"]}},
     "gpufabric_tenants[0].ipam.type 'dhcp' is not one of whereabouts, host-local"),
    ({"namespace": "team-a", "ipam": {"type": "whereabouts", "ranges": ["10.0.0.0/24"]}},
     "gpufabric_tenants[0].ipam.ranges needs one CIDR per network, in rail order (2: gpu_rail0, gpu_rail1)"),
    ({"namespace": "team-a", "ipam": {"type": "whereabouts", "ranges": ["10.0.0.0/33", "10.0.1.0/24"]}},
     "gpufabric_tenants[0].ipam.ranges[0] '10.0.0.0/33' is not a CIDR"),
])
def test_bad_tenants_name_the_variable(tenant, needle):
    t = {"ipam": {"type": "whereabouts", "ranges": ["10.0.0.0/24", "10.0.1.0/24"]}}
    t.update(tenant)
    if t.get("resources") or t.get("rails"):
        t["ipam"] = dict(t["ipam"], ranges=t["ipam"]["ranges"][:1])
    errs = sp.validate_tenants([t], resources(), underlay_mtu=9000)
    assert any(needle in e for e in errs), errs


def test_overlapping_ranges_of_two_tenants_on_the_same_rail():
    ipam = {"type": "whereabouts", "ranges": ["10.0.0.0/24", "10.0.1.0/24"]}
    t = [{"namespace": "a", "ipam": ipam}, {"namespace": "b", "ipam": {"type": "whereabouts",
                                                                       "ranges": ["10.0.0.128/25", "10.9.0.0/24"]}}]
    errs = sp.validate_tenants(t, resources())
    assert errs == ["gpufabric_tenants[1].ipam.ranges[0] 10.0.0.128/25 overlaps 10.0.0.0/24 of tenant a on gpu_rail0 (same VLAN)"]
    t[1]["vlan"] = 300
    assert sp.validate_tenants(t, resources()) == []


def test_duplicate_namespace_and_vlan_with_macvlan():
    ipam = {"type": "host-local", "ranges": ["10.0.0.0/24", "10.0.1.0/24"]}
    t = [{"namespace": "a", "ipam": ipam}, {"namespace": "a", "ipam": ipam, "vlan": 10}]
    errs = sp.validate_tenants(t, resources(), provider="nvidia-network-operator")
    assert "gpufabric_tenants[1].namespace 'a' is already gpufabric_tenants[0]" in errs
    assert any("gpufabric_tenants[1].vlan 10: VLANs need the sriov-network-operator provider" in e for e in errs)


def test_host_local_ipam_config():
    assert sp.ipam_config({"type": "host-local", "ranges": ["10.1.0.0/24"]}, 0) == \
        {"type": "host-local", "ranges": [[{"subnet": "10.1.0.0/24"}]]}


# ------------------------------------------------------ NVIDIA provider

def test_rdma_shared_device_plugin_config_and_macvlan_networks():
    _, _, tenants = example()
    res = resources()
    cfg = sp.rdma_shared_config(res)
    assert cfg["configList"][0] == {"resourceName": "gpu_rail0", "rdmaHcaMax": 63,
                                    "selectors": {"vendors": ["15b3"], "deviceIDs": ["1021"], "ifNames": ["enp59s0f0np0"]}}
    nads, errors = sp.macvlan_nads(tenants[:1], res)
    assert errors == []
    conf = json.loads(nads[1]["spec"]["config"])
    assert conf["type"] == "macvlan" and conf["master"] == "enp134s0f0np0" and conf["mtu"] == 9000
    assert nads[1]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == "rdma/gpu_rail1"


def test_macvlan_needs_one_pf_name_per_rail():
    nodes, cabling, tenants = example()
    cabling = copy.deepcopy(cabling)
    cabling[0]["pf"] = "ens1f0np0"          # gpu-a01 rail 0 named differently
    res = sp.generate(nodes, cabling)["resources"]
    _, errors = sp.macvlan_nads(tenants[:1], res)
    assert errors == ["resource gpu_rail0: macvlan needs the same PF name on every node, gpufabric_cabling has "
                      "enp59s0f0np0, ens1f0np0"]


# ------------------------------------------------------ policy vs nic_facts

def twin_plan(nics=None, num_vfs=8):
    nics = nics or [{"match": {"vendor_device": "15b3:1021"}, "num_vfs": num_vfs, "vf_mtu": 9000,
                     "resource_prefix": "gpu_rail"}]
    cabling = [{"node": "node01", "pf": "enp59s0f0np0", "pci_address": "0000:3b:00.0"},
               {"node": "node01", "pf": "enp134s0f0np0", "pci_address": "0000:86:00.0"}]
    return sp.generate({"node01": nics}, cabling), nics


def test_policies_match_the_node_layer6_configured(tmp_path):
    facts = node_facts(tmp_path)
    plan, nics = twin_plan()
    assert sp.check_policies(plan["policies"], "node01", plan["node_labels"]["node01"], facts, nics) == []


def test_numvfs_mismatch_names_node_pf_and_field(tmp_path):
    facts = node_facts(tmp_path, numvfs=(8, 8))
    plan, nics = twin_plan(num_vfs=4)
    out = sp.check_policies(plan["policies"], "node01", plan["node_labels"]["node01"], facts, nics)
    assert [(m["node"], m["pf"], m["field"], m["want"], m["have"]) for m in out] == [
        ("node01", "enp59s0f0np0", "numVfs", 4, 8), ("node01", "enp134s0f0np0", "numVfs", 4, 8)]
    assert "layer 6 configured 8 (sriov_numvfs)" in out[0]["message"]


def test_more_vfs_than_totalvfs_and_no_vfs(tmp_path):
    facts = node_facts(tmp_path, numvfs=(0, 8))
    plan, nics = twin_plan(num_vfs=20)
    out = sp.check_policies(plan["policies"], "node01", plan["node_labels"]["node01"], facts, nics)
    rail0 = [m for m in out if m["pf"] == "enp59s0f0np0"]
    assert [(m["field"], m["have"]) for m in rail0] == [("numVfs", 16), ("numVfs", 0)]
    assert "sriov_totalvfs is 16" in rail0[0]["message"]


def test_wrong_device_id_and_wrong_pf_name(tmp_path):
    facts = node_facts(tmp_path)
    plan, nics = twin_plan()
    pols = copy.deepcopy(plan["policies"])
    pols[0]["spec"]["nicSelector"]["deviceID"] = "101d"
    pols[1]["spec"]["nicSelector"]["pfNames"] = ["ens2f0np0"]
    out = sp.check_policies(pols, "node01", plan["node_labels"]["node01"], facts, nics)
    fields = [(m["pf"], m["field"], m["want"], m["have"]) for m in out]
    assert ("enp59s0f0np0", "nicSelector.deviceID", "101d", "1021") in fields
    assert ("-", "nicSelector", {"vendor": "15b3", "deviceID": "1021", "pfNames": ["ens2f0np0"]},
            ["enp59s0f0np0", "enp134s0f0np0"]) in fields
    # both PFs are then uncovered while layer 6 gave them VFs
    assert [(m["pf"], m["field"]) for m in out if m["field"] == "policy"] == [
        ("enp59s0f0np0", "policy"), ("enp134s0f0np0", "policy")]


def test_resource_name_must_follow_the_rail(tmp_path):
    facts = node_facts(tmp_path)
    plan, nics = twin_plan()
    pols = copy.deepcopy(plan["policies"])
    pols[0]["spec"]["resourceName"], pols[1]["spec"]["resourceName"] = "gpu_rail1", "gpu_rail0"
    out = sp.check_policies(pols, "node01", plan["node_labels"]["node01"], facts, nics)
    assert [(m["pf"], m["field"], m["want"], m["have"]) for m in out] == [
        ("enp59s0f0np0", "resourceName", "gpu_rail1", "gpu_rail0"),
        ("enp134s0f0np0", "resourceName", "gpu_rail0", "gpu_rail1")]


def test_policy_mtu_above_the_pf_mtu_and_no_rdma_device(tmp_path):
    facts = node_facts(tmp_path)
    facts[0]["mtu"] = 1500               # the operator refuses a VF MTU above the PF's (externallyManaged)
    facts[1]["rdma_device"] = None
    plan, nics = twin_plan()
    out = sp.check_policies(plan["policies"], "node01", plan["node_labels"]["node01"], facts, nics)
    assert ("enp59s0f0np0", "mtu", 9000, 1500) in [(m["pf"], m["field"], m["want"], m["have"]) for m in out]
    assert ("enp134s0f0np0", "isRdma") in [(m["pf"], m["field"]) for m in out]


def test_policies_of_another_profile_do_not_apply(tmp_path):
    facts = node_facts(tmp_path)
    plan, nics = twin_plan()
    out = sp.check_policies(plan["policies"], "node01", {"gpufabric.io/nic-profile": "other"}, facts, nics)
    assert [m["field"] for m in out] == ["policy", "policy"]


def test_rdma_shared_config_against_the_node(tmp_path):
    facts = node_facts(tmp_path)
    plan, _ = twin_plan()
    cfg = sp.rdma_shared_config(plan["resources"])
    assert sp.check_rdma_shared_config(cfg, "node01", facts) == []
    cfg["configList"][1]["selectors"]["ifNames"] = ["ens9"]
    out = sp.check_rdma_shared_config(cfg, "node01", facts)
    assert [(m["field"], m["policy"]) for m in out] == [("selectors", "gpu_rail1")]


# ------------------------------------------------------------- rails by GPU

def pcie_reading(gpus):
    """nic_facts' pcie reading of a node from ``gpus``: [(gpu pci, index,
    numa, {nic pci: (kind, numa)})], each GPU's links nearest first."""
    from ansible_collections.gpufabric.stack.plugins.module_utils.host import pcie
    pairs = []
    for gpu, index, numa, links in gpus:
        ls = [{"nic": n, "kind": k, "rdma": None, "netdev": None, "numa_node": nn, "order": o}
              for o, (n, (k, nn)) in enumerate(sorted(links.items()))]
        ls.sort(key=lambda x: (pcie.rank(x["kind"]), x["order"]))
        pairs.append({"gpu": gpu, "index": index, "numa_node": numa, "links": ls})
    reading = {"pairs": pairs}
    reading["rails"] = pcie.rails(reading)
    return reading


# GPU0 (NUMA 1) below the switch of the NIC at 86:00.0, GPU1 (NUMA 0) below
# 3b:00.0's, GPU2 (NUMA 0) with no NIC of its own: the NICs' PCI order is
# not the GPUs'
CROSSED = pcie_reading([
    ("0000:1a:00.0", 0, 1, {"0000:86:00.0": ("PIX", 1), "0000:3b:00.0": ("SYS", 0)}),
    ("0000:3a:00.0", 1, 0, {"0000:3b:00.0": ("PIX", 0), "0000:86:00.0": ("SYS", 1)}),
    ("0000:5d:00.0", 2, 0, {"0000:3b:00.0": ("NODE", 0), "0000:86:00.0": ("SYS", 1)})])
# the same NICs below GPU0's and GPU1's switches in PCI order
STRAIGHT = pcie_reading([
    ("0000:1a:00.0", 0, 0, {"0000:3b:00.0": ("PIX", 0), "0000:86:00.0": ("SYS", 1)}),
    ("0000:3a:00.0", 1, 1, {"0000:86:00.0": ("PIX", 1), "0000:3b:00.0": ("SYS", 0)})])


def test_rail_order_puts_each_gpus_nic_in_gpu_order_then_the_rest_by_pci():
    from ansible_collections.gpufabric.stack.plugins.module_utils.host import pcie
    gpu_of = pcie.gpu_of_nic(CROSSED["rails"])
    assert pcie.rail_order(["0000:3b:00.0", "0000:86:00.0", "0000:18:00.0"], gpu_of) == [
        "0000:86:00.0", "0000:3b:00.0", "0000:18:00.0"]
    assert pcie.rail_order(["0000:86:00.0", "0000:3b:00.0"], {}) == ["0000:3b:00.0", "0000:86:00.0"]


def test_two_gpus_and_two_nics_below_one_switch_take_one_nic_each():
    from ansible_collections.gpufabric.stack.plugins.module_utils.host import pcie
    node = pcie_reading([
        ("0000:07:00.0", 0, 0, {"0000:0c:00.0": ("PXB", 0), "0000:0d:00.0": ("PXB", 0)}),
        ("0000:0f:00.0", 1, 0, {"0000:0c:00.0": ("PXB", 0), "0000:0d:00.0": ("PXB", 0)})])
    assert [(r["index"], r["nic"]) for r in node["rails"]] == [(0, "0000:0c:00.0"), (1, "0000:0d:00.0")]
    # a NIC outside the fabric (a storage port below GPU0's switch) is no GPU's rail among the fabric's
    storage = pcie_reading([
        ("0000:07:00.0", 0, 0, {"0000:05:00.0": ("PIX", 0), "0000:0c:00.0": ("PXB", 0)}),
        ("0000:8f:00.0", 1, 1, {"0000:8c:00.0": ("PIX", 1)})])
    assert storage["rails"][0]["nic"] == "0000:05:00.0"
    assert pcie.gpu_of_nic(storage["rails"], among=["0000:0c:00.0", "0000:8c:00.0"]) == {
        "0000:0c:00.0": {"pci_address": "0000:07:00.0", "index": 0},
        "0000:8c:00.0": {"pci_address": "0000:8f:00.0", "index": 1}}


def test_cabling_gpu_numbers_the_rails_in_gpu_order():
    nodes, cabling, _ = example()
    for c in cabling:
        c["gpu"] = 0 if c["pci_address"] == "0000:86:00.0" else 1
    plan = sp.generate(nodes, cabling)
    assert plan["errors"] == []
    pol = {p["spec"]["resourceName"]: p["spec"]["nicSelector"]["pfNames"] for p in plan["policies"]}
    assert pol == {"gpu_rail0": ["enp134s0f0np0"], "gpu_rail1": ["enp59s0f0np0"]}
    assert [(r["rail"], r["gpu"], r["pci_address"]) for r in plan["rails"]["gpu-a01"]] == [
        (0, 0, "0000:86:00.0"), (1, 1, "0000:3b:00.0")]
    assert plan["resources"]["gpu_rail0"]["gpus"] == [0]


def test_a_node_whose_cabling_names_other_gpus_gets_its_own_profile():
    nodes, cabling, _ = example()
    for c in cabling:
        if c["node"] == "gpu-b01":
            c["gpu"] = 0 if c["pci_address"] == "0000:86:00.0" else 1
    plan = sp.generate(nodes, cabling)
    labels = plan["node_labels"]
    assert labels["gpu-a01"] == labels["gpu-b02"] != labels["gpu-b01"]
    b01 = labels["gpu-b01"]["gpufabric.io/nic-profile"]
    mine = {p["spec"]["resourceName"]: p["spec"]["nicSelector"]["pfNames"] for p in plan["policies"]
            if p["spec"]["nodeSelector"]["gpufabric.io/nic-profile"] == b01}
    assert mine == {"gpu_rail0": ["enp134s0f0np0"], "gpu_rail1": ["enp59s0f0np0"]}


@pytest.mark.parametrize("bad", ["two", -1, True, 1.5])
def test_a_cabling_gpu_that_is_no_index_is_named(bad):
    nodes, cabling, _ = example()
    cabling[3]["gpu"] = bad
    errors = sp.generate(nodes, cabling)["errors"]
    assert errors == ["gpu-a02: gpufabric_cabling[3].gpu %r (PF enp134s0f0np0) is not a GPU index (0, 1, ... as "
                      "nvidia-smi numbers the node's GPUs)" % (bad,)]


def test_resource_names_follow_the_gpu_pairing_the_node_shows(tmp_path):
    facts = node_facts(tmp_path)
    plan, nics = twin_plan()     # cabling without gpu: rails in PCI order
    out = sp.check_policies(plan["policies"], "node01", plan["node_labels"]["node01"], facts, nics,
                            rails=CROSSED["rails"])
    assert [(m["pf"], m["field"], m["want"], m["have"]) for m in out] == [
        ("enp59s0f0np0", "resourceName", "gpu_rail0", "gpu_rail1"),
        ("enp134s0f0np0", "resourceName", "gpu_rail1", "gpu_rail0")]
    assert "the PF is rail 1 (GPU1's NIC by the PCIe path): gpu_rail1" in out[0]["message"]
    # the same node without its GPUs read keeps PCI order, which the plan follows
    assert sp.check_policies(plan["policies"], "node01", plan["node_labels"]["node01"], facts, nics) == []


def test_rail_pairing_errors_name_pf_resource_gpu_and_path(tmp_path):
    facts = node_facts(tmp_path)
    plan, nics = twin_plan()
    errors = sp.rail_pairing_errors("node01", plan["rails"]["node01"], nics, facts, CROSSED)
    assert errors == [
        "node01: PF enp59s0f0np0 (0000:3b:00.0) is gpu_rail0 (gpufabric_cabling names no GPU for it, so PCI order "
        "makes it the rail of GPU0), but GPU0 0000:1a:00.0 (NUMA 1) reaches it across the socket interconnect "
        "(SYS), so NCCL gives that GPU no GPUDirect RDMA over it; by the PCIe path it is GPU1's rail (below its "
        "PCIe switch), and GPU0's own NIC is 0000:86:00.0",
        "node01: PF enp134s0f0np0 (0000:86:00.0) is gpu_rail1 (gpufabric_cabling names no GPU for it, so PCI "
        "order makes it the rail of GPU1), but GPU1 0000:3a:00.0 (NUMA 0) reaches it across the socket "
        "interconnect (SYS), so NCCL gives that GPU no GPUDirect RDMA over it; by the PCIe path it is GPU0's rail "
        "(below its PCIe switch), and GPU1's own NIC is 0000:3b:00.0"]
    # a plan from a cabling that names the GPUs as the node has them
    cabling = [{"node": "node01", "pf": "enp59s0f0np0", "pci_address": "0000:3b:00.0", "gpu": 1},
               {"node": "node01", "pf": "enp134s0f0np0", "pci_address": "0000:86:00.0", "gpu": 0}]
    good = sp.generate({"node01": nics}, cabling)
    assert sp.rail_pairing_errors("node01", good["rails"]["node01"], nics, facts, CROSSED) == []
    # ... and one that names them crossed
    for c in cabling:
        c["gpu"] = 1 - c["gpu"]
    bad = sp.generate({"node01": nics}, cabling)
    got = sp.rail_pairing_errors("node01", bad["rails"]["node01"], nics, facts, CROSSED)
    assert [e.split(", but")[0] for e in got] == [
        "node01: PF enp59s0f0np0 (0000:3b:00.0) is gpu_rail0 (gpufabric_cabling gives it GPU0)",
        "node01: PF enp134s0f0np0 (0000:86:00.0) is gpu_rail1 (gpufabric_cabling gives it GPU1)"]
    # a PCI-order plan on a node whose GPUs follow PCI order, and a node whose GPUs were not read
    assert sp.rail_pairing_errors("node01", plan["rails"]["node01"], nics, facts, STRAIGHT) == []
    assert sp.rail_pairing_errors("node01", plan["rails"]["node01"], nics, facts, {"pairs": [], "rails": []}) == []


def test_a_pf_missing_from_the_plan_does_not_shift_the_others(tmp_path):
    facts = node_facts(tmp_path)
    _, nics = twin_plan()
    only = sp.generate({"node01": nics}, [{"node": "node01", "pf": "enp134s0f0np0", "pci_address": "0000:86:00.0"}])
    # the plan's one PF is gpu_rail0, the node's GPU0 is below its switch: no crossing to report
    assert sp.rail_pairing_errors("node01", only["rails"]["node01"], nics, facts, CROSSED) == []


def test_layer14_fails_where_the_policies_cross_the_gpus_rails(tmp_path, monkeypatch):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import sriov_operator as layer14
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import kube_checks
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import result
    # the cluster's own verdict (test_kube_checks.py holds it to captured objects): ready, then not
    cluster = {"verdict": result(14, "pass", "sriov-network-operator ready on node01; 2 resource(s) allocatable",
                                 ["allocatable openshift.io/gpu_rail0: 8"])}
    monkeypatch.setattr(layer14.kube_checks, "check_sriov_operator", lambda *a, **k: cluster["verdict"])
    facts = node_facts(tmp_path)
    _, nics = twin_plan()
    intent = {"sriov_operator_kubeconfig": "/etc/kubernetes/admin.conf", "sriov_operator_provider": "sriov-network-operator",
              "sriov_operator_namespace": "sriov-network-operator", "sriov_operator_node_nics": {"node01": nics},
              "sriov_operator_cabling": [{"node": "node01", "pf": "enp59s0f0np0", "pci_address": "0000:3b:00.0"},
                                         {"node": "node01", "pf": "enp134s0f0np0", "pci_address": "0000:86:00.0"}],
              "sriov_operator_profile_label": "gpufabric.io/nic-profile", "sriov_operator_link_type": "eth",
              "sriov_operator_resource_prefix": "openshift.io", "sriov_operator_tenants": []}
    assert layer14.reads(intent, "node01")["nic_facts"] == {"pcie": {"topo": True}}
    answers = {kube_checks.query_key(q): {"resources": []} for q in layer14.queries(intent)}
    reading = {"cluster": {"answers": answers}, "nic_facts": {"nics": facts, "pcie": CROSSED}}
    got = layer14.check(reading, intent, "node01")
    assert got["status"] == "fail" and got["layer"] == 14
    assert got["reason"].startswith("a pod asking for a GPU's rail gets a NIC that GPU reaches only across the "
                                    "socket or the root complex: node01: PF enp59s0f0np0")
    assert "gpu: <index>" in got["remediation"]
    assert len(got["evidence"]) == 3 and got["evidence"][-1] == "allocatable openshift.io/gpu_rail0: 8"
    # a cluster that fails is named first: the operator's state is the layer's first question
    cluster["verdict"] = result(14, "fail", "node node01 is not registered in the cluster", [])
    assert layer14.check(reading, intent, "node01")["reason"] == "node node01 is not registered in the cluster"
    # with its GPUs as the plan has them, the cluster's verdict stands
    cluster["verdict"] = result(14, "pass", "sriov-network-operator ready on node01; 2 resource(s) allocatable", [])
    reading["nic_facts"]["pcie"] = STRAIGHT
    assert layer14.check(reading, intent, "node01")["status"] == "pass"
