"""Rules of the twin's RDMA fabric model on constructed rack data, and the
all_reduce_perf twin's output over it."""

import copy

import pytest

from simlab.fabric import model as M
from simlab.fabric.model import Rack, active_mtu, hca_filter, nccl_busbw, rdma_path

pytestmark = pytest.mark.layers(9, 15)


def _pf(node_idx, i, **kw):
    ip = f"172.30.{i}.{node_idx}"
    v4 = "0000:0000:0000:0000:0000:ffff:ac1e:%02x%02x" % (i, node_idx)
    ll = "fe80:0000:0000:0000:0e42:a1ff:fe00:%02x%02x" % (node_idx, i)
    pf = {"index": i, "bdf": f"0000:{0x3b + i:02x}:00.0", "netdev": f"enp{i}np0", "rdma": f"mlx5_{i}",
          "ipv4": ip, "speed_mbps": 400000, "operstate": "up", "carrier": True, "bound": True, "mtu": 9000,
          "trust": "dscp", "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "dscp2prio": {str(d): d >> 3 for d in range(64)},
          "roce_mode": "RoCE v2", "roce_tos": 106,
          "gids": [[ll, "IB/RoCE v1", "x"], [ll, "RoCE v2", "x"], [v4, "IB/RoCE v1", "x"], [v4, "RoCE v2", "x"]],
          "vfs": []}
    pf.update(kw)
    return pf


def _port(**kw):
    p = {"up": True, "mtu": 9216, "trust": "dscp", "pfc_priorities": [3], "ecn": None, "cnp_strict_tc": 6,
         "dscp_map": {d: d >> 3 for d in range(64)}}
    p.update(kw)
    return p


def rack(nodes=2, nics=2, faults=None):
    doc = {"nodes": [{"name": f"node{n:02d}"} for n in range(1, nodes + 1)], "cabling": []}
    live, ports = {}, {}
    for n in range(1, nodes + 1):
        name = f"node{n:02d}"
        live[name] = {"name": name, "faults": {}, "pfs": [_pf(n, i) for i in range(nics)]}
        for i in range(nics):
            port = f"p{n}"
            doc["cabling"].append({"node": name, "pf": f"enp{i}np0", "pci_address": f"0000:{0x3b + i:02x}:00.0",
                                   "switch": f"leaf{i + 1}", "port": port})
            ports[(f"leaf{i + 1}", port)] = _port()
    return Rack(doc, live, ports, faults)


def pair(r, dev_a="mlx5_0", dev_b="mlx5_0", **kw):
    return rdma_path(r, r.endpoint("node01", dev_a), r.endpoint("node02", dev_b), **kw)


def test_healthy_pair_near_line_rate_and_deterministic():
    r = rack()
    p = pair(r)
    assert p.ok and p.lossless and p.mtu == 4096
    assert 0.975 * 400 <= p.bw_gbps <= 0.985 * 400
    assert pair(rack()).bw_gbps == p.bw_gbps
    assert pair(r, "mlx5_1", "mlx5_1").bw_gbps != p.bw_gbps   # small per-pair variation


def test_host_pfc_mismatch_collapses_bandwidth():
    r = rack()
    r.live["node02"]["pfs"][0]["pfc"] = [0, 0, 0, 0, 1, 0, 0, 0]
    p = pair(r)
    assert p.ok and not p.lossless
    assert 0.30 * 400 <= p.bw_gbps <= 0.45 * 400
    assert any("PFC on priorities [4]" in x for x in p.reasons)
    assert pair(r, "mlx5_1", "mlx5_1").lossless


@pytest.mark.parametrize("change", [{"pfc_priorities": []}, {"trust": "pcp"},
                                    {"dscp_map": {d: 0 for d in range(64)}}])
def test_switch_breaks_lossless(change):
    r = rack()
    r.ports[("leaf1", "p2")].update(change)
    assert not pair(r).lossless


def test_host_trust_pcp_is_lossy():
    r = rack()
    r.live["node01"]["pfs"][0]["trust"] = "pcp"
    assert not pair(r).lossless


def test_link_down_local_and_remote():
    r = rack()
    r.live["node01"]["pfs"][0].update(operstate="down", carrier=False)
    assert pair(r).error == "local-port-down"
    r = rack()
    r.live["node02"]["pfs"][0].update(operstate="down", carrier=False)
    p = pair(r)
    assert not p.ok and p.error == "unreachable"
    r = rack()
    r.ports[("leaf1", "p2")]["up"] = False
    assert pair(r).error == "unreachable"


def test_different_leaves_unreachable():
    assert pair(rack(), "mlx5_0", "mlx5_1").error == "unreachable"


def test_active_mtu_rule():
    assert active_mtu(9000) == 4096 and active_mtu(4200) == 4096 and active_mtu(4191) == 2048
    assert active_mtu(1500) == 1024


def test_switch_mtu_below_roce_packet_fails():
    r = rack()
    r.ports[("leaf1", "p1")]["mtu"] = 1500
    p = pair(r)
    assert not p.ok and p.error == "mtu"


def test_small_host_mtu_works_with_small_switch_mtu_at_lower_rate():
    r = rack()
    for n in ("node01", "node02"):
        r.live[n]["pfs"][0]["mtu"] = 1500
    r.ports[("leaf1", "p1")]["mtu"] = 1500
    p = pair(r)
    assert p.ok and p.mtu == 1024
    assert p.bw_gbps < pair(rack()).bw_gbps


def test_switch_mtu_between_host_and_roce_size_is_fine():
    r = rack()
    r.ports[("leaf1", "p1")]["mtu"] = 4500      # < host 9000, > 4096 + headers
    assert pair(r).ok


def test_roce_v1_is_lossy():
    r = rack()
    r.live["node01"]["pfs"][0]["roce_mode"] = "IB/RoCE v1"
    assert pair(r).lossless                     # not used without rdma_cm
    assert not pair(r, rdma_cm=True).lossless
    assert not pair(rack(), gid_index=2).lossless   # RoCE v1 GID chosen


def test_gid_index_missing_fails():
    p = pair(rack(), gid_index=7)
    assert not p.ok and p.error == "gid"


def test_tos_outside_lossless_priority():
    assert not pair(rack(), tos=0).lossless
    assert pair(rack(), tos=106).lossless


def test_vf_endpoint_follows_pf_and_rate_limit():
    r = rack()
    vf = {"vf": 0, "rdma": "mlx5_4", "netdev": "enp0v0", "mtu": 9000, "link_state": "auto", "carrier": True,
          "ready": True, "max_tx_rate": 100000, "gids": r.live["node01"]["pfs"][0]["gids"][:2]}
    r.live["node01"]["pfs"][0]["vfs"] = [vf]
    p = pair(r, "mlx5_4")
    assert p.ok and p.bw_gbps <= 100 * 0.985
    # the node kernel's carrier(): disable takes the VF's port down
    vf.update(link_state="disable", carrier=False)
    assert pair(r, "mlx5_4").error == "local-port-down"
    # enable holds its port up with the PF's link down: perftest starts, and reaches no one
    vf.update(link_state="enable", carrier=True)
    r.live["node01"]["pfs"][0].update(operstate="down", carrier=False)
    assert pair(r, "mlx5_4").error == "unreachable"


def test_hca_filter():
    devs = ["mlx5_0", "mlx5_1", "mlx5_10"]
    assert hca_filter("mlx5_1", devs) == ["mlx5_1", "mlx5_10"]
    assert hca_filter("=mlx5_1:1", devs) == ["mlx5_1"]
    assert hca_filter("^mlx5_1", devs) == ["mlx5_0"]
    assert hca_filter(None, devs) == devs


def test_nccl_healthy_multi_rail():
    res = nccl_busbw(rack(), ["node01", "node02"], 8, {})
    assert res.transport == "IB" and res.ok
    per_rail = min(p.bw_gbps for p in res.rails) / 8
    assert res.busbw_gbs == pytest.approx(per_rail * 2 * 0.92, abs=0.01)
    one = nccl_busbw(rack(), ["node01", "node02"], 8, {"NCCL_IB_HCA": "=mlx5_0"})
    assert one.busbw_gbs < res.busbw_gbs and one.devices["node01"] == ["mlx5_0"]
    assert nccl_busbw(rack(), ["node01", "node02"], 1, {}).devices["node01"] == ["mlx5_0"]


def test_nccl_socket_fallbacks():
    # every node on sockets: the job runs, at socket speed
    for r, env in ((rack(), {"NCCL_IB_DISABLE": "1"}), (rack(), {"NCCL_IB_HCA": "ib"}),
                   (rack(faults={"node01": {"nccl-socket-fallback": True},
                                 "node02": {"nccl-socket-fallback": True}}), {})):
        res = nccl_busbw(r, ["node01", "node02"], 8, env)
        assert res.ok and res.transport == "Socket" and res.busbw_gbs < 5, env
        assert res.transports == {"node01": "Socket", "node02": "Socket"}


def test_nccl_socket_fallback_on_one_node_breaks_the_job():
    # each node's ranks pick their network: the faulted node sockets, the
    # other IB; the connection between them is refused where it is accepted
    r = rack(faults={"node02": {"nccl-socket-fallback": True}})
    res = nccl_busbw(r, ["node01", "node02"], 8, {})
    assert not res.ok and res.transport == "mixed" and res.busbw_gbs == 0.0
    assert res.transports == {"node01": "IB", "node02": "Socket"}
    assert res.devices == {"node01": ["mlx5_0", "mlx5_1"], "node02": []}
    assert res.error == "socketFinalizeAccept: wrong type 3 != 4"
    assert "node02: NCCL falls back to sockets (nccl-socket-fallback)" in res.reasons
    # no usable RDMA device on one node (its only NCCL_IB_HCA device is down)
    r = rack()
    r.live["node02"]["pfs"][0].update(operstate="down", carrier=False)
    res = nccl_busbw(r, ["node01", "node02"], 8, {"NCCL_IB_HCA": "=mlx5_0"})
    assert not res.ok and res.transports == {"node01": "IB", "node02": "Socket"}
    assert "node02: NET/IB : No device found" in res.reasons
    # three nodes, the middle one on sockets: both of its neighbours' connections fail
    res = nccl_busbw(rack(3, faults={"node02": {"nccl-socket-fallback": True}}), ["node01", "node02", "node03"], 8, {})
    assert not res.ok and res.transports == {"node01": "IB", "node02": "Socket", "node03": "IB"}


def test_nccl_lossy_rail_limits_and_failures():
    healthy = nccl_busbw(rack(), ["node01", "node02"], 8, {}).busbw_gbs
    r = rack()
    r.live["node02"]["pfs"][1]["pfc"] = [0, 0, 0, 0, 1, 0, 0, 0]
    assert nccl_busbw(r, ["node01", "node02"], 8, {}).busbw_gbs < 0.5 * healthy
    r = rack()
    r.ports[("leaf2", "p1")]["mtu"] = 1500
    res = nccl_busbw(r, ["node01", "node02"], 8, {})
    assert not res.ok and "MTU" in res.error
    assert not nccl_busbw(rack(), ["node01", "node02"], 8, {"NCCL_IB_GID_INDEX": "9"}).ok
    assert nccl_busbw(rack(), ["node01", "node02"], 8, {"NCCL_IB_TC": "0"}).busbw_gbs < 0.5 * healthy


def test_single_node_is_nvlink():
    res = nccl_busbw(rack(), ["node01"], 8, {})
    assert res.transport == "NVLink" and res.busbw_gbs == M.NVLINK_BUSBW_GBS["H100"]


def test_rack_load_reads_files(tmp_path):
    import json
    r = rack()
    (tmp_path / "nodes" / "node01").mkdir(parents=True)
    (tmp_path / "nodes" / "node02").mkdir(parents=True)
    (tmp_path / "lab.json").write_text(json.dumps(r.doc))
    for n in ("node01", "node02"):
        (tmp_path / "nodes" / n / "live.json").write_text(json.dumps(r.live[n]))
    (tmp_path / "nodes" / "node02" / "faults.json").write_text('{"nccl-socket-fallback": true}')
    loaded = Rack.load(tmp_path)
    assert loaded.node_fault("node02", "nccl-socket-fallback")
    # no switch state files: every switch port counts as down
    assert pair(loaded).error == "unreachable"
    assert loaded.by_ipv4("172.30.0.2").node == "node02"
    assert copy.deepcopy(loaded.devices("node01")) == ["mlx5_0", "mlx5_1"]


def test_rack_load_parses_a_file_again_only_when_it_changed(tmp_path, monkeypatch):
    """What Rack.load parsed is kept per version of each file (its inode, size and modification time):
    the perftest twin loads the rack twice on every call, forked from a fork server that loaded it last. A fault written in place, a file replaced, a rewrite to the same size at a later time: each
    is read again; an unchanged file is not."""
    import json
    import os
    r = rack()
    for n in ("node01", "node02"):
        (tmp_path / "nodes" / n).mkdir(parents=True)
        (tmp_path / "nodes" / n / "live.json").write_text(json.dumps(r.live[n]))
    (tmp_path / "lab.json").write_text(json.dumps(r.doc))
    faults = tmp_path / "nodes" / "node02" / "faults.json"
    faults.write_text("")
    monkeypatch.setattr(M, "_PARSED", {})
    parsed = []
    real = M.json.loads
    monkeypatch.setattr(M.json, "loads", lambda text: parsed.append(text) or real(text))

    first = Rack.load(tmp_path)
    assert not first.node_fault("node02", "nccl-socket-fallback") and len(parsed) == 3   # lab.json and two live.json
    del parsed[:]
    again = Rack.load(tmp_path)
    assert parsed == [] and again.live == first.live and again.doc == first.doc
    # the shared document is not changed by a load (each Rack has its own copy of lab.json's top level)
    again.doc["cabling"].append({"node": "x"})
    assert Rack.load(tmp_path).doc["cabling"] == first.doc["cabling"] and {"node": "x"} not in first.doc["cabling"]

    faults.write_text('{"nccl-socket-fallback": true}')           # in place, a new size
    assert Rack.load(tmp_path).node_fault("node02", "nccl-socket-fallback") and len(parsed) == 1
    faults.write_text('{"nccl-socket-fallback": false}')          # in place again
    assert not Rack.load(tmp_path).node_fault("node02", "nccl-socket-fallback")
    st = faults.stat()
    faults.write_text('{"nccl-socket-fallback": true }')          # the same size, a later time
    os.utime(faults, ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 6))
    assert Rack.load(tmp_path).node_fault("node02", "nccl-socket-fallback")
    tmp = faults.with_suffix(".tmp")                                # replaced
    tmp.write_text('{"nccl-socket-fallback": false}')
    os.replace(tmp, faults)
    assert not Rack.load(tmp_path).node_fault("node02", "nccl-socket-fallback")
    faults.unlink()                                                 # removed: the live file's faults only
    assert Rack.load(tmp_path).faults["node02"] == {}


def _job(r, env, hosts=(("node01", 8), ("node02", 8))):
    import io
    from simlab.tools import nccl
    out = io.StringIO()
    rc = nccl.run_job(r, list(hosts), nccl.parse_perf_args("-b 1G -e 8G -f 2 -g 1 -c 1".split()),
                      dict(env, NCCL_DEBUG="INFO"), out)
    return rc, out.getvalue()


def _prefixed(text, host):
    return [ln for ln in text.splitlines() if ln.startswith(host + ":")]


def test_all_reduce_perf_twin_prints_each_nodes_own_network():
    from plugins.plugin_utils import perf_parsers as P
    rc, text = _job(rack(), {})
    assert rc == 0
    for host in ("node01", "node02"):
        own = "\n".join(_prefixed(text, host))
        assert "NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE" in own and "NET/Socket" not in own
    p = P.parse_all_reduce_perf(text)
    assert p["transport"] == "IB" and p["transports_by_host"] == {"node01": ["IB"], "node02": ["IB"]}
    assert len(p["rows"]) == 4 and p["complete"]


def test_all_reduce_perf_twin_socket_fallback_on_one_node():
    from plugins.plugin_utils import perf_parsers as P
    rc, text = _job(rack(faults={"node02": {"nccl-socket-fallback": True}}), {})
    assert rc == 1
    node01, node02 = "\n".join(_prefixed(text, "node01")), "\n".join(_prefixed(text, "node02"))
    # only the faulted node's ranks print the fallback
    assert "NET/IB : Using [0]mlx5_0:1/RoCE" in node01 and "NET/Socket" not in node01
    assert "NET/IB : No device found." in node02 and "NET/Socket : Using [0]enp0np0:172.30.0.2<0>" in node02
    assert "NET/IB : Using" not in node02
    # the job cannot connect: no rows, the refused connections and nccl-tests' failure
    assert "misc/socket.cc:484 NCCL WARN socketFinalizeAccept: wrong type 4 != 3" in node02
    assert "# Avg bus bandwidth" not in text
    p = P.parse_all_reduce_perf(text)
    assert p["rows"] == [] and p["transport"] == "mixed"
    assert p["transports_by_host"] == {"node01": ["IB"], "node02": ["Socket"]}
    assert "node02: socketFinalizeAccept: wrong type 4 != 3" in p["nccl_warnings"]
    assert [ln for ln in p["test_failures"] if ln.startswith("node02: Test NCCL failure common.cu:1099 "
                                                             "'internal error")]
    # with NCCL_IB_DISABLE=1 every node is on sockets and the job runs slowly
    rc, text = _job(rack(), {"NCCL_IB_DISABLE": "1"})
    p = P.parse_all_reduce_perf(text)
    assert rc == 0 and p["transport"] == "Socket" and p["largest"]["oop"]["busbw"] < 5
    assert "No device found" not in text


def test_an_address_finds_its_netdev_among_all_of_a_nodes_addresses():
    """A perftest or NCCL server listens on every address: a client given
    any address of a PF or a VF netdev (``ip addr add``) reaches that
    netdev's RDMA device, not only the PF's first address."""
    r = rack()
    pf = r.live["node02"]["pfs"][1]
    pf["addrs"] = [{"local": pf["ipv4"]}, {"local": "10.77.0.5"}]
    pf["vfs"] = [{"vf": 0, "rdma": "mlx5_9", "addrs": [{"local": "10.99.0.5"}]}]
    assert (r.by_ipv4("10.77.0.5").node, r.by_ipv4("10.77.0.5").dev) == ("node02", pf["rdma"])
    vf = r.by_ipv4("10.99.0.5")
    assert (vf.node, vf.dev, vf.vf["vf"]) == ("node02", "mlx5_9", 0)
    with pytest.raises(M.FabricError):
        r.by_ipv4("10.99.0.6")
