"""Layer 9 from GPU memory: each GPU's rail on both ends of a pair, the run
again with perftest's CUDA options, a shortfall named with the GPU, the NIC
and what the same pair did from host memory; and the twin's ib_write_bw
printing the GPU part as real perftest runs do
(tests/unit/fixtures/perftest_cuda_real)."""

import argparse

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers as P
from ansible_collections.gpufabric.stack.plugins.plugin_utils.rdma_check import rdma_pairs as RP
from simlab.node import hardware
from simlab.tools import perftest
from test_rdma_pairs import NICS, OPTS, cabling, job, perftest_output, pf

pytestmark = pytest.mark.layers(9)

# node n: GPU 0000:3a:00.0 below the switch of 0000:3b:00.0 (rail 0), GPU
# 0000:85:00.0 below 0000:86:00.0 (rail 1), as the twin's GPU nodes
RAILS = [{"gpu": "0000:17:00.0", "index": 0, "nic": None, "kind": "NODE"},
         {"gpu": "0000:3a:00.0", "index": 2, "nic": "0000:3b:00.0", "kind": "PIX"},
         {"gpu": "0000:85:00.0", "index": 4, "nic": "0000:86:00.0", "kind": "PIX"}]


def gpu_links(nodes, gpudirect="dmabuf", rails=RAILS):
    cab = cabling(nodes)
    return [RP.link_check(node, [pf(r, n) for r in range(2)], NICS, cab, rails=rails,
                          gpudirect=gpudirect(node) if callable(gpudirect) else gpudirect)
            for n, node in enumerate(nodes, start=1)]


def test_the_rails_pfs_carry_their_gpu_and_the_mode():
    ln = gpu_links(["node01"])[0]
    assert [(p["pci_address"], p["gpu"], p["gpudirect"]) for p in ln["pfs"]] == [
        ("0000:3b:00.0", {"pci_address": "0000:3a:00.0", "index": 2}, "dmabuf"),
        ("0000:86:00.0", {"pci_address": "0000:85:00.0", "index": 4}, "dmabuf")]
    assert gpu_links(["node01"], gpudirect="off")[0]["pfs"][0]["gpudirect"] is None


def test_pairs_on_gpu_rails_run_from_gpu_memory_in_place_of_host_memory():
    plan = RP.plan_pairs(gpu_links(["node01", "node02"]))
    host_only = RP.plan_pairs(gpu_links(["node01", "node02"]), gpu_memory=False)
    (gpu,), (host,) = plan["rounds"], host_only["rounds"]
    assert [p.get("memory") for p in host] == [None] * 4 and [p["memory"] for p in gpu] == ["cuda"] * 4
    assert [p["id"] for p in gpu] == [p["id"] + ":gpu" for p in host] and {p["round"] for p in gpu} == {1}
    # a node without GPUDirect RDMA, or a NIC no GPU sits beside, runs from host memory
    mixed = RP.plan_pairs(gpu_links(["node01", "node02"], gpudirect=lambda n: None if n == "node02" else "peermem"))
    assert [p.get("memory") for p in mixed["rounds"][0]] == [None] * 4
    one_rail = RP.plan_pairs(gpu_links(["node01", "node02"], rails=RAILS[:2]))
    assert [(p["rail"], p.get("memory")) for p in one_rail["rounds"][0]] == [
        ("leaf1", "cuda"), ("leaf1", "cuda"), ("leaf2", None), ("leaf2", None)]


def test_only_a_pair_short_from_gpu_memory_runs_again_from_host_memory():
    plan = RP.plan_pairs(gpu_links(["node01", "node02", "node03"]))
    (gpu,) = plan["rounds"]
    passed = [RP.pair_result(p, job(perftest_output(392.0))) for p in gpu]
    assert RP.recheck_rounds(plan, passed) == []
    # one pair short, one that could not run: both again from host memory, in one round after the plan's
    short = [RP.pair_result(gpu[0], job(perftest_output(118.0))), RP.pair_result(gpu[1], job("", rc=1, err="x\n"))]
    (again,) = RP.recheck_rounds(plan, short + passed[2:])
    assert [p["id"] for p in again] == sorted([gpu[0]["id"][:-4] + ":host", gpu[1]["id"][:-4] + ":host"])
    assert all("memory" not in p and p["round"] == 2 and not p["blocked"] for p in again)
    assert {(p["client"]["node"], p["server"]["node"], p["port"]) for p in again} == {
        (gpu[i]["client"]["node"], gpu[i]["server"]["node"], gpu[i]["port"]) for i in (0, 1)}
    # a blocked pair, a pair from host memory, a result of another plan: none run again
    blocked = dict(gpu[2], status="blocked")
    other = dict(gpu[3], id="7:leaf9:node01>node02:gpu", status="fail")
    host = dict(RP.plan_pairs(gpu_links(["node01", "node02", "node03"]), gpu_memory=False)["rounds"][0][0],
                status="fail")
    assert RP.recheck_rounds(plan, [blocked, other, host]) == []
    # pairs short in different rounds of the plan keep to rounds of their own
    full = RP.plan_pairs(gpu_links(["node01", "node02", "node03"]), mode="all")
    firsts = [dict(r[0], status="fail") for r in full["rounds"]]
    assert [[p["round"] for p in r] for r in RP.recheck_rounds(full, firsts)] == [[3], [4]]


def test_each_end_runs_from_its_own_gpu():
    gpu = RP.plan_pairs(gpu_links(["node01", "node02"]))["rounds"][0][0]
    server = RP.perftest_argv(gpu, "server", OPTS)
    client = RP.perftest_argv(gpu, "client", OPTS)
    assert server[-2:] == ["--use_cuda_bus_id=0000:3a:00.0", "--use_cuda_dmabuf"]
    assert client[-3:] == ["--use_cuda_bus_id=0000:3a:00.0", "--use_cuda_dmabuf", "172.30.0.2"]
    peer = RP.plan_pairs(gpu_links(["node01", "node02"], gpudirect="peermem"))["rounds"][0][0]
    assert "--use_cuda_dmabuf" not in RP.perftest_argv(peer, "client", OPTS)
    # perftest wants --use_cuda_dmabuf after the CUDA option (its parser error otherwise)
    assert server.index("--use_cuda_dmabuf") > server.index("--use_cuda_bus_id=0000:3a:00.0")


def test_a_shortfall_from_gpu_memory_is_named_with_the_gpu_and_the_host_memory_run():
    plan = RP.plan_pairs(gpu_links(["node01", "node02"]))
    gpu = plan["rounds"][0]
    slow = RP.pair_result(gpu[0], job(perftest_output(118.0)))
    host = RP.recheck_rounds(plan, [slow])[0]
    ok = RP.pair_result(host[0], job(perftest_output(392.0)))
    assert slow["status"] == "fail"
    assert slow["message"].startswith("node01 GPU 0000:3a:00.0 via enp59s0f0np0 -> node02 GPU 0000:3a:00.0 via "
                                      "enp59s0f0np0 (leaf1 swp1 <-> leaf1 swp2, from GPU memory): 118.00 Gb/s is under")
    got = RP.summary(gpu_links(["node01", "node02"])[0], [ok, slow])
    said = [f for f in got["failures"] if "from GPU memory" in f][0]
    assert "from host memory the same pair gives 392.00 Gb/s, meeting the gate: the GPU's path" in said
    assert "layer 5" in said and "layer 3" in said
    # both slow: the fabric first, the run from host memory named before the one from GPU memory (which
    # ran first: the recheck comes after it in the node's pairs)
    lossy = RP.pair_result(host[0], job(perftest_output(100.0)))
    both = RP.summary(gpu_links(["node01", "node02"])[0], [slow, lossy])
    assert both["failures"][0] == lossy["message"] and "fails too: the fabric first" in both["failures"][1]
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import rdma_check as check
    assert check.remediation({"pairs": [slow, lossy]}).startswith("the pair runs lossy")
    assert check.remediation({"pairs": [slow, ok]}).startswith("the GPU's own path onto the fabric")


def test_a_gpu_memory_run_that_stops_names_the_side_and_the_cause():
    gpu = RP.plan_pairs(gpu_links(["node01", "node02"]))["rounds"][0][0]
    server = job("initializing CUDA\nCouldn't allocate MR with error=14\n", rc=1,
                 err="failed to create mr\nFailed to create MR\n")
    got = RP.pair_result(gpu, job("", rc=1, err=" Failed to exchange data between server and clients\n"), server)
    assert got["status"] == "fail"
    assert "server node02: Couldn't allocate MR with error=14: the NIC cannot register GPU memory" in got["message"]


# --------------------------------------------------------------------------- the twin's ib_write_bw
def opts(*argv):
    return perftest.parse(list(argv) + ["-d", "rocep59s0f0"], "ib_write_bw")


def summary(open_driver=True, peermem=False, redirect=False):
    hw = hardware.default_spec("node01", 1)
    slots = hardware.pcie_slots(hw)
    acs = {p: (0x1d if redirect else 0x11) for s in slots for p in (s.gpu_port, s.nic_port)}
    mods = ["mlx5_core", "nvidia"] + (["nvidia_peermem"] if peermem else [])
    return {"hw": hw, "modules": mods, "gpu_driver": {"open": open_driver, "version": "570.133.20"}, "acs": acs}


def test_the_twins_gpu_lines_read_as_real_perftest_runs():
    lines, share = perftest.cuda_setup(opts("--use_cuda_bus_id=0000:3a:00.0", "--use_cuda_dmabuf"), summary())
    got = P.parse_perftest_cuda("\n".join(lines))
    real = P.parse_perftest_cuda((__import__("pathlib").Path(__file__).parent / "fixtures" / "perftest_cuda_real" /
                                  "perftest-326.txt").read_text().split("# ---\n", 1)[1])
    assert set(got) == set(real) and got["name"] == real["name"] == "NVIDIA H100 80GB HBM3"
    assert len(got["devices"]) == len(real["devices"]) == 8
    assert got["devices"][got["picked"]] == "3A:00" and got["buffer"] == "gpu" and got["dmabuf"] and share == 1.0
    # ACS redirect on the GPU's switch port: the twin's share of the path
    assert perftest.cuda_setup(opts("--use_cuda_bus_id=0000:3a:00.0", "--use_cuda_dmabuf"),
                               summary(redirect=True))[1] == perftest.ACS_REDIRECT_SHARE


@pytest.mark.parametrize("argv,state,line", [
    (("--use_cuda_bus_id=0000:3a:00.0", "--use_cuda_dmabuf"), {"open_driver": False}, "DMA-BUF is not supported on this GPU"),
    (("--use_cuda_bus_id=0000:3a:00.0",), {}, "Couldn't allocate MR with error=14"),
    (("--use_cuda_bus_id=0000:99:00.1",), {}, "cuDeviceGetByPCIBusId failed with error: 101; Failed to get PCI Bus ID "
                                              "(0000:99:00.1)"),
])
def test_the_twins_gpu_failures_are_perftests(argv, state, line):
    with pytest.raises(perftest.CudaFailure) as exc:
        perftest.cuda_setup(opts(*argv), summary(**state))
    assert exc.value.err[0] == line
    assert P.parse_perftest_cuda("\n".join(exc.value.out + exc.value.err))["errors"][0]["line"] == line
    # with nvidia_peermem the same run registers GPU memory without DMA-BUF
    assert perftest.cuda_setup(opts("--use_cuda_bus_id=0000:3a:00.0"), summary(peermem=True))[1] == 1.0


def test_dmabuf_without_cuda_is_perftests_parser_error():
    with pytest.raises(perftest.CudaFailure) as exc:
        perftest._gpu(opts("--use_cuda_dmabuf"))
    assert exc.value.err[0] == "CUDA DMA-BUF cannot be used without CUDA"
    assert isinstance(opts(), argparse.Namespace) and perftest._gpu(opts()) is None
