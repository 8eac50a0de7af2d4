"""Layer 15's parsing and gate: every nccl-tests output in real-outputs (the
figures INDEX.md lists), the exact format of host-interfaces.md 5.1, the
older releases' variants, the NET/IB vs NET/Socket lines; the gate's
arithmetic (largest size's busbw against link speed / 8 x NICs x
efficiency) and its reasons; the run plan (NCCL environment from the intent
and nic_facts) and the doctor's verdict."""

import re

import pytest
from ansible.errors import AnsibleFilterError

from tests.reference import REAL_OUTPUTS, SHARED
from ansible_collections.gpufabric.stack.plugins.filter import nccl as F
from ansible_collections.gpufabric.stack.plugins.plugin_utils.nccl_validate import nccl_validate as NV
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import nccl_validate as C15
from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers as P

pytestmark = pytest.mark.layers(15)

# file -> (rows, avg busbw, largest size, oop busbw, ip busbw, format, redop column, root column, #wrong of the largest)
REAL = {
    "deepops-allreduce-2node-sriov-roce-v100.txt": (29, 7.76739, 2147483648, 22.92, 22.85, "error", True, False, None),
    "deepops-allreduce-4node-dgxa100-ib.txt": (13, 113.289, 4294967296, 191.05, 191.56, "error", True, False, None),
    "deepops-allreduce-2node-dgxa100-sriov-ib-k8s.txt": (30, 53.7098, 4294967296, 188.53, 188.70, "error", True, False,
                                                         None),
    "oci-oke-allreduce-2node-a100-sriov-vf-8B-8G.txt": (31, 66.4834, 8589934592, 237.94, 237.52, "wrong", True, True, 0),
    "oci-oke-allreduce-2node-a100-nccl2.14-sriov-vf.txt": (2, 175.531, 10737418240, 180.06, 180.08, "wrong", True, True,
                                                           0),
    "oci-oke-allreduce-2node-a100-nccl2.25-kueue.txt": (3, 188.648, 4294967296, 190.02, 190.09, "wrong", True, True, 0),
    "oci-slurm-allreduce-2node-a100-nccltests2.17.9.txt": (2, 189.005, 10737418240, 191.22, 191.22, "wrong", True, True,
                                                           0),
    "schmaustech-allreduce-2node-2xl40s-sriov-roce.txt": (31, 4.74277, 8589934592, 9.63, 9.62, "wrong", True, True, 0),
    "schmaustech-allreduce-2node-8xh200-16G.txt": (32, 36.2205, 17179869184, 92.33, 92.35, "wrong", True, True, 0),
    "empovit-allreduce-v100-nocheck-wrong-NA.txt": (1, 5.68719, 33554432, 5.63, 5.75, "wrong", True, True, None),
}


def test_every_real_output_is_covered():
    files = sorted(p.name for p in (REAL_OUTPUTS / "nccl_tests").glob("*.txt"))
    assert files and files == sorted(REAL)


def _data_lines(body):
    """The table rows as printed: lines whose first two fields are integers."""
    return [ln for ln in body.replace("\r", "").split("\n")
            if not ln.lstrip().startswith("#") and re.match(r"^\s*\d+\s+\d+\s", ln)]


@pytest.mark.parametrize("fname", sorted(REAL))
def test_real_output_every_row(real_output, fname):
    nrows, avg, size, oop, ip, fmt, has_redop, has_root, wrong = REAL[fname]
    body = real_output("nccl_tests/" + fname)
    p = F.nccl_parse(body)
    assert len(p["rows"]) == nrows == len(_data_lines(body))
    # every row, every field, against the printed text split on whitespace
    for row, line in zip(p["rows"], _data_lines(body)):
        t = line.split()
        assert (row["size"], row["count"], row["type"]) == (int(t[0]), int(t[1]), t[2])
        assert row["redop"] == (t[3] if has_redop else None)
        assert row["root"] == (int(t[4]) if has_root else None)
        for half, vals in (("oop", t[-8:-4]), ("ip", t[-4:])):
            h = row[half]
            assert (h["time_us"], h["algbw"], h["busbw"]) == tuple(float(v) for v in vals[:3])
            if vals[3] == "N/A":
                assert h["wrong"] is None and h["error"] is None
            elif fmt == "error":
                assert h["error"] == float(vals[3]) and h["wrong"] is None
            else:
                assert h["wrong"] == int(vals[3]) and h["error"] is None
    assert p["format"] == fmt
    assert p["avg_busbw"] == avg and p["complete"] is True
    assert p["out_of_bounds"] == {"count": 0, "status": "OK"}
    assert p["largest"]["size"] == size
    assert (p["largest"]["oop"]["busbw"], p["largest"]["ip"]["busbw"]) == (oop, ip)
    assert p["largest"]["oop"]["wrong"] == wrong
    # none of these logs has NCCL_DEBUG=INFO network lines
    assert p["transport"] is None and p["net_lines"] == [] and p["transports_by_host"] == {}


def test_real_output_headers(real_output):
    p = F.nccl_parse(real_output("nccl_tests/oci-slurm-allreduce-2node-a100-nccltests2.17.9.txt"))
    assert (p["nccl_tests_version"], p["collective"], p["concluded"]) == ("2.17.9", "all_reduce_perf", True)
    assert p["nccl_version"] == "2.29.3" and p["params"]["iters"] == 100
    assert (p["params"]["warmup_iters"], p["params"]["agg_iters"], p["params"]["step"]) == (1, 1, "9663676416(bytes)")
    p = F.nccl_parse(real_output("nccl_tests/schmaustech-allreduce-2node-8xh200-16G.txt"))
    assert p["collective"] is None and p["nccl_tests_version"] is None and p["nranks"] == 16
    assert p["params"]["nGpus"] == 8 and p["params"]["maxBytes"] == 17179869184


def host_interfaces_sample():
    """The all_reduce_perf block of host-interfaces.md 5.1, as printed there."""
    text = (SHARED / "reference" / "host-interfaces.md").read_text(encoding="utf-8")
    section = text[text.index("### 5.1 nccl-tests output format"):]
    return section[section.index("```\n") + 4:section.index("\n```", section.index("```\n") + 4)]


def test_host_interfaces_format():
    sample = host_interfaces_sample()
    p = F.nccl_parse(sample)
    assert p["nccl_tests_version"] == "2.19.6" and p["collective"] == "all_reduce_perf" and p["concluded"]
    assert p["params"]["minBytes"] == 8 and p["params"]["maxBytes"] == 8589934592 and p["params"]["unalign"] == 0
    assert [r["rank"] for r in p["ranks"]] == [0, 1] and p["ranks"][0]["host"] == "node-a"
    assert p["ranks"][1]["bus_id"] == "0000:2a:00" and p["ranks"][1]["gpu"] == "NVIDIA H100 80GB HBM3"
    assert [r["size"] for r in p["rows"]] == [8, 8589934592]
    big = p["rows"][-1]
    assert (big["count"], big["type"], big["redop"], big["root"]) == (2147483648, "float", "sum", -1)
    assert big["oop"] == {"time_us": 45210.3, "algbw": 190.0, "busbw": 356.25, "wrong": 0, "error": None}
    assert big["ip"] == {"time_us": 45198.1, "algbw": 190.05, "busbw": 356.34, "wrong": 0, "error": None}
    assert p["out_of_bounds"] == {"count": 0, "status": "OK"}
    assert p["avg_busbw"] == 123.456 and p["avg_status"] is None and p["complete"]


def test_older_and_newer_variants(real_output):
    # 2017: the footer lines began with a space instead of '#'
    body = real_output("nccl_tests/deepops-allreduce-4node-dgxa100-ib.txt")
    old = body.replace("# Out of bounds values", " Out of bounds values").replace("# Avg bus bandwidth", " Avg bus bandwidth")
    assert " Avg bus bandwidth    : 113.289" in old
    p = F.nccl_parse(old)
    assert p["avg_busbw"] == 113.289 and p["out_of_bounds"]["status"] == "OK" and len(p["rows"]) == 13
    # NCCL_TESTS_MIN_BW: the footer carries OK/FAILED
    body = real_output("nccl_tests/oci-oke-allreduce-2node-a100-nccl2.25-kueue.txt")
    ok = F.nccl_parse(body.replace("188.648 ", "188.648 OK"))
    assert (ok["avg_busbw"], ok["avg_status"]) == (188.648, "OK")
    # numbers printed %e when they do not fit (getFloatStr)
    wide = body.replace("   42381  101.34", " 4.2e+04  101.34")
    assert F.nccl_parse(wide)["largest"]["oop"]["time_us"] == 42000.0


def _twin_log(transport, hosts=("node01", "node02"), wrong=0):
    """Output in the twin's format (simlab.tools.formats), NCCL_DEBUG=INFO.
    ``transport`` is the network of every host, or ``{host: network}``."""
    from simlab.tools import formats
    rows = formats.nccl_rows([1 << 30, 1 << 31, 1 << 32], 90.5, 16, wrong=wrong)
    lines = []
    for i, h in enumerate(hosts):
        if (transport.get(h, "IB") if isinstance(transport, dict) else transport) == "IB":
            lines += formats.nccl_net_info_lines(h, 100 + i, "IB", ["rocep59s0f0", "rocep134s0f0"],
                                                 "enp59s0f0np0:172.30.0.%d<0>" % (i + 1))
        else:
            lines += formats.nccl_net_info_lines(h, 100 + i, "Socket", oob="enp59s0f0np0:172.30.0.%d<0>" % (i + 1))
    return formats.all_reduce_perf({"ngpus": 1, "min_bytes": 1 << 30, "max_bytes": 1 << 32}, rows,
                                   transport_lines=lines, nranks=16)


def test_net_ib_and_net_socket_lines():
    ib = F.nccl_parse(_twin_log("IB"))
    assert ib["transport"] == "IB" and ib["transports_by_host"] == {"node01": ["IB"], "node02": ["IB"]}
    assert ib["ib_devices"] == [{"device": "rocep59s0f0", "port": 1, "link": "RoCE"},
                                {"device": "rocep134s0f0", "port": 1, "link": "RoCE"}]
    assert len(ib["net_lines"]) == 2 and ib["net_lines"][0].startswith("node01:100:100 [0] NCCL INFO NET/IB : Using")
    sock = F.nccl_parse(_twin_log("Socket"))
    assert sock["transport"] == "Socket" and sock["transports_by_host"]["node02"] == ["Socket"]
    assert all("NET/Socket : Using" in ln for ln in sock["net_lines"])
    # one node on sockets, the other on IB: mixed, and each host's own lines
    m = F.nccl_parse(_twin_log({"node02": "Socket"}))
    assert m["transport"] == "mixed" and m["transports_by_host"] == {"node01": ["IB"], "node02": ["Socket"]}
    assert m["net_lines_by_host"]["node02"] == [
        "node02:101:101 [0] NCCL INFO NET/IB : No device found.",
        "node02:101:101 [0] NCCL INFO NET/Socket : Using [0]enp59s0f0np0:172.30.0.2<0>",
        "node02:101:101 [0] NCCL INFO Using network Socket"]
    assert [ln.split(" NCCL INFO ")[1] for ln in m["net_lines_by_host"]["node01"]] == [
        "NET/IB : Using [0]rocep59s0f0:1/RoCE [1]rocep134s0f0:1/RoCE [RO]; OOB enp59s0f0np0:172.30.0.1<0>",
        "Using network IB"]
    # without the 'Using network' lines the NET/ lines alone say so
    bare = "\n".join(ln for ln in _twin_log({"node02": "Socket"}).split("\n") if "Using network" not in ln)
    assert F.nccl_parse(bare)["transport"] == "mixed"
    # the same network everywhere, named by 'Using network' only
    assert F.nccl_parse(_twin_log("IB"))["transport"] == "IB"
    # real NCCL phrasing of the ring set-up
    via = F.nccl_parse(_twin_log("IB") + "gpu-b:9:9 [3] NCCL INFO Channel 00/0 : 7[3] -> 8[0] [send] via NET/IB/0/GDRDMA\n")
    assert via["transports_by_host"]["gpu-b"] == ["IB"]


def test_warnings_and_failures_are_kept():
    text = ("# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 "
            "agg iters: 1 validation: 1 graph: 0\n"
            "node01:1:2 [0] NCCL INFO NET/IB : Using [0]rocep59s0f0:1/RoCE [RO]; OOB enp59s0f0np0:172.30.0.1<0>\n"
            "node01:1:2 [0] NCCL WARN NET/IB : Got completion from peer with status=12(transport retry counter "
            "exceeded) opcode=1 len=0 vendor err 129 (Send)\n"
            "node01: Test NCCL failure common.cu:1279 'remote process exited or there was a network error / '\n")
    p = F.nccl_parse(text)
    assert p["rows"] == [] and p["complete"] is False and p["transport"] == "IB"
    assert p["nccl_warnings"][0].startswith("node01: NET/IB : Got completion from peer with status=12")
    assert p["test_failures"] == ["node01: Test NCCL failure common.cu:1279 'remote process exited or there was "
                                  "a network error / '"]
    g = F.nccl_gate(text, 50.0, 0.85, exit_code=1)
    assert g["kind"] == "no_rows" and "transport retry counter exceeded" in g["reason"]
    # NCCL prints the source file and line before 'NCCL WARN'
    real = text + "node02:16899:16961 [0] misc/socket.cc:441 NCCL WARN socketFinalizeAccept: wrong type 4 != 3\n"
    assert F.nccl_parse(real)["nccl_warnings"][-1] == "node02: socketFinalizeAccept: wrong type 4 != 3"


def test_parse_rejects_other_text():
    with pytest.raises(AnsibleFilterError, match="nccl_parse"):
        F.nccl_parse("bash: mpirun: command not found\n")


# --------------------------------------------------------------------------
# gate arithmetic
# --------------------------------------------------------------------------

@pytest.mark.parametrize("speed,nics,expected", [(400, 8, 400.0), (400, 2, 100.0), (200, 1, 25.0), (100, 2, 25.0)])
def test_expected_busbw(speed, nics, expected):
    assert F.nccl_expected_busbw(speed, nics) == expected


def test_gate_is_on_the_largest_size_not_the_average(real_output):
    """DGX-1, 2x 100GbE per node: 25 GB/s ideal, 21.25 at 0.85.  The largest
    size reached 22.92/22.85; the average over all sizes is 7.77, which
    would fail a gate that read it."""
    p = F.nccl_parse(real_output("nccl_tests/deepops-allreduce-2node-sriov-roce-v100.txt"))
    expected = F.nccl_expected_busbw(100, 2)
    g = F.nccl_gate(p, expected)
    assert g["passed"] and g["kind"] == "pass"
    assert g["largest_size"] == 2147483648 and g["busbw"] == 22.85 == min(g["busbw_oop"], g["busbw_ip"])
    assert g["threshold"] == pytest.approx(expected * 0.85) and p["avg_busbw"] < g["threshold"]
    assert g["reason"] == "busbw 22.85 GB/s at 2147483648 bytes >= 21.25 GB/s (85% of 25.00 GB/s)"


@pytest.mark.parametrize("fname", sorted(REAL))
def test_gate_threshold_boundary(real_output, fname):
    """For every real output: an expected value that puts the threshold just
    at the gated busbw passes, a hair above fails with the figures."""
    p = F.nccl_parse(real_output("nccl_tests/" + fname))
    busbw = min(p["largest"]["oop"]["busbw"], p["largest"]["ip"]["busbw"])
    at = F.nccl_gate(p, busbw / 0.85)
    assert at["passed"], at["reason"]
    above = F.nccl_gate(p, (busbw + 0.01) / 0.85)
    assert not above["passed"] and above["kind"] == "below"
    assert above["reason"].startswith("busbw %.2f GB/s at %d bytes is below" % (busbw, p["largest"]["size"]))
    # efficiency scales the threshold, not the measurement
    assert F.nccl_gate(p, busbw, efficiency=1.0)["passed"]
    assert not F.nccl_gate(p, busbw * 1.01, efficiency=1.0)["passed"]


def test_gate_reasons(real_output):
    body = real_output("nccl_tests/oci-oke-allreduce-2node-a100-nccl2.25-kueue.txt")
    # sockets: whatever the bandwidth
    sock = body.replace("NCCL version 2.25.1+cuda12.8\n", "NCCL version 2.25.1+cuda12.8\n"
                        "gpu-a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n")
    g = F.nccl_gate(sock, 10.0)
    assert not g["passed"] and g["kind"] == "socket" and g["reason"] == "NCCL used NET/Socket instead of NET/IB"
    # wrong values
    wrong = body.replace("190.02      0    42364", "190.02      3    42364")
    g = F.nccl_gate(wrong, 10.0)
    assert g["kind"] == "wrong" and g["reason"] == "3 wrong values (out-of-place) at size 4294967296"
    # old format: an error above 1e-3
    old = real_output("nccl_tests/deepops-allreduce-4node-dgxa100-ib.txt").replace("191.56  1e-06", "191.56  1e+00")
    g = F.nccl_gate(old, 10.0)
    assert g["kind"] == "error" and "(in-place) at size 4294967296" in g["reason"]
    # out of bounds
    g = F.nccl_gate(body.replace("values : 0 OK", "values : 2 FAILED"), 10.0)
    assert g["kind"] == "out_of_bounds" and g["reason"].startswith("out of bounds values: 2 FAILED")
    # timed out: killed by `timeout` (exit 124) after two rows
    cut = body.split("  4294967296")[0]
    g = F.nccl_gate(cut, 10.0, timeout_s=600, exit_code=124)
    assert g["kind"] == "timeout" and g["reason"] == "all_reduce_perf timed out after 600 s with 2 of its result rows printed"
    g = F.nccl_gate("", 10.0, timeout_s=30, exit_code=124)
    assert g["kind"] == "timeout" and "before printing any output" in g["reason"]
    # the same cut without a timeout: the footer is missing
    g = F.nccl_gate(cut, 10.0)
    assert g["kind"] == "incomplete" and "without the '# Avg bus bandwidth' footer" in g["reason"]
    # no transport lines when they are required
    g = F.nccl_gate(body, 10.0, require_ib=True)
    assert g["kind"] == "no_transport"
    # a complete output with a non-zero exit
    g = F.nccl_gate(body, 10.0, exit_code=1)
    assert g["kind"] == "exit_code"
    # mpirun could not start
    g = F.nccl_gate("ssh: Could not resolve hostname gpu-z: Name or service not known\n", 10.0, exit_code=1)
    assert g["kind"] == "no_output" and g["reason"].endswith("Name or service not known")


def test_gate_on_the_twin_format():
    ib = F.nccl_gate(_twin_log("IB"), F.nccl_expected_busbw(400, 2), require_ib=True)
    assert ib["passed"] and ib["largest_size"] == 1 << 32 and ib["transport"] == "IB"
    assert not F.nccl_gate(_twin_log("IB", wrong=5), 100.0)["passed"]
    s = F.nccl_gate(_twin_log("Socket"), 100.0, require_ib=True)
    assert s["kind"] == "socket"


def test_gate_rejects_bad_arguments():
    with pytest.raises(AnsibleFilterError):
        F.nccl_gate({"rows": []}, 0)
    with pytest.raises(AnsibleFilterError):
        F.nccl_gate({"rows": []}, 10, efficiency=2)
    with pytest.raises(AnsibleFilterError):
        F.nccl_expected_busbw(400, 0)


# --------------------------------------------------------------------------
# plan and verdict
# --------------------------------------------------------------------------

ROCE = {"priority": 3, "dscp": 26, "cnp_priority": 6, "cnp_dscp": 48, "trust": "dscp"}
NICS = [{"match": {"vendor_device": "15b3:1021"}, "num_vfs": 8, "resource_prefix": "gpu_rail"}]


def pf(name, bdf, rdma, speed=400000, gid=3, vfs=0):
    return {"name": name, "pci_address": bdf, "vendor_device": "15b3:1021", "speed_mbps": speed,
            "rdma_device": rdma, "rdma": {"roce_v2_gid_index": gid} if rdma else None,
            "vfs": [{"index": i, "rdma_device": "%sv%d" % (rdma, i)} for i in range(vfs)]}


def node(**kw):
    return {"pfs": [pf("enp59s0f0np0", "0000:3b:00.0", "rocep59s0f0", **kw),
                    pf("enp134s0f0np0", "0000:86:00.0", "rocep134s0f0", **kw),
                    dict(pf("eno1", "0000:01:00.0", None), vendor_device="14e4:165f")],
            "nics": NICS, "gpus": 8}


def test_traffic_class():
    assert NV.traffic_class(26) == 106 and NV.traffic_class(26, ecn_capable=False) == 104
    assert NV.traffic_class(48) == 194
    with pytest.raises(ValueError, match="gpufabric_roce.dscp"):
        NV.traffic_class(64)


def test_plan_hosts_mode_from_nic_facts():
    plan = F.nccl_plan({"node01": node(), "node02": dict(node(), mpi_host="10.0.0.2")}, ROCE, {"mode": "hosts"})
    assert plan["problems"] == [] and plan["skip"] is None
    assert plan["env"] == {"NCCL_IB_HCA": "=rocep59s0f0:1,rocep134s0f0:1", "NCCL_IB_GID_INDEX": "3",
                           "NCCL_IB_TC": "106", "NCCL_SOCKET_IFNAME": "=enp59s0f0np0", "NCCL_DEBUG": "INFO",
                           "NCCL_DEBUG_SUBSYS": "INIT,NET"}
    assert plan["link_speed_gbps"] == 400 and plan["nics_per_node"] == 2
    assert plan["expected_busbw_gbs"] == 100.0 and plan["threshold"] == 85.0
    argv = plan["argv"]
    assert argv[:4] == ["timeout", "--kill-after=30", "600", "mpirun"]
    assert argv[argv.index("-np") + 1] == "16" and argv[argv.index("-H") + 1] == "node01:8,10.0.0.2:8"
    assert "-x" in argv and "NCCL_IB_TC=106" in argv and "NCCL_IB_HCA==rocep59s0f0:1,rocep134s0f0:1" in argv
    assert argv[argv.index("all_reduce_perf"):] == ["all_reduce_perf", "-b", "1G", "-e", "8G", "-f", "2", "-g", "1",
                                                    "-c", "1", "-n", "20", "-w", "5"]


def test_nccl_ib_hca_lists_the_nics_in_rail_order():
    """GPU 0's rail first: on a node whose GPU 0 sits below the switch of the
    NIC at 0x86 (nic_facts' pcie rails, GPUs in PCI order), that NIC leads
    NCCL_IB_HCA although its PCI address is the larger."""
    rails = [{"gpu": "0000:85:00.0", "index": 0, "nic": "0000:86:00.0", "kind": "PIX"},
             {"gpu": "0000:99:00.0", "index": 1, "nic": None, "kind": "NODE"},
             {"gpu": "0000:3a:00.0", "index": 2, "nic": "0000:3b:00.0", "kind": "PIX"}]
    plan = F.nccl_plan({"node01": dict(node(), rails=rails), "node02": dict(node(), rails=rails)}, ROCE,
                       {"mode": "hosts"})
    assert plan["env"]["NCCL_IB_HCA"] == "=rocep134s0f0:1,rocep59s0f0:1"
    assert plan["env"]["NCCL_SOCKET_IFNAME"] == "=enp134s0f0np0"
    assert plan["rail_order"]["node01"] == "node01: rail order GPU0 -> rocep134s0f0, GPU2 -> rocep59s0f0"
    assert not [e for e in plan["evidence"] if "rail order" in e]      # each node's record shows its own
    # without the GPUs read (no rails), PCI address order as before
    assert F.nccl_plan({"node01": node()}, ROCE, {"mode": "hosts"})["env"]["NCCL_IB_HCA"] == \
        "=rocep59s0f0:1,rocep134s0f0:1"


def test_plan_settings_override_and_k8s():
    plan = F.nccl_plan({"a": node(vfs=2), "b": node(vfs=2)}, ROCE,
                       {"mode": "k8s", "tc": 104, "efficiency": 0.9, "link_speed_gbps": 200, "max_bytes": "16G"})
    assert plan["env"]["NCCL_IB_TC"] == "104" and plan["env"]["NCCL_SOCKET_IFNAME"] == "eth0"
    assert plan["env"]["NCCL_IB_GID_INDEX"] == str(NV.POD_GID_INDEX)
    assert plan["env"]["NCCL_IB_HCA"] == "=rocep59s0f0v0:1,rocep59s0f0v1:1,rocep134s0f0v0:1,rocep134s0f0v1:1"
    assert plan["expected_busbw_gbs"] == 50.0 and plan["threshold"] == 45.0 and "16G" in plan["perf_args"]
    render = F.nccl_plan({"a": {"pfs": None, "nics": NICS}, "b": {"pfs": None, "nics": NICS}}, ROCE,
                         {"mode": "render", "nics_per_node": 2})
    assert render["env"]["NCCL_IB_HCA"] == NV.FALLBACK_IB_HCA and render["problems"] == []
    assert render["expected_busbw_gbs"] is None and render["np"] == 16


def test_plan_problems_and_skip():
    down = node()
    down["pfs"][1]["speed_mbps"] = None
    plan = F.nccl_plan({"node01": node(), "node02": down}, ROCE)
    assert plan["problems"] == ["node02: pf enp134s0f0np0 (0000:86:00.0): link down, no speed"]
    nordma = node()
    nordma["pfs"][0]["rdma_device"] = None
    nordma["pfs"][0]["rdma"] = None
    plan = F.nccl_plan({"node01": node(), "node02": nordma}, ROCE)
    assert "node02: pf enp59s0f0np0 (0000:3b:00.0) has no RDMA device (layer 5)" in plan["problems"]
    gid = node(gid=1)
    plan = F.nccl_plan({"node01": node(), "node02": gid}, ROCE)
    assert plan["problems"][0].startswith("RoCE v2 GID index differs between devices: 1 on node02:rocep59s0f0")
    plan = F.nccl_plan({"node01": node()}, ROCE)
    assert plan["skip"].startswith("an all-reduce on node01 measures NVLink")
    plan = F.nccl_plan({"node01": node(), "node02": node()}, ROCE, {"nics_per_node": 4})
    assert plan["problems"] == ["NICs per node is 4 but node01 has 2, node02 has 2 selected PF(s)"]
    with pytest.raises(AnsibleFilterError, match="nccl_validate_mode"):
        F.nccl_plan({}, ROCE, {"mode": "slurm"})
    with pytest.raises(AnsibleFilterError, match="gpufabric_roce"):
        F.nccl_plan({}, {"priority": 3})


def test_vf_resources():
    assert F.nccl_vf_resources(NICS, 2) == [
        {"rail": 0, "resource": "openshift.io/gpu_rail0", "network": "gpu-rail0"},
        {"rail": 1, "resource": "openshift.io/gpu_rail1", "network": "gpu-rail1"}]
    two = [{"match": {"name": "enp59s0f0np0"}, "resource_prefix": "railA_"},
           {"match": {"pci_address": "0000:86:00.0"}, "resource_prefix": "railB_"}]
    assert [r["resource"] for r in F.nccl_vf_resources(two, None, "nvidia.com")] == ["nvidia.com/railA_0",
                                                                                     "nvidia.com/railB_1"]
    assert [r["network"] for r in F.nccl_vf_resources(NICS, None, "x", node()["pfs"])] == ["gpu-rail0", "gpu-rail1"]
    assert F.nccl_vf_resources([{"match": {"name": "x"}}], 2) == []
    # on a node whose GPU 0 is below 86:00.0's switch, that NIC is rail 0, as layer 14 numbers it
    rails = [{"gpu": "0000:1a:00.0", "index": 0, "nic": "0000:86:00.0", "below": ["0000:86:00.0"]},
             {"gpu": "0000:3a:00.0", "index": 1, "nic": "0000:3b:00.0", "below": ["0000:3b:00.0"]}]
    assert [r["resource"] for r in F.nccl_vf_resources(two, None, "nvidia.com", node()["pfs"], None, rails)] == [
        "nvidia.com/railB_0", "nvidia.com/railA_1"]
    assert [r["resource"] for r in F.nccl_vf_resources(two, None, "nvidia.com", node()["pfs"])] == [
        "nvidia.com/railA_0", "nvidia.com/railB_1"]
    # layer 14's NetworkAttachmentDefinition names in a tenant namespace
    assert [r["network"] for r in F.nccl_vf_resources(NICS, 2, namespace="team-a")] == ["team-a-gpu-rail0",
                                                                                       "team-a-gpu-rail1"]


def verdict(plan, host, gate=None):
    """``host``'s layer 15 record for a run of this play (``plan``, ``gate``),
    by the layer's check as the doctor action calls it."""
    return C15.check({"run": {"plan": plan, "gate": gate}, "file": None, "mode": plan["mode"]},
                     {"nccl_validate_gpus_per_node": 8}, host)


def test_doctor_verdicts():
    nodes = {"node01": node(), "node02": node()}
    plan = F.nccl_plan(nodes, ROCE)
    ok = verdict(plan, "node01", F.nccl_gate(_twin_log("IB"), plan["expected_busbw_gbs"],
                                                           require_ib=True))
    assert ok["layer"] == 15 and ok["name"] == "nccl_validate" and ok["status"] == "pass"
    assert any(e.startswith("NCCL env: NCCL_IB_HCA==rocep59s0f0:1") and "NCCL_IB_TC=106" in e for e in ok["evidence"])
    assert "node01: NCCL transport NET/IB" in ok["evidence"]
    sock = verdict(plan, "node02", F.nccl_gate(_twin_log("Socket"), 100.0, require_ib=True))
    assert sock["status"] == "fail" and sock["reason"] == "NCCL used NET/Socket instead of NET/IB"
    assert "NCCL_IB_HCA" in sock["remediation"]
    assert [e for e in sock["evidence"] if e.startswith("node02:") and "NET/Socket : Using" in e]
    # every node on sockets (NCCL_IB_DISABLE=1): every node fails
    both = F.nccl_gate(_twin_log("Socket"), 100.0, require_ib=True)
    assert [verdict(plan, h, both)["status"] for h in ("node01", "node02")] == ["fail", "fail"]
    down = node()
    down["pfs"][0]["speed_mbps"] = None
    bad = F.nccl_plan({"node01": node(), "node02": down}, ROCE)
    r = verdict(bad, "node01")
    assert r["status"] == "fail" and r["reason"] == "node02: pf enp59s0f0np0 (0000:3b:00.0): link down, no speed"
    one = verdict(F.nccl_plan({"node01": node()}, ROCE), "node01")
    assert one["status"] == "skipped"
    assert verdict(plan, "node01")["status"] == "skipped"


def _mixed_job(hosts=("node01", "node02"), socket=("node02",)):
    """The twin's output of a job whose `socket` nodes fell back to sockets."""
    import io
    from simlab.tools import nccl
    from test_fabric_model import rack   # the fabric model's constructed rack
    r = rack(len(hosts), faults={h: {"nccl-socket-fallback": True} for h in socket})
    out = io.StringIO()
    rc = nccl.run_job(r, [(h, 8) for h in hosts], nccl.parse_perf_args("-b 1G -e 8G -f 2 -g 1 -c 1".split()),
                      {"NCCL_DEBUG": "INFO"}, out)
    return rc, out.getvalue()


def test_doctor_names_the_node_that_fell_back_to_sockets():
    """Only node02's ranks used NET/Socket, so the job failed: node02 fails
    with the socket reason and its own lines, node01 (NET/IB) warns naming
    node02."""
    plan = F.nccl_plan({"node01": node(), "node02": node()}, ROCE)
    rc, text = _mixed_job()
    gate = F.nccl_gate(text, plan["expected_busbw_gbs"], require_ib=True, exit_code=rc)
    assert gate["kind"] == "socket" and not gate["passed"]
    bad = verdict(plan, "node02", gate)
    assert (bad["status"], bad["reason"]) == ("fail", "NCCL used NET/Socket instead of NET/IB")
    assert bad["remediation"] == C15.REMEDIATION["socket"]
    assert "node02: NCCL transport NET/Socket" in bad["evidence"]
    own = [e for e in bad["evidence"] if re.match(r"^node0\d:\d+:\d+ \[0\] NCCL INFO ", e)]
    assert own and all(e.startswith("node02:") for e in own)
    assert any("NET/IB : No device found." in e for e in own) and any("NET/Socket : Using" in e for e in own)
    warns = [e for e in bad["evidence"] if e.startswith("NCCL WARN ")]
    assert warns == ["NCCL WARN node02: socketFinalizeAccept: wrong type 4 != 3"]
    ok = verdict(plan, "node01", gate)
    assert (ok["status"], ok["reason"]) == ("warn", "all_reduce_perf with node02 failed: node02 used NET/Socket")
    assert "node02" in ok["remediation"] and ok["remediation"].startswith("this node's ranks used NET/IB")
    assert "node01: NCCL transport NET/IB" in ok["evidence"] and "node02: NCCL transport NET/Socket" in ok["evidence"]
    own = [e for e in ok["evidence"] if re.match(r"^node0\d:\d+:\d+ \[0\] NCCL INFO ", e)]
    assert own and all(e.startswith("node01:") and "NET/Socket" not in e for e in own)
    # the recorded run (JSON) gives the same verdicts
    import json
    again = json.loads(json.dumps({"plan": plan, "gate": gate}))
    assert verdict(again["plan"], "node01", again["gate"])["status"] == "warn"


def test_doctor_peer_verdicts_on_three_nodes_and_other_names():
    plan = F.nccl_plan({h: node() for h in ("node01", "node02", "node03")}, ROCE)
    rc, text = _mixed_job(("node01", "node02", "node03"), ("node02", "node03"))
    gate = F.nccl_gate(text, plan["expected_busbw_gbs"], require_ib=True, exit_code=rc)
    got = {h: verdict(plan, h, gate) for h in plan["hosts"]}
    assert {h: r["status"] for h, r in got.items()} == {"node01": "warn", "node02": "fail", "node03": "fail"}
    assert got["node01"]["reason"] == "all_reduce_perf with node02, node03 failed: node02, node03 used NET/Socket"
    # the log names the nodes by their host names: the inventory name, the
    # name mpirun reaches the node by, with or without the domain
    fq = F.nccl_plan({"gpu-a": dict(node(), mpi_host="node01.rack.example"), "gpu-b": dict(node(), mpi_host="node02")},
                     ROCE)
    rc, text = _mixed_job()
    gate = F.nccl_gate(text, fq["expected_busbw_gbs"], require_ib=True, exit_code=rc)
    assert verdict(fq, "gpu-b", gate)["status"] == "fail"
    warn = verdict(fq, "gpu-a", gate)
    assert warn["status"] == "warn" and warn["reason"] == "all_reduce_perf with gpu-b failed: gpu-b used NET/Socket"
    # a log that names none of the run's nodes (pods): every node fails with the gate's reason
    pods = F.nccl_plan({"gpu-a": node(), "gpu-b": node()}, ROCE)
    assert {verdict(pods, h, gate)["reason"] for h in ("gpu-a", "gpu-b")} == {gate["reason"]}
    assert gate["reason"] == "NCCL used NET/Socket instead of NET/IB on some ranks"


def test_doctor_names_the_node_whose_ranks_went_through_host_memory():
    """node02's rank sent over NET/IB without /GDRDMA: node02 fails naming
    its rank, GPU and NIC with layer 5 as the place to look; node01, whose
    rails all used GPUDirect RDMA, warns naming node02."""
    plan = F.nccl_plan({"node01": node(), "node02": node()}, ROCE)
    lines = ["node01:100:100 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA",
             "node02:101:101 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0/GDRDMA",
             "node02:101:101 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [send] via NET/IB/1",
             "node01:100:100 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/IB/1/GDRDMA"]
    text = _twin_log("IB") + "\n".join(lines) + "\n"
    gate = F.nccl_gate(text, plan["expected_busbw_gbs"], 0.1, require_ib=True, require_gdr=True)
    assert gate["kind"] == "no_gdr", gate["reason"]
    bad = verdict(plan, "node02", gate)
    assert (bad["status"], bad["reason"]) == (
        "fail", "GPUDirect RDMA not used on node02: rank 1 (GPU 0) over NET/IB/1 (rocep134s0f0) went through host memory")
    assert bad["remediation"] == C15.REMEDIATION["no_gdr"] and "layer 5" in bad["remediation"]
    assert "rank 1 GPU 0: NET/IB/1 (rocep134s0f0): through host memory (no /GDRDMA)" in bad["evidence"]
    ok = verdict(plan, "node01", gate)
    assert (ok["status"], ok["reason"]) == ("warn", "all_reduce_perf with node02 failed: GPUDirect RDMA not used on node02")
    assert "rank 0 GPU 0: NET/IB/0 (rocep59s0f0): GPUDirect RDMA" in ok["evidence"]
    # not required (gpufabric_gpudirect: off): the same run is gated on its bandwidth
    assert F.nccl_gate(text, plan["expected_busbw_gbs"], 0.1, require_ib=True)["passed"]


def test_the_gate_quotes_a_row_it_cannot_read_and_calls_a_cut_last_row_incomplete():
    lines = _twin_log("IB").splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.split()[:1] == [str(1 << 31)])
    torn = lines[row].split()[:4]
    # a row above the last line it cannot read: unreadable, the row quoted (not "no nccl-tests output")
    g = NV.gate_output("\n".join(lines[:row] + [" ".join(torn)] + lines[row + 1:]) + "\n", 10.0, exit_code=0)
    assert g["kind"] == "unreadable" and not g["passed"], g
    assert g["reason"].startswith("nccl-tests: cannot read the result row") and " ".join(torn) in g["reason"], g["reason"]
    # the same row as the text's last line (the run was killed while printing it): incomplete
    g = NV.gate_output("\n".join(lines[:row] + [" ".join(torn)]) + "\n", 10.0, exit_code=137)
    assert g["kind"] in ("incomplete", "timeout") and g["parsed"]["cut_row"] == " ".join(torn), g
