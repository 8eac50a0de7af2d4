"""The cross-layer chain (plugins/plugin_utils/roce_host/fabric_chain.py): each cabled PF
against its switch port, first differing link first."""

import copy

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils.roce_host import fabric_chain as C
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import roce_host as roce_host_check

pytestmark = pytest.mark.layers(7, 8)

INTENT = {"priority": 3, "dscp": 26, "cnp_priority": 6, "cnp_dscp": 48, "trust": "dscp",
          "ecn": {"min_kbytes": 150, "max_kbytes": 1500, "probability": 100}, "host_mtu": 9000, "switch_mtu": 9216}
CABLING = [
    {"node": "node01", "pf": "enp59s0f0np0", "pci_address": "0000:3b:00.0", "switch": "leaf1", "port": "ethernet 1/1"},
    {"node": "node01", "pf": "enp134s0f0np0", "pci_address": "0000:86:00.0", "switch": "leaf2", "port": "swp1"},
    {"node": "node02", "pf": "enp59s0f0np0", "pci_address": "0000:3b:00.0", "switch": "leaf1", "port": "ethernet 1/2"},
    {"node": "node02", "pf": "enp134s0f0np0", "pci_address": "0000:86:00.0", "switch": "leaf2", "port": "swp2"},
]
ECN = {"min_bytes": 150000, "max_bytes": 1500000, "probability": 100, "tc": 3}


def port(**kw):
    p = {"mtu": 9216, "pfc": True, "trust": "dscp", "ecn": dict(ECN), "cnp_strict": True, "oper_pfc": [3]}
    p.update(kw)
    return p


def switch(ports, **glob):
    g = {"pfc_priority": 3, "trust": "dscp", "dscp_map": {"26": 3, "48": 6}, "ecn": dict(ECN),
         "cnp": {"priority": 6, "strict": True}}
    g.update(glob)
    # what gpufabric.stack.roce_switch returns with state gathered
    return {"changed": False, "nos": "onyx", "gathered": {"global": g, "ports": dict((p, port()) for p in ports)}}


def host_pf(name, pci, **kw):
    st = {"name": name, "pci_address": pci, "rdma_device": "x", "driver": "inbox", "trust": "dscp",
          "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "pfc_priorities": [3], "dscp_map": {"26": 3, "48": 6},
          "ecn": {"source": "firmware", "roce_np": [1] * 8, "roce_rp": [1] * 8, "cnp_dscp": 48, "cnp_802p_prio": 6},
          "roce_mode": "RoCE v2", "roce_tos": 106, "mtu": 9000}
    st.update(kw)
    return st


def host(**per_pf):
    pfs = {"enp59s0f0np0": host_pf("enp59s0f0np0", "0000:3b:00.0"),
           "enp134s0f0np0": host_pf("enp134s0f0np0", "0000:86:00.0")}
    for name, kw in per_pf.items():
        pfs[name].update(kw)
    # what gpufabric.stack.roce_qos returns with state gathered
    return {"changed": False, "gathered": pfs, "drift": []}


def healthy():
    switches = {"leaf1": switch(["ethernet 1/1", "ethernet 1/2"]), "leaf2": switch(["swp1", "swp2"])}
    switches["leaf2"]["nos"] = "nvue"
    return switches, {"node01": host(), "node02": host()}


def test_a_healthy_chain_has_no_difference():
    switches, hosts = healthy()
    res = C.compare(INTENT, CABLING, switches, hosts)
    assert res == {"differences": [], "unchecked": [], "checked": 4}


def test_switch_port_without_pfc_is_named_with_both_ends():
    switches, hosts = healthy()
    switches["leaf1"]["gathered"]["ports"]["ethernet 1/2"]["pfc"] = False
    res = C.compare(INTENT, CABLING, switches, hosts)
    first = res["differences"][0]
    assert first["text"] == "node02 enp59s0f0np0 PFC {3} vs leaf1 ethernet 1/2 PFC {}"
    assert (first["departs"], first["layer"], first["field"]) == ("switch", 7, "pfc")
    assert first["remediation"] == "run roce_switch (tag layer07) on leaf1"
    assert len(res["differences"]) == 1


def test_host_pfc_mismatch_is_the_host_end():
    switches, hosts = healthy()
    hosts["node02"] = host(enp59s0f0np0={"pfc": [0, 0, 0, 0, 1, 0, 0, 0], "pfc_priorities": [4]})
    res = C.compare(INTENT, CABLING, switches, hosts)
    assert [d["text"] for d in res["differences"]] == ["node02 enp59s0f0np0 PFC {4} vs leaf1 ethernet 1/2 PFC {3}"]
    d = res["differences"][0]
    assert (d["departs"], d["layer"], d["remediation"]) == ("host", 8, "run roce_host (tag layer08) on node02")


def test_switch_departures_come_first_then_cabling_order():
    switches, hosts = healthy()
    hosts["node01"] = host(enp59s0f0np0={"trust": "pcp", "dscp_map": None})
    switches["leaf2"]["gathered"]["ports"]["swp2"]["mtu"] = 1500
    res = C.compare(INTENT, CABLING, switches, hosts)
    assert [d["text"] for d in res["differences"]] == [
        "node02 enp134s0f0np0 MTU 9000 vs leaf2 swp2 MTU 1500",
        "node01 enp59s0f0np0 trust pcp vs leaf1 ethernet 1/1 trust dscp",
    ]
    assert [d["layer"] for d in res["differences"]] == [7, 8]


def test_dscp_map_ecn_and_both_ends_wrong():
    switches, hosts = healthy()
    switches["leaf1"]["gathered"]["global"]["dscp_map"] = {"26": 2, "48": 6}
    switches["leaf1"]["gathered"]["ports"]["ethernet 1/1"]["ecn"] = None
    hosts["node01"] = host(enp59s0f0np0={"pfc_priorities": [4], "pfc": [0] * 4 + [1] + [0] * 3})
    switches["leaf1"]["gathered"]["ports"]["ethernet 1/1"]["pfc"] = False
    res = C.compare(INTENT, CABLING, switches, hosts, nodes=["node01"])
    by = dict((d["field"], d) for d in res["differences"])
    assert by["pfc"]["departs"] == "both"
    assert by["pfc"]["remediation"] == "run roce_switch (tag layer07) on leaf1 and run roce_host (tag layer08) on node01"
    assert by["dscp"]["text"] == "node01 enp59s0f0np0 DSCP 26 -> priority 3 vs leaf1 ethernet 1/1 DSCP 26 -> priority 2"
    assert by["ecn"]["text"] == ("node01 enp59s0f0np0 ECN on priority 3 on vs leaf1 ethernet 1/1 "
                                 "ECN marking on TC 3 off")
    assert [d["field"] for d in res["differences"]] == ["pfc", "dscp", "ecn"]
    assert res["checked"] == 2


def test_unknown_host_ecn_is_not_compared():
    switches, hosts = healthy()
    switches["leaf1"]["gathered"]["ports"]["ethernet 1/1"]["ecn"] = None
    hosts["node01"] = host(enp59s0f0np0={"ecn": None})
    assert C.compare(INTENT, CABLING, switches, hosts)["differences"] == []


def test_unchecked_links_say_which_end_is_missing():
    switches, hosts = healthy()
    del switches["leaf2"]
    switches["leaf1"] = {"failed": True, "msg": "leaf1: authentication failed"}
    hosts["node02"] = host()
    del hosts["node02"]["gathered"]["enp134s0f0np0"]
    del hosts["node01"]
    res = C.compare(INTENT, CABLING, switches, hosts)
    assert res["checked"] == 0
    assert res["unchecked"] == [
        "node01 enp59s0f0np0 -> leaf1 ethernet 1/1: node01 was not read in this run",
        "node01 enp134s0f0np0 -> leaf2 swp1: node01 was not read in this run",
        "node02 enp59s0f0np0 -> leaf1 ethernet 1/2: leaf1 could not be read: leaf1: authentication failed",
        "node02 enp134s0f0np0 -> leaf2 swp2: node02 has no data for enp134s0f0np0 (0000:86:00.0)",
    ]


def test_port_not_among_the_gathered_ports():
    switches, hosts = healthy()
    cabling = copy.deepcopy(CABLING)
    cabling[1]["port"] = "swp9"
    res = C.compare(INTENT, cabling, switches, hosts, nodes=["node01"])
    assert res["unchecked"] == ["node01 enp134s0f0np0 -> leaf2 swp9: leaf2 has no data for port swp9 "
                                "(not among its GPU-facing ports)"]


@pytest.mark.parametrize("cabled, gathered", [
    ("Ethernet1/7", "Ethernet1/7"), ("1/7", "ethernet 1/7"), ("Ethernet1/7", "Eth1/7"), ("Et7", "Ethernet7"),
    ("swp7", "swp7")])
def test_port_spellings_of_one_port_match(cabled, gathered):
    assert C.port_key(cabled) == C.port_key(gathered)
    assert C.port_key("swp7") != C.port_key("swp17") and C.port_key("Ethernet1/7") != C.port_key("Ethernet1/17")


def test_pf_found_by_pci_address_when_the_name_differs():
    switches, hosts = healthy()
    renamed = host()
    renamed["gathered"] = {"ens2f0np0": dict(renamed["gathered"]["enp59s0f0np0"], name="ens2f0np0",
                                             pfc_priorities=[], pfc=[0] * 8)}
    hosts["node01"] = renamed
    res = C.compare(INTENT, CABLING[:1], switches, hosts)
    assert [d["text"] for d in res["differences"]] == ["node01 ens2f0np0 PFC {} vs leaf1 ethernet 1/1 PFC {3}"]


def test_compare_accepts_bare_models_and_reports_bad_intent():
    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos as Q
    switches, hosts = healthy()
    bare_sw = dict((k, v["gathered"]) for k, v in switches.items())
    bare_hosts = dict((k, v["gathered"]) for k, v in hosts.items())
    assert C.compare(INTENT, CABLING, bare_sw, bare_hosts)["checked"] == 4
    with pytest.raises(Q.RoceQosError, match="priority 9"):
        C.compare(dict(INTENT, priority=9), CABLING, bare_sw, bare_hosts)


def test_firmware_ecn_off_on_an_inbox_host_is_a_warning_not_a_failure():
    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos as Q
    switches, hosts = healthy()
    off = [1, 1, 1, 0, 1, 1, 1, 1]
    hosts["node01"] = host(enp59s0f0np0={"ecn": {"source": "firmware", "roce_np": off, "roce_rp": off}})
    res = C.compare(INTENT, CABLING, switches, hosts, nodes=["node01"])
    d = res["differences"]
    assert [(x["field"], x["departs"], x["severity"]) for x in d] == [("ecn", "host", "warn")]
    r = roce_host_check.layer_result("node01", {"drift": [], "gathered": {"a": {}, "b": {}}}, True, chain=res)
    assert (r["status"], r["reason"]) == ("warn", "node01 enp59s0f0np0 ECN on priority 3 off vs leaf1 ethernet 1/1 "
                                                  "ECN marking on TC 3 on")
    # the same with OFED sysfs can be set: a failure
    hosts["node01"] = host(enp59s0f0np0={"driver": "ofed", "ecn": {"source": "sysfs", "roce_np": off, "roce_rp": off}})
    res = C.compare(INTENT, CABLING, switches, hosts, nodes=["node01"])
    assert [x["severity"] for x in res["differences"]] == ["fail"]
    assert roce_host_check.layer_result("node01", {"drift": []}, True, chain=res)["status"] == "fail"
