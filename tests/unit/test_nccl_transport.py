"""The network each NCCL rank used, per rail, and whether GPUDirect RDMA
carried it (perf_parsers.parse_nccl_net, rank_rails, the gate's no_gdr),
against real published NCCL_DEBUG=INFO logs (tests/unit/fixtures/nccl_real/,
each with its source) and NCCL's own format strings (src/transport/net.cc)."""

import re
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers as P

pytestmark = pytest.mark.layers(15)

REAL = Path(__file__).parent / "fixtures" / "nccl_real"


def body(name):
    return (REAL / name).read_text().split("# ---\n", 1)[1]


def rails(name):
    return [(r["rank"], r["host"], r["gpu"], r["net"], r["dev"], r["nics"], r["gdr"], r["channels"])
            for r in P.parse_nccl_net(body(name))["rails"]]


PLUGIN = "NCCL RDMA Plugin v6"
# per file: (rank, host, GPU as printed, network, device index, NICs, GDR, channels) of every rail
WANT = {
    "nccl-707.txt": [
        (0, "10-90-43-152", "87000", "IB", 4, [], True, 2), (0, "10-90-43-152", "87000", "IB", 5, [], True, 2),
        (1, "10-90-43-152", "8d000", "IB", 5, [], True, 1), (2, "10-90-43-152", "c7000", "IB", 2, [], True, 4),
        (3, "10-90-43-152", "ca000", "IB", 0, [], True, 2), (3, "10-90-43-152", "ca000", "IB", 2, [], True, 1)],
    "nccl-mesh-plugin-56.txt": [(0, None, "0", "IB", 4, [], False, 8), (0, None, "0", "IB", 5, [], False, 8)],
    "nccl-tests-373.txt": [(2, "bigo", "0", "IBext_v8", 1, ["mlx5_0", "mlx5_1"], False, 3)],
    "nccl-952.txt": [(15, "<cluster_name>", "7", "Socket", 3, [], False, 2)],
    "nvidia-nccl-docs.txt": [(0, "node-01", "0", "Socket", 0, [], False, 2)],
    "nccl-1538.txt": [], "nccl-1537.txt": [], "nccl-tests-185.txt": [], "nccl-tests-245.txt": [],
    "nccl-778.txt": [], "nv_peer_memory-56.txt": [],
    # a plugin whose name has spaces (Tencent Cloud's nccl-rdma-sharp-plugins build), PXN and /Shared
    "nccl-tests-321.txt": [
        (0, "vm-host40", "1", PLUGIN, 0, ["mlx5_bond_6"], True, 6), (0, "vm-host40", "1", PLUGIN, 1, ["mlx5_bond_7"], True, 2),
        (1, "vm-host40", "0", PLUGIN, 0, ["mlx5_bond_6"], True, 2), (1, "vm-host40", "0", PLUGIN, 1, ["mlx5_bond_7"], True, 6),
        (2, "vm-host38", "1", PLUGIN, 0, ["mlx5_bond_6"], True, 6), (2, "vm-host38", "1", PLUGIN, 1, ["mlx5_bond_7"], True, 2),
        (3, "vm-host38", "0", PLUGIN, 0, ["mlx5_bond_6"], True, 2), (3, "vm-host38", "0", PLUGIN, 1, ["mlx5_bond_7"], True, 6)],
    # nccl-tests outputs without NET lines (their figures: test_perf_parsers.py)
    "nccl-tests-309.txt": [], "nccl-ebpf-tag-output.txt": [], "nccl1-all_reduce_test-readme.txt": [],
    "rccl-1490-srun-label.txt": [], "rccl-1562-rank-no-group.txt": [],
    "nccl-tests-287-quoted-reply.txt": [], "nccl-tests-306-two-processes-mod8.txt": [],
    "nccl-tests-306-two-processes-div8.txt": [], "rccl-tests-lumi-colon-header.txt": [],
    "nccl-ebpf-reduce-scatter-edited-average.txt": [],
    # NCCL_DEBUG=INFO of one GPU on one node: no NET line
    "nccl-tests-287-unfenced-alltoall-failure.txt": [],
}


def test_every_file_is_held_to_figures():
    assert sorted(p.name for p in REAL.glob("*.txt")) == sorted(WANT)


@pytest.mark.parametrize("name", sorted(WANT))
def test_real_log_rails(name):
    got = P.parse_nccl_net(body(name))
    assert rails(name) == WANT[name]
    assert got["unreadable"] == []


def test_devices_of_the_ib_network_per_host():
    assert P.parse_nccl_net(body("nccl-tests-185.txt"))["ib_devices_by_host"] == {
        "dgxh100-4": {0: ["mlx5_10"], 1: ["mlx5_11"]}, "dgxh100-3": {0: ["mlx5_10"], 1: ["mlx5_11"]}}
    # 2.5.6: a space before ';' and no [RO]
    assert P.parse_nccl_net(body("nv_peer_memory-56.txt"))["ib_devices_by_host"] == {"master_node": {0: ["mlx5_0"]}}
    # HPC-X's merged devices: one index, two NICs
    assert P.parse_nccl_net(body("nccl-tests-373.txt"))["ib_devices_by_host"] == {
        "bigo": {0: ["mlx5_2", "mlx5_3"], 1: ["mlx5_0", "mlx5_1"]}}
    # the flat list parse_all_reduce_perf gives, from the same reader: each NIC of a merged device once
    assert [(d["device"], d["port"], d["link"]) for d in P.parse_nccl_net(body("nccl-tests-373.txt"))["ib_devices"]] \
        == [("mlx5_2", 1, "RoCE"), ("mlx5_3", 1, "RoCE"), ("mlx5_0", 1, "RoCE"), ("mlx5_1", 1, "RoCE")]
    # 2.23+ may print a rail after the port (init.cc: " [%d]%s:%d" then ":%d")
    rail = "h1:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1:0/RoCE [1]mlx5_1:1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"
    assert P.parse_nccl_net(rail)["ib_devices_by_host"] == {"h1": {0: ["mlx5_0"], 1: ["mlx5_1"]}}
    # NCCL's own verdict per NIC, where NCCL_DEBUG_SUBSYS shows NET
    assert P.parse_nccl_net(body("nccl-1537.txt"))["gdr_hca"] == {"hostname1": {"mlx5_0": False, "mlx5_1": False}}


def test_the_ib_plugins_are_the_ib_network():
    assert [P.net_family(n) for n in ("IB", "IBext", "IBext_v8", PLUGIN, "Socket", "AWS Libfabric")] == [
        "IB", "IB", "IB", "IB", "Socket", "AWS Libfabric"]


def test_a_network_whose_name_has_spaces():
    """net.cc prints the plugin's name field as it is (NET/%s/%d...), and
    init.cc 'Using network %s': the Tencent Cloud log's names have spaces."""
    text = body("nccl-tests-321.txt")
    got = P.parse_nccl_net(text)
    assert got["unreadable"] == [] and len(got["net_channels"]) == 32
    proxied = [c for c in got["net_channels"] if c["proxy"] is not None]
    assert sorted(set((c["rank"], c["peer"], c["dev"], c["proxy"], c["shared"]) for c in proxied)) == [
        (0, 3, 1, 1, True), (1, 2, 0, 0, True), (2, 1, 1, 3, True), (3, 0, 0, 2, True)]
    # the network each process chose, by 'Using network' alone (without the NET/IB : Using lines)
    only = "\n".join(ln for ln in text.splitlines() if "NET/IB : Using" not in ln)
    run = P.parse_all_reduce_perf(only)
    assert run["transport"] == "IB" and run["transports_by_host"] == {"vm-host40": ["IB"], "vm-host38": ["IB"]}
    assert "vm-host40:34001:34043 [0] NCCL INFO Using network NCCL RDMA Plugin v6" in run["net_lines_by_host"]["vm-host40"]
    # a channel through host memory on that plugin is named by the gate
    line = next(ln for ln in text.splitlines() if "[send] via NET/NCCL RDMA Plugin v6/0(2)/GDRDMA/Shared" in ln)
    bare = P.parse_nccl_net(text.replace(line, line.replace("/GDRDMA", "")))
    assert [(r["rank"], r["host"], r["dev"], r["nics"]) for r in P.no_gdr_rails(bare)] == [
        (3, "vm-host38", 0, ["mlx5_bond_6"])]
    assert P.rail_text(P.no_gdr_rails(bare)[0]) == "NET/NCCL RDMA Plugin v6/0 (mlx5_bond_6)"
    # topo.cc's verdict per NIC names the network the same way
    gdr = "vm-host40:1:2 [0] NCCL INFO NET/NCCL RDMA Plugin v6 : GPU Direct RDMA Enabled for HCA 0 'mlx5_bond_6'"
    assert P.parse_nccl_net(gdr)["gdr_hca"] == {"vm-host40": {"mlx5_bond_6": True}}


def test_open_mpi_tagged_lines_are_read():
    """mpirun --tag-output puts '[jobid,rank]<stdout>:' before each line a
    rank printed, NCCL_DEBUG's lines included (orte iof_base_output.c)."""
    line = "h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA"
    for tag in ("[1,0]<stdout>:", "[12345,3]<stderr>:", "Mon Jan 26 10:50:11 2009[1,0]<stdout>:"):
        (c,) = P.parse_nccl_net(tag + line)["net_channels"]
        assert (c["host"], c["rank"], c["net"], c["gdr"]) == ("h1", 0, "IB", True)


# lines as net.cc prints them at master (5067397c) and 2.12, with every optional part
FORMATS = [
    ("h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA", (0, 8, "IB", 0, None, True, False)),
    ("h1:1:2 [3] NCCL INFO Channel 02/1 : 3[3] -> 11[3] [send] via NET/IB/3(5)/GDRDMA/Shared",
     (3, 11, "IB", 3, 5, True, True)),
    ("h1:1:2 [1] NCCL INFO Channel 04/0 : 9[1] -> 1[1] [receive] via NET/IB/1/GDRDMA(PCI)", (1, 9, "IB", 1, None, True, False)),
    ("h1:1:2 [2] NCCL INFO Channel 01/0 : 2[2] -> 10[2] [send] via NET/IB/2/Shared", (2, 10, "IB", 2, None, False, True)),
    ("h1:1:2 [0] NCCL INFO Channel 00 : 0[87000] -> 8[87000] [send] via NET/IB/0", (0, 8, "IB", 0, None, False, False)),
    ("h1:1:2 [1] NCCL INFO Channel 01/1 : 3[0] -> 0[1] [send] via NET/NCCL RDMA Plugin v6/0(2)/GDRDMA/Shared",
     (3, 0, PLUGIN, 0, 2, True, True)),
    ("h1:1:2 [0] NCCL INFO Channel 01/1 : 1[0] -> 2[1] [receive] via NET/AWS Libfabric/3", (2, 1, "AWS Libfabric", 3, None, False, False)),
]


@pytest.mark.parametrize("line, want", FORMATS)
def test_every_form_of_the_net_part(line, want):
    (c,) = P.parse_nccl_net(line)["net_channels"]
    assert (c["rank"], c["peer"], c["net"], c["dev"], c["proxy"], c["gdr"], c["shared"]) == want


def test_p2p_and_shm_channels_are_not_the_network():
    text = ("h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n"
            "h1:1:2 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n"
            "h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 2[2] via P2P/indirect/1[1]\n")
    got = P.parse_nccl_net(text)
    assert got["net_channels"] == [] and got["unreadable"] == []


def test_a_net_line_not_understood_is_kept_and_fails_the_gate_quoting_it():
    bad = "h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/zero/GDRDMA"
    assert P.parse_nccl_net(bad)["unreadable"] == [bad]
    g = P.nccl_gate(_run([bad]), 100.0, 0.5, require_ib=True)
    assert g["kind"] == "unreadable" and bad in g["reason"]


def _run(extra, busbw=90.0):
    """A two-node nccl-tests run in the current format, NCCL_DEBUG=INFO lines included."""
    head = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
            "validation: 1 graph: 0",
            "#  Rank  0 Group  0 Pid   100 on     node01 device  0 [0x0f] NVIDIA H100 80GB HBM3",
            "#  Rank  1 Group  0 Pid   101 on     node02 device  0 [0x0f] NVIDIA H100 80GB HBM3",
            "node01:100:100 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>",
            "node02:101:101 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.2<0>",
            "node01:100:100 [0] NCCL INFO Using network IB", "node02:101:101 [0] NCCL INFO Using network IB"]
    rows = ["#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
            "  8589934592    2147483648     float     sum      -1    95000   90.42   %.2f      0    95000   90.42   %.2f      0"
            % (busbw, busbw),
            "# Out of bounds values : 0 OK", "# Avg bus bandwidth    : %.2f " % busbw]
    return P.parse_all_reduce_perf("\n".join(head + extra + rows) + "\n")


GDR = ["node01:100:100 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA",
       "node02:101:101 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0/GDRDMA",
       "node02:101:101 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [send] via NET/IB/1/GDRDMA",
       "node01:100:100 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/IB/1/GDRDMA"]


def test_the_gate_passes_a_run_whose_every_rail_used_gdr():
    g = P.nccl_gate(_run(GDR), 100.0, 0.85, require_ib=True, require_gdr=True)
    assert g["passed"], g["reason"]


def test_the_gate_names_the_rank_host_and_nic_that_went_through_host_memory():
    lines = [ln.replace("[send] via NET/IB/1/GDRDMA", "[send] via NET/IB/1") for ln in GDR]
    g = P.nccl_gate(_run(lines), 100.0, 0.85, require_ib=True, require_gdr=True)
    assert g["kind"] == "no_gdr"
    assert g["reason"] == ("GPUDirect RDMA not used: rank 1 (node02 GPU 0) over NET/IB/1 (mlx5_1) without /GDRDMA "
                           "(the data went through host memory)")
    assert [(r["rank"], r["host"], r["nics"]) for r in g["no_gdr"]] == [(1, "node02", ["mlx5_1"])]
    # not asked for: the same run passes on its bandwidth
    assert P.nccl_gate(_run(lines), 100.0, 0.85, require_ib=True)["passed"]


def test_the_real_log_without_gdrdma_fails_the_gate_naming_its_rails():
    parsed = P.parse_nccl_net(body("nccl-mesh-plugin-56.txt"))
    assert [(r["rank"], r["dev"]) for r in P.no_gdr_rails(parsed)] == [(0, 4), (0, 5)]
    assert P.no_gdr_rails(P.parse_nccl_net(body("nccl-707.txt"))) == []
    # sockets are the socket check's, not GPUDirect's
    assert P.no_gdr_rails(P.parse_nccl_net(body("nccl-952.txt"))) == []


def _shape(line):
    """A log line with its host, numbers and device names made neutral."""
    line = re.sub(r"^\S*:(\d+):(\d+) ", "H:0:0 ", line)
    return re.sub(r"\d+", "0", re.sub(r"\b(mlx5|rocep\w*?)_?\d*\b", "nic", line))


def test_the_twins_lines_have_the_shape_of_real_nccl_lines():
    """simlab's channel and device lines against real 2.18+ lines: a NET
    channel with and without /GDRDMA (the real one without is the mesh-plugin
    log's, whose prefix the poster cut; /GDRDMA is net.cc's suffix, as the
    2.7-format log prints it), and NET/IB's device list (the DGX H100 log)."""
    from simlab.tools import formats as F
    real_plain = next(ln for ln in body("nccl-mesh-plugin-56.txt").splitlines() if "[send] via NET/IB/4" in ln)
    twin_plain = F.nccl_channel_line("node01", 10001, 0, 0, 0, 1, "NET/IB/4")
    assert _shape(twin_plain).split(" ", 1)[1] == _shape(real_plain).split(" ", 1)[1]
    twin_gdr = F.nccl_channel_line("node01", 10001, 0, 0, 0, 1, "NET/IB/4/GDRDMA")
    assert twin_gdr == twin_plain + "/GDRDMA"
    assert any(ln.endswith("via NET/IB/5/GDRDMA") for ln in body("nccl-707.txt").splitlines())
    real_using = next(ln for ln in body("nccl-tests-185.txt").splitlines() if "NET/IB : Using" in ln)
    twin_using = F.nccl_net_info_lines("node01", 10001, "IB", devices=["mlx5_10", "mlx5_11"],
                                       oob="enp220s0np0:11.1.128.136<0>")[0]
    assert _shape(twin_using) == _shape(real_using)
    for line in (twin_plain, twin_gdr, twin_using):
        got = P.parse_nccl_net(line)
        assert got["unreadable"] == [] and (got["net_channels"] or got["ib_devices"])
