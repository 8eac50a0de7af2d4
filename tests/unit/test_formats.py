"""The twin's renderers (simlab.tools.formats) against the collection's
parsers, against the printf layouts in host-interfaces.md, and byte for
byte against real published outputs where one exists."""

import json
import re
from pathlib import Path

import pytest

from tests.reference import SHARED, read_real_output
from simlab.tools import formats as F
from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware import mlx_tools as M
from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers as P
from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check import rdma_tools as R

pytestmark = pytest.mark.layers(4, 5, 8, 9, 15)

HOST_INTERFACES = SHARED / "reference" / "host-interfaces.md"


def _doc_block(containing):
    """The fenced code block of host-interfaces.md that contains a string."""
    if not HOST_INTERFACES.is_file():
        pytest.skip("host-interfaces.md not found")
    text = HOST_INTERFACES.read_text()
    for block in re.findall(r"```\n(.*?)```", text, flags=re.S):
        if containing in block:
            return block
    raise AssertionError("no code block with %r in host-interfaces.md" % containing)


# ---------------------------------------------------------------- mlxconfig

def _same_param_row(got, want, value_columns):
    """Parameter rows: the doc's examples indent the name one column further
    than the printf rule they quote ("%s%s     %-48s" puts it at column 8,
    as the mstflint source does); the value columns agree."""
    assert got.split() == want.split()
    assert got[:8].strip() in ("", "*", "RO", "*RO") and got[8] != " "
    for col in value_columns:
        assert got[col - 1] == " " and got[col] != " "
        assert want[col - 1] == " " and want[col] != " "


DOC_PARAMS = [
    {"name": "NUM_OF_VFS", "default": "8", "current": "16", "next": "16"},
    {"name": "SRIOV_EN", "default": "False(0)", "current": "True(1)", "next": "True(1)"},
    {"name": "LINK_TYPE_P1", "default": "ETH(2)", "current": "ETH(2)", "next": "ETH(2)"},
    {"name": "ROCE_CC_PRIO_MASK_P1", "default": "255", "current": "255", "next": "255"},
    {"name": "CNP_DSCP_P1", "default": "48", "current": "48", "next": "48"},
    {"name": "ESWITCH_HAIRPIN_DESCRIPTORS", "default": "Array[0..7]", "current": "Array[0..7]",
     "next": "Array[0..7]"},
]


def test_mlxconfig_query_matches_doc_layout():
    block = _doc_block("ESWITCH_HAIRPIN_DESCRIPTORS")
    out = F.mlxconfig_query("ConnectX7", '<board name, "N/A" if unknown>',
                            '<board description, "N/A" if unknown>', "0000:3b:00.0",
                            DOC_PARAMS, extended=True)
    rendered = [ln.rstrip() for ln in out.rstrip("\n").split("\n")]
    doc = block.rstrip("\n").split("\n")
    assert len(rendered) == len(doc)
    names = {p["name"] for p in DOC_PARAMS}
    for got, want in zip(rendered, doc):
        if any(n in want.split() for n in names):
            _same_param_row(got, want, (56, 76, 96))
        else:
            # opening, header and footer lines are identical once the doc's
            # stripped trailing blanks are accounted for
            assert got == want


def test_mlxconfig_query_exact_column_layout():
    params = [{"name": "NUM_OF_VFS", "default": "8", "current": "8", "next": "16", "read_only": False},
              {"name": "PF_NUM_OF_VF_VALID", "default": "False(0)", "current": "False(0)",
               "next": "False(0)", "read_only": True}]
    out = F.mlxconfig_query("ConnectX7", "N/A", "N/A", "0000:3b:00.0", params, extended=True)
    lines = out.split("\n")
    assert lines[4] == "Device type:        ConnectX7           "
    cfg = lines.index(next(ln for ln in lines if ln.startswith("Configurations:")))
    assert lines[cfg] == "Configurations:".ljust(56) + "Default".ljust(19) + " " + "Current".ljust(19) + " " + \
        "Next Boot".ljust(19)
    assert lines[cfg + 1] == "*" + "  " + "     " + "NUM_OF_VFS".ljust(48) + "8".ljust(19) + " " + \
        "8".ljust(19) + " " + "16".ljust(19)
    assert lines[cfg + 2] == " " + "RO" + "     " + "PF_NUM_OF_VF_VALID".ljust(48) + "False(0)".ljust(19) + \
        " " + "False(0)".ljust(19) + " " + "False(0)".ljust(19)
    assert "The '*' shows parameters with next value different from default/current value." in lines
    assert "The 'RO' shows parameters which are for read only and cannot be changed" in lines


def test_mlxconfig_query_round_trip_and_pending():
    params = [dict(p, read_only=(p["name"] == "CNP_DSCP_P1")) for p in DOC_PARAMS]
    parsed = M.parse_mlxconfig_query(F.mlxconfig_query("ConnectX7", "MCX75310AAS-NEAT", "desc; x",
                                                       "0000:3b:00.0", params, extended=True))
    assert parsed["device_type"] == "ConnectX7" and parsed["device"] == "0000:3b:00.0"
    assert parsed["name"] == "MCX75310AAS-NEAT" and parsed["description"] == "desc; x"
    assert parsed["param_order"] == [p["name"] for p in params]
    for p in params:
        got = parsed["params"][p["name"]]
        assert (got["default"], got["current"], got["next"]) == (p["default"], p["current"], p["next"])
        assert got["read_only"] == p["read_only"]
    assert parsed["params"]["SRIOV_EN"]["modified"] is True
    assert parsed["params"]["LINK_TYPE_P1"]["modified"] is False
    assert M.mlxconfig_pending(parsed) == []     # Next == Current everywhere
    params[0] = dict(params[0], next="32")
    parsed = M.parse_mlxconfig_query(F.mlxconfig_query("ConnectX7", None, None, "3b:00.0", params, True))
    assert [p["name"] for p in M.mlxconfig_pending(parsed)] == ["NUM_OF_VFS"]
    assert M.mlxconfig_pending(parsed)[0]["next_int"] == 32


def test_mlxconfig_query_next_only_round_trip():
    out = F.mlxconfig_query("ConnectX6DX", None, None, "0000:af:00.0", DOC_PARAMS, extended=False)
    assert "*" not in out.split("Configurations:")[1]
    parsed = M.parse_mlxconfig_query(out)
    assert parsed["columns"] == ["next"]
    assert parsed["name"] == "N/A"
    assert {n: p["next"] for n, p in parsed["params"].items()} == {p["name"]: p["next"] for p in DOC_PARAMS}


@pytest.mark.parametrize("kind", ["reboot", "power cycle"])
def test_mlxconfig_set_round_trip(kind):
    changes = [("SRIOV_EN", "False(0)", "True(1)"), ("NUM_OF_VFS", "0", "16")]
    out = F.mlxconfig_set(changes, reboot_kind=kind)
    assert ("Configurations:".ljust(56) + "Next Boot".ljust(19) + " " + "New".ljust(19)) in out.split("\n")
    parsed = M.parse_mlxconfig_set(out)
    assert [(c["name"], c["next"], c["new"]) for c in parsed["changes"]] == changes
    assert parsed["applied"] and not parsed["failed"]
    assert parsed["reset_required"] == kind
    assert parsed["changes"][1]["new_int"] == 16


def test_mlxconfig_set_matches_doc_row():
    block = _doc_block("Apply new Configuration?")
    out = F.mlxconfig_set([("SRIOV_EN", "False(0)", "True(1)")])
    rendered = [ln.rstrip() for ln in out.split("\n")]
    for doc_line in block.split("\n"):
        if not doc_line or doc_line == "...":
            continue
        if doc_line.split()[0] == "SRIOV_EN":
            _same_param_row(next(ln for ln in rendered if "SRIOV_EN" in ln), doc_line, (56, 76))
        else:
            assert doc_line in rendered, doc_line


# ---------------------------------------------------------------- mstflint

@pytest.mark.parametrize("relpath", [
    "mstflint/empovit-cx6lx-mstflint-q-26.33.1048.txt",
    "mstflint/schmaustech-cx7-flint-query-28.42.1000.txt",
    "mstflint/schmaustech-cx7-flint-query-28.43.1014.txt",
])
def test_mstflint_query_byte_exact_with_real(real_output, relpath):
    body = real_output(relpath)
    p = M.parse_mstflint_query(body)
    out = F.mstflint_query({
        "image_type": p["image_type"], "fw_version": p["fw_version"],
        "fw_release_date": p["fw_release_date"], "product_version": p["product_version"],
        "rom_info": p["rom_info"], "base_guid": p["base_guid"], "base_mac": p["base_mac"],
        "image_vsd": p["image_vsd"], "device_vsd": p["device_vsd"], "psid": p["psid"],
        "security_attributes": p["security_attributes"]})
    assert out == body


def test_mstflint_running_version_round_trip():
    out = F.mstflint_query({"fw_version": "28.39.1002", "fw_version_running": "28.38.1002",
                            "psid": "MT_0000000838", "base_mac": ("a088c23b506a", 16),
                            "rom_info": [{"type": "UEFI", "version": "14.32.17", "cpu": "AMD64,AARCH64"}]})
    assert "FW Version(Running):   28.38.1002\n" in out
    p = M.parse_mstflint_query(out)
    assert p["fw_version"] == "28.39.1002" and p["fw_version_running"] == "28.38.1002"
    assert p["reset_pending"] is True
    assert p["base_mac"] == {"value": "a088c23b506a", "count": 16}
    assert M.compare_fw_versions(p["fw_version_running"], p["fw_version"]) == -1


# ---------------------------------------------------------------- mlnx_qos

def test_mlnx_qos_matches_real_output(real_output):
    body = real_output("mlnx_qos/att-netarbiter-cx-dscp-pfc3.txt")
    prio_tc = {1: 0, 0: 1}
    out = F.mlnx_qos({
        "dcbx": "os", "trust": "dscp", "cable_len": 7, "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "buffer": None,
        "tcs": [{"tc": tc, "tsa": "vendor", "priorities": [prio_tc.get(tc, tc)]} for tc in range(8)],
    })
    # published with tabs expanded to 8 columns
    assert out.expandtabs(8) == body


def test_mlnx_qos_round_trip_with_buffers_and_ets():
    mapping = F.default_dscp2prio()
    mapping[3] = mapping[3] + [48, 49]      # 10 entries: wraps after 8
    mapping[6] = [d for d in mapping[6] if d not in (48, 49)]
    state = {"dcbx": "fw", "trust": "dscp", "dscp2prio": mapping, "cable_len": 40,
             "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "buffer": [0, 0, 0, 1, 0, 0, 0, 0],
             "buffer_sizes": [130944, 130944, 0, 0, 0, 0, 0, 0], "buffer_total_size": 524160,
             "tcs": [{"tc": 0, "tsa": "ets", "bw": 50, "priorities": [0, 1, 2, 4, 5, 6, 7]},
                     {"tc": 3, "tsa": "ets", "bw": 50, "ratelimit": 100.0, "priorities": [3]}]}
    out = F.mlnx_qos(state)
    assert "\tprio:3 dscp:31,30,29,28,27,26,25,24,\n\tprio:3 dscp:48,49,\n" in out
    assert "\tenabled     0   0   0   1   0   0   0   0   \n\tbuffer      0   0   0   1   0   0   0   0   \n" in out
    assert "tc: 3 ratelimit: 100.0 Gbps, tsa: ets, bw: 50%\n" in out
    p = M.parse_mlnx_qos(out)
    assert p["dcbx"] == "fw" and p["trust"] == "dscp" and p["cable_len"] == 40
    assert p["dscp2prio"] == [mapping[i] for i in range(8)]
    assert p["dscp_to_prio"][48] == 3 and p["dscp_to_prio"][26] == 3 and p["dscp_to_prio"][50] == 6
    assert p["pfc_priorities"] == [3] and p["prio2buffer"] == state["buffer"]
    assert p["buffer_sizes"] == state["buffer_sizes"] and p["buffer_total_size"] == 524160
    assert p["tcs"] == [{"tc": 0, "tsa": "ets", "bw": 50, "ratelimit_gbps": None,
                         "priorities": [0, 1, 2, 4, 5, 6, 7]},
                        {"tc": 3, "tsa": "ets", "bw": 50, "ratelimit_gbps": 100.0, "priorities": [3]}]


def test_mlnx_qos_pcp_without_buffers():
    out = F.mlnx_qos({"trust": "pcp", "pfc": [0] * 8, "buffer": None, "buffers_supported": False,
                      "tcs": [{"tc": 0, "tsa": "strict", "priorities": list(range(8))}]})
    assert out.startswith("Buffers commands are not supported on your system\n")
    assert "dscp2prio" not in out
    p = M.parse_mlnx_qos(out)
    assert p["trust"] == "pcp" and p["buffers_supported"] is False and p["pfc_priorities"] == []
    assert p["tcs"][0]["tsa"] == "strict" and p["tcs"][0]["priorities"] == list(range(8))


# ---------------------------------------------------------------- show_gids / ibv_devinfo / rdma link

def test_show_gids_byte_exact_with_real(real_output):
    body = real_output("show_gids/schmaustech-ocp-pod-sriov-vf-net1.txt")
    parsed = R.parse_show_gids(body)
    rows = [{"dev": g["dev"], "port": g["port"], "index": g["index"], "gid": g["gid"],
             "ver": g["version"], "ndev": g["ndev"]} for g in parsed["gids"]]
    assert F.show_gids(rows) == body


def test_show_gids_skips_empty_and_round_trips():
    rows = [{"dev": "mlx5_0", "port": 1, "index": 0, "gid": "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d",
             "ver": "v1", "ndev": "ens1f0np0"},
            {"dev": "mlx5_0", "port": 1, "index": 1, "gid": "0000:0000:0000:0000:0000:0000:0000:0000",
             "ver": "", "ndev": ""},
            {"dev": "mlx5_0", "port": 1, "index": 3, "gid": "0000:0000:0000:0000:0000:ffff:0a00:0001",
             "ver": "v2", "ndev": "ens1f0np0"}]
    p = R.parse_show_gids(F.show_gids(rows))
    assert p["n_gids_found"] == 2 == len(p["gids"])
    assert p["gids"][1]["ipv4"] == "10.0.0.1"
    assert R.roce_v2_gid_index(p, dev="mlx5_0") == 3


def test_ibv_devinfo_byte_exact_with_real(real_output):
    body = real_output("ibv_devinfo/elizabetht-dgx-spark-cx7-4port-roce-tabs.txt")
    devs = R.parse_ibv_devinfo(body)
    rendered = F.ibv_devinfo([{
        "hca_id": d["hca_id"], "fw_ver": d["fw_ver"], "node_guid": d["node_guid"],
        "sys_image_guid": d["sys_image_guid"], "vendor_id": int(d["vendor_id"], 16),
        "vendor_part_id": d["vendor_part_id"], "hw_ver": int(d["hw_ver"], 16), "board_id": d["board_id"],
        "ports": [{"port": p["port"], "state": p["state"], "max_mtu": p["max_mtu"],
                   "active_mtu": p["active_mtu"], "sm_lid": p["sm_lid"], "port_lid": p["port_lid"],
                   "port_lmc": int(p["port_lmc"], 16), "link_layer": p["link_layer"]} for p in d["ports"]],
    } for d in devs])
    assert rendered == body


def test_rdma_link_round_trip():
    rows = [{"dev": "mlx5_0", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP", "netdev": "ens1f0np0"},
            {"dev": "ibp21s0f0", "port": 1, "subnet_prefix": "fe80:0000:0000:0000", "lid": 5, "sm_lid": 1,
             "lmc": 0, "state": "DOWN", "physical_state": "POLLING"}]
    out = F.rdma_link(rows)
    # rdma/link.c prints every pair as "key %s " and then the newline
    assert out.split("\n")[0] == "link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1f0np0 "
    assert out.split("\n")[1] == ("link ibp21s0f0/1 subnet_prefix fe80:0000:0000:0000 lid 5 sm_lid 1 lmc 0 "
                                  "state DOWN physical_state POLLING ")
    got = R.parse_rdma_link(out)
    assert got[0] == dict(rows[0])
    assert got[1]["lid"] == 5 and got[1]["state"] == "DOWN" and got[1]["netdev"] is None


# ---------------------------------------------------------------- ip link VFs

VFS = [
    {"vf": 0, "mac": "02:00:00:00:00:01", "vlan": 100, "qos": 3, "spoofchk": False, "trust": True},
    {"vf": 1, "mac": "02:00:00:00:00:02", "max_tx_rate": 10000, "min_tx_rate": 1000, "link_state": "enable"},
    {"vf": 2, "mac": "00:00:00:00:00:00", "vlan": 7, "vlan_proto": "802.1ad", "spoofchk": True,
     "node_guid": "22:44:33:00:33:11:00:33", "port_guid": "10:21:33:12:00:11:22:10",
     "link_state": "disable", "query_rss": True},
]


def test_ip_vf_line_matches_doc_example():
    block = _doc_block("vf 0     link/ether")
    line = F.ip_vf_lines([VFS[0]])[0]
    assert line == block.strip("\n")


def test_ip_vf_text_and_json_agree():
    text = "2: ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000\n" + "\n".join(F.ip_vf_lines(VFS)) + "\n"
    from_text = R.parse_ip_link_vfs(text)
    doc = [{"ifindex": 2, "ifname": "ens1f0np0", "vfinfo_list": F.ip_json_vfinfo(VFS)}]
    from_json = R.parse_ip_json_vfinfo(json.dumps(doc))
    assert len(from_text) == 3
    for t, j in zip(from_text, from_json):
        assert t["pf"] == j["pf"] == "ens1f0np0"
        assert t == j
    assert from_text[0]["vlan"] == 100 and from_text[0]["qos"] == 3 and from_text[0]["trust"] is True
    assert from_text[1]["max_tx_rate"] == 10000 and from_text[1]["spoofchk"] is True
    assert from_text[2]["vlan_proto"] == "802.1ad" and from_text[2]["node_guid"] == "22:44:33:00:33:11:00:33"


# ---------------------------------------------------------------- ib_write_bw

DOC_PERF_HEADER = {"device": "mlx5_0", "num_qps": 1, "mtu": 4096, "link_type": "Ethernet", "gid_index": 3,
                   "cq_moderation": 1}


def test_ib_write_bw_header_matches_doc():
    block = _doc_block("RDMA_Write BW Test")
    doc_lines = block.split("\n")
    out_lines = F.ib_write_bw(DOC_PERF_HEADER, []).split("\n")
    # title through the first closing dashed line
    end = doc_lines.index(F.PERFTEST_DASHES, 1)
    assert out_lines[:end + 1] == doc_lines[:end + 1]
    assert " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]" in out_lines


def test_ib_write_bw_row_matches_real_server_row(real_output):
    body = real_output("perftest/schmaustech-write-bw-server-cuda-16qp-roce-gbits.txt")
    real_row = next(ln for ln in body.split("\n") if ln.startswith(" 65536"))
    out = F.ib_write_bw({"device": "mlx5_1"}, [{"bytes": 65536, "iterations": 10384867, "bw_peak": 0.0,
                                                "bw_average": 181.46, "msg_rate": 0.346100}])
    assert real_row in out.split("\n")


@pytest.mark.parametrize("gbits", [True, False])
def test_ib_write_bw_round_trip(gbits):
    rows = [{"bytes": 2 ** k, "iterations": 5000, "bw_peak": 10.0 * k, "bw_average": 9.5 * k,
             "msg_rate": 1.0 / k} for k in range(1, 24)]
    header = dict(DOC_PERF_HEADER, num_qps=4, rdma_cm=True,
                  local=[{"qpn": 0x108 + i, "psn": 0x1a2b3c, "gid": "00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:01"}
                         for i in range(4)],
                  warnings=["WARNING: BW peak won't be measured in this run."])
    p = P.parse_ib_write_bw(F.ib_write_bw(header, rows, gbits=gbits))
    assert p["device"] == "mlx5_0" and p["num_qps"] == 4 and p["gid_index"] == 3 and p["rdma_cm"] is True
    assert p["units"] == ("Gb/sec" if gbits else "MiB/sec") and p["complete"]
    assert [(r["bytes"], r["bw_average"]) for r in p["rows"]] == [(r["bytes"], round(r["bw_average"], 2))
                                                                 for r in rows]
    assert p["last"]["bytes"] == 2 ** 23


def test_ib_write_bw_run_infinitely_has_no_closing_line():
    rows = [{"bytes": 65536, "iterations": 927940, "bw_peak": 0.0, "bw_average": 97.28, "msg_rate": 0.185548}] * 3
    p = P.parse_ib_write_bw(F.ib_write_bw({"device": "roceP2p1s0f0"}, rows, closed=False))
    assert p["complete"] is False and len(p["rows"]) == 3 and p["gid_index"] is None


# ---------------------------------------------------------------- nccl-tests

def test_nccl_rows_consistent():
    rows = F.nccl_rows([8, 1 << 20, 1 << 34], busbw_gbs=360.0, nranks=16, latency_us=30.0)
    for r in rows:
        for h in ("oop", "ip"):
            x = r[h]
            assert x["busbw"] == pytest.approx(x["algbw"] * 2 * 15 / 16)
            assert x["algbw"] == pytest.approx(r["size"] / (x["time_us"] * 1e3))
    assert rows[0]["count"] == 2
    assert rows[-1]["oop"]["busbw"] == pytest.approx(360.0, rel=0.01)
    assert rows[0]["oop"]["busbw"] < 1.0


def test_nccl_layout_matches_doc_and_real_rows(real_output):
    block = _doc_block("# nccl-tests version 2.19.6")
    devices = [{"rank": 0, "group": 0, "pid": 12345, "host": "node-a", "device": 0, "bus_id": "0000:18:00",
                "gpu": "NVIDIA H100 80GB HBM3"},
               {"rank": 1, "group": 0, "pid": 12346, "host": "node-a", "device": 1, "bus_id": "0000:2a:00",
                "gpu": "NVIDIA H100 80GB HBM3"}]
    rows = [{"size": 8, "count": 2, "type": "float", "redop": "sum", "root": -1,
             "oop": {"time_us": 45.12, "algbw": 0.0, "busbw": 0.0, "wrong": 0},
             "ip": {"time_us": 44.87, "algbw": 0.0, "busbw": 0.0, "wrong": 0}},
            {"size": 8589934592, "count": 2147483648, "type": "float", "redop": "sum", "root": -1,
             "oop": {"time_us": 45210.3, "algbw": 190.00, "busbw": 356.25, "wrong": 0},
             "ip": {"time_us": 45198.1, "algbw": 190.05, "busbw": 356.34, "wrong": 0}}]
    out = F.all_reduce_perf({"devices": devices, "max_bytes": 8589934592, "step": "2(factor)"}, rows,
                            avg_busbw=123.456)
    out_lines = out.split("\n")
    doc_lines = [ln for ln in block.split("\n") if ln and ln != "..."]
    assert [ln for ln in out_lines if ln] == doc_lines
    # rows of a real current-format run, re-rendered from the parsed figures
    body = real_output("nccl_tests/oci-slurm-allreduce-2node-a100-nccltests2.17.9.txt")
    real_rows = [ln for ln in body.split("\n") if ln.startswith("  10")]
    parsed = P.parse_all_reduce_perf(body)
    rendered = F.all_reduce_perf({"nccl_version": "2.29.3+cuda13.1"}, parsed["rows"], nranks=16).split("\n")
    for ln in real_rows:
        assert ln in rendered


def test_nccl_round_trip_and_gate():
    sizes = [1 << k for k in range(3, 35)]
    rows = F.nccl_rows(sizes, busbw_gbs=370.0, nranks=16, latency_us=25.0)
    lines = F.nccl_net_info_lines("node-a", 4242, "IB", devices=["mlx5_%d" % i for i in range(8)])
    text = F.all_reduce_perf({"nccl_version": "2.27.3+cuda12.9"}, rows, transport_lines=lines, nranks=16)
    p = P.parse_all_reduce_perf(text)
    assert len(p["rows"]) == len(sizes) and p["nranks"] == 16 and p["transport"] == "IB"
    assert p["nccl_tests_version"] == "2.19.6" and p["nccl_version"] == "2.27.3"
    assert [d["device"] for d in p["ib_devices"]] == ["mlx5_%d" % i for i in range(8)]
    assert p["avg_busbw"] == pytest.approx(F.nccl_avg_busbw(rows), rel=1e-5)
    assert p["largest"]["size"] == 1 << 34
    assert p["largest"]["oop"]["busbw"] == pytest.approx(rows[-1]["oop"]["busbw"], abs=0.006)
    expected = P.expected_busbw_gbs(400, 8)
    assert P.nccl_gate(p, expected)["passed"] is True
    low = P.parse_all_reduce_perf(F.all_reduce_perf({}, F.nccl_rows(sizes, 200.0, 16), nranks=16))
    g = P.nccl_gate(low, expected)
    assert g["passed"] is False and "below" in g["reason"] and g["busbw"] == pytest.approx(200.0, abs=0.01)


def test_nccl_gate_socket_and_wrong_from_twin():
    rows = F.nccl_rows([1 << 30], busbw_gbs=400.0, nranks=16)
    sock = F.all_reduce_perf({}, rows, nranks=16,
                             transport_lines=F.nccl_net_info_lines("node-a", 1, "Socket"))
    g = P.nccl_gate(P.parse_all_reduce_perf(sock), 50.0)
    assert g["passed"] is False and "socket" in g["reason"].lower()
    bad = F.all_reduce_perf({}, F.nccl_rows([1 << 30], 400.0, 16, wrong=12), nranks=16, oob_errors=12)
    p = P.parse_all_reduce_perf(bad)
    assert p["rows"][0]["oop"]["wrong"] == 12 and p["out_of_bounds"] == {"count": 12, "status": "FAILED"}
    g = P.nccl_gate(p, 50.0)
    assert g["passed"] is False and "wrong" in g["reason"]
    na = P.parse_all_reduce_perf(F.all_reduce_perf({}, F.nccl_rows([1 << 30], 400.0, 16, wrong=None)))
    assert na["rows"][0]["ip"]["wrong"] is None and P.nccl_gate(na, 50.0)["passed"] is True


# ------------------------------------------- fidelity to the tools' sources

def test_mlxconfig_classic_layout_byte_exact_with_real_mft_4_30(real_output):
    """MFT <= 4.35 layout: the egrep'd ConnectX-7 capture (MFT 4.30) line by
    line; its last row was trimmed when published, so it is compared
    without trailing blanks."""
    body = real_output("mlxconfig/schmaustech-cx7-query-egrep-sriov.txt").split("\n")
    desc = body[2][len("Description:"):].strip()
    out = F.mlxconfig_query("ConnectX7", "MCX715105AS-WEAT_Ax", desc, "37:00.0",
                            [{"name": "NUM_OF_VFS", "next": "8"}, {"name": "SRIOV_EN", "next": "True(1)"},
                             {"name": "LINK_TYPE_P1", "next": "ETH(2)"}], extended=False, layout="classic")
    keep = ("Device type:", "Name:", "Description:", "Configurations:", "NUM_OF_VFS", "SRIOV_EN", "LINK_TYPE_P1")
    rendered = [ln for ln in out.split("\n") if ln.strip().startswith(keep)]
    assert rendered[:6] == body[:6]
    assert rendered[6].rstrip() == body[6].rstrip()
    assert M.parse_mlxconfig_query(out)["params"]["SRIOV_EN"]["next_int"] == 1


def test_mlxconfig_classic_extended_and_set_layout():
    params = [{"name": "NUM_OF_VFS", "default": "8", "current": "8", "next": "16"},
              {"name": "VF_VPD_ENABLE", "default": "A_VALUE_OF_TWENTY_CH", "current": "x", "next": "x",
               "read_only": True}]
    out = F.mlxconfig_query("ConnectX7", None, None, "0000:3b:00.0", params, extended=True, layout="classic")
    lines = out.split("\n")
    cfg = lines.index(next(ln for ln in lines if ln.startswith("Configurations:")))
    assert lines[cfg] == "Configurations:".ljust(20) + "Default".rjust(44) + "Current".rjust(20) + "Next Boot".rjust(18)
    # printf("%-20s") returns >= 20, so PRINT_SPACE_IF_NEEDED always adds
    # the separating space: value columns start 21 apart
    assert lines[cfg + 1] == "*" + "  " + "     " + "NUM_OF_VFS".ljust(44) + "8".ljust(20) + " " + \
        "8".ljust(20) + " " + "16".ljust(20)
    assert lines[cfg + 2] == "*RO     " + "VF_VPD_ENABLE".ljust(44) + "A_VALUE_OF_TWENTY_CH" + " " + \
        "x".ljust(20) + " " + "x".ljust(20)
    parsed = M.parse_mlxconfig_query(out)
    assert parsed["params"]["VF_VPD_ENABLE"]["default"] == "A_VALUE_OF_TWENTY_CH"
    assert parsed["params"]["VF_VPD_ENABLE"]["read_only"] is True
    assert [p["name"] for p in M.mlxconfig_pending(parsed)] == ["NUM_OF_VFS"]
    out = F.mlxconfig_set([("SRIOV_EN", "False(0)", "True(1)")], layout="classic")
    assert "Configurations:".ljust(20) + "Next Boot".rjust(46) + "       New" in out.split("\n")
    assert " " * 8 + "SRIOV_EN".ljust(44) + "False(0)".ljust(20) + " " + "True(1)".ljust(20) in out.split("\n")
    assert M.parse_mlxconfig_set(out)["changes"][0]["new_int"] == 1
    with pytest.raises(ValueError):
        F.mlxconfig_query("ConnectX7", None, None, "x", params, layout="mft-9")


def test_the_twins_mlxconfig_set_is_a_real_mft_4_26_run_byte_for_byte():
    """The twin's 20-wide set layout held to a real ``mlxconfig -y -d c2:00.0 set`` of MFT 4.26.1 on a
    ConnectX-6 (tests/unit/fixtures/mlx_tools_real/README.md names its source): the same device and changes
    give the same bytes, the opening, header, rows with their trailing spaces, prompt and reboot line."""
    real = (Path(__file__).parent / "fixtures" / "mlx_tools_real"
            / "mlxconfig-set-maas2-cx6-mft4261-boot-options-part.txt").read_text()
    twin = F.mlxconfig_set(
        [("BOOT_VLAN", "1", "0"), ("BOOT_LACP_DIS", "True(1)", "True(1)"), ("BOOT_VLAN_EN", "False(0)", "False(0)"),
         ("BOOT_UNDI_NETWORK_WAIT", "0", "30")],
        device_type="ConnectX6", name="MCX653106A-HDA_Ax", device="c2:00.0", layout="classic",
        description="ConnectX-6 VPI adapter card; HDR IB (200Gb/s) and 200GbE; dual-port QSFP56; PCIe4.0 x16; "
                    "tall bracket; ROHS R6")
    assert twin.splitlines() == real.splitlines() and twin == real


def test_mlnx_qos_buffer_line_as_printed_by_the_tool():
    state = {"trust": "pcp", "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "buffer": [0, 0, 0, 1, 0, 0, 0, 0],
             "buffer_sizes": [130944, 130944, 0, 0, 0, 0, 0, 0], "buffer_total_size": 524160}
    lines = F.mlnx_qos(state).split("\n")
    assert "Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=524160" in lines
    assert "\tbuffer      0   0   0   1   0   0   0   0   " in lines
    p = M.parse_mlnx_qos("\n".join(lines))
    assert p["buffer_total_size"] == 524160 and p["prio2buffer"] == state["buffer"]


def test_ip_vf_rate_fields_in_iproute2_order_and_json():
    vf = {"vf": 1, "mac": "02:00:00:00:00:02", "max_tx_rate": 10000, "min_tx_rate": 1000, "link_state": "enable"}
    assert F.ip_vf_lines([vf]) == [
        "    vf 1     link/ether 02:00:00:00:00:02 brd ff:ff:ff:ff:ff:ff, tx rate 10000 (Mbps), "
        "max_tx_rate 10000Mbps, min_tx_rate 1000Mbps, spoof checking on, link-state enable, trust off, "
        "query_rss off"]
    js = F.ip_json_vfinfo([vf])[0]
    assert list(js)[:6] == ["vf", "link_type", "address", "broadcast", "vlan_list", "tx_rate"]
    assert js["tx_rate"] == 10000 and js["rate"] == {"max_tx": 10000, "min_tx": 1000}
    text = R.parse_ip_link_vfs("2: ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000\n"
                               + "\n".join(F.ip_vf_lines([vf])))[0]
    from_json = R.parse_ip_json_vfinfo([{"ifname": "ens1f0np0", "vfinfo_list": [js]}])[0]
    assert text == from_json
    assert (text["max_tx_rate"], text["min_tx_rate"], text["link_state"]) == (10000, 1000, "enable")
    assert "tx_rate" not in F.ip_json_vfinfo([{"vf": 0, "mac": "02:00:00:00:00:01"}])[0]


def test_ib_write_bw_server_rdma_cm_lines_match_real_server(real_output):
    real = real_output("perftest/schmaustech-write-bw-server-cuda-16qp-roce-gbits.txt").split("\n")
    out = F.ib_write_bw({"device": "mlx5_1", "num_qps": 16, "machine": "server", "rdma_cm": True, "tos": 41,
                         "mtu": 1024, "gid_index": 3,
                         "local": [{"qpn": 0xc6, "psn": 0xb1023e, "gid": "00:00:00:00:00:00:00:00:00:00:255:255:10:06:145:32"}],
                         "remote": [{"qpn": 0xc6, "psn": 0x2986aa, "gid": "00:00:00:00:00:00:00:00:00:00:255:255:10:06:145:33"}]},
                        [{"bytes": 65536, "iterations": 10384867, "bw_peak": 0.0, "bw_average": 181.46,
                          "msg_rate": 0.346100}]).split("\n")
    i = out.index(" Data ex. method : rdma_cm \tTOS    : 41")
    j = real.index(" Data ex. method : rdma_cm \tTOS    : 41")
    assert out[i:i + 5] == real[j:j + 5]      # dashes, the two waiting lines, dashes
    assert not any(ln.startswith(" TX depth") for ln in out)
    assert not any(ln.startswith(" TX depth") for ln in real)
    p = P.parse_ib_write_bw("\n".join(out))
    assert p["rdma_cm"] is True and p["num_qps"] == 16 and p["rows"][0]["bw_average"] == 181.46


def test_ib_write_bw_address_lines_use_c_alternate_hex():
    out = F.ib_write_bw({"device": "mlx5_0", "link_type": "IB",
                         "local": [{"lid": 5, "qpn": 0x137, "psn": 0x3c5d65, "rkey": 0x370e,
                                    "vaddr": 0x7FF44BF1D000, "gid": "00"}],
                         "remote": [{"lid": 0, "qpn": 0x136, "psn": 0, "rkey": 0x2c23,
                                     "vaddr": 0x7FD3D83CB000, "gid": "00"}]},
                        [], gbits=True)
    assert " local address: LID 0x05 QPN 0x0137 PSN 0x3c5d65 RKey 0x00370e VAddr 0x007ff44bf1d000" in out
    assert " remote address: LID 0000 QPN 0x0136 PSN 000000 RKey 0x002c23 VAddr 0x007fd3d83cb000" in out


def test_nccl_na_column_and_wide_numbers_as_nccl_tests_prints_them(real_output):
    real = real_output("nccl_tests/empovit-allreduce-v100-nocheck-wrong-NA.txt")
    real_row = next(ln for ln in real.split("\n") if ln.strip().startswith("33554432"))
    row = {"size": 33554432, "count": 8388608, "type": "float", "redop": "sum", "root": -1,
           "oop": {"time_us": 5963.4, "algbw": 5.63, "busbw": 5.63, "wrong": None},
           "ip": {"time_us": 5837.9, "algbw": 5.75, "busbw": 5.75, "wrong": None}}
    rendered = F.all_reduce_perf({"nranks": 2}, [row], nranks=2).split("\n")
    got = next(ln for ln in rendered if ln.strip().startswith("33554432"))
    # "  %7s  %6s  %6s    N/A": four blanks before N/A, as in the published row
    assert got.endswith("   5.75    5.75    N/A") and real_row.endswith("   5.75    5.75    N/A")
    assert "   5.63    5.63    N/A  " in got and "   5.63    5.63    N/A  " in real_row
    assert P.parse_all_reduce_perf("\n".join(rendered))["rows"][0]["ip"]["wrong"] is None
    # getFloatStr falls back to %7.1e / %6.0e when %.0f does not fit
    big = dict(row, oop={"time_us": 12345678.0, "algbw": 1234567.0, "busbw": 0.5, "wrong": 0})
    got = next(ln for ln in F.all_reduce_perf({}, [big], nranks=2).split("\n") if ln.strip().startswith("33554432"))
    assert "  1.2e+07   1e+06    0.50       0  " in got
