"""perftest from GPU memory: the GPU part of its output read from real runs
(tests/unit/fixtures/perftest_cuda_real, each with its source), and the
bandwidth report after it read as from host memory."""

from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers as P

pytestmark = pytest.mark.layers(9)

REAL = Path(__file__).parent / "fixtures" / "perftest_cuda_real"


def body(name):
    return (REAL / name).read_text().split("# ---\n", 1)[1]


def test_every_real_run_is_read():
    assert sorted(p.name for p in REAL.glob("*.txt")) == sorted(
        ["perftest-126.txt", "perftest-241.txt", "perftest-280.txt", "perftest-326.txt", "perftest-336.txt",
         "perftest-346.txt", "perftest-pr309.txt", "pollara-rocm-write-bw-bidir-client.txt",
         "k8s-t4-write-bw-server-rdmacm-ro-warnings.txt", "openshift-t4-write-bw-client-rdmacm-ro-warnings.txt"])


def test_a_run_that_allocated_gpu_memory():
    got = P.parse_perftest_cuda(body("perftest-241.txt"))
    assert got["cuda"] and got["devices"] == {0: "17:00", 1: "65:00", 2: "CA:00", 3: "E3:00"}
    assert (got["picked"], got["name"], got["buffer"], got["dmabuf"], got["errors"]) == (0, "NVIDIA A30", "gpu", False, [])
    # the bandwidth report's banner after it is still the report's
    assert "RDMA_Write BW Test" in body("perftest-241.txt")


@pytest.mark.parametrize("name, device, peak, average, rate", [
    ("k8s-t4-write-bw-server-rdmacm-ro-warnings.txt", "mlx5_5", 10.68, 10.50, 0.020033),
    ("openshift-t4-write-bw-client-rdmacm-ro-warnings.txt", "mlx5_0", 10.46, 10.42, 0.019882),
])
def test_warnings_inside_the_parameter_block_are_warnings(name, device, peak, average, rate):
    """perftest prints its relaxed-ordering warnings between the block's
    key : value lines; they are warnings, not a header entry."""
    text = body(name)
    got = P.parse_ib_write_bw(text)
    assert got["warnings"] == [
        "WARNING: CPU is not PCIe relaxed ordering compliant.",
        "WARNING: You should disable PCIe RO with `--disable_pcie_relaxed` for both server and client."]
    assert not [k for k in got["header"] if k.upper().startswith("WARNING")]
    assert got["header"]["PCIe relax order"] == "ON" and got["header"]["ibv_wr* API"] == "ON"
    assert (got["device"], got["link_type"], got["gid_index"], got["mtu"], got["rdma_cm"]) == (
        device, "Ethernet", 3, 1024, True)
    assert [(r["bytes"], r["iterations"], r["bw_peak"], r["bw_average"], r["msg_rate_mpps"]) for r in got["rows"]] == [
        (65536, 5000, peak, average, rate)]
    assert got["complete"] and got["gbits"]
    cuda = P.parse_perftest_cuda(text)
    assert (cuda["picked"], cuda["name"], cuda["buffer"], cuda["devices"]) == (0, "Tesla T4", "gpu", {0: "82:00"})


def test_dmabuf_runs_on_h100():
    got = P.parse_perftest_cuda(body("perftest-326.txt"))      # gdb's lines among perftest's are not its
    assert len(got["devices"]) == 8 and got["devices"][7] == "DB:00"
    assert (got["picked"], got["name"], got["buffer"]) == (0, "NVIDIA H100 80GB HBM3", "gpu")
    got = P.parse_perftest_cuda(body("perftest-280.txt"))
    assert got["picked"] == 1 and got["devices"][1] == "29:00" and got["name"] is None   # the excerpt ends there
    rocm = P.parse_perftest_cuda(body("perftest-pr309.txt"))
    assert rocm["dmabuf"] is True and rocm["devices"] == {}
    assert (rocm["picked"], rocm["name"], rocm["buffer"]) == (0, "AMD Instinct MI300X", "gpu")


def test_a_rocm_run_that_allocated_gpu_memory():
    """rocm_memory.c: 'Using ROCm Device with ID: ...' and 'allocated N
    bytes of GPU buffer at ...'; the report after it reads as any other."""
    text = body("pollara-rocm-write-bw-bidir-client.txt")
    got = P.parse_perftest_cuda(text)
    assert (got["cuda"], got["picked"], got["name"], got["buffer"], got["dmabuf"], got["errors"]) == (
        True, 1, "AMD Instinct MI355X", "gpu", False, [])
    report = P.parse_ib_write_bw(text)
    assert report["header"]["Use ROCm memory"] == "ON" and len(report["rows"]) == 23
    r = report["last"]
    assert (r["bytes"], r["bw_peak"], r["bw_average"], r["msg_rate_mpps"]) == (8388608, 698.41, 697.97, 0.010401)
    assert report["best"] is r
    # the line, cut, is not skipped
    with pytest.raises(ValueError, match="'allocated 67108864 bytes of GPU buffer at'"):
        P.parse_perftest_cuda(text.replace("GPU buffer at 0x7f50a2e00000", "GPU buffer at"))


@pytest.mark.parametrize("line,buffer", [
    ("allocated GPU buffer of a 16777216 address at 0x594ca786d9b0 for type CUDA_MEM_DEVICE", "gpu"),
    ("allocated GPU buffer of a 16777216 address at 0x594ca786d9b0 for type CUDA_MEM_MANAGED", "managed"),
    ("allocated GPU buffer of a 16777216 address at 0x594ca786d9b0 for type CUDA_MEM_MALLOC", "host")])
def test_the_memory_type_perftest_names(line, buffer):
    """cuda_memory.c prints the --cuda_mem_type it allocated."""
    assert P.parse_perftest_cuda(line)["buffer"] == buffer


@pytest.mark.parametrize("line,kind,code", [
    ("cuMemAllocManaged error=2", "alloc", 2), ("hipMalloc error=2", "alloc", 2),
    ("cuCtxCreate() error=201", "cuda_init", 201), ("Couldn't initialize ROCm device", "cuda_init", None),
    ("Requested ROCm device 4 but found only 2 device(s)", "no_device", 4),
    ("CUDA driver version 12.4 does not support CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE", "dmabuf_pcie", None)])
def test_more_failures_of_the_gpu_part(line, kind, code):
    """perftest's other messages of a GPU set-up that failed (cuda_memory.c, rocm_memory.c)."""
    assert P.parse_perftest_cuda("initializing CUDA\n" + line + "\n")["errors"] == [
        {"kind": kind, "line": line, "code": code}]


@pytest.mark.parametrize("name,kind,code", [("perftest-126.txt", "mr", None), ("perftest-346.txt", "mr", 14),
                                            ("perftest-336.txt", "options", None)])
def test_failures_of_the_gpu_part(name, kind, code):
    got = P.parse_perftest_cuda(body(name))
    assert got["errors"][0]["kind"] == kind and got["errors"][0]["code"] == code
    text = P.cuda_error_text(got)
    assert got["errors"][0]["line"] in text
    if kind == "mr":
        assert "nvidia-peermem" in text and "DMA-BUF" in text


def test_a_gpu_line_that_cannot_be_read_fails_quoting_it():
    with pytest.raises(ValueError, match="CUDA device 0: PCIe address is 1B"):
        P.parse_perftest_cuda("initializing CUDA\nCUDA device 0: PCIe address is 1B\n")


def test_host_memory_output_has_no_gpu_part():
    assert P.parse_perftest_cuda("************************************\n* Waiting for client to connect... *\n")[
        "cuda"] is False
