"""Layer 9 logic without Ansible: PF link/GID verdicts, the pairs plan over
the cabling, perftest command lines, the gate, messages, the layer's record
(checks/rdma_check.py)."""

import json

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils.rdma_check import rdma_pairs as RP
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import rdma_check as C9
from ansible_collections.gpufabric.stack.plugins.module_utils.host.sysfs_nic import gid_ipv4, roce_v2_index
from simlab.tools import formats

pytestmark = pytest.mark.layers(9)

NICS = [{"match": {"vendor_device": "15b3:1021"}, "num_vfs": 8}]
IPV4_GID = "0000:0000:0000:0000:0000:ffff:ac1e:%02x%02x"


def gids(rail, node, ipv4=True, v2=True):
    ll = "fe80:0000:0000:0000:0e42:a1ff:fe%02x:%02x%02x" % (rail, node, rail)
    rows = [(ll, "IB/RoCE v1"), (ll, "RoCE v2" if v2 else "IB/RoCE v1")]
    if ipv4:
        g = IPV4_GID % (rail, node)
        rows += [(g, "IB/RoCE v1"), (g, "RoCE v2" if v2 else "IB/RoCE v1")]
    out = [{"index": i, "gid": g, "type": t, "ndev": "x", "ipv4": gid_ipv4(g)} for i, (g, t) in enumerate(rows)]
    return out


def pf(rail, node, up=True, speed=400000, ipv4=True, v2=True, bound=True, rdma=True, link_layer="Ethernet"):
    bus = (0x3b, 0x86, 0x5e, 0xaf)[rail]
    g = gids(rail, node, ipv4, v2)
    return {
        "name": "enp%ds0f0np0" % bus if bound else None, "pci_address": "0000:%02x:00.0" % bus,
        "vendor": "15b3", "device": "1021", "vendor_device": "15b3:1021",
        "driver": "mlx5_core" if bound else None, "bound": bound,
        "operstate": "up" if up else "down", "speed_mbps": speed if up else None, "mtu": 9000,
        "rdma_device": "rocep%ds0f0" % bus if rdma and bound else None,
        "rdma": {"state": "ACTIVE" if up else "DOWN", "phys_state": "LinkUp" if up else "Disabled",
                 "link_layer": link_layer, "rate": "400 Gb/sec (4X NDR)", "gids": g,
                 "roce_v2_gid_index": roce_v2_index(g)} if rdma and bound else None,
    }


def cabling(nodes, rails=2, switches=("leaf1", "leaf2")):
    out = []
    for n, node in enumerate(nodes, start=1):
        for r in range(rails):
            bus = (0x3b, 0x86, 0x5e, 0xaf)[r]
            sw = switches[r % len(switches)]
            port = "swp%d" % (n + (r // len(switches)) * len(nodes))
            out.append({"node": node, "pf": "enp%ds0f0np0" % bus, "pci_address": "0000:%02x:00.0" % bus,
                        "switch": sw, "port": port})
    return out


def links(nodes, faults=None, rails=2, switches=("leaf1", "leaf2")):
    """link_check of every node; faults {node: {rail: pf kwargs}}."""
    cab = cabling(nodes, rails, switches)
    out = []
    for n, node in enumerate(nodes, start=1):
        pfs = [pf(r, n, **((faults or {}).get(node, {}).get(r, {}))) for r in range(rails)]
        out.append(RP.link_check(node, pfs, NICS, cab))
    return out


# --------------------------------------------------------------------------- selection, links, GIDs

def test_select_by_vendor_name_and_address():
    pfs = [pf(1, 1), pf(0, 1)]
    sel, un = RP.select_pfs(pfs, NICS)
    assert [p["pci_address"] for p in sel] == ["0000:3b:00.0", "0000:86:00.0"] and un == []
    sel, un = RP.select_pfs(pfs, [{"match": {"name": "enp134s0f0np0"}}, {"match": {"pci_address": "3b:00.0"}}])
    assert [p["pci_address"] for p in sel] == ["0000:3b:00.0", "0000:86:00.0"]
    sel, un = RP.select_pfs(pfs, [{"match": {"vendor_device": "15b3:101d"}}])
    assert sel == [] and un == [{"vendor_device": "15b3:101d"}]


def test_healthy_node_links():
    res = RP.link_check("node01", [pf(0, 1), pf(1, 1)], NICS, cabling(["node01"]))
    assert res["errors"] == []
    a, b = res["pfs"]
    assert a["ok"] and a["link_ok"] and a["gid_ok"] and a["cause"] is None
    assert (a["switch"], a["port"], b["switch"], b["port"]) == ("leaf1", "swp1", "leaf2", "swp1")
    assert a["gid_index"] == 3 and a["ipv4"] == "172.30.0.1" and b["ipv4"] == "172.30.1.1"
    assert any("RoCE v2 GID 3" in e for e in a["evidence"])
    json.dumps(res)


def test_link_down_names_pf_port_and_cause():
    res = RP.link_check("node02", [pf(0, 2, up=False), pf(1, 2)], NICS, cabling(["node01", "node02"]))
    down, up = res["pfs"]
    assert not down["ok"] and down["kind"] == "link" and up["ok"]
    # sysfs says "3: Disabled"; the verdict uses iproute2's name, as with rdma link show
    assert down["cause"] == "link down (netdev operstate down, RDMA port DOWN, physical state DISABLED)"
    # the GID table stays when the carrier goes: the GID check still passes
    assert down["gid_ok"] and not down["link_ok"]
    s = RP.summary(res, [], [])
    assert s["failures"] == ["node02 enp59s0f0np0 (0000:3b:00.0, rocep59s0f0, cabled to leaf1 swp2): " + down["cause"]]
    d = C9.verdict(s)
    assert d["status"] == "fail" and d["layer"] == 9 and d["name"] == "rdma_check"
    assert "enp59s0f0np0" in d["reason"] and "link down" in d["reason"]
    assert "leaf1 swp2" in d["remediation"]


def test_rdma_link_output_wins_over_sysfs():
    text = ("link rocep59s0f0/1 state DOWN physical_state DISABLED netdev enp59s0f0np0\n"
            "link rocep134s0f0/1 state ACTIVE physical_state LINK_UP netdev enp134s0f0np0\n")
    res = RP.link_check("node01", [pf(0, 1), pf(1, 1)], NICS, cabling(["node01"]), rdma_link_text=text)
    assert res["pfs"][0]["cause"].startswith("link down (netdev operstate up, RDMA port DOWN, physical state DISABLED")
    assert res["pfs"][1]["ok"]
    assert "rdma link: link rocep59s0f0/1 state DOWN physical_state DISABLED netdev enp59s0f0np0" in res["pfs"][0]["evidence"]
    # unreadable tool output falls back to sysfs
    res = RP.link_check("node01", [pf(0, 1)], NICS, cabling(["node01"]), rdma_link_text="rdma: command not found")
    assert res["pfs"][0]["ok"]


@pytest.mark.parametrize("kwargs, cause", [
    ({"ipv4": False}, "no RoCE v2 GID with an IPv4 address"),
    ({"v2": False}, "no RoCE v2 GID (GID types present: IB/RoCE v1)"),
    ({"bound": False}, "no driver bound (layer 5)"),
    ({"rdma": False}, "no RDMA device"),
    ({"link_layer": "InfiniBand"}, "link layer InfiniBand"),
])
def test_pf_causes(kwargs, cause):
    res = RP.link_check("node01", [pf(0, 1, **kwargs)], [{"match": {"pci_address": "0000:3b:00.0"}}],
                        cabling(["node01"]))
    p = res["pfs"][0]
    assert not p["ok"] and p["cause"].startswith(cause), p["cause"]
    assert p["kind"] == ("gid" if "GID" in cause else "link")


def test_gid_index_override_and_addresses():
    c = cabling(["node01"])
    res = RP.link_check("node01", [pf(0, 1)], NICS, c, gid_index=1)
    assert res["pfs"][0]["gid_index"] == 1 and res["pfs"][0]["gid_ok"] is False
    assert "has no IPv4 address" in res["pfs"][0]["cause"]
    res = RP.link_check("node01", [pf(0, 1)], NICS, c, gid_index=1, addresses={"enp59s0f0np0": "10.9.9.9"})
    assert res["pfs"][0]["ok"] and res["pfs"][0]["ipv4"] == "10.9.9.9"
    res = RP.link_check("node01", [pf(0, 1)], NICS, c, gid_index=2)
    assert res["pfs"][0]["cause"] == "GID index 2 is IB/RoCE v1, not RoCE v2"
    res = RP.link_check("node01", [pf(0, 1)], NICS, c, gid_index=9)
    assert res["pfs"][0]["cause"] == "GID index 9 is empty"


def test_inventory_errors_name_host_and_variable():
    res = RP.link_check("node03", [pf(0, 3)], NICS + [{"match": {"name": "ens9"}}], cabling(["node01"]))
    assert any("node03: no PF matches gpufabric_nics entry name=ens9" in e for e in res["errors"])
    assert "node03: PF enp59s0f0np0 (0000:3b:00.0) has no entry in gpufabric_cabling" in res["errors"]
    assert not res["pfs"][0]["ok"] and res["pfs"][0]["switch"] is None
    assert "gpufabric_cabling" in C9.verdict(RP.summary(res))["remediation"]


def test_cabling_matches_by_name_when_no_address():
    c = [{"node": "node01", "pf": "enp59s0f0np0", "switch": "leaf1", "port": "Ethernet1/1"}]
    res = RP.link_check("node01", [pf(0, 1)], [{"match": {"pci_address": "0000:3b:00.0"}}], c)
    assert res["pfs"][0]["port"] == "Ethernet1/1" and res["errors"] == []


# --------------------------------------------------------------------------- the plan

def _pairs(plan):
    return [[(p["rail"], p["client"]["node"], p["server"]["node"], p["port"]) for p in r] for r in plan["rounds"]]


def test_ring_two_nodes_tests_both_directions_on_every_rail():
    plan = RP.plan_pairs(links(["node01", "node02"]))
    assert [r["name"] for r in plan["rails"]] == ["leaf1", "leaf2"]
    assert _pairs(plan) == [[("leaf1", "node01", "node02", 18515), ("leaf1", "node02", "node01", 18515),
                             ("leaf2", "node01", "node02", 18516), ("leaf2", "node02", "node01", 18516)]]
    assert plan["untested"] == []
    p = plan["rounds"][0][0]
    assert p["client"]["switch"] == "leaf1" and p["client"]["port"] == "swp1" and p["server"]["port"] == "swp2"
    assert p["server"]["ipv4"] == "172.30.0.2" and p["blocked"] is None


def test_ring_is_linear_and_a_permutation_per_round():
    nodes = ["n%02d" % i for i in range(1, 7)]
    plan = RP.plan_pairs(links(nodes), "ring", 20000)
    assert len(plan["rounds"]) == 1 and len(plan["rounds"][0]) == 2 * len(nodes)
    for rail in ("leaf1", "leaf2"):
        rp = [p for p in plan["rounds"][0] if p["rail"] == rail]
        assert sorted(p["client"]["node"] for p in rp) == nodes == sorted(p["server"]["node"] for p in rp)
        assert [(p["client"]["node"], p["server"]["node"]) for p in rp][-1] == ("n06", "n01")


def test_all_pairs_in_rounds_of_permutations():
    nodes = ["a", "b", "c", "d"]
    plan = RP.plan_pairs(links(nodes), "all")
    assert len(plan["rounds"]) == 3
    ordered = set()
    for r in plan["rounds"]:
        for rail in ("leaf1", "leaf2"):
            rp = [p for p in r if p["rail"] == rail]
            clients = [p["client"]["node"] for p in rp]
            servers = [p["server"]["node"] for p in rp]
            assert sorted(clients) == nodes and sorted(servers) == nodes
            assert len({p["port"] for p in rp}) == 1
            ordered |= {(p["client"]["node"], p["server"]["node"]) for p in rp}
    assert ordered == {(x, y) for x in nodes for y in nodes if x != y}


def test_server_ports_unique_per_host_within_a_round():
    # four NICs on two leaves: two rails per leaf
    ls = links(["n1", "n2", "n3"], rails=4)
    plan = RP.plan_pairs(ls, "all")
    assert [r["name"] for r in plan["rails"]] == ["leaf1/0", "leaf1/1", "leaf2/0", "leaf2/1"]
    for r in plan["rounds"]:
        seen = [(p["server"]["node"], p["port"]) for p in r]
        assert len(seen) == len(set(seen))


def test_blocked_pairs_name_the_failed_end_and_single_node_rails_are_untested():
    ls = links(["node01", "node02"], faults={"node02": {0: {"up": False}}})
    plan = RP.plan_pairs(ls)
    leaf1 = [p for p in plan["rounds"][0] if p["rail"] == "leaf1"]
    assert leaf1[0]["blocked"].startswith("server node02 enp59s0f0np0: link down")
    assert leaf1[1]["blocked"].startswith("client node02 enp59s0f0np0: link down")
    assert all(p["blocked"] is None for p in plan["rounds"][0] if p["rail"] == "leaf2")
    one = RP.plan_pairs(links(["solo"]))
    assert one["rounds"] == [] and [u["rail"] for u in one["untested"]] == ["leaf1", "leaf2"]
    assert "bandwidth not tested" in one["untested"][0]["reason"]


def test_plan_rejects_bad_input():
    with pytest.raises(RP.PlanError, match="rdma_check_pairs"):
        RP.plan_pairs([], "mesh")
    with pytest.raises(RP.PlanError, match="rdma_check_port_base"):
        RP.plan_pairs(links(["a", "b"]), "ring", 65535)
    with pytest.raises(RP.PlanError, match="rdma_check_port_base"):
        RP.plan_pairs([], "ring", "x")


# --------------------------------------------------------------------------- command lines

OPTS = {"size": 8388608, "duration": 5, "iterations": 5000, "qps": 1, "traffic_class": 106, "rdma_cm": False,
        "extra_args": []}


def test_argv_server_and_client():
    pair = RP.plan_pairs(links(["node01", "node02"]))["rounds"][0][0]
    assert RP.perftest_argv(pair, "server", OPTS) == [
        "ib_write_bw", "-d", "rocep59s0f0", "-i", "1", "-x", "3", "-s", "8388608", "-D", "5", "-F",
        "-p", "18515", "--tclass=106"]
    cl = RP.perftest_argv(pair, "client", dict(OPTS, duration=0, qps=4, extra_args=["--perform_warm_up"]))
    assert cl[cl.index("-n") + 1] == "5000" and "-D" not in cl and cl[cl.index("-q") + 1] == "4"
    assert cl[-2:] == ["--perform_warm_up", "172.30.0.2"]
    cm = RP.perftest_argv(pair, "client", dict(OPTS, rdma_cm=True))
    assert "-x" not in cm and cm[cm.index("-R") + 1:cm.index("-R") + 3] == ["-T", "106"] and "--tclass=106" not in cm
    none = RP.perftest_argv(pair, "server", dict(OPTS, traffic_class=None, command="/opt/perftest/ib_write_bw"))
    assert none[0] == "/opt/perftest/ib_write_bw" and not [a for a in none if "tclass" in a or a == "-T"]
    with pytest.raises(RP.PlanError):
        RP.perftest_argv(pair, "both", OPTS)


# --------------------------------------------------------------------------- gate and pair results

def perftest_output(bw, gbits=True):
    header = {"device": "rocep59s0f0", "mtu": 4096, "machine": "client", "gid_index": 3}
    conv = 1.0 if gbits else 1e9 / 8 / 2 ** 20
    rows = [{"bytes": 8388608, "iterations": 29000, "bw_peak": bw * conv * 1.001, "bw_average": bw * conv,
             "msg_rate": 0.005}]
    return formats.ib_write_bw(header, rows, gbits=gbits)


def job(out="", rc=0, err="", finished=1):
    return {"finished": finished, "rc": rc, "stdout": out, "stderr": err}


@pytest.mark.parametrize("bw, share, passed", [(392.1, 0.90, True), (360.0, 0.90, True), (359.99, 0.90, False),
                                               (150.2, 0.90, False), (380.0, 0.95, True), (379.9, 0.95, False)])
def test_gate_arithmetic(bw, share, passed):
    g = RP.gate(bw, 400000, 400000, share)
    assert g["line_gbps"] == 400.0 and g["threshold_gbps"] == round(400 * share, 2) and g["passed"] is passed


def test_gate_uses_the_slower_end():
    g = RP.gate(190.0, 400000, 200000, 0.9)
    assert g["line_gbps"] == 200.0 and g["threshold_gbps"] == 180.0 and g["passed"]
    for bad in (0, 1.5, "x", None):
        with pytest.raises(RP.PlanError, match="rdma_check_gate_share"):
            RP.check_share(bad)
    with pytest.raises(RP.PlanError):
        RP.gate(1.0, None, None)


def test_pair_pass_and_fail_messages_name_both_ends_and_ports():
    pair = RP.plan_pairs(links(["node01", "node02"]))["rounds"][0][0]
    ok = RP.pair_result(pair, job(perftest_output(392.45)), job(perftest_output(392.45)))
    assert ok["status"] == "pass" and ok["bw_gbps"] == 392.45 and ok["mtu"] == 4096
    bad = RP.pair_result(pair, job(perftest_output(150.2)), None, 0.9)
    assert bad["status"] == "fail" and bad["threshold_gbps"] == 360.0
    assert bad["message"] == ("node01 enp59s0f0np0 -> node02 enp59s0f0np0 (leaf1 swp1 <-> leaf1 swp2): 150.20 Gb/s "
                              "is under the gate of 360.00 Gb/s (90% of 400 Gb/s line rate)")
    mib = RP.pair_result(pair, job(perftest_output(392.0, gbits=False)))
    assert mib["status"] == "pass" and abs(mib["bw_gbps"] - 392.0) < 0.05


def test_pair_errors():
    pair = RP.plan_pairs(links(["node01", "node02"]))["rounds"][0][0]
    r = RP.pair_result(pair, job("", 1, "Couldn't connect to 172.30.0.2:18515\nUnable to open file descriptor"),
                       job("", 1, " Port number 1 state is Down\n Couldn't set the link layer"))
    assert r["status"] == "fail" and "ib_write_bw failed (rc 1): Couldn't connect to 172.30.0.2:18515" in r["message"]
    assert any(e.startswith("server node02: ") and "Port number 1 state is Down" in e for e in r["evidence"])
    assert "timed out" in RP.pair_result(pair, job("", 124))["message"]
    assert "did not finish" in RP.pair_result(pair, job(finished=0, rc=None))["message"]
    assert "did not finish" in RP.pair_result(pair, None)["message"]
    assert "cannot read the ib_write_bw output" in RP.pair_result(pair, job("hello\n"))["message"]
    nl = RP.pair_result(pair, None, job("", 1, "Couldn't listen to port 18515"), listening=False)
    assert nl["status"] == "fail" and "did not listen on port 18515: Couldn't listen to port 18515" in nl["message"]
    gone = RP.pair_result(pair, job("", 1, "Couldn't connect to 10.9.9.9:18515"), job("", 124, "", finished=1))
    assert "server node02: exited rc 124 (timeout)" in gone["evidence"]
    left = RP.pair_result(pair, job("", 1, "x"), {"finished": 0, "started": 1})
    assert "server node02: still running at the end of the round (stopped)" in left["evidence"]
    blocked = dict(pair, blocked="server node02 enp59s0f0np0: link down")
    b = RP.pair_result(blocked, None)
    assert b["status"] == "blocked" and b["message"].endswith("not tested, server node02 enp59s0f0np0: link down")


# --------------------------------------------------------------------------- one round of a node

def test_a_node_serves_and_sends_its_pairs_of_the_round_blocked_ones_not_run():
    ls = links(["node01", "node02", "node03"], faults={"node03": {1: {"up": False}}})
    plan = RP.plan_pairs(ls)
    serving, sending = RP.round_pairs(plan, 0, "node01")
    assert [(p["rail"], p["client"]["node"]) for p in serving] == [("leaf1", "node03"), ("leaf2", "node03")]
    assert [(p["rail"], p["server"]["node"]) for p in sending] == [("leaf1", "node02"), ("leaf2", "node02")]
    # node03's second PF is down: node01 does not serve it on leaf2
    servers = RP.server_specs(serving, OPTS)
    assert [s["port"] for s in servers] == [18515]
    assert servers[0]["argv"] == RP.perftest_argv(serving[0], "server", OPTS)
    clients = RP.client_specs(sending, OPTS)
    assert [c["id"] for c in clients] == [p["id"] for p in sending]
    assert clients[1]["argv"][-1] == sending[1]["server"]["ipv4"]
    # in three calls, a client whose server did not listen is not run
    assert [c["id"] for c in RP.client_specs(sending, OPTS, {"node02": [18516]})] == [sending[0]["id"]]
    with pytest.raises(RP.PlanError, match="round 1 is not in the plan"):
        RP.round_pairs(plan, 1, "node01")


def test_a_round_is_gated_from_the_nodes_clients_and_its_servers_results():
    plan = RP.plan_pairs(links(["node01", "node02", "node03"]))
    _serving, sending = RP.round_pairs(plan, 0, "node01")
    fast, slow = sending
    clients = [dict(job(perftest_output(392.0)), id=fast["id"]), dict(job(perftest_output(150.0)), id=slow["id"])]
    servers = {"node02": ([], [dict(job("", 0), port=fast["port"]), dict(job("", 0, "a server line"), port=slow["port"])])}
    got = RP.gate_round(sending, clients, lambda node: servers[node], 0.9)
    assert [(p["id"], p["status"]) for p in got] == [(fast["id"], "pass"), (slow["id"], "fail")]
    assert "server node02: a server line" in got[1]["evidence"]
    # the server did not listen: the pair fails saying so, whatever the client printed
    unheard = RP.gate_round(sending, clients, lambda node: ([{"port": fast["port"]}], []), 0.9)
    assert "did not listen on port %d" % fast["port"] in unheard[0]["message"] and unheard[1]["status"] == "fail"
    # no client result (it never ran)
    assert "did not finish" in RP.gate_round(sending, [], lambda node: ([], []), 0.9)[0]["message"]


# --------------------------------------------------------------------------- summary and doctor

def test_summary_and_doctor_for_the_three_outcomes():
    ls = links(["node01", "node02"], faults={"node02": {0: {"up": False}}})
    plan = RP.plan_pairs(ls)
    by_client = {}
    for p in plan["rounds"][0]:
        r = RP.pair_result(p, job(perftest_output(392.0)), None)
        by_client.setdefault(p["client"]["node"], []).append(r)
    s1 = RP.summary(ls[0], by_client["node01"], plan["untested"])
    s2 = RP.summary(ls[1], by_client["node02"], plan["untested"])
    # node01 is healthy: its blocked pair towards node02 is a warning naming the pair
    assert s1["passed"] and s1["failures"] == []
    d1 = C9.verdict(s1)
    assert d1["status"] == "warn" and "node01 enp59s0f0np0 -> node02 enp59s0f0np0" in d1["reason"]
    assert "link down" in d1["reason"]
    # node02 fails on its own PF, not on the pair it could not send on
    assert not s2["passed"] and len(s2["failures"]) == 1 and "link down" in s2["failures"][0]
    assert C9.verdict(s2)["status"] == "fail"
    healthy = links(["node01", "node02"])
    plan = RP.plan_pairs(healthy)
    mine = [RP.pair_result(p, job(perftest_output(391.0))) for p in plan["rounds"][0] if p["client"]["node"] == "node01"]
    d = C9.verdict(RP.summary(healthy[0], mine, plan["untested"]))
    assert d["status"] == "pass" and d["reason"] == "2 PF(s) up with a RoCE v2 GID; 2 pair(s) at or above 90% of line rate"
    slow = [RP.pair_result(mine[0], job(perftest_output(150.0)))]
    d = C9.verdict(RP.summary(healthy[0], slow))
    assert d["status"] == "fail" and "is under the gate" in d["reason"]
    assert "leaf1 swp1" in d["remediation"] and "leaf1 swp2" in d["remediation"] and "layer 8" in d["remediation"]
    off = C9.verdict(RP.summary(healthy[0], [], [], bandwidth=False))
    assert off["status"] == "pass" and off["reason"].endswith("pairwise bandwidth not tested (turned off)")
    json.dumps(d)


# --------------------------------------------------------------------------- an inventory's line rate

def test_a_line_rate_from_the_inventory_replaces_the_link_speed_in_the_gate():
    """An emulated link (the VM nodes' igb with Soft-RoCE) reports 1000 Mb/s and
    carries tens: the inventory's rdma_check_line_rate_mbps is what pairs are
    gated against, and the evidence says so."""
    res = RP.link_check("node01", [pf(0, 1, speed=1000)], NICS, cabling(["node01"], rails=1), line_rate_mbps=20)
    entry = res["pfs"][0]
    assert entry["ok"] and entry["speed_mbps"] == 20
    assert "node01 enp59s0f0np0: gated against rdma_check_line_rate_mbps 20 Mb/s, not the link speed" in entry["evidence"]
    g = RP.gate(0.019, entry["speed_mbps"], 20)
    assert g["passed"] and g["line_gbps"] == 0.02
    assert not RP.gate(0.017, entry["speed_mbps"], 20)["passed"]
    # without it, the link speed stands
    assert RP.link_check("node01", [pf(0, 1, speed=1000)], NICS, cabling(["node01"], rails=1))["pfs"][0]["speed_mbps"] == 1000


@pytest.mark.parametrize("mbps, passed", [(9.48, True), (9.2, True), (8.9, False), (8.56, False), (5.5, False), (0.0, False)])
def test_a_slow_link_is_gated_at_perftests_precision(mbps, passed):
    """On a 10 Mb/s line (the VM nodes' emulated links) the gate is 9 Mb/s; a
    run reads at perftest's MiB/s precision, so 8.56 Mb/s fails where Gb/s to
    two decimals (--report_gbits, not asked for) would have read it as 10."""
    one = [RP.link_check(n, [pf(0, i, speed=1000)], NICS, cabling(["node01", "node02"], rails=1), line_rate_mbps=10)
           for i, n in enumerate(["node01", "node02"], start=1)]
    pair = RP.plan_pairs(one)["rounds"][0][0]
    assert "--report_gbits" not in RP.perftest_argv(pair, "client", OPTS)
    out = perftest_output(mbps / 1000, gbits=False)
    assert "BW average[MiB/sec]" in out or "BW average[MB/sec]" in out
    res = RP.pair_result(pair, job(out))
    assert res["status"] == ("pass" if passed else "fail"), res["message"]
    assert abs(res["bw_gbps"] * 1000 - mbps) < 0.1 and res["threshold_gbps"] == 0.009
    assert res["message"].endswith("%.1f Mb/s %s the gate of 9.0 Mb/s (90%% of 10.0 Mb/s line rate)" % (
        res["bw_gbps"] * 1000, "meets" if passed else "is under")), res["message"]


def slow_ring():
    """Two nodes on one 10 Mb/s rail (the VM nodes' links), its plan and its two pairs."""
    one = [RP.link_check(n, [pf(0, i, speed=1000)], NICS, cabling(["node01", "node02"], rails=1), line_rate_mbps=10)
           for i, n in enumerate(["node01", "node02"], start=1)]
    plan = RP.plan_pairs(one)
    return one, plan, plan["rounds"][0]


def mbps(pair, rate):
    return RP.pair_result(pair, job(perftest_output(rate / 1000, gbits=False)))


def test_a_pair_that_measured_short_runs_once_more_and_an_error_does_not():
    one, plan, (p12, p21) = slow_ring()
    assert RP.recheck_rounds(plan, [mbps(p12, 31.0), mbps(p21, 33.0)]) == []
    # a stalled run (0.00 MiB/s) runs again, as it ran, in a round after the plan's; a run that failed does not
    failed = RP.pair_result(p21, job("", rc=1, err=" Failed to exchange data between server and clients\n"))
    assert failed["status"] == "fail" and failed["bw_gbps"] is None
    (again,) = RP.recheck_rounds(plan, [mbps(p12, 0.0), failed])
    assert [p["id"] for p in again] == [p12["id"] + ":again"] and again[0]["round"] == 2 and again[0]["again"]
    assert RP.perftest_argv(again[0], "client", OPTS) == RP.perftest_argv(p12, "client", OPTS)
    assert RP.pair_label(again[0]) == "node01 enp59s0f0np0 -> node02 enp59s0f0np0 (leaf1 swp1 <-> leaf1 swp2, run again)"
    # a second run is not run a third time (the recheck takes the plan's own pairs only)
    assert RP.recheck_rounds(plan, [dict(mbps(again[0], 0.0))]) == []


def test_a_pair_fails_only_when_its_second_run_falls_short_too():
    one, plan, (p12, p21) = slow_ring()
    first = mbps(p12, 0.0)
    (again,) = RP.recheck_rounds(plan, [first, mbps(p21, 33.0)])
    # short once, met the gate on the second run: the node passes, both runs kept
    ok = mbps(again[0], 30.5)
    got = RP.summary(one[0], [first, ok])
    assert got["passed"] and got["failures"] == [] and got["warnings"] == [], got
    assert [p["message"] for p in got["pairs"]] == [first["message"], ok["message"]]
    assert first["message"].endswith(": 0.0 Mb/s is under the gate of 9.0 Mb/s (90% of 10.0 Mb/s line rate)")
    assert ok["message"].endswith("run again): 30.5 Mb/s meets the gate of 9.0 Mb/s (90% of 10.0 Mb/s line rate)")
    # short twice: one failure naming both runs
    short = mbps(again[0], 7.9)
    got = RP.summary(one[0], [first, short])
    assert not got["passed"] and got["failures"] == [first["message"] + "; " + short["message"]], got["failures"]
    assert "(leaf1 swp1 <-> leaf1 swp2, run again): 7.9 Mb/s is under the gate" in got["failures"][0]
    # the second run not in the results (a round cut short): the first run's shortfall stands
    assert RP.summary(one[0], [first])["failures"] == [first["message"]]
    # the doctor: a pass counting the pair once, its first run in the evidence
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import rdma_check as check
    v = check.verdict(RP.summary(one[0], [first, ok]))
    assert v["status"] == "pass" and "1 pair(s) at or above 90%" in v["reason"], v
    assert first["message"] in v["evidence"]


@pytest.mark.parametrize("bad", [0, -5, "fast"])
def test_a_line_rate_that_is_no_positive_number_is_an_error_naming_the_node_and_variable(bad):
    with pytest.raises(RP.PlanError, match="node01: rdma_check_line_rate_mbps is"):
        RP.link_check("node01", [pf(0, 1)], NICS, cabling(["node01"], rails=1), line_rate_mbps=bad)


# ---- the test's settings: named by their variable, before any pair runs ----

SETTINGS = {"command": "ib_write_bw", "size": 65536, "duration": 5, "iterations": 5000, "qps": 1,
            "traffic_class": None, "rdma_cm": False, "extra_args": []}


@pytest.mark.parametrize("change, share, want", [
    ({}, 0.9, []),
    ({"size": "65536", "duration": "0", "traffic_class": "106"}, "0.5", []),
    ({"traffic_class": ""}, 1, []),
    ({}, 1.5, ["rdma_check_gate_share is 1.5, not a number in (0, 1]"]),
    ({}, "most", ["rdma_check_gate_share is 'most', not a number in (0, 1]"]),
    ({"qps": 0}, 0.9, ["rdma_check_qps is 0, not a whole number >= 1"]),
    ({"duration": -1, "iterations": "many"}, 0.9,
     ["rdma_check_duration is -1, not a whole number >= 0", "rdma_check_iterations is 'many', not a whole number >= 1"]),
    ({"size": True}, 0.9, ["rdma_check_message_size is True, not a whole number >= 1"]),
    ({"traffic_class": 256}, 0.9, ["rdma_check_traffic_class is 256, not null or 0-255"]),
    ({"traffic_class": "af41"}, 0.9, ["rdma_check_traffic_class is 'af41', not null or 0-255"]),
])
def test_input_problems_name_the_variable_and_value(change, share, want):
    assert RP.input_problems(dict(SETTINGS, **change), share) == want


def test_perftest_options_are_the_numbers_every_round_uses():
    got = RP.perftest_options(dict(SETTINGS, size="1048576", duration="0", traffic_class="106"))
    assert (got["size"], got["duration"], got["traffic_class"]) == (1048576, 0, 106)
    assert RP.perftest_options(dict(SETTINGS, traffic_class=""))["traffic_class"] is None
    with pytest.raises(RP.PlanError, match=r"rdma_check_qps is 0, not a whole number >= 1"):
        RP.perftest_options(dict(SETTINGS, qps=0))
