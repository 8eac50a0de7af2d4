"""rdma_tools parsers against real outputs and iproute2 formats."""

import json
import re

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check import rdma_tools as R

pytestmark = pytest.mark.layers(5, 9)


def test_show_gids_real(real_output):
    p = R.parse_show_gids(real_output("show_gids/schmaustech-ocp-pod-sriov-vf-net1.txt"))
    assert p["n_gids_found"] == 4 == len(p["gids"])
    assert {g["dev"] for g in p["gids"]} == {"mlx5_3"} and {g["ndev"] for g in p["gids"]} == {"net1"}
    assert [g["version"] for g in p["gids"]] == ["v1", "v2", "v1", "v2"]
    assert p["gids"][0]["ipv4"] is None
    assert p["gids"][3] == {"dev": "mlx5_3", "port": 1, "index": 3,
                            "gid": "0000:0000:0000:0000:0000:ffff:c0a8:0a02",
                            "ipv4": "192.168.10.2", "version": "v2", "ndev": "net1"}
    assert R.roce_v2_gid_index(p) == 3
    assert R.roce_v2_gid_index(p, ipv4="192.168.10.2", ndev="net1") == 3
    assert R.roce_v2_gid_index(p, dev="mlx5_0") is None


def test_show_gids_rejects():
    with pytest.raises(ValueError):
        R.parse_show_gids("mlx5_0: command not found\n")


def test_ibv_devinfo_real(real_output):
    devs = R.parse_ibv_devinfo(real_output("ibv_devinfo/elizabetht-dgx-spark-cx7-4port-roce-tabs.txt"))
    assert [d["hca_id"] for d in devs] == ["rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"]
    for d in devs:
        assert d["fw_ver"] == "28.45.4028"
        assert d["vendor_id"] == "0x02c9" and d["vendor_part_id"] == 4129
        assert d["phys_port_cnt"] == 1 and len(d["ports"]) == 1
        port = d["ports"][0]
        assert port["state"] == "PORT_ACTIVE" and port["state_num"] == 4
        assert port["link_layer"] == "Ethernet" and port["active_mtu"] == 1024 and port["max_mtu"] == 4096
    assert devs[1]["node_guid"] == "30c5:9903:003e:6a14"
    json.dumps(devs)


def test_ibv_devinfo_empty_and_garbage():
    assert R.parse_ibv_devinfo("No IB devices found\n") == []
    with pytest.raises(ValueError):
        R.parse_ibv_devinfo("bash: ibv_devinfo: command not found\n")


def test_rdma_link():
    out = R.parse_rdma_link(
        "link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1f0np0\n"
        "link rocep59s0f0v3/1 state DOWN physical_state DISABLED\n"
        "link mlx5_2/1 subnet_prefix fe80:0000:0000:0000 lid 5 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP\n")
    assert out[0] == {"dev": "mlx5_0", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP",
                      "netdev": "ens1f0np0"}
    assert out[1]["dev"] == "rocep59s0f0v3" and out[1]["netdev"] is None
    assert out[2]["lid"] == 5 and out[2]["subnet_prefix"] == "fe80:0000:0000:0000"
    with pytest.raises(ValueError):
        R.parse_rdma_link("0: mlx5_0: node_type ca fw 28.39.1002\n")


IP_LINK = """2: ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP mode DEFAULT group default qlen 1000
    link/ether 0c:42:a1:2b:3c:4d brd ff:ff:ff:ff:ff:ff
    vf 0     link/ether 02:00:00:00:00:01 brd ff:ff:ff:ff:ff:ff, vlan 100, qos 3, spoof checking off, link-state auto, trust on, query_rss off
    vf 1     link/ether 00:00:00:00:00:00 brd ff:ff:ff:ff:ff:ff, max_tx_rate 25000Mbps, min_tx_rate 1000Mbps, spoof checking on, link-state enable, trust off, query_rss off
    altname enp59s0f0np0
"""


def test_ip_link_vf_lines():
    vfs = R.parse_ip_link_vfs(IP_LINK)
    assert [v["vf"] for v in vfs] == [0, 1]
    v0 = vfs[0]
    assert {k: v0[k] for k in ("vf", "mac", "vlan", "qos", "spoofchk", "trust", "link_state",
                                "node_guid", "port_guid")} == {
        "vf": 0, "mac": "02:00:00:00:00:01", "vlan": 100, "qos": 3, "spoofchk": False, "trust": True,
        "link_state": "auto", "node_guid": None, "port_guid": None}
    assert vfs[1]["max_tx_rate"] == 25000 and vfs[1]["min_tx_rate"] == 1000 and vfs[1]["vlan"] == 0


def test_ip_link_old_and_ib_forms():
    old = "    vf 3 MAC 02:aa:bb:cc:dd:ee, vlan 5, spoof checking on, link-state auto"
    v = R.parse_ip_link_vfs(old)[0]
    assert v["vf"] == 3 and v["mac"] == "02:aa:bb:cc:dd:ee" and v["vlan"] == 5 and v["trust"] is None
    ib = ("    vf 0     link/infiniband 00:00:0a:2d:fe:80:00:00:00:00:00:00:ec:0d:9a:03:00:44:36:8d brd "
          "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff, spoof checking off, "
          "NODE_GUID 22:44:33:00:33:11:00:33, PORT_GUID 10:21:33:12:00:11:22:10, link-state disable, "
          "trust off, query_rss off")
    v = R.parse_ip_link_vfs(ib)[0]
    assert v["link_type"] == "infiniband"
    assert v["node_guid"] == "22:44:33:00:33:11:00:33" and v["port_guid"] == "10:21:33:12:00:11:22:10"


def test_ip_link_vfs_name_the_link_they_are_printed_under():
    """``ip link show`` of every link: each PF's VF 0 is told apart by the
    interface line above it (a name with @<link>, as a VLAN's, too); the ip -o
    form the same; a VF line given alone has no PF."""
    second = IP_LINK.replace("2: ens1f0np0:", "3: ens1f1np1:").replace("enp59s0f0np0", "enp59s0f1np1")
    vlan = "4: ens1f0np0.100@ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc noqueue state UP\n" \
           "    link/ether 0c:42:a1:2b:3c:4d brd ff:ff:ff:ff:ff:ff\n"
    text = "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN\n" + IP_LINK + second + vlan
    vfs = R.parse_ip_link_vfs(text)
    assert [(v["pf"], v["vf"]) for v in vfs] == [("ens1f0np0", 0), ("ens1f0np0", 1), ("ens1f1np1", 0), ("ens1f1np1", 1)]
    one_line = "\n".join(" \\    ".join(ln.strip() for ln in block.strip("\n").split("\n"))
                         for block in (IP_LINK, second))
    assert R.parse_ip_link_vfs(one_line) == vfs
    assert R.parse_ip_link_vfs(IP_LINK.split("\n", 2)[2])[0]["pf"] is None


def test_ip_link_no_vfs_and_garbage():
    assert R.parse_ip_link_vfs(IP_LINK.split("\n    vf 0")[0]) == []
    with pytest.raises(ValueError):
        R.parse_ip_link_vfs('Device "ens9" does not exist.\n')


def test_ip_json_vfinfo():
    doc = [{"ifindex": 2, "ifname": "ens1f0np0", "vfinfo_list": [
        {"vf": 0, "link_type": "ether", "address": "02:00:00:00:00:01", "broadcast": "ff:ff:ff:ff:ff:ff",
         "vlan_list": [{"vlan": 100, "qos": 3}], "rate": {"max_tx": 0, "min_tx": 0},
         "spoofchk": False, "link_state": "auto", "trust": True, "query_rss_en": False},
        {"vf": 1, "link_type": "ether", "address": "02:00:00:00:00:02", "broadcast": "ff:ff:ff:ff:ff:ff",
         "vlan_list": [{}], "rate": {"max_tx": 0, "min_tx": 0}, "spoofchk": True, "link_state": "auto",
         "trust": False, "query_rss_en": False},
    ]}, {"ifindex": 1, "ifname": "lo"}]
    vfs = R.parse_ip_json_vfinfo(json.dumps(doc))
    assert len(vfs) == 2 and vfs[0]["pf"] == "ens1f0np0"
    assert vfs[0] == R.parse_ip_link_vfs(IP_LINK)[0]
    assert vfs[1]["vlan"] == 0 and vfs[1]["spoofchk"] is True
    with pytest.raises(ValueError):
        R.parse_ip_json_vfinfo("not json")
    with pytest.raises(ValueError):
        R.parse_ip_json_vfinfo('[{"vfinfo_list": [{"address": "x"}]}]')


def test_rdma_link_old_iproute2_form_and_json():
    old = ("1/1: mlx5_0/1: state ACTIVE physical_state LINK_UP netdev ens1f0np0 \n"
           "2/1: mlx5_1/1: subnet_prefix fe80:0000:0000:0000 lid 5 sm_lid 1 lmc 0 state DOWN physical_state POLLING \n")
    got = R.parse_rdma_link(old)
    assert got[0] == {"dev": "mlx5_0", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP",
                      "netdev": "ens1f0np0"}
    assert got[1]["lid"] == 5 and got[1]["netdev"] is None and got[1]["state"] == "DOWN"
    js = ('[{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACTIVE","physical_state":"LINK_UP",'
          '"netdev":"ens1f0np0","netdev_index":4}]')
    got = R.parse_rdma_link(js)
    assert got == [{"dev": "mlx5_0", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP",
                    "netdev": "ens1f0np0", "netdev_index": 4}]
    with pytest.raises(ValueError):
        R.parse_rdma_link('[{"state": "ACTIVE"}]')
    with pytest.raises(ValueError):
        R.parse_rdma_link("[not json")


def test_rdma_link_caps_lines_in_every_form():
    """rdma -d link: link_print_caps() starts the flags on a line of their
    own (_SL_: a newline, or "\\" with -o), current iproute2 for every
    InfiniBand port; each goes with the link above it, and one that is not
    the flags, or flags before any link, is quoted."""
    text = ("link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 2 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP \n"
            "    caps: <SM, TRAP, CM, EXT_INFO>\n"
            "link mlx5_2/1 state ACTIVE physical_state LINK_UP netdev ens2f0np0 netdev_index 6 \n")
    got = R.parse_rdma_link(text)
    assert [x.get("caps") for x in got] == [["SM", "TRAP", "CM", "EXT_INFO"], None]
    assert got[0]["lid"] == 2 and got[1]["netdev_index"] == 6
    oneline = text.replace(" \n    caps:", " \\    caps:")
    assert oneline.count("\n") == 2 and R.parse_rdma_link(oneline) == got
    assert R.parse_rdma_link(text.replace("<SM, TRAP, CM, EXT_INFO>", "<>"))[0]["caps"] == []
    for bad, quoted in ((text.replace("EXT_INFO>", "EXT_INFO"), "'caps: <SM, TRAP, CM, EXT_INFO'"),
                        ("    caps: <CM>\n" + text, "'caps: <CM>'")):
        with pytest.raises(ValueError, match="unexpected line " + re.escape(quoted)):
            R.parse_rdma_link(bad)
