"""rdma_tools' ``ibv_devinfo``, ``show_gids`` and ``rdma link`` parsers on
real outputs (tests/unit/fixtures/rdma_tools_real, each file only the output
as published or captured; its README names the source of every file), the
twin's ``rdma`` formats held to the captured ones, and the rule that a
line naming a device, a port or a GID is read or fails the parse with the
line quoted."""

import json
import re
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check import rdma_tools as R

pytestmark = pytest.mark.layers(5, 9)

REAL = Path(__file__).resolve().parent / "fixtures" / "rdma_tools_real"


def recorded(name):
    return (REAL / name).read_text()


# ---------------------------------------------------------------- ibv_devinfo
# Per file: one entry per device, hca_id, fw_ver, node_guid, vendor_part_id,
# phys_port_cnt and per port (port, state, state_num, max_mtu, active_mtu,
# link_layer, sm_lid, port_lid, [(gid index, gid, type) of -v]).
DEVINFO = {
    "ibv_devinfo-heioy-cx3-mlx4-2hca-ib-port2-down.txt": [
        ("mlx4_1", "2.42.5000", "7cfe:9003:00a5:95c0", 4099, 2, [
            (1, "PORT_ACTIVE", 4, 4096, 4096, "InfiniBand", 1, 22, []),
            (2, "PORT_DOWN", 1, 4096, 4096, "InfiniBand", 0, 0, [])]),
        ("mlx4_0", "2.42.5000", "e41d:2d03:00e0:c740", 4099, 2, [
            (1, "PORT_ACTIVE", 4, 4096, 4096, "InfiniBand", 18, 32, []),
            (2, "PORT_DOWN", 1, 4096, 4096, "InfiniBand", 0, 0, [])]),
    ],
    "ibv_devinfo-v-heioy-cx3-mlx4_1-port2-mlnx-ofed.txt": [
        ("mlx4_1", "2.42.5000", "7cfe:9003:00a5:95c0", 4099, 2, [
            (2, "PORT_DOWN", 1, 4096, 4096, "InfiniBand", 0, 0,
             [(0, "fe80:0000:0000:0000:7cfe:9003:00a5:95c2", None)])]),
    ],
    "ibv_devinfo-v-e3sm-chrysalis-cx6-ib-cx5-roce.txt": [
        ("mlx5_0", "20.29.2002", "0c42:a103:0065:d6b6", 4123, 1, [
            (1, "PORT_ACTIVE", 4, 4096, 4096, "InfiniBand", 3, 62,
             [(0, "fe80:0000:0000:0000:0c42:a103:0065:d6b6", None)])]),
        ("mlx5_1", "16.27.2008", "0c42:a103:002b:07a4", 4119, 1, [
            (1, "PORT_ACTIVE", 4, 4096, 1024, "Ethernet", 0, 0, [
                (0, "fe80:0000:0000:0000:0e42:a1ff:fe2b:07a4", "RoCE v1"),
                (1, "fe80:0000:0000:0000:0e42:a1ff:fe2b:07a4", "RoCE v2"),
                (2, "0000:0000:0000:0000:0000:ffff:8cdd:3c0b", "RoCE v1"),
                (3, "0000:0000:0000:0000:0000:ffff:8cdd:3c0b", "RoCE v2")])]),
        ("mlx5_2", "16.27.2008", "0c42:a103:002b:07a5", 4119, 1, [
            (1, "PORT_ACTIVE", 4, 4096, 1024, "Ethernet", 0, 0, [
                (0, "fe80:0000:0000:0000:0e42:a1ff:fe2b:07a5", "RoCE v1"),
                (1, "fe80:0000:0000:0000:0e42:a1ff:fe2b:07a5", "RoCE v2"),
                (2, "0000:0000:0000:0000:0000:ffff:0a3c:200b", "RoCE v1"),
                (3, "0000:0000:0000:0000:0000:ffff:0a3c:200b", "RoCE v2")])]),
    ],
    "ibv_devinfo-hustcat-8-cx3-vf-failed-to-open.txt": [
        ("mlx4_2", "2.40.7000", "0014:0500:8cc6:cd0a", 4100, 1, [
            (1, "PORT_ACTIVE", 4, 4096, 4096, "InfiniBand", 2, 1, [])]),
    ],
    "ibv_devinfo-debian12-rdma-core-44-rxe-2dev.txt": [
        ("rxe_enp1s0", "0.0.0", "5054:00ff:fe01:0001", 0, 1, [
            (1, "PORT_ACTIVE", 4, 4096, 1024, "Ethernet", 0, 0, [])]),
        ("rxe_mgmt", "0.0.0", "5054:00ff:fe00:0001", 0, 1, [
            (1, "PORT_ACTIVE", 4, 4096, 1024, "Ethernet", 0, 0, [])]),
    ],
    "ibv_devinfo-v-debian12-rdma-core-44-rxe_enp1s0.txt": [
        ("rxe_enp1s0", "0.0.0", "5054:00ff:fe01:0001", 0, 1, [
            (1, "PORT_ACTIVE", 4, 4096, 1024, "Ethernet", 0, 0, [
                (0, "fe80:0000:0000:0000:5054:00ff:fe01:0001", "RoCE v2"),
                (1, "0000:0000:0000:0000:0000:ffff:c0a8:6401", "RoCE v2")])]),
    ],
    "ibv_devinfo-pib-2-centos65-no-ib-devices.txt": [],
    "ibv_devinfo-scout-5251-no-providers-no-ib-devices.txt": [],
    # MLNX_OFED 4.x's libibverbs: Ethernet ports, yet every GID raw and without a type
    "ibv_devinfo-v-magnate3-mlnx-ofed4-3hca-roce-gids-without-type-crlf.txt": [
        ("mlx5_0", "14.27.1016", "08c0:eb03:0040:8f1a", 4117, 1, [
            (1, "PORT_DOWN", 1, 4096, 1024, "Ethernet", 0, 0, [
                (0, "fe80:0000:0000:0000:0ac0:ebff:fe40:8f1a", None),
                (1, "fe80:0000:0000:0000:0ac0:ebff:fe40:8f1a", None)])]),
        ("mlx5_2", "16.27.1016", "08c0:eb03:00da:e2e6", 4119, 1, [
            (1, "PORT_ACTIVE", 4, 4096, 1024, "Ethernet", 0, 0, [
                (0, "fe80:0000:0000:0000:0ac0:ebff:feda:e2e6", None),
                (1, "fe80:0000:0000:0000:0ac0:ebff:feda:e2e6", None),
                (2, "0000:0000:0000:0000:0000:ffff:ac11:f22f", None),
                (3, "0000:0000:0000:0000:0000:ffff:ac11:f22f", None)])]),
        ("mlx5_4", "14.27.1016", "08c0:eb03:0040:917f", 4117, 1, [
            (1, "PORT_DOWN", 1, 4096, 1024, "Ethernet", 0, 0, [
                (0, "fe80:0000:0000:0000:0ac0:ebff:fe40:917f", None),
                (1, "fe80:0000:0000:0000:0ac0:ebff:fe40:917f", None)])]),
    ],
    # libibverbs before rdma-core v29 (CentOS 7): Soft-RoCE GIDs raw, without a type
    "ibv_devinfo-v-magnate3-rxe0-pre-v29-gids-without-type-crlf.txt": [
        ("rxe0", "0.0.0", "b208:75ff:fe5f:b85e", 0, 1, [
            (1, "PORT_ACTIVE", 4, 4096, 1024, "Ethernet", 0, 0, [
                (0, "fe80:0000:0000:0000:b208:75ff:fe5f:b85e", None),
                (1, "0000:0000:0000:0000:0000:ffff:0a0b:0bfb", None)])]),
    ],
}
# vendor_id when not Mellanox's 0x02c9
VENDOR_ID = {
    "ibv_devinfo-debian12-rdma-core-44-rxe-2dev.txt": "0xffffff",       # rxe's RXE_VENDOR_ID
    "ibv_devinfo-v-debian12-rdma-core-44-rxe_enp1s0.txt": "0xffffff",
    "ibv_devinfo-v-magnate3-rxe0-pre-v29-gids-without-type-crlf.txt": "0x0000",
}


@pytest.mark.parametrize("name", sorted(DEVINFO))
def test_ibv_devinfo_real_key_figures(name):
    devs = R.parse_ibv_devinfo(recorded(name))
    got = [(d["hca_id"], d["fw_ver"], d["node_guid"], d["vendor_part_id"], d["phys_port_cnt"],
            [(p["port"], p["state"], p["state_num"], p["max_mtu"], p["active_mtu"], p["link_layer"],
              p["sm_lid"], p["port_lid"], [(g["index"], g["gid"], g["type"]) for g in p["gids"]])
             for p in d["ports"]]) for d in devs]
    assert got == DEVINFO[name]
    for d in devs:
        assert d["transport"] == "InfiniBand (0)" and d["vendor_id"] == VENDOR_ID.get(name, "0x02c9")
    json.dumps(devs)


# Real outputs the parser must refuse, and the line it must quote
_IRDMA = "ibv_devinfo-v-magnate3-irdma1-e810-gid1-cut-short.txt"
DEVINFO_REFUSED = {_IRDMA: "GID[  1]:               ::ffff"}


def test_ibv_devinfo_real_gid_cut_short_raises_quoting_it():
    """The irdma output as published ends in ``GID[  1]: ::ffff``: no type,
    and not the eight groups devinfo.c prints a GID without one in (only a
    RoCE v2 GID is printed in the inet_ntop form, and then with its type).
    It used to come out as GID 0000:...:ffff of no type; now it raises."""
    with pytest.raises(ValueError) as e:
        R.parse_ibv_devinfo(recorded(_IRDMA))
    assert repr(DEVINFO_REFUSED[_IRDMA])[1:-1] in str(e.value)


def test_ibv_devinfo_real_irdma_without_the_cut_line():
    """The same Intel E810 (irdma) output without its last line: every
    other figure is read, its one whole GID a RoCE v2 one."""
    text = recorded(_IRDMA)
    assert text.endswith(DEVINFO_REFUSED[_IRDMA] + "\n")
    (d,) = R.parse_ibv_devinfo(text[:text.rindex("\n", 0, -1) + 1])
    assert (d["hca_id"], d["fw_ver"], d["node_guid"], d["vendor_id"], d["vendor_part_id"], d["board_id"]) == (
        "irdma1", "1.54", "6efe:54ff:fe3d:8a39", "0x8086", 5522, None)
    (p,) = d["ports"]
    assert (p["port"], p["state"], p["state_num"], p["max_mtu"], p["active_mtu"], p["link_layer"], p["port_lid"],
            p["fields"]["active_speed"]) == (1, "PORT_ACTIVE", 4, 4096, 1024, "Ethernet", 1, "25.0 Gbps (32)")
    assert p["gids"] == [{"index": 0, "gid": "fe80:0000:0000:0000:6efe:54ff:fe3d:8a39", "type": "RoCE v2"}]


@pytest.mark.parametrize("line, want", [
    # devinfo.c's forms: raw (no type: InfiniBand, or before rdma-core v29), raw + RoCE v1, inet_ntop + RoCE v2
    ("GID[  0]:\t\tfe80:0000:0000:0000:0c42:a103:0065:d6b6", ("fe80:0000:0000:0000:0c42:a103:0065:d6b6", None)),
    ("GID[  2]:\t\t0000:0000:0000:0000:0000:ffff:8cdd:3c0b, RoCE v1",
     ("0000:0000:0000:0000:0000:ffff:8cdd:3c0b", "RoCE v1")),
    ("GID[  3]:\t\t::ffff:140.221.60.11, RoCE v2", ("0000:0000:0000:0000:0000:ffff:8cdd:3c0b", "RoCE v2")),
    # not devinfo.c's: short without a type, short with RoCE v1, a type it never prints
    ("GID[  1]:\t\t::ffff", None),
    ("GID[  1]:\t\tfe80::e42:a1ff:fe2b:7a4", None),
    ("GID[  1]:\t\tfe80::e42:a1ff:fe2b:7a4, RoCE v1", None),
    ("GID[  0]:\t\tfe80:0000:0000:0000:0c42:a103:0065:d6b6, IB", None),
    ("GID[  0]:\t\tfe80:0000:0000:0000:0c42:a103:0065", None),
])
def test_ibv_devinfo_gid_forms(line, want):
    if want is None:
        with pytest.raises(ValueError) as e:
            R._devinfo_gid(line)
        assert repr(line)[1:-1] in str(e.value)
    else:
        g = R._devinfo_gid(line)
        assert (g["gid"], g["type"]) == want


def test_ibv_devinfo_real_verbose_keeps_each_first_value():
    devs = R.parse_ibv_devinfo(recorded("ibv_devinfo-v-e3sm-chrysalis-cx6-ib-cx5-roce.txt"))
    # -v prints max_sge for the device (30) and again under the tag-matching caps (1)
    assert devs[0]["fields"]["max_sge"] == "30" and devs[0]["fields"]["max_num_tags"] == "127"
    assert devs[0]["sys_image_guid"] == "0c42:a103:0065:d6b6" and devs[0]["board_id"] == "MT_0000000223"
    port = devs[0]["ports"][0]
    assert port["fields"]["active_speed"] == "50.0 Gbps (64)" and port["fields"]["phys_state"] == "LINK_UP (5)"
    assert devs[1]["ports"][0]["fields"]["max_vl_num"] == "invalid value (0)"
    assert devs[2]["sys_image_guid"] == "0c42:a103:002b:07a4"
    old = R.parse_ibv_devinfo(recorded("ibv_devinfo-v-heioy-cx3-mlx4_1-port2-mlnx-ofed.txt"))[0]
    assert old["fields"]["Device ports"] == "" and old["fields"]["device_cap_exp_flags"] == "0x5000401600000000"
    assert old["ports"][0]["fields"]["phys_state"] == "POLLING (2)"


def test_ibv_devinfo_v_gid_matches_show_gids_form():
    """A RoCE v2 GID printed by inet_ntop (``fe80::e42:a1ff:fe2b:7a4``,
    ``::ffff:10.60.32.11``) comes out in the sysfs form show_gids prints."""
    devs = R.parse_ibv_devinfo(recorded("ibv_devinfo-v-e3sm-chrysalis-cx6-ib-cx5-roce.txt"))
    v2 = [g for g in devs[2]["ports"][0]["gids"] if g["type"] == "RoCE v2"]
    assert [g["gid"] for g in v2] == ["fe80:0000:0000:0000:0e42:a1ff:fe2b:07a5",
                                      "0000:0000:0000:0000:0000:ffff:0a3c:200b"]
    assert all(R._GID_RE.match(g["gid"]) for d in devs for p in d["ports"] for g in p["gids"])


# A real output with one line changed (or moved) to each form the parser must refuse
_E3SM = "ibv_devinfo-v-e3sm-chrysalis-cx6-ib-cx5-roce.txt"
_HEIOY = "ibv_devinfo-heioy-cx3-mlx4-2hca-ib-port2-down.txt"


@pytest.mark.parametrize("name, old, new, quoted", [
    (_E3SM, "hca_id:\tmlx5_1\n", "hca_id:\n", "hca_id:"),
    (_E3SM, "hca_id:\tmlx5_1\n", "hca_id:\tmlx5_1 (mlx5)\n", "hca_id:\tmlx5_1 (mlx5)"),
    (_HEIOY, "\t\tport:\t2\n", "\t\tport:\tport2\n", "port:\tport2"),
    (_E3SM, "GID[  3]:\t\t::ffff:10.60.32.11, RoCE v2", "GID[  3]:\t\t::ffff:10.60.32.11.5, RoCE v2",
     "GID[  3]:\t\t::ffff:10.60.32.11.5, RoCE v2"),
    (_E3SM, "GID[  1]:\t\tfe80::e42:a1ff:fe2b:7a4, RoCE v2", "GID[ 1]: fe80:0000:xxxx:xxxx",
     "GID[ 1]: fe80:0000:xxxx:xxxx"),
    (_E3SM, "GID[  0]:\t\tfe80:0000:0000:0000:0c42:a103:0065:d6b6", "GID:\t\tfe80::c42:a103:65:d6b6",
     None),
])
def test_ibv_devinfo_unreadable_managed_line_raises_quoting_it(name, old, new, quoted):
    text = recorded(name)
    assert old in text
    bad = text.replace(old, new, 1)
    if quoted is None:
        # 'GID:' has no index: not a GID line, kept as a plain field of the port
        port = R.parse_ibv_devinfo(bad)[0]["ports"][0]
        assert port["gids"] == [] and port["fields"]["GID"] == "fe80::c42:a103:65:d6b6"
        return
    with pytest.raises(ValueError) as e:
        R.parse_ibv_devinfo(bad)
    assert repr(quoted)[1:-1] in str(e.value)


def test_ibv_devinfo_managed_line_out_of_place_raises():
    text = recorded(_HEIOY)
    with pytest.raises(ValueError, match="before any 'hca_id:'"):
        R.parse_ibv_devinfo("\t\tport:\t1\n" + text)
    gid = "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:7cfe:9003:00a5:95c2\n"
    with pytest.raises(ValueError, match="before any 'hca_id:'"):
        R.parse_ibv_devinfo(gid + text)
    # a GID line in the device part, before the first 'port:'
    bad = text.replace("\tDevice ports:\n", gid + "\tDevice ports:\n", 1)
    with pytest.raises(ValueError, match="GID line outside a port of mlx4_1"):
        R.parse_ibv_devinfo(bad)


def test_ibv_devinfo_state_without_its_number_is_still_the_state():
    text = recorded(_HEIOY).replace("PORT_DOWN (1)", "PORT_DOWN", 1)
    port2 = R.parse_ibv_devinfo(text)[0]["ports"][1]
    assert (port2["state"], port2["state_num"]) == ("PORT_DOWN", None)


def test_ibv_devinfo_source_fallback_strings():
    """devinfo.c prints ``invalid state (N)`` / ``invalid MTU (N)`` for
    values it has no name for; the number is still read."""
    text = recorded(_HEIOY).replace("PORT_DOWN (1)", "invalid state (7)", 1).replace(
        "active_mtu:\t\t4096 (5)", "active_mtu:\t\tinvalid MTU (0)", 1)
    port = R.parse_ibv_devinfo(text)[0]["ports"][0]
    assert port["state"] == "PORT_ACTIVE" and port["active_mtu"] is None
    port2 = R.parse_ibv_devinfo(text)[0]["ports"][1]
    assert port2["state"] == "invalid state" and port2["state_num"] == 7


# ---------------------------------------------------------------- show_gids
# Per file: n_gids_found (None: no footer) and every row as
# (dev, port, index, gid, ipv4, version, ndev).
SHOW_GIDS = {
    "show_gids-husky-mlx5_0-rdma0.txt": (4, [
        ("mlx5_0", 1, 0, "fe80:0000:0000:0000:0ac0:ebff:fe21:03da", None, "v1", "rdma0"),
        ("mlx5_0", 1, 1, "fe80:0000:0000:0000:0ac0:ebff:fe21:03da", None, "v2", "rdma0"),
        ("mlx5_0", 1, 2, "0000:0000:0000:0000:0000:ffff:c0a8:d3f2", "192.168.211.242", "v1", "rdma0"),
        ("mlx5_0", 1, 3, "0000:0000:0000:0000:0000:ffff:c0a8:d3f2", "192.168.211.242", "v2", "rdma0")]),
    "show_gids-hurray0-cx4-roce-and-ib-port.txt": (3, [
        ("mlx5_0", 1, 0, "fe80:0000:0000:0000:268a:07ff:feb1:bc04", None, "v1", "ens11f0"),
        ("mlx5_0", 1, 1, "fe80:0000:0000:0000:268a:07ff:feb1:bc04", None, "v2", "ens11f0"),
        ("mlx5_1", 1, 0, "fe80:0000:0000:0000:248a:0703:00b1:bc05", None, "v1", None)]),
    "show_gids-spectrumscale-4-cx6-two-linklocal.txt": (6, [
        ("mlx5_0", 1, 0, "fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8", None, "v1", "ens1f0"),
        ("mlx5_0", 1, 1, "fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8", None, "v2", "ens1f0"),
        ("mlx5_0", 1, 2, "fe80:0000:0000:0000:1186:a6b1:3f0b:c441", None, "v1", "ens1f0"),
        ("mlx5_0", 1, 3, "fe80:0000:0000:0000:1186:a6b1:3f0b:c441", None, "v2", "ens1f0"),
        ("mlx5_0", 1, 4, "0000:0000:0000:0000:0000:ffff:ac13:003c", "172.19.0.60", "v1", "ens1f0"),
        ("mlx5_0", 1, 5, "0000:0000:0000:0000:0000:ffff:ac13:003c", "172.19.0.60", "v2", "ens1f0")]),
    "show_gids-nccl-1587-sparse-macvlan-no-footer.txt": (None, [
        ("mlx5_0", 1, 6, "0000:0000:0000:0000:0000:ffff:0b00:0401", "11.0.4.1", "v1", "net1"),
        ("mlx5_0", 1, 7, "0000:0000:0000:0000:0000:ffff:0b00:0401", "11.0.4.1", "v2", "net1"),
        ("mlx5_0", 1, 8, "fe80:0000:0000:0000:e4ea:71ff:feb9:4970", None, "v1", "net1"),
        ("mlx5_0", 1, 9, "fe80:0000:0000:0000:e4ea:71ff:feb9:4970", None, "v2", "net1")]),
    "show_gids-multus-1100-macvlan-pod-no-footer.txt": (None, [
        ("mlx5_4", 1, 4, "0000:0000:0000:0000:0000:ffff:ac14:0101", "172.20.1.1", "v1", "net1"),
        ("mlx5_4", 1, 5, "0000:0000:0000:0000:0000:ffff:ac14:0101", "172.20.1.1", "v2", "net1")]),
    "show_gids-rdma-sriov-30-pod-no-gids.txt": (0, []),
    "show_gids-magnate3-three-ipv4-on-one-port-crlf.txt": (10, [
        ("mlx5_0", 1, 0, "fe80:0000:0000:0000:c670:bdff:feaa:1fc8", None, "v1", "enp61s0f0np0"),
        ("mlx5_0", 1, 1, "fe80:0000:0000:0000:c670:bdff:feaa:1fc8", None, "v2", "enp61s0f0np0"),
        ("mlx5_1", 1, 0, "fe80:0000:0000:0000:c670:bdff:feaa:1fc9", None, "v1", "enp61s0f1np1"),
        ("mlx5_1", 1, 1, "fe80:0000:0000:0000:c670:bdff:feaa:1fc9", None, "v2", "enp61s0f1np1"),
        ("mlx5_1", 1, 2, "0000:0000:0000:0000:0000:ffff:0a16:74dd", "10.22.116.221", "v1", "enp61s0f1np1"),
        ("mlx5_1", 1, 3, "0000:0000:0000:0000:0000:ffff:0a16:74dd", "10.22.116.221", "v2", "enp61s0f1np1"),
        ("mlx5_1", 1, 4, "0000:0000:0000:0000:0000:ffff:0a16:74de", "10.22.116.222", "v1", "enp61s0f1np1"),
        ("mlx5_1", 1, 5, "0000:0000:0000:0000:0000:ffff:0a16:74de", "10.22.116.222", "v2", "enp61s0f1np1"),
        ("mlx5_1", 1, 6, "0000:0000:0000:0000:0000:ffff:0a16:74df", "10.22.116.223", "v1", "enp61s0f1np1"),
        ("mlx5_1", 1, 7, "0000:0000:0000:0000:0000:ffff:0a16:74df", "10.22.116.223", "v2", "enp61s0f1np1")]),
    "show_gids-mooncake-1617-ipv6-ula-partial.txt": (None, [
        ("rocep105s0", 1, 0, "fe80:0000:0000:0000:0690:81ff:fe39:e3e8", None, "v2", "enp105s0"),
        ("rocep105s0", 1, 1, "fd93:16d3:59b6:010d:0690:81ff:fe39:e3e8", None, "v2", "enp105s0"),
        ("rocep121s0", 1, 0, "fe80:0000:0000:0000:0690:81ff:fe39:01c8", None, "v2", "enp121s0"),
        ("rocep121s0", 1, 1, "fd93:16d3:59b6:010e:0690:81ff:fe39:01c8", None, "v2", "enp121s0"),
        ("rocep137s0", 1, 0, "fe80:0000:0000:0000:0690:81ff:fe39:f420", None, "v2", "enp137s0"),
        ("rocep137s0", 1, 1, "fd93:16d3:59b6:010c:0690:81ff:fe39:f420", None, "v2", "enp137s0"),
        ("rocep153s0", 1, 0, "fe80:0000:0000:0000:0690:81ff:fe39:e718", None, "v2", "enp153s0"),
        ("rocep153s0", 1, 1, "fd93:16d3:59b6:010b:0690:81ff:fe39:e718", None, "v2", "enp153s0"),
        ("rocep193s0f0", 1, 0, "fe80:0000:0000:0000:7ec2:55ff:feba:ff88", None, "v1", "enp193s0f0np0"),
        ("rocep193s0f0", 1, 1, "fe80:0000:0000:0000:7ec2:55ff:feba:ff88", None, "v2", "enp193s0f0np0")]),
}


@pytest.mark.parametrize("name", sorted(SHOW_GIDS))
def test_show_gids_real_rows(name):
    p = R.parse_show_gids(recorded(name))
    n_found, rows = SHOW_GIDS[name]
    assert p["n_gids_found"] == n_found
    assert [(g["dev"], g["port"], g["index"], g["gid"], g["ipv4"], g["version"], g["ndev"])
            for g in p["gids"]] == rows
    json.dumps(p)


@pytest.mark.parametrize("name, kw, index", [
    ("show_gids-husky-mlx5_0-rdma0.txt", {}, 3),
    ("show_gids-spectrumscale-4-cx6-two-linklocal.txt", {"ndev": "ens1f0"}, 5),
    ("show_gids-nccl-1587-sparse-macvlan-no-footer.txt", {"dev": "mlx5_0"}, 7),
    ("show_gids-multus-1100-macvlan-pod-no-footer.txt", {"ipv4": "172.20.1.1"}, 5),
    # three IPv4 addresses on one port: the first, or the one asked for; none on the other port
    ("show_gids-magnate3-three-ipv4-on-one-port-crlf.txt", {}, 3),
    ("show_gids-magnate3-three-ipv4-on-one-port-crlf.txt", {"ipv4": "10.22.116.223"}, 7),
    ("show_gids-magnate3-three-ipv4-on-one-port-crlf.txt", {"ndev": "enp61s0f0np0"}, None),
    # v2 GIDs here are IPv6 only: there is no IPv4 RoCE v2 GID to pick
    ("show_gids-mooncake-1617-ipv6-ula-partial.txt", {}, None),
    ("show_gids-hurray0-cx4-roce-and-ib-port.txt", {}, None),
    ("show_gids-rdma-sriov-30-pod-no-gids.txt", {}, None),
])
def test_show_gids_real_roce_v2_ipv4_index(name, kw, index):
    assert R.roce_v2_gid_index(R.parse_show_gids(recorded(name)), **kw) == index


_HUSKY = "show_gids-husky-mlx5_0-rdma0.txt"
_HURRAY = "show_gids-hurray0-cx4-roce-and-ib-port.txt"
_ROW3 = "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:d3f2\t192.168.211.242  \tv2\trdma0"


@pytest.mark.parametrize("name, old, new", [
    # a GID with its interface ID blanked out, as some authors publish it
    (_HUSKY, _ROW3, _ROW3.replace("ffff:c0a8:d3f2", "xxxx:xxxx:xxxx")),
    # a GID cut short
    (_HUSKY, _ROW3, _ROW3.replace("0000:0000:0000:0000:0000:ffff", "::ffff")),
    # the INDEX column lost
    (_HUSKY, _ROW3, _ROW3.replace("\t1\t3\t", "\t1\t")),
    # a column the script never prints
    (_HUSKY, _ROW3, _ROW3 + "\tRoCE"),
    # the row as a markdown table row
    (_HURRAY, "mlx5_1  1       0       fe80:0000:0000:0000:248a:0703:00b1:bc05                 v1",
     "| mlx5_1 | 1 | 0 | fe80:0000:0000:0000:248a:0703:00b1:bc05 | | v1 | |"),
])
def test_show_gids_unreadable_row_raises_quoting_it(name, old, new):
    text = recorded(name)
    assert old in text
    with pytest.raises(ValueError) as e:
        R.parse_show_gids(text.replace(old, new, 1))
    assert repr(new.strip())[1:-1] in str(e.value)


def test_show_gids_footer_is_kept_as_printed():
    text = recorded(_HUSKY)
    # filtered after the script (| grep -v ...): the rows it has, the footer it printed
    filtered = R.parse_show_gids(text.replace(_ROW3 + "\n", "", 1))
    assert (len(filtered["gids"]), filtered["n_gids_found"]) == (3, 4)
    # stderr of the script's ls/cat is not a row and does not count
    noisy = text.replace("n_gids_found=4", "cat: /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/9: "
                                           "Invalid argument\nn_gids_found=4")
    assert len(R.parse_show_gids(noisy)["gids"]) == 4


# ---------------------------------------------------------------- rdma (iproute2 6.1)
_RXE_LINKS = [("rxe_enp1s0", 1, "ACTIVE", "LINK_UP", "enp1s0", 3), ("rxe_mgmt", 1, "ACTIVE", "LINK_UP", "enp0s3", 2)]
RDMA_LINK = {
    "rdma-d-link-debian12-iproute2-6.1-rxe-2dev.txt": _RXE_LINKS,
    "rdma-j-link-debian12-iproute2-6.1-rxe-2dev.txt": _RXE_LINKS,
    "rdma-j-p-link-debian12-iproute2-6.1-rxe-2dev.txt": _RXE_LINKS,
    "rdma-link-magnate3-irdma-e810-down-disabled.txt": [
        ("irdma0", 1, "DOWN", "DISABLED", "enp23s0f0", None), ("irdma1", 1, "ACTIVE", "LINK_UP", "enp23s0f1", None)],
    "rdma-link-spiderpool-cx5-ib-port.txt": [("mlx5_0", 1, "ACTIVE", "LINK_UP", None, None)],
    "rdma-d-link-iproute2-15259427-cx-roce-caps-line.txt": [("mlx5_3", 1, "ACTIVE", "LINK_UP", "ens7", 7)],
    "rdma-j-p-d-link-iproute2-7fc75744-ib-ifname-dev-port.txt": [
        ("mlx5_0", 1, "ACTIVE", "LINK_UP", None, None), ("mlx5_1", 1, "ACTIVE", "LINK_UP", None, None)],
    "rdma-link-sriov-operator-635-cx6-ib-and-eth-partial.txt": [
        ("mlx5_%d" % n, 1, "ACTIVE" if n % 2 == 0 else "DOWN", "LINK_UP" if n % 2 == 0 else "DISABLED",
         "enp97s0f0" if n == 4 else None, None) for n in range(9)],
}
# InfiniBand ports: (dev, subnet_prefix, lid, sm_lid, lmc); an Ethernet port has none of them
RDMA_LINK_IB = {
    "rdma-link-spiderpool-cx5-ib-port.txt": [("mlx5_0", "fe80:0000:0000:0000", 2, 2, 0)],
    "rdma-j-p-d-link-iproute2-7fc75744-ib-ifname-dev-port.txt": [
        ("mlx5_0", "fe80:0000:0000:0000", 13399, 49151, 0), ("mlx5_1", "fe80:0000:0000:0000", 13400, 49151, 0)],
    "rdma-link-sriov-operator-635-cx6-ib-and-eth-partial.txt": [
        ("mlx5_0", "fe80:0000:0000:0000", 3, 1, 0), ("mlx5_1", "fe80:0000:0000:0000", 65535, 0, 0),
        ("mlx5_2", "fe80:0000:0000:0000", 35, 1, 0), ("mlx5_3", "fe80:0000:0000:0000", 65535, 0, 0),
        ("mlx5_4", None, None, None, None),
        ("mlx5_5", "fe80:0000:0000:0000", 65535, 0, 0), ("mlx5_6", "fe80:0000:0000:0000", 4, 1, 0),
        ("mlx5_7", "fe80:0000:0000:0000", 65535, 0, 0), ("mlx5_8", "fe80:0000:0000:0000", 36, 1, 0)],
}
# with -d, each port's capability flags (link_print_caps(): a line of its own, a list in -j)
RDMA_LINK_CAPS = {
    "rdma-d-link-iproute2-15259427-cx-roce-caps-line.txt": [["CM", "IP_BASED_GIDS"]],
    "rdma-j-p-d-link-iproute2-7fc75744-ib-ifname-dev-port.txt": [["AUTO_MIG"], ["AUTO_MIG"]],
    "rdma-d-link-debian12-iproute2-6.1-rxe-2dev.txt": [None, None],     # rxe's Ethernet ports report none
}
RDMA_JSON = {  # file: pretty
    "rdma-j-link-debian12-iproute2-6.1-rxe-2dev.txt": False,
    "rdma-j-p-link-debian12-iproute2-6.1-rxe-2dev.txt": True,
    "rdma-j-p-d-dev-debian12-iproute2-6.1-rxe-2dev.txt": True,
    "ip-j-link-show-debian12-iproute2-6.1-igb-2vf.txt": False,
    "ip-j-p-link-show-debian12-iproute2-6.1-igb-2vf.txt": True,
    "ip-j-br-link-show-debian12-iproute2-6.1-igb-2vf-all.txt": False,
    "ip-j-p-br-link-show-debian12-iproute2-6.1-igb-2vf-all.txt": True,
    "ip-j-p-link-show-up-debian12-iproute2-6.1-igb-2vf-pf-down.txt": True,
}


@pytest.mark.parametrize("name", sorted(RDMA_LINK))
def test_rdma_link_real_text_and_json(name):
    got = [(x["dev"], x["port"], x["state"], x["physical_state"], x["netdev"], x.get("netdev_index"))
           for x in R.parse_rdma_link(recorded(name))]
    assert got == RDMA_LINK[name]


@pytest.mark.parametrize("name", sorted(RDMA_LINK_CAPS))
def test_rdma_link_real_capability_flags(name):
    assert [x.get("caps") for x in R.parse_rdma_link(recorded(name))] == RDMA_LINK_CAPS[name]


@pytest.mark.parametrize("name", sorted(RDMA_LINK_IB))
def test_rdma_link_real_infiniband_port_keys(name):
    got = [(x["dev"], x.get("subnet_prefix"), x.get("lid"), x.get("sm_lid"), x.get("lmc"))
           for x in R.parse_rdma_link(recorded(name))]
    assert got == RDMA_LINK_IB[name]


@pytest.mark.parametrize("name", sorted(RDMA_JSON))
def test_the_twins_iproute2_json_is_the_real_one(name):
    """simlab's iproute2_json (the twin's rdma -j, -j -p) writes what real
    iproute2 6.1 wrote, byte for byte, from the same objects."""
    from simlab.tools import formats
    text = recorded(name)
    assert formats.iproute2_json(json.loads(text), pretty=RDMA_JSON[name]) + "\n" == text


def test_the_twins_rdma_link_details_line_is_the_real_one():
    from simlab.tools import formats
    text = recorded("rdma-d-link-debian12-iproute2-6.1-rxe-2dev.txt")
    rows = [{k: x[k] for k in ("dev", "port", "state", "physical_state", "netdev", "netdev_index")}
            for x in R.parse_rdma_link(text)]
    assert formats.rdma_link(rows) == text


def test_the_twins_empty_pretty_array_and_empty_list_value():
    """iproute2's json_writer: an empty array is `[]`, with -p `[ ]` (real
    `rdma -j -p link show nosuchdev/1`, compared live by the VM tier)."""
    from simlab.tools import formats
    assert (formats.iproute2_json([]), formats.iproute2_json([], pretty=True)) == ("[]", "[ ]")
    assert formats.iproute2_json([{"caps": []}], pretty=True) == '[ {\n        "caps": [ ]\n    } ]'


# ---------------------------------------------------------------- ip link VF info (iproute2 6.1)
# Per VF: vf, mac, vlan, qos, max_tx_rate, spoofchk, link_state, trust,
# query_rss (igb leaves rss_query_en at -1, so iproute2 prints no query_rss).
_IGB_VFS = [(0, "9e:6a:ae:90:9d:9a", 0, 0, 0, True, "auto", False, None),
            (1, "02:11:22:33:44:55", 10, 3, 100, False, "auto", True, None)]
_IGB_ALL_VFS = [(0, "02:00:00:00:00:10", 0, 0, 0, True, "auto", False, None),
                (1, "c6:fe:6d:80:0a:31", 10, 3, 100, False, "auto", True, None)]
_IB_VF_LINE = "vf 0     link/infiniband 00:00:00:08:fe:80:00:00:00:00:00:00:52:54:00:c0:fe:12:34:55"
IP_LINK = {
    "ip-link-show-debian12-iproute2-6.1-igb-2vf.txt": _IGB_VFS,
    "ip-j-link-show-debian12-iproute2-6.1-igb-2vf.txt": _IGB_VFS,
    "ip-j-p-link-show-debian12-iproute2-6.1-igb-2vf.txt": _IGB_VFS,
    # every link of the node, and the same as ip -o's one line per link
    "ip-link-show-debian12-iproute2-6.1-igb-2vf-all.txt": _IGB_ALL_VFS,
    "ip-o-link-show-debian12-iproute2-6.1-igb-2vf-all.txt": _IGB_ALL_VFS,
    # the older `vf N MAC <mac>` form (mlx5, MLNX_OFED's iproute2 before 5.3)
    "ip-link-show-magnate3-cx4lx-mac-form-link-state-disable-crlf.txt": [
        (0, "00:00:00:00:00:00", 0, 0, 0, False, "disable", False, False),
        (1, "00:00:00:00:00:00", 0, 0, 0, False, "disable", False, False)],
    "ip-link-show-magnate3-cx5-mac-form-spoof-trust-mixed-crlf.txt": [
        (0, "f2:3b:68:ee:b1:7e", 0, 0, 0, True, "auto", False, False),
        (1, "a2:02:67:cb:a4:29", 0, 0, 0, False, "auto", True, False)],
    # an mlx5 IPoIB PF's VF, its line wrapped after `brd <addr>,` by the authors as published
    "ip-link-show-linux-4bbd4923-mlx5-ib0-vf-guids-wrapped.txt": [
        (0, "00:00:00:08:fe:80:00:00:00:00:00:00:52:54:00:c0:fe:12:34:55", 0, 0, 0, False, "auto", False, False)],
    "ip-link-show-iproute2-738728cc-ib4-vf-guids-wrapped.txt": [
        (0, "00:00:0a:2d:fe:80:00:00:00:00:00:00:ec:0d:9a:03:00:44:36:8d", 0, 0, 0, False, "disable", False, False)],
}
_IB_BRD = "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff"
IP_LINK_ADDR = {   # (link_type, broadcast) of every VF when not ("ether", "ff:ff:ff:ff:ff:ff")
    "ip-link-show-magnate3-cx4lx-mac-form-link-state-disable-crlf.txt": (None, None),
    "ip-link-show-magnate3-cx5-mac-form-spoof-trust-mixed-crlf.txt": (None, None),
    "ip-link-show-linux-4bbd4923-mlx5-ib0-vf-guids-wrapped.txt": ("infiniband", _IB_BRD),
    "ip-link-show-iproute2-738728cc-ib4-vf-guids-wrapped.txt": ("infiniband", _IB_BRD),
}
IP_LINK_GUIDS = {  # (node_guid, port_guid) per VF of an InfiniBand PF
    "ip-link-show-linux-4bbd4923-mlx5-ib0-vf-guids-wrapped.txt": [("11:00:af:21:cb:05:11:00", "22:11:af:21:cb:05:11:00")],
    "ip-link-show-iproute2-738728cc-ib4-vf-guids-wrapped.txt": [("22:44:33:00:33:11:00:33", "10:21:33:12:00:11:22:10")],
}
# wrapped in the middle of the VF's address (and of a setting): refused, quoting the VF line as far as it goes
IP_LINK_REFUSED = {"ip-link-show-iproute2-0f48f9f4-ib1-wrapped-mid-address.txt": "vf 0     link/infiniband"}


def _vf_rows(vfs):
    return [(v["vf"], v["mac"], v["vlan"], v["qos"], v["max_tx_rate"], v["spoofchk"], v["link_state"], v["trust"],
             v["query_rss"]) for v in vfs]

# the link each VF is printed under (ip link text: the interface line above it;
# ip -j: the link's ifname); None where the capture kept only the VF line
IP_LINK_PF = dict((name, "enp1s0") for name in IP_LINK if "debian12" in name)
IP_LINK_PF.update({
    "ip-link-show-magnate3-cx4lx-mac-form-link-state-disable-crlf.txt": "ens4f1",
    "ip-link-show-magnate3-cx5-mac-form-spoof-trust-mixed-crlf.txt": "ens6",
})


@pytest.mark.parametrize("name", sorted(IP_LINK))
def test_ip_link_vfs_real_text_and_json(name):
    text = recorded(name)
    vfs = R.parse_ip_json_vfinfo(text) if text.startswith("[") else R.parse_ip_link_vfs(text)
    assert _vf_rows(vfs) == IP_LINK[name]
    assert {(v["link_type"], v["broadcast"]) for v in vfs} == {IP_LINK_ADDR.get(name, ("ether", "ff:ff:ff:ff:ff:ff"))}
    assert [(v["node_guid"], v["port_guid"]) for v in vfs] == IP_LINK_GUIDS.get(name, [(None, None)] * len(vfs))
    assert [v["pf"] for v in vfs] == [IP_LINK_PF.get(name)] * len(vfs)


@pytest.mark.parametrize("name", sorted(IP_LINK_REFUSED))
def test_ip_link_vfs_real_wrapped_mid_address_raises(name):
    with pytest.raises(ValueError) as e:
        R.parse_ip_link_vfs(recorded(name))
    assert repr(IP_LINK_REFUSED[name])[1:-1] in str(e.value)


_WRAPPED = "ip-link-show-linux-4bbd4923-mlx5-ib0-vf-guids-wrapped.txt"


def test_ip_link_wrapped_vf_line_reads_as_the_one_line_iproute2_prints():
    """print_vfinfo() prints a VF on one line (no newline before NODE_GUID);
    the wrapped line read whole gives what the unwrapped one gives, and the
    same with the comma carried to the next line."""
    text = recorded(_WRAPPED)
    one = R.parse_ip_link_vfs(text.replace(",\nspoof", ", spoof"))
    assert R.parse_ip_link_vfs(text) == one
    assert R.parse_ip_link_vfs(text.replace(",\nspoof", "\n, spoof")) == one
    assert R.parse_ip_link_vfs(text.replace(",\nspoof", ",\n\n    spoof")) == one


@pytest.mark.parametrize("old, new, quoted", [
    # a dangling comma with nothing after it, or with a line that is no VF settings after it
    (",\nspoof checking off, NODE_GUID 11:00:af:21:cb:05:11:00, PORT_GUID 22:11:af:21:cb:05:11:00, link-state auto, "
     "trust off, query_rss off\n", ",\n", "ends with a comma and nothing follows"),
    (",\nspoof checking", ",\n    altname ib0p1\nspoof checking", "'altname ib0p1' does not go on"),
    # wrapped inside a setting: the VF line's last part cannot be read
    (",\nspoof checking off", ", spoof\nchecking off", "cannot read 'spoof' of VF line"),
    # wrapped inside a number: the rest names VF settings on a line of its own
    ("NODE_GUID 11:00:af:21:cb:05:11:00, PORT_GUID", "NODE_GUID 11:00:af:21:cb:05:11:00, PO\nRT_GUID", "cannot read 'PO'"),
    # a setting iproute2 never prints, an address of the wrong length, a GUID cut short
    ("link-state auto", "link-state sideways", "cannot read 'link-state sideways'"),
    (_IB_VF_LINE + " brd", _IB_VF_LINE[:-3] + " brd", "cannot read address '00:00:00:08"),
    ("NODE_GUID 11:00:af:21:cb:05:11:00", "NODE_GUID 11:00:af:21", "cannot read address '11:00:af:21'"),
])
def test_ip_link_unreadable_vf_text_raises_quoting_it(old, new, quoted):
    text = recorded(_WRAPPED)
    assert old in text
    with pytest.raises(ValueError) as e:
        R.parse_ip_link_vfs(text.replace(old, new, 1))
    assert quoted in str(e.value) and "'vf 0     link/infiniband 00:00:00:08:fe:80:" in str(e.value)


def test_ip_link_vf_settings_off_a_vf_line_raise():
    """A line naming VF settings that is neither a VF line nor right after
    one (a wrapped rest with a line between) is not dropped."""
    text = recorded(_WRAPPED).replace(",\nspoof", "\n    altname ib0p1\nspoof")
    with pytest.raises(ValueError, match="VF settings on a line that is not a VF line: 'spoof checking off"):
        R.parse_ip_link_vfs(text)


def test_the_twins_vf_lines_and_vfinfo_are_the_real_ones():
    """simlab's ip_vf_lines and ip_json_vfinfo (the twin's ``ip link show``
    and ``ip -j link show``) write, from the VFs read out of real iproute2
    6.1 output, the same VF lines and vfinfo_list, byte for byte."""
    from simlab.tools import formats
    text = recorded("ip-link-show-debian12-iproute2-6.1-igb-2vf.txt")
    assert formats.ip_vf_lines(R.parse_ip_link_vfs(text)) == [ln for ln in text.splitlines() if ln.startswith("    vf ")]
    data = json.loads(recorded("ip-j-link-show-debian12-iproute2-6.1-igb-2vf.txt"))
    vfs = [{k: v for k, v in vf.items() if k != "pf"} for vf in R.parse_ip_json_vfinfo(data)]
    assert formats.ip_json_vfinfo(vfs) == data[0]["vfinfo_list"]


# ---------------------------------------------------------------- ip link lists (iproute2 6.1)
# Every link of a list as ``ip -j -br`` has it; the VM node with the PF up
# (VF 0's netdev without carrier yet) and with the PF down
_BRIEF = re.compile(r"^(\S+) +(\S+) +(\S+) <([^>]*)> $")
IP_BRIEF = {  # -br text: the same state's -j -br, or the links it must hold
    "ip-br-link-show-debian12-iproute2-6.1-igb-2vf-all.txt": "ip-j-br-link-show-debian12-iproute2-6.1-igb-2vf-all.txt",
    "ip-br-link-show-up-debian12-iproute2-6.1-igb-2vf-pf-down.txt": ["lo", "enp0s3", "enp1s0v0", "enp1s0v1"],
}
IP_ONELINE = {"ip-o-link-show-debian12-iproute2-6.1-igb-2vf-all.txt": "ip-link-show-debian12-iproute2-6.1-igb-2vf-all.txt"}


def _brief_links(text):
    links = []
    for line in text.splitlines():
        m = _BRIEF.match(line)
        assert m, line
        links.append({"ifname": m[1], "operstate": m[2], "address": m[3], "flags": m[4].split(",")})
    return links


@pytest.mark.parametrize("name", sorted(IP_BRIEF))
def test_the_twins_brief_line_is_the_real_one(name):
    """simlab's ip_link_brief (the twin's ``ip -br link``) writes each link
    of real iproute2 6.1's ``-br`` output, padding and trailing blank, from
    the link as ``-j -br`` of the same state has it."""
    from simlab.tools import formats
    text = recorded(name)
    links = _brief_links(text)
    assert "".join(formats.ip_link_brief(link) + "\n" for link in links) == text
    want = IP_BRIEF[name]
    if isinstance(want, str):
        assert links == json.loads(recorded(want))
    else:
        assert [link["ifname"] for link in links] == want      # `up` leaves the PF that is down out


@pytest.mark.parametrize("name", sorted(IP_ONELINE))
def test_the_twins_oneline_is_the_real_one(name):
    """simlab's ip_oneline (the twin's ``ip -o link``) joins each link's
    lines of real ``ip link show`` (the same state) as real ``ip -o`` does."""
    from simlab.tools import formats
    links, lines = [], recorded(IP_ONELINE[name]).splitlines()
    for line in lines:
        if re.match(r"\d+: ", line):
            links.append([])
        links[-1].append(line)
    assert len(links) == 5 and "".join(formats.ip_oneline(link) + "\n" for link in links) == recorded(name)


# ---------------------------------------------------------------- ip address (iproute2 6.1)
# Real ``ip address`` output of the VM node's PF (its NetworkManager address,
# addresses added with ``ip addr add``) and of a VF without carrier
_ADDR_LINE = re.compile(r"^    inet (?P<local>[\d.]+)/(?P<prefixlen>\d+) (?:brd (?P<broadcast>[\d.]+) )?"
                        r"scope (?P<scope>\w+) (?P<flags>(?:(?:secondary|noprefixroute) )*)(?P<label>\S+)$")
IP_ADDR_TEXT = {   # text: the -j of the same state, when there is one
    "ip-addr-show-debian12-iproute2-6.1-igb-pf-secondaries.txt":
        "ip-j-addr-show-debian12-iproute2-6.1-igb-pf-secondaries.txt",
    "ip-addr-show-debian12-iproute2-6.1-igb-pf-scope-host.txt": None,
    "ip-addr-show-debian12-iproute2-6.1-igb-pf-brd-forms.txt": None,
    "ip-4-addr-show-debian12-iproute2-6.1-igbvf-no-carrier.txt":
        "ip-4-j-addr-show-debian12-iproute2-6.1-igbvf-no-carrier.txt",
}


def _addresses(text):
    """The IPv4 addresses of real ``ip addr show`` text, each with its two lines."""
    out, lines = [], text.splitlines()
    for n, line in enumerate(lines):
        if line.startswith("    inet "):
            m = _ADDR_LINE.match(line)
            assert m, line
            assert lines[n + 1] == "       valid_lft forever preferred_lft forever", lines[n + 1]
            a = m.groupdict()
            out.append(dict(local=a["local"], prefixlen=int(a["prefixlen"]), broadcast=a["broadcast"],
                            scope=a["scope"], label=a["label"], secondary="secondary" in a["flags"],
                            noprefixroute="noprefixroute" in a["flags"]))
    return out


@pytest.mark.parametrize("name", sorted(IP_ADDR_TEXT))
def test_the_twins_address_lines_are_the_real_ones(name):
    """simlab's ip_addr_info (the twin's ``ip addr show``) writes each IPv4
    address of real iproute2 6.1 output, its two lines byte for byte, and
    its JSON object as real ``-j`` has it for the same state: broadcast only
    when there is one, ``secondary`` and ``noprefixroute`` in
    ifa_flag_data's order, the label, infinite lifetimes."""
    from simlab.tools import formats
    text = recorded(name)
    addrs = _addresses(text)
    assert addrs and "".join(formats.ip_addr_info(a)[1] for a in addrs) == \
        "".join(ln + "\n" for ln in text.splitlines() if ln.startswith(("    inet ", "       valid_lft")))
    if IP_ADDR_TEXT[name]:
        data = json.loads(recorded(IP_ADDR_TEXT[name]))
        assert [formats.ip_addr_info(a)[0] for a in addrs] == data[0]["addr_info"]


IP_ADDR_FORMS = ["ip-br-addr-show-debian12-iproute2-6.1-igb-pf-secondaries.txt",
                 "ip-o-addr-show-debian12-iproute2-6.1-igb-pf-secondaries.txt"]


def test_the_twins_brief_and_oneline_addresses_are_the_real_ones():
    """``ip -br addr`` and ``ip -o addr`` of the same PF state: the brief
    line's ``A/N `` per address after the padded name and state, and one
    ``N: dev    inet ...\\       valid_lft ...`` line per address."""
    from simlab.tools import formats
    addrs = _addresses(recorded("ip-addr-show-debian12-iproute2-6.1-igb-pf-secondaries.txt"))
    assert "%-16s %-14s " % ("enp1s0", "UP") + "".join(formats.ip_addr_info(a, brief=True)[1] for a in addrs) + \
        "\n" == recorded(IP_ADDR_FORMS[0])
    assert "".join(formats.ip_addr_info(a, oneline=(3, "enp1s0"))[1] for a in addrs) == recorded(IP_ADDR_FORMS[1])


# ---------------------------------------------------------------- the fixture set
def test_every_fixture_is_tested_and_described():
    files = sorted(p.name for p in REAL.glob("*.txt"))
    assert files == sorted(set(DEVINFO) | set(DEVINFO_REFUSED) | set(SHOW_GIDS) | set(RDMA_LINK) | set(RDMA_JSON)
                           | set(IP_LINK) | set(IP_LINK_REFUSED)
                           | set(IP_BRIEF) | set(IP_ONELINE) | {IP_ONELINE[f] for f in IP_ONELINE}
                           | set(IP_ADDR_TEXT) | {j for j in IP_ADDR_TEXT.values() if j} | set(IP_ADDR_FORMS))
    readme = (REAL / "README.md").read_text()
    for f in files:
        assert "`%s`" % f in readme, f


def test_show_gids_row_of_an_unreadable_gid_is_kept_without_a_gid():
    """mlnx-tools sbin/show_gids: `cat gids/N` has no 2>/dev/null; when it
    fails the row is printed with empty columns and counted in the footer."""
    text = ("DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
            "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"
            "cat: /sys/class/infiniband/mlx5_0/ports/1/gids/4: Invalid argument\n"
            "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:0a00:0001\t10.0.0.1  \tv2\teth0\n"
            "mlx5_0\t1\t4\t\t\t\t\t\nn_gids_found=2\n")
    p = R.parse_show_gids(text)
    assert [(g["index"], g["gid"], g["version"], g["ndev"]) for g in p["gids"]] == [
        (3, "0000:0000:0000:0000:0000:ffff:0a00:0001", "v2", "eth0"), (4, None, None, None)]
    assert p["n_gids_found"] == 2 and R.roce_v2_gid_index(p) == 3


def test_the_twins_verbose_gid_lines_are_the_real_ones():
    """The twin's ibv_devinfo -v GID lines (simlab/tools/rdma.py, after
    devinfo.c: raw with ", RoCE v1", inet_ntop with ", RoCE v2") against a
    real ConnectX-5 port's (E3SM fixture), byte for byte, and read back."""
    from simlab.tools import rdma as twin
    real = recorded(_E3SM).splitlines(True)
    link_local, v4 = "fe80:0000:0000:0000:0e42:a1ff:fe2b:07a4", "0000:0000:0000:0000:0000:ffff:8cdd:3c0b"
    lines = [twin._gid_line(i, gid, kind, True) for i, (gid, kind) in enumerate(
        [(link_local, "RoCE v1"), (link_local, "RoCE v2"), (v4, "RoCE v1"), (v4, "RoCE v2")])]
    assert [line in real for line in lines] == [True] * 4
    assert [R._devinfo_gid(line.strip()) for line in lines][3] == {"index": 3, "gid": v4, "type": "RoCE v2"}
