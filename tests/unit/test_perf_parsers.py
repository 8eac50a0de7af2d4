"""perf_parsers against every real nccl-tests and perftest output (the
figures listed in real-outputs/INDEX.md) and the NCCL gate."""

import json
import re
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers as P

pytestmark = pytest.mark.layers(9, 15)

# file, avg busbw, largest size, oop busbw, ip busbw, format
NCCL = [
    ("deepops-allreduce-2node-sriov-roce-v100.txt", 7.76739, 2147483648, 22.92, 22.85, "error"),
    ("deepops-allreduce-4node-dgxa100-ib.txt", 113.289, 4294967296, 191.05, 191.56, "error"),
    ("deepops-allreduce-2node-dgxa100-sriov-ib-k8s.txt", 53.7098, 4294967296, 188.53, 188.70, "error"),
    ("oci-oke-allreduce-2node-a100-sriov-vf-8B-8G.txt", 66.4834, 8589934592, 237.94, 237.52, "wrong"),
    ("oci-oke-allreduce-2node-a100-nccl2.14-sriov-vf.txt", 175.531, 10737418240, 180.06, 180.08, "wrong"),
    ("oci-oke-allreduce-2node-a100-nccl2.25-kueue.txt", 188.648, 4294967296, 190.02, 190.09, "wrong"),
    ("oci-slurm-allreduce-2node-a100-nccltests2.17.9.txt", 189.005, 10737418240, 191.22, 191.22, "wrong"),
    ("schmaustech-allreduce-2node-2xl40s-sriov-roce.txt", 4.74277, 8589934592, 9.63, 9.62, "wrong"),
    ("schmaustech-allreduce-2node-8xh200-16G.txt", 36.2205, 17179869184, 92.33, 92.35, "wrong"),
    ("empovit-allreduce-v100-nocheck-wrong-NA.txt", 5.68719, 33554432, 5.63, 5.75, "wrong"),
]


@pytest.mark.parametrize("fname,avg,size,oop,ip,fmt", NCCL)
def test_nccl_real_key_figures(real_output, fname, avg, size, oop, ip, fmt):
    p = P.parse_all_reduce_perf(real_output("nccl_tests/" + fname))
    assert p["avg_busbw"] == avg
    assert p["largest"]["size"] == size
    assert p["largest"]["oop"]["busbw"] == oop and p["largest"]["ip"]["busbw"] == ip
    assert p["format"] == fmt
    assert p["out_of_bounds"] == {"count": 0, "status": "OK"}
    assert p["complete"] is True
    # every data row parsed: sizes strictly increasing, all rows of the table
    sizes = [r["size"] for r in p["rows"]]
    assert sizes == sorted(set(sizes))
    json.dumps(p)


FIXTURES = Path(__file__).parent / "fixtures"


def fixture(sub, name):
    """A published output of tests/unit/fixtures/<sub> (README there), after its '# ---' line."""
    return (FIXTURES / sub / name).read_text().split("# ---\n", 1)[1]


# nccl-tests outputs in fixtures/nccl_real: rows, largest size, its oop and ip busbw, avg busbw, complete, ranks
NCCL_FIXTURES = {
    "nccl-tests-309.txt": (32, 17179869184, 469.21, 469.10, 139.56, True, 16),
    "nccl-tests-321.txt": (13, 4294967296, 50.25, 50.37, None, False, 4),
    "nccl-ebpf-tag-output.txt": (8, 134217728, 2.30, 2.31, 1.57614, True, 2),
    "nccl1-all_reduce_test-readme.txt": (20, 10000000, 9.21, 7.77, None, False, None),
    # Slurm's srun --label: " 0: " before every line (no Rank lines printed)
    "rccl-1490-srun-label.txt": (17, 4294967296, 92.89, 92.88, 43.7269, True, None),
    # rccl-tests' Rank lines without "Group" (nccl-tests before 2.x Group, rccl-tests master)
    "rccl-1562-rank-no-group.txt": (25, 134217728, 293.07, 289.6, 54.8575, True, 8),
    # a log quoted in a reply: every line behind "> "
    "nccl-tests-287-quoted-reply.txt": (25, 134217728, 27.26, 27.28, 9.09703, True, 4),
    # rccl-tests' parameter line with colons ("warmupIters: 5"), the error column
    "rccl-tests-lumi-colon-header.txt": (25, 134217728, 7.66, 7.67, 2.31741, True, 2),
}


@pytest.mark.parametrize("name, footer", [
    ("nccl-tests-306-two-processes-mod8.txt", "# Avg bus bandwidth    : 4.92348"),
    ("nccl-tests-306-two-processes-div8.txt", "# Avg bus bandwidth    : 255.731"),
])
def test_two_runs_in_one_stream_are_refused_at_the_second_footer(name, footer):
    """Processes of a build without MPI each print a table and a footer into
    the one stream: the rows of two runs are not one run's, nor is either
    average the other's."""
    with pytest.raises(ValueError, match="a second '# Avg bus bandwidth' line '%s'" % re.escape(footer)):
        P.parse_all_reduce_perf(fixture("nccl_real", name))


def test_the_parameter_line_with_colons_gives_the_current_names():
    p = P.parse_all_reduce_perf(fixture("nccl_real", "rccl-tests-lumi-colon-header.txt"))
    assert p["params"] == {"nThread": 1, "nGpus": 1, "minBytes": 8, "maxBytes": 134217728, "step": "2(factor)",
                           "warmup_iters": 5, "iters": 20, "validation": 1}
    assert p["format"] == "error" and p["largest"]["oop"]["error"] == 0.0


def test_an_average_that_is_not_a_figure_is_refused_quoting_it():
    with pytest.raises(ValueError, match=r"cannot read the average bus bandwidth in "
                                         r"'# Avg bus bandwidth    : ~2.0 GB/s \(approx\)'"):
        P.parse_all_reduce_perf(fixture("nccl_real", "nccl-ebpf-reduce-scatter-edited-average.txt"))


def test_a_log_pasted_without_its_code_fence():
    """Markdown made each '# ' a '#': the Rank line is still a rank, and the
    run's failure is still read."""
    p = P.parse_all_reduce_perf(fixture("nccl_real", "nccl-tests-287-unfenced-alltoall-failure.txt"))
    assert p["nranks"] == 1 and p["rows"] == [] and not p["complete"]
    assert p["test_failures"] and all("common.cu" in f or "failure" in f.lower() for f in p["test_failures"])


@pytest.mark.parametrize("name", sorted(NCCL_FIXTURES))
def test_nccl_fixture_key_figures(name):
    nrows, size, oop, ip, avg, complete, nranks = NCCL_FIXTURES[name]
    p = P.parse_all_reduce_perf(fixture("nccl_real", name))
    assert len(p["rows"]) == nrows and p["largest"]["size"] == size
    assert (p["largest"]["oop"]["busbw"], p["largest"]["ip"]["busbw"]) == (oop, ip)
    assert (p["avg_busbw"], p["complete"], p["nranks"], p["cut_row"]) == (avg, complete, nranks, None)
    assert p["out_of_bounds"] == ({"count": 0, "status": "OK"} if complete else None)
    json.dumps(p)


def test_the_parameter_line_reads_every_key():
    """Each key of nccl-tests' parameter line (src/common.cu, src/util.cu),
    a key of several words ('warmup iters', 'agg iters') included."""
    p = P.parse_all_reduce_perf(fixture("nccl_real", "nccl-tests-309.txt"))
    assert p["params"] == {"nThread": 1, "nGpus": 1, "minBytes": 8, "maxBytes": 17179869184, "step": "2(factor)",
                           "warmup_iters": 5, "iters": 20, "agg_iters": 1, "validation": 1, "graph": 0}
    # the printf of 2019 (no agg iters) and of the releases since
    assert P._nccl_params("# nThread 1 nGpus 1 minBytes 536870912 maxBytes 8589934592 step: 2(factor) "
                          "warmup iters: 50 iters: 50 validation: 1 ") == {
        "nThread": 1, "nGpus": 1, "minBytes": 536870912, "maxBytes": 8589934592, "step": "2(factor)",
        "warmup_iters": 50, "iters": 50, "validation": 1}
    assert P._nccl_params("# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 1(bytes) warmup iters: 1 iters: 20 "
                          "agg iters: 1 validation: 1 graph: 0 side_work: 0 work_sms: 16 direction: in")[
        "work_sms"] == 16
    assert P._nccl_params("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 20 "
                          "agg iters: 4 validation: 1 graph: 0 unalign: 0") == {
        "nThread": 1, "nGpus": 1, "minBytes": 8, "maxBytes": 8, "step": "2(factor)", "warmup_iters": 1,
        "iters": 20, "agg_iters": 4, "validation": 1, "graph": 0, "unalign": 0}


def test_open_mpi_tag_output_is_read():
    """mpirun --tag-output: '[1,0]<stdout>:' before every line of rank 0."""
    p = P.parse_all_reduce_perf(fixture("nccl_real", "nccl-ebpf-tag-output.txt"))
    assert (p["nccl_tests_version"], p["collective"], p["concluded"]) == ("2.18.0", "all_reduce_perf_mpi", True)
    assert [r["host"] for r in p["ranks"]] == ["lab", "lab"] and p["params"]["iters"] == 50
    assert [r["size"] for r in p["rows"]] == [1048576 * 2 ** n for n in range(8)]
    # --timestamp-output with it, and Open MPI 5's job ids
    tagged = "\n".join("Mon Jan 26 10:50:11 2009[prterun-h-1@1,0]<stdout>:" + ln
                       for ln in fixture("nccl_real", "nccl-ebpf-tag-output.txt").split("\n")
                       if ln.startswith("[1,0]<stdout>:")).replace("[1,0]<stdout>:", "")
    assert P.parse_all_reduce_perf(tagged)["rows"] == p["rows"]


def test_a_row_that_cannot_be_read_fails_quoting_it():
    body = fixture("nccl_real", "nccl-tests-309.txt")
    row = next(ln for ln in body.splitlines() if ln.strip().startswith("1048576 "))
    # another process's line printed into the middle of a row
    torn = row[:60] + "bm-h100-02:26633:26700 [0] NCCL INFO comm 0x5 rank 8 nranks 16 - Init COMPLETE"
    with pytest.raises(ValueError, match=r"cannot read the result row '1048576 .*Init COMPLETE"):
        P.parse_all_reduce_perf(body.replace(row, torn))
    with pytest.raises(ValueError, match="cannot read the result row"):
        P.parse_all_reduce_perf(body.replace(row, row.replace(" float ", " ")))
    # the output stops inside its last row (killed, or the in-place half still running): read up to it
    cut = body[:body.index(row) + 60]
    p = P.parse_all_reduce_perf(cut)
    assert p["cut_row"] == cut.splitlines()[-1].strip() and p["complete"] is False and p["rows"][-1]["size"] == 524288
    assert P.nccl_gate(p, 10.0)["kind"] == "incomplete"


HEAD5 = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"


def test_the_columns_of_current_releases():
    """util.cu: -Z 1 adds a timestamp after each row, -I the per-iteration
    columns of each half; #wrong is printed with %6g."""
    stamped = P.parse_all_reduce_perf(
        HEAD5 + " timestamp\n"
        "     8388608       2097152     float     sum      -1   95.01   88.29  165.55       0   94.71   88.57  166.07"
        "       0  2025-10-28 14:02:11\n")
    (r,) = stamped["rows"]
    assert r["timestamp"] == "2025-10-28 14:02:11" and r["ip"]["busbw"] == 166.07
    per_iter = P.parse_all_reduce_perf(
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max"
        "    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%\n"
        "     8388608       2097152     float     sum      -1   95.01   88.29  165.55       0    93.10   101.20"
        "    99.80     1.52   94.71   88.57  166.07       0    93.00    99.10    98.70     1.21\n")
    (r,) = per_iter["rows"]
    assert (r["oop"]["busbw"], r["oop"]["i_max_us"], r["ip"]["i_cv_pct"], r["ip"]["wrong"]) == (165.55, 101.2, 1.21, 0)
    many = P.parse_all_reduce_perf(HEAD5 + "\n  1073741824     268435456     float     sum      -1  11163  96.19  180.35"
                                   "  1e+06  11203  95.84  179.70  1e+06\n")
    assert many["rows"][0]["oop"]["wrong"] == 1000000 and many["rows"][0]["oop"]["error"] is None


def test_nccl1_time_is_in_milliseconds():
    p = P.parse_all_reduce_perf(fixture("nccl_real", "nccl1-all_reduce_test-readme.txt"))
    first = p["rows"][0]
    assert (first["type"], first["redop"], first["root"]) == ("char", "sum", None)
    assert (first["oop"]["time_us"], first["ip"]["time_us"]) == (1628.0, 1932.0)
    assert p["format"] == "error" and p["rows"][8]["oop"]["error"] == 4e-03
    assert [(r["type"], r["redop"]) for r in p["rows"]][-1] == ("double", "min")


def test_nccl_real_details(real_output):
    crlf = real_output("nccl_tests/deepops-allreduce-2node-dgxa100-sriov-ib-k8s.txt")
    assert "\r\n" in crlf
    p = P.parse_all_reduce_perf(crlf)
    assert len(p["rows"]) == 30 and p["rows"][0]["redop"] == "sum" and p["rows"][0]["root"] is None
    assert p["largest"]["oop"]["error"] == 5e-07 and p["largest"]["oop"]["wrong"] is None
    p = P.parse_all_reduce_perf(real_output("nccl_tests/deepops-allreduce-4node-dgxa100-ib.txt"))
    assert p["largest"]["ip"]["error"] == 1e-06 and len(p["rows"]) == 13
    p = P.parse_all_reduce_perf(real_output("nccl_tests/empovit-allreduce-v100-nocheck-wrong-NA.txt"))
    assert len(p["rows"]) == 1 and p["rows"][0]["oop"]["wrong"] is None and p["rows"][0]["root"] == -1
    assert p["params"]["validation"] == 0 and p["params"]["nGpus"] == 2
    p = P.parse_all_reduce_perf(real_output("nccl_tests/oci-slurm-allreduce-2node-a100-nccltests2.17.9.txt"))
    assert p["nccl_tests_version"] == "2.17.9" and p["nccl_version"] == "2.29.3" and p["cuda_version"] == "13.1"
    assert p["nranks"] == 16 and [r["rank"] for r in p["ranks"]] == [0, 7, 8, 15]
    p = P.parse_all_reduce_perf(real_output("nccl_tests/oci-oke-allreduce-2node-a100-sriov-vf-8B-8G.txt"))
    assert len(p["rows"]) == 31 and p["largest"]["oop"]["wrong"] == 0
    assert p["ranks"][8]["host"] == "nccl-allreduce-job0-mpiworker-1"
    p = P.parse_all_reduce_perf(real_output("nccl_tests/schmaustech-allreduce-2node-2xl40s-sriov-roce.txt"))
    assert p["params"]["maxBytes"] == 17179869184 and p["nccl_version"] == "2.27.3"


NET_IB = ("node-a:1234:1300 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; "
          "OOB net1:10.0.0.1<0>\n")
NET_SOCK = "node-a:1234:1300 [0] NCCL INFO NET/Socket : Using [0]net1:10.0.0.1<0>\n"


def _with_net(real_output, lines):
    body = real_output("nccl_tests/oci-oke-allreduce-2node-a100-nccl2.25-kueue.txt")
    return body.replace("NCCL version 2.25.1+cuda12.8\n", "NCCL version 2.25.1+cuda12.8\n" + lines)


def test_nccl_transport_detection(real_output):
    ib = P.parse_all_reduce_perf(_with_net(real_output, NET_IB))
    assert ib["transport"] == "IB"
    assert ib["ib_devices"] == [{"device": "mlx5_0", "port": 1, "link": "RoCE"},
                                {"device": "mlx5_1", "port": 1, "link": "RoCE"}]
    sock = P.parse_all_reduce_perf(_with_net(real_output, NET_SOCK))
    assert sock["transport"] == "Socket"
    via = "node-a:1:2 [0] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [send] via NET/Socket/0\n"
    assert P.parse_all_reduce_perf(_with_net(real_output, via))["transport"] == "Socket"
    none = P.parse_all_reduce_perf(real_output("nccl_tests/oci-oke-allreduce-2node-a100-nccl2.25-kueue.txt"))
    assert none["transport"] is None


def test_nccl_gate_on_real(real_output):
    p = P.parse_all_reduce_perf(real_output("nccl_tests/oci-oke-allreduce-2node-a100-nccl2.25-kueue.txt"))
    # 2x A100 nodes with 2x 100G RoCE per node would be 25 GB/s; a 16-NIC
    # 200 Gb/s layout is 400 GB/s, far above the measured 190.
    ok = P.nccl_gate(p, P.expected_busbw_gbs(100, 2))
    assert ok["passed"] and ok["largest_size"] == 4294967296 and ok["busbw"] == 190.02
    assert ok["threshold"] == pytest.approx(25 * 0.85)
    bad = P.nccl_gate(p, P.expected_busbw_gbs(200, 16))
    assert not bad["passed"] and "below" in bad["reason"] and bad["threshold"] == pytest.approx(340.0)
    # the lower of out-of-place and in-place is gated on
    p = P.parse_all_reduce_perf(real_output("nccl_tests/deepops-allreduce-4node-dgxa100-ib.txt"))
    g = P.nccl_gate(p, 191.06 / 0.85 / 1.0000001)
    assert g["busbw"] == 191.05 and g["busbw_ip"] == 191.56 and g["passed"] is False
    sock = P.nccl_gate(P.parse_all_reduce_perf(_with_net(real_output, NET_SOCK)), 10.0)
    assert not sock["passed"] and "NET/Socket" in sock["reason"]
    assert not P.nccl_gate(P.parse_all_reduce_perf(_with_net(real_output, "")), 10.0, require_ib=True)["passed"]
    assert P.nccl_gate(P.parse_all_reduce_perf(_with_net(real_output, NET_IB)), 10.0, require_ib=True)["passed"]


def test_nccl_gate_failures_from_edited_real(real_output):
    body = real_output("nccl_tests/oci-oke-allreduce-2node-a100-nccl2.25-kueue.txt")
    wrong = body.replace("190.02      0    42364", "190.02      7    42364")
    g = P.nccl_gate(P.parse_all_reduce_perf(wrong), 10.0)
    assert not g["passed"] and "7 wrong values" in g["reason"]
    oob = body.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED")
    g = P.nccl_gate(P.parse_all_reduce_perf(oob), 10.0)
    assert not g["passed"] and "out of bounds" in g["reason"]
    minbw = body.replace("# Avg bus bandwidth    : 188.648 ", "# Avg bus bandwidth    : 188.648 FAILED")
    assert P.parse_all_reduce_perf(minbw)["avg_status"] == "FAILED"
    assert not P.nccl_gate(P.parse_all_reduce_perf(minbw), 10.0)["passed"]
    old = real_output("nccl_tests/deepops-allreduce-4node-dgxa100-ib.txt").replace(
        "191.05  1e-06", "191.05  1e+00")
    g = P.nccl_gate(P.parse_all_reduce_perf(old), 10.0)
    assert not g["passed"] and "error" in g["reason"]
    # truncated: header printed, the job was killed before any row
    truncated = body.split("  1073741824")[0]
    p = P.parse_all_reduce_perf(truncated)
    assert p["rows"] == [] and p["complete"] is False
    g = P.nccl_gate(p, 10.0)
    assert not g["passed"] and "no result rows" in g["reason"] and g["largest_size"] is None


def test_nccl_rejects_and_arguments():
    with pytest.raises(ValueError):
        P.parse_all_reduce_perf("mpirun: command not found\n")
    with pytest.raises(ValueError):
        P.nccl_gate({"rows": []}, 0)
    assert P.expected_busbw_gbs(400, 8) == 400.0
    assert P.expected_busbw_gbs(200, 1) == 25.0
    with pytest.raises(ValueError):
        P.expected_busbw_gbs(0, 8)


# file, device, gid index, mtu, qps, units, rows, last (bytes, iterations, peak, avg, msgrate), complete
PERF = [
    ("deepops-roce-cx5-write-bw-gbits.txt", "mlx5_0", 3, 4096, 1, "Gb/sec", 1,
     (65536, 5000, 92.42, 92.40, 0.176230), True),
    ("oci-oke-sriov-vf-write-bw-4qp-rdmacm-gbits.txt", "mlx5_5", 3, 4096, 4, "Gb/sec", 1,
     (65536, 20000, 98.01, 98.01, 0.186932), True),
    ("cns-k8s-pod-roce-write-bw-sweep-gbits.txt", "mlx5_0", 4, 1024, 1, "Gb/sec", 23,
     (8388608, 5000, 52.52, 52.52, 0.000783), True),
    ("schmaustech-write-bw-server-cuda-16qp-roce-gbits.txt", "mlx5_1", 3, 1024, 16, "Gb/sec", 1,
     (65536, 10384867, 0.00, 181.46, 0.346100), True),
    ("dgx-spark-write-bw-run-infinitely-roce-gbits.txt", "roceP2p1s0f0", 3, 1024, 1, "Gb/sec", 6,
     (65536, 927807, 0.00, 97.28, 0.185554), False),
    ("elizabetht-dgx-spark-write-bw-mbsec-roce.txt", "rocep1s0f0", 3, 1024, 1, "MB/sec", 1,
     (65536, 5000, 11032.64, 11032.34, 0.176518), True),
]


@pytest.mark.parametrize("fname,dev,gid,mtu,qps,units,nrows,last,complete", PERF)
def test_ib_write_bw_real(real_output, fname, dev, gid, mtu, qps, units, nrows, last, complete):
    p = P.parse_ib_write_bw(real_output("perftest/" + fname))
    assert p["test"] == "RDMA_Write BW Test"
    assert p["device"] == dev and p["gid_index"] == gid and p["mtu"] == mtu and p["num_qps"] == qps
    assert p["link_type"] == "Ethernet" and p["transport"] == "IB" and p["connection_type"] == "RC"
    assert p["units"] == units and p["gbits"] == (units == "Gb/sec")
    assert len(p["rows"]) == nrows and p["complete"] is complete
    r = p["last"]
    assert (r["bytes"], r["iterations"], r["bw_peak"], r["bw_average"], r["msg_rate_mpps"]) == last
    json.dumps(p)


def test_ib_write_bw_real_details(real_output):
    inf = P.parse_ib_write_bw(real_output("perftest/dgx-spark-write-bw-run-infinitely-roce-gbits.txt"))
    assert [r["bw_average"] for r in inf["rows"]][-4:] == [97.28, 97.28, 97.29, 97.28]
    assert inf["best"]["bw_average"] == 97.29
    assert any("BW peak won't be measured" in w for w in inf["warnings"])
    srv = P.parse_ib_write_bw(real_output("perftest/schmaustech-write-bw-server-cuda-16qp-roce-gbits.txt"))
    assert srv["rdma_cm"] is True and srv["header"]["TOS"] == "41"
    # perftest lowered the asked MTU to the port's (3: 1024 B, as its block says): kept, with the warning
    assert srv["warnings"][:4] == ["WARNING: BW peak won't be measured in this run.",
                                   "Perftest doesn't supports CUDA tests with inline messages: inline size set to 0",
                                   "Requested mtu is higher than active mtu",
                                   "Changing to active mtu - 3"] and srv["mtu"] == 1024
    cx5 = P.parse_ib_write_bw(real_output("perftest/deepops-roce-cx5-write-bw-gbits.txt"))
    assert any("Conflicting CPU frequency" in w for w in cx5["warnings"])
    mb = P.parse_ib_write_bw(real_output("perftest/elizabetht-dgx-spark-write-bw-mbsec-roce.txt"))
    assert P.perftest_to_gbps(mb["last"]["bw_average"], mb["units"]) == pytest.approx(92.54, abs=0.01)
    assert P.perftest_to_gbps(92.4, "Gb/sec") == 92.4


def test_ib_write_bw_rejects(real_output):
    with pytest.raises(ValueError, match="title"):
        P.parse_ib_write_bw("Couldn't connect to 10.0.0.2:18515\n")
    body = real_output("perftest/deepops-roce-cx5-write-bw-gbits.txt")
    with pytest.raises(ValueError, match="result header"):
        P.parse_ib_write_bw(body.split(" #bytes")[0])


def test_nccl_gate_fails_when_rows_stop_before_the_footer(real_output):
    """A run killed mid-sweep still prints rows; the largest printed size is
    not the size asked for, so the gate must not pass on it."""
    body = real_output("nccl_tests/oci-oke-allreduce-2node-a100-nccl2.25-kueue.txt")
    cut = body.split("# Out of bounds")[0]
    p = P.parse_all_reduce_perf(cut)
    assert len(p["rows"]) == 3 and p["complete"] is False
    g = P.nccl_gate(p, 200.0)
    assert g["passed"] is False and "footer" in g["reason"] and g["largest_size"] == 4294967296
    assert g["busbw"] == 190.02
    assert P.nccl_gate(P.parse_all_reduce_perf(body), 200.0)["passed"] is True
