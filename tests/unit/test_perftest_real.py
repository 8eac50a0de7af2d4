"""parse_ib_write_bw on real perftest reports that the project captured on
its VM node (tests/unit/fixtures/perftest_real, README there): the BW tests
perftest ships (write, read, send, atomic), both sides, and the options
that change the report's layout (-a, -b, --report-both, -D with
--cpu_util, -q, -R, --report_gbits), plus two outputs that are not a report
and must be refused with a reason."""

from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers as P

pytestmark = pytest.mark.layers(9)

REAL = Path(__file__).resolve().parent / "fixtures" / "perftest_real"

# file: test, units, qps, rdma_cm, rows, last row (bytes, iterations, peak, average, msg rate[, cpu util]), warnings
# perftest's notice (perftest_parameters.c) on rxe, which it does not know to support inline data
INLINE_OFF = "Device not recognized to implement inline feature. Disabling it"
REPORTS = {
    "ib_write_bw-a-report_gbits-client.txt": (
        "RDMA_Write BW Test", "Gb/sec", 1, False, 23, (8388608, 20, 0.31, 0.31, 0.000005), []),
    "ib_read_bw-client.txt": (
        "RDMA_Read BW Test", "MB/sec", 1, False, 1, (65536, 100, 38.50, 33.53, 0.000536), [INLINE_OFF]),
    "ib_send_bw-server.txt": (
        "Send BW Test", "MB/sec", 1, False, 1, (65536, 100, 0.00, 12.77, 0.000204), []),
    "ib_write_bw-b-client.txt": (
        "RDMA_Write Bidirectional BW Test", "MB/sec", 1, False, 1, (65536, 100, 91.55, 40.27, 0.000644), []),
    "ib_send_bw-b-report-both-client.txt": (
        "Send Bidirectional BW Test", "MB/sec", 1, False, 1, (65536, 100, 40.10, 27.00, 0.000432), []),
    "ib_write_bw-D2-cpu_util-client.txt": (
        "RDMA_Write BW Test", "MB/sec", 1, False, 1, (65536, 896, 0.00, 27.98, 0.000448, 100.00), []),
    "ib_write_bw-D2-cpu_util-server.txt": (
        "RDMA_Write BW Test", "MB/sec", 1, False, 1, (65536, 896, 0.00, 27.98, 0.000448, 0.00), []),
    "ib_write_bw-q4-server.txt": (
        "RDMA_Write BW Test", "MB/sec", 4, False, 1, (65536, 400, 52.35, 38.07, 0.000609), []),
    "ib_write_bw-R-client.txt": (
        "RDMA_Write BW Test", "MB/sec", 1, True, 1, (65536, 100, 15.97, 15.48, 0.000248), []),
    "ib_atomic_bw-client.txt": (
        "Atomic FETCH_AND_ADD BW Test", "MB/sec", 1, False, 1, (8, 100, 0.17, 0.14, 0.018179), [INLINE_OFF]),
}
REFUSED = {
    "ib_write_bw-output-bandwidth-client.txt": "bare figure",
    "ib_write_bw-W-counters-client.txt": "title",
}


# published runs (a '# source:' header, README there): sides, rows, last row (bytes, iterations, peak, average,
# msg rate), the other side's rows, link type, mtu
PUBLISHED = {
    "azure-hbv3-loopback-write-bw-interleaved.txt": (
        2, 1, (1000, 5000, 4104.91, 4020.54, 4.215846), 1, "IB", 4096),
}


def recorded(name):
    return (REAL / name).read_text()


def published(name):
    return recorded(name).split("# ---\n", 1)[1]


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_real_report_key_figures(name):
    test, units, qps, rdma_cm, nrows, last, warnings = REPORTS[name]
    p = P.parse_ib_write_bw(recorded(name))
    assert (p["test"], p["units"], p["num_qps"], p["rdma_cm"], len(p["rows"])) == (test, units, qps, rdma_cm, nrows)
    assert (p["device"], p["link_type"], p["gid_index"], p["mtu"], p["transport"], p["connection_type"]) == \
        ("rxe_enp1s0", "Ethernet", 1, 1024, "IB", "RC")
    r = p["last"]
    got = (r["bytes"], r["iterations"], r["bw_peak"], r["bw_average"], r["msg_rate_mpps"])
    assert got + ((r["cpu_util"],) if "cpu_util" in r else ()) == last
    assert p["complete"] is True and p["warnings"] == warnings


def test_a_sweep_reads_every_size():
    p = P.parse_ib_write_bw(recorded("ib_write_bw-a-report_gbits-client.txt"))
    assert [r["bytes"] for r in p["rows"]] == [2 ** n for n in range(1, 24)]
    assert p["gbits"] is True and p["best"]["bytes"] == 2097152


def test_report_both_reads_the_total_before_the_local_and_remote_tables():
    p = P.parse_ib_write_bw(recorded("ib_send_bw-b-report-both-client.txt"))
    assert len(p["rows"]) == 1 and p["last"]["bw_average"] == 27.00


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_is_not_a_report_is_refused_with_a_reason(name):
    with pytest.raises(ValueError, match=REFUSED[name]):
        P.parse_ib_write_bw(recorded(name))


def test_a_row_that_cannot_be_read_fails_quoting_it():
    text = recorded("ib_write_bw-D2-cpu_util-client.txt")
    row = next(line for line in text.splitlines() if line.strip().startswith("65536"))
    # the CPU_Util column lost: five columns under a six-column header
    with pytest.raises(ValueError, match=r"cannot read result row '65536 .*6 columns expected"):
        P.parse_ib_write_bw(text.replace(row, row.rsplit("\t", 1)[0]))
    plain = recorded("ib_write_bw-R-client.txt")
    row = next(line for line in plain.splitlines() if line.strip().startswith("65536"))
    with pytest.raises(ValueError, match="cannot read result row"):
        P.parse_ib_write_bw(plain.replace(row, row.replace("15.48", "15.48x")))


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_report_key_figures(name):
    sides, nrows, last, others, link, mtu = PUBLISHED[name]
    p = P.parse_ib_write_bw(published(name))
    r = p["last"]
    assert (r["bytes"], r["iterations"], r["bw_peak"], r["bw_average"], r["msg_rate_mpps"]) == last
    assert (p["sides"], len(p["rows"]), len(p["other_side_rows"]), p["link_type"], p["mtu"]) == (sides, nrows, others, link, mtu)
    assert p["complete"] is True


def test_server_and_client_in_one_stream():
    """A loopback run's server and client print into one stream: perftest's
    blocks (ctx_print_test_info: dashes, title, 'key : value' lines,
    dashes) interleave line by line, and every key of both is read."""
    p = P.parse_ib_write_bw(published("azure-hbv3-loopback-write-bw-interleaved.txt"))
    assert p["header"]["TX depth"] == "128" and p["header"]["Data ex. method"] == "Ethernet"
    assert (p["device"], p["num_qps"], p["rdma_cm"], p["units"]) == ("mlx5_ib0", 1, False, "MiB/sec")
    # the second result header is the other side's, not a warning
    assert p["warnings"] == ["Conflicting CPU frequency values detected: 1846.550000 != 2596.396000. "
                             "CPU Frequency is not max."]
    assert p["other_side_rows"] == [p["last"]]
    # one side alone reads as before
    one = P.parse_ib_write_bw(recorded("ib_write_bw-q4-server.txt"))
    assert one["sides"] == 1 and one["other_side_rows"] == []


def test_every_fixture_is_tested_and_described():
    files = sorted(p.name for p in REAL.glob("*.txt"))
    assert files == sorted(set(REPORTS) | set(REFUSED) | set(PUBLISHED))
    readme = (REAL / "README.md").read_text()
    for f in files:
        assert "`%s`" % f in readme, f


# --report-per-port, which perftest allows only for a dual-port run for a
# duration: no published output of it was found, so its header and row are
# those of perftest's source (linux-rdma/perftest 00b55b6,
# src/perftest_parameters.h RESULT_LINE_PER_PORT, RESULT_FMT_PER_PORT,
# RESULT_FMT_G_PER_PORT, REPORT_FMT_PER_PORT, REPORT_EXT_CPU_UTIL; written by
# src/write_bw.c and print_full_bw_report()) put in the recorded duration run
_PER_PORT_LINE = "-" * 163
_PER_PORT_HDR = (" #bytes     #iterations    BW peak[{u}]    BW average[{u}]   MsgRate[Mpps]   BW Port1[{u}]   "
                 "MsgRate Port1[Mpps]   BW Port2[{u}]   MsgRate Port2[Mpps]")
_PER_PORT_ROW = " %-7lu    %-10lu     %-7.2lf            %-7.2lf\t\t   %-7.6lf        %-7.2lf            %-7.6lf" \
                "              %-7.2lf            %-7.6lf".replace("lu", "d").replace("lf", "f")


@pytest.mark.parametrize("units, cpu", [("MB/sec", True), ("MiB/sec", False), ("Gb/sec", False), ("Gb/sec", True)])
def test_a_per_port_report_gives_each_ports_figures(units, cpu):
    text = recorded("ib_write_bw-D2-cpu_util-client.txt").replace("Dual-port       : OFF", "Dual-port       : ON")
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#bytes"))
    row = _PER_PORT_ROW % (65536, 1792, 0.0, 55.96, 0.000896, 27.98, 0.000448, 27.98, 0.000448)
    row += "\t    %-3.2f" % 100.0 if cpu else ""
    lines[at - 1:at + 3] = [_PER_PORT_LINE, _PER_PORT_HDR.format(u=units) + ("    CPU_Util[%]" if cpu else ""), row,
                            _PER_PORT_LINE]
    p = P.parse_ib_write_bw("\n".join(lines) + "\n")
    r = p["last"]
    assert p["units"] == units and p["complete"] and len(p["rows"]) == 1
    assert (r["bytes"], r["iterations"], r["bw_peak"], r["bw_average"], r["msg_rate_mpps"]) == (
        65536, 1792, 0.0, 55.96, 0.000896)
    assert r["ports"] == [{"port": 1, "bw_average": 27.98, "msg_rate_mpps": 0.000448},
                          {"port": 2, "bw_average": 27.98, "msg_rate_mpps": 0.000448}]
    assert r.get("cpu_util") == (100.0 if cpu else None)
    # a port's columns lost: the row is quoted, not read short
    short = "\n".join(lines).replace(row, row.rsplit("27.98", 1)[0].rstrip())
    with pytest.raises(ValueError, match=r"cannot read result row '65536 .*(9|10) columns expected"):
        P.parse_ib_write_bw(short)
