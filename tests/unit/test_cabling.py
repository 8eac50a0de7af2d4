"""Layer 9's cabling check (plugin_utils/rdma_check/cabling.py): the plan
against what LLDP shows at both ends, each fault named once with its fix."""

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils.rdma_check import cabling as C

pytestmark = pytest.mark.layers(9)

PLAN = [
    {"node": "node01", "pf": "enp59s0f0np0", "switch": "leaf1", "port": "Ethernet1"},
    {"node": "node01", "pf": "enp134s0f0np0", "switch": "leaf2", "port": "Ethernet1/1"},
    {"node": "node02", "pf": "enp59s0f0np0", "switch": "leaf1", "port": "Ethernet2"},
    {"node": "node02", "pf": "enp134s0f0np0", "switch": "leaf2", "port": "Ethernet1/2"},
]
PFS = {n: {"enp59s0f0np0": {"mac": "0c:42:a1:00:%02d:00" % i, "rdma_device": "mlx5_0"},
           "enp134s0f0np0": {"mac": "0c:42:a1:00:%02d:01" % i, "rdma_device": "mlx5_1"}}
       for i, n in enumerate(["node01", "node02"], start=1)}


def canon(switch, text):
    """leaf1 names ports Ethernet<n> (EOS), leaf2 Ethernet1/<n> (NX-OS, Eth1/<n> in LLDP)."""
    import re
    m = re.match(r"^(?:Ethernet|Et)(\d+)$", text) if switch == "leaf1" else re.match(r"^(?:Ethernet|Eth)1/(\d+)$", text)
    return None if not m else ("Ethernet%s" % m.group(1) if switch == "leaf1" else "Ethernet1/%s" % m.group(1))


def rack():
    return C.Rack(PLAN, PFS, canon)


def host_nb(pf, switch, port):
    return {"local": pf, "sysname": switch + ".rack.example", "chassis_id": "aa:bb:cc:00:00:01",
            "port_id": port, "port_id_type": "ifname", "port_descr": ""}


def switch_nb(port, node, pf, by_mac=False):
    return {"local": port, "sysname": node, "chassis_id": "0c:42:a1:00:00:99",
            "port_id": PFS[node][pf]["mac"] if by_mac else pf, "port_id_type": "mac" if by_mac else "ifname",
            "port_descr": pf}


def views(cables):
    """Both ends' views of ``cables``: [(node, pf, switch, port as the leaf sends it)]."""
    hosts, switches = {}, {}
    for node, pf, switch, port in cables:
        hosts.setdefault(node, {"neighbors": []})["neighbors"].append(host_nb(pf, switch, port))
        local = canon(switch, port)
        switches.setdefault(switch, {"neighbors": []})["neighbors"].append(switch_nb(local, node, pf, by_mac=True))
    return hosts, switches


AS_PLANNED = [("node01", "enp59s0f0np0", "leaf1", "Ethernet1"), ("node01", "enp134s0f0np0", "leaf2", "Eth1/1"),
              ("node02", "enp59s0f0np0", "leaf1", "Ethernet2"), ("node02", "enp134s0f0np0", "leaf2", "Eth1/2")]


def verdicts(cables, host_only=False, switch_only=False):
    hosts, switches = views(cables)
    r = rack()
    links, strangers = C.observed(r, {} if switch_only else hosts, {} if host_only else switches)
    return dict((n, C.judge(r, links, strangers, n)) for n in ("node01", "node02"))


@pytest.mark.parametrize("ends", ["both", "host_only", "switch_only"])
def test_a_rack_cabled_as_planned_passes_from_either_end(ends):
    got = verdicts(AS_PLANNED, host_only=ends == "host_only", switch_only=ends == "switch_only")
    assert [r["status"] for n in got for r in got[n]] == ["ok"] * 4
    assert got["node01"][1]["message"] == "node01 enp134s0f0np0 (mlx5_1) reaches leaf2 Ethernet1/1 as planned"


def test_two_pfs_of_one_node_swapped_are_one_swap_named_by_rdma_device():
    cables = [("node01", "enp59s0f0np0", "leaf2", "Eth1/1"), ("node01", "enp134s0f0np0", "leaf1", "Ethernet1"),
              AS_PLANNED[2], AS_PLANNED[3]]
    got = verdicts(cables)
    assert [r["status"] for r in got["node01"]] == ["swapped", "swapped"]
    assert [r["status"] for r in got["node02"]] == ["ok", "ok"]
    assert got["node01"][0]["fix"] == "swap the cables of node01's mlx5_0 and mlx5_1"
    assert got["node01"][0]["message"] == ("node01 enp59s0f0np0 (mlx5_0) reaches leaf2 Ethernet1/1 and node01 "
                                           "enp134s0f0np0 (mlx5_1) reaches leaf1 Ethernet1: their cables are swapped")
    assert got["node01"][1]["swapped_with"] == {"node": "node01", "pf": "enp59s0f0np0"}


def test_two_nodes_cables_swapped_at_a_leaf():
    cables = [("node01", "enp59s0f0np0", "leaf1", "Ethernet2"), AS_PLANNED[1],
              ("node02", "enp59s0f0np0", "leaf1", "Ethernet1"), AS_PLANNED[3]]
    got = verdicts(cables)
    assert got["node01"][0]["status"] == got["node02"][0]["status"] == "swapped"
    assert got["node01"][0]["fix"] == ("swap the cables of node01 enp59s0f0np0 (mlx5_0) and node02 enp59s0f0np0 "
                                       "(mlx5_0) (at leaf1 Ethernet1 and leaf1 Ethernet2)")


def test_a_cable_on_the_wrong_port_names_the_move():
    cables = AS_PLANNED[:3] + [("node02", "enp134s0f0np0", "leaf2", "Eth1/7")]
    got = verdicts(cables)
    row = got["node02"][1]
    assert row["status"] == "moved" and row["found"] == [{"switch": "leaf2", "port": "Ethernet1/7"}]
    assert row["fix"] == "move the cable from leaf2 Ethernet1/7 to leaf2 Ethernet1/2"
    assert row["message"] == ("node02 enp134s0f0np0 (mlx5_1) reaches leaf2 Ethernet1/7; the plan gives "
                              "leaf2 Ethernet1/2")
    assert [r["status"] for n in got for r in got[n]].count("ok") == 3


def test_a_cable_on_a_port_planned_for_an_unplugged_pf_is_a_move_not_a_swap():
    cables = [AS_PLANNED[0], AS_PLANNED[1], ("node02", "enp59s0f0np0", "leaf1", "Ethernet1"), AS_PLANNED[3]]
    got = verdicts(cables)
    # node01 enp59s0f0np0 shows at its own port only from the host end; the leaf shows node02 there
    assert got["node02"][0]["status"] == "moved"
    assert "(the port the plan gives node01 enp59s0f0np0 (mlx5_0))" in got["node02"][0]["message"]
    assert got["node01"][0]["status"] == "ok"


def test_another_leaf_is_named():
    cables = AS_PLANNED[:3] + [("node02", "enp134s0f0np0", "leaf1", "Ethernet9")]
    row = verdicts(cables)["node02"][1]
    assert row["status"] == "moved" and "(another leaf)" in row["message"]
    assert row["fix"] == "move the cable from leaf1 Ethernet9 to leaf2 Ethernet1/2"


def test_no_lldp_at_either_end_is_unverified_with_the_cause():
    r = rack()
    hosts, switches = views(AS_PLANNED[:3])
    links, strangers = C.observed(r, hosts, switches)
    row = C.judge(r, links, strangers, "node02", unverified_cause="link down")[1]
    assert row["status"] == "unverified"
    assert row["message"] == ("node02 enp134s0f0np0 (mlx5_1): no LLDP neighbour at either end, so its cable to "
                              "leaf2 Ethernet1/2 is unverified; link down")


def test_a_neighbour_that_is_no_leaf_of_the_inventory():
    r = rack()
    hosts = {"node01": {"neighbors": [dict(host_nb("enp59s0f0np0", "spine3", "Ethernet7"))]}}
    links, strangers = C.observed(r, hosts, {})
    row = C.judge(r, links, strangers, "node01")[0]
    assert row["status"] == "stranger"
    assert row["message"].startswith("node01 enp59s0f0np0 (mlx5_0) reaches spine3.rack.example Ethernet7, not a leaf")


def test_ends_that_disagree_are_named_with_who_saw_what():
    hosts, switches = views(AS_PLANNED)
    switches["leaf1"]["neighbors"][0]["local"] = "Ethernet5"   # the leaf's entry for node01 is elsewhere
    r = rack()
    links, strangers = C.observed(r, hosts, switches)
    row = C.judge(r, links, strangers, "node01")[0]
    assert row["status"] == "disagree"
    assert "leaf1 Ethernet1 (seen by the node)" in row["message"]
    assert "leaf1 Ethernet5 (seen by the switch)" in row["message"]


def test_a_leaf_may_name_the_pf_by_name_or_by_mac():
    r = rack()
    for by_mac in (False, True):
        nb = switch_nb("Ethernet1", "node01", "enp59s0f0np0", by_mac=by_mac)
        links, _ = C.observed(r, {}, {"leaf1": {"neighbors": [nb]}})
        assert links == {("node01", "enp59s0f0np0"): {("leaf1", "Ethernet1"): ["switch"]}}


def test_a_port_alias_only_the_leaf_can_place_is_unverified_until_the_leaf_is_read():
    r = rack()
    nb = dict(host_nb("enp59s0f0np0", "leaf1", "etp1"), port_id_type="local")
    links, strangers = C.observed(r, {"node01": {"neighbors": [nb]}}, {})
    row = C.judge(r, links, strangers, "node01")[0]
    assert row["status"] == "unverified" and "leaf1 port 'etp1'" in row["message"]
    # with the leaf's table the cable is placed
    links, strangers = C.observed(r, {"node01": {"neighbors": [nb]}},
                                  {"leaf1": {"neighbors": [switch_nb("Ethernet1", "node01", "enp59s0f0np0")]}})
    assert C.judge(r, links, strangers, "node01")[0]["status"] == "ok"


@pytest.mark.parametrize("text, want", [("0C:42:A1:00:01:00", "0c:42:a1:00:01:00"), ("0c42.a100.0100", "0c:42:a1:00:01:00"),
                                        ("0c-42-a1-00-01-00", "0c:42:a1:00:01:00"), ("enp59s0f0np0", ""), ("", "")])
def test_a_mac_in_any_of_the_nos_spellings(text, want):
    assert C.mac(text) == want


def test_as_found_gives_the_layers_above_the_port_the_cable_reaches():
    """What layer 8's chain compares a PF with: the leaf port its cable
    reaches by LLDP, the planned one kept beside it."""
    plan = [{"node": "node01", "pf": "enp59s0f0np0", "switch": "leaf1", "port": "Ethernet1"},
            {"node": "node02", "pf": "enp59s0f0np0", "switch": "leaf1", "port": "Ethernet2"}]
    answers = {"leaf1": {"nos": "eos", "lldp": {"neighbors": [
        switch_nb("Ethernet1", "node01", "enp59s0f0np0"), switch_nb("Ethernet7", "node02", "enp59s0f0np0")]}}}
    readings = {"node02": {"nics": [{"name": "enp59s0f0np0", "mac": PFS["node02"]["enp59s0f0np0"]["mac"]}],
                           "lldp": {"neighbors": [host_nb("enp59s0f0np0", "leaf1", "Ethernet7")]}}}
    got = C.as_found(plan, readings, answers)
    assert got[0] == plan[0]
    assert got[1] == dict(plan[1], port="Ethernet7", planned_switch="leaf1", planned_port="Ethernet2")


def test_the_chain_speaks_of_the_port_the_cable_reaches():
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.roce_host import fabric_chain
    intent = {"priority": 3, "dscp": 26, "cnp_priority": 6, "cnp_dscp": 48, "trust": "dscp", "host_mtu": 9000,
              "ecn": {"min_kbytes": 150, "max_kbytes": 1500, "probability": 100}}
    moved = [{"node": "node02", "pf": "enp59s0f0np0", "switch": "leaf1", "port": "Ethernet7",
              "planned_switch": "leaf1", "planned_port": "Ethernet2"}]
    switches = {"leaf1": {"gathered": {"global": {"pfc_priority": 3, "dscp_map": {"26": 3}}, "ports": {
        "Ethernet2": {"pfc": True, "trust": "dscp", "mtu": 9214}}}}}
    hosts = {"node02": {"enp59s0f0np0": {"name": "enp59s0f0np0", "pfc_priorities": [3], "trust": "dscp",
                                         "mtu": 9000}}}
    got = fabric_chain.compare(intent, moved, switches, hosts)
    assert got["unchecked"] == [
        "node02 enp59s0f0np0 -> leaf1 Ethernet7 (where LLDP finds the cable; the plan says leaf1 Ethernet2): leaf1 "
        "has no data for port Ethernet7 (not among its GPU-facing ports: layer 7 sets no RoCE QoS there)"]


# the LLDP lines of a ConnectX-4 Lx's `mstconfig -e q` (Default, Current, Next Boot), verbatim from
# k8snetworkplumbingwg/sriov-network-operator's mlxutils test fixture (a Dell rack NDC whose
# firmware ships its LLDP agent on; trailing spaces removed); the header lines as mstconfig prints them
FW_LLDP_ON = """
Device #1:
----------

Device type:        ConnectX4LX
Device:             0000:3b:00.0

Configurations:                                     Default             Current             Next Boot
        LLDP_NB_DCBX_P1                             False(0)             False(0)             False(0)
        LLDP_NB_RX_MODE_P1                          ALL(2)               ALL(2)               ALL(2)
        LLDP_NB_TX_MODE_P1                          ALL(2)               ALL(2)               ALL(2)
        LLDP_NB_DCBX_P2                             False(0)             False(0)             False(0)
        LLDP_NB_RX_MODE_P2                          ALL(2)               ALL(2)               ALL(2)
        LLDP_NB_TX_MODE_P2                          ALL(2)               ALL(2)               ALL(2)
"""


def test_a_firmware_lldp_agent_is_named_as_the_likely_cause_of_a_silent_pf():
    reading = {"nics": [{"name": "enp59s0f0np0", "pci_address": "0000:3b:00.0"},
                        {"name": "enp59s0f1np1", "pci_address": "0000:3b:00.1"}],
               "firmware": [{"device": "0000:3b:00.0", "query": FW_LLDP_ON},
                            {"device": "0000:3b:00.1", "query": FW_LLDP_ON.replace("ALL(2)", "OFF(0)")}]}
    causes = C.firmware_lldp(reading)
    assert list(causes) == ["enp59s0f0np0"]
    assert causes["enp59s0f0np0"].startswith(
        "the NIC firmware's own LLDP agent takes the frames (LLDP_NB_RX_MODE_P1 = ALL(2) in mlxconfig -e q")
    r = rack()
    links, strangers = C.observed(r, {}, {})
    row = C.judge(r, links, strangers, "node01", unverified_cause=dict(causes, **{"": "the node's cause"}))[0]
    assert row["status"] == "unverified" and "LLDP_NB_RX_MODE_P1 = ALL(2)" in row["message"]
    assert C.judge(r, links, strangers, "node01", {"": "the node's cause"})[1]["message"].endswith("the node's cause")


def test_a_nodes_own_lldpdu_looped_back_by_its_nic_is_not_a_neighbour():
    """With VFs on a PF, the NIC's embedded switch may reflect the node's own
    multicast (the emulated 82576 does, and real lldpd lists it): it says
    nothing of the cable."""
    r = rack()
    own = dict(host_nb("enp59s0f0np0", "node01", "enp59s0f0np0"), port_id_type="mac")
    links, strangers = C.observed(r, {"node01": {"neighbors": [own, host_nb("enp59s0f0np0", "leaf1", "Ethernet1")]}}, {})
    assert strangers == {} and C.judge(r, links, strangers, "node01")[0]["status"] == "ok"
