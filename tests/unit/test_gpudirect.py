"""Layer 5's GPUDirect RDMA (module_utils/rdma_drivers/gpudirect.py): what
sysfs tells of the GPUs, the NVIDIA driver and the peer-memory API, the mode
that gives, and layer 5's verdict with it."""

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_drivers import gpudirect as G
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import rdma_drivers as check

pytestmark = pytest.mark.layers(5)

GPU = "0000:1a:00.0"


def tree(tmp_path, gpus=1, driver="OE", peermem=False, memory_peers=False, release="6.1.0-28-amd64"):
    """A sysfs and proc tree as the kernel lays them out: the GPU as a PCI
    function (vendor 0x10de, class 0x030200), module/<name>/{version,taint}."""
    sys_, proc = tmp_path / "sys", tmp_path / "proc"
    for i in range(gpus):
        d = sys_ / "bus/pci/devices" / ("0000:%02x:00.0" % (0x1a + i))
        d.mkdir(parents=True)
        (d / "vendor").write_text("0x10de\n")
        (d / "class").write_text("0x030200\n")
        (d / "device").write_text("0x2330\n")
        (d / "numa_node").write_text("0\n")
    nic = sys_ / "bus/pci/devices/0000:3b:00.0"
    nic.mkdir(parents=True)
    (nic / "vendor").write_text("0x15b3\n")
    (nic / "class").write_text("0x020000\n")
    (sys_ / "module/mlx5_core").mkdir(parents=True)
    (sys_ / "kernel/mm").mkdir(parents=True)
    if driver is not None:
        (sys_ / "module/nvidia").mkdir()
        (sys_ / "module/nvidia/version").write_text("550.127.05\n")
        (sys_ / "module/nvidia/taint").write_text(driver + "\n")
    if peermem:
        (sys_ / "module/nvidia_peermem").mkdir()
        (sys_ / "module/nvidia_peermem/version").write_text("550.127.05\n")
    if memory_peers:
        (sys_ / "kernel/mm/memory_peers").mkdir()
    if release is not None:
        (proc / "sys/kernel").mkdir(parents=True)
        (proc / "sys/kernel/osrelease").write_text(release + "\n")
    return str(sys_), str(proc)


def read(tmp_path, **kw):
    sys_, proc = tree(tmp_path, **kw)
    return G.read(sys_, proc), sys_


def test_the_read_finds_the_gpus_and_tells_the_open_driver(tmp_path):
    r, _ = read(tmp_path, gpus=2)
    assert [g["pci_address"] for g in r["gpus"]] == [GPU, "0000:1b:00.0"]
    assert r["driver"] == {"loaded": True, "version": "550.127.05", "taint": "OE", "open": True}
    assert r["peermem"] == {"loaded": False, "version": None} and r["memory_peers"] is None
    assert r["release"] == "6.1.0-28-amd64"


def test_open_driver_on_a_recent_kernel_is_dmabuf_with_nothing_to_load(tmp_path):
    r, root = read(tmp_path)
    p = G.plan(r, "auto", root)
    assert (p["mode"], p["modules"], p["load"], p["problems"]) == ("dmabuf", [], [], [])
    assert G.check(r, "auto", root)[:2] == ("pass", "GPUDirect RDMA by DMA-BUF")


def test_closed_driver_with_doca_is_peermem_and_loads_it(tmp_path):
    r, root = read(tmp_path, driver="POE", memory_peers=True)
    assert r["driver"]["open"] is False
    p = G.plan(r, "auto", root)
    assert (p["mode"], p["modules"], p["load"]) == ("peermem", ["nvidia_peermem"], ["nvidia_peermem"])
    status, reason, _ev, fix = G.check(r, "auto", root)
    assert (status, reason) == ("fail", "GPUDirect RDMA by nvidia-peermem, and nvidia_peermem is not loaded")
    assert "layer05" in fix
    loaded, root2 = read(tmp_path / "b", driver="POE", memory_peers=True, peermem=True)
    assert G.plan(loaded, "auto", root2)["load"] == [] and G.check(loaded, "auto", root2)[0] == "pass"


def test_neither_way_names_both_reasons(tmp_path):
    r, root = read(tmp_path, driver="POE")
    p = G.plan(r, "auto", root)
    assert p["mode"] is None
    assert p["problems"][0]["reason"] == (
        "no GPUDirect RDMA: the closed GPU kernel module (taint 'POE') has no DMA-BUF export; the RDMA core has no "
        "peer-memory API (the inbox ib_core; nvidia-peermem needs DOCA-OFED or MLNX_OFED)")
    old, root2 = read(tmp_path / "b", release="5.10.0-30-amd64", memory_peers=False)
    assert "kernel 5.10.0-30-amd64 is older than 5.12" in G.plan(old, "dmabuf", root2)["problems"][0]["reason"]


def test_an_insisted_mode_fails_where_the_node_lacks_it(tmp_path):
    r, root = read(tmp_path)                       # open driver, inbox: DMA-BUF only
    assert G.plan(r, "dmabuf", root)["mode"] == "dmabuf"
    p = G.plan(r, "peermem", root)
    assert p["mode"] is None and p["problems"][0]["reason"].startswith("no GPUDirect RDMA by nvidia-peermem: ")
    assert G.plan(r, "off", root)["mode"] == "off"
    with pytest.raises(ValueError, match="gpufabric_gpudirect is 'sometimes'"):
        G.plan(r, "sometimes", root)


def test_no_gpu_is_not_applicable_and_no_driver_yet_is_a_warning(tmp_path):
    r, root = read(tmp_path, gpus=0, driver=None)
    assert G.check(r, "auto", root)[:2] == ("pass", "no NVIDIA GPU on the node: GPUDirect RDMA not applicable")
    r, root = read(tmp_path / "b", driver=None)
    status, reason, _ev, _fix = G.check(r, "auto", root)
    assert status == "warn" and reason.startswith("the NVIDIA GPU driver is not loaded")
    # a release that cannot be read is no reason against DMA-BUF
    r, root = read(tmp_path / "c", release=None)
    assert G.plan(r, "auto", root)["mode"] == "dmabuf" and "kernel (release not read)" in G.plan(r, "auto", root)["evidence"]


def test_layer_5_carries_the_mode_and_fails_on_no_way():
    passing = {"layer": 5, "name": "rdma_drivers", "status": "pass", "reason": "modules loaded, every PF bound with "
               "an RDMA device; inbox stack", "evidence": ["stack: inbox"], "remediation": ""}
    dmabuf = {"gpus": [{"pci_address": GPU}], "driver": {"loaded": True, "version": "550", "taint": "OE", "open": True},
              "peermem": {"loaded": False}, "memory_peers": None, "release": "6.1.0"}
    got = check.with_gpudirect(passing, dmabuf, "auto")
    assert got["status"] == "pass" and got["reason"].endswith("; inbox stack; GPUDirect RDMA by DMA-BUF")
    assert got["evidence"][-1] == "stack: inbox" and got["evidence"][0].startswith("GPUDirect: 1 NVIDIA GPU(s)")
    closed = dict(dmabuf, driver=dict(dmabuf["driver"], taint="POE", open=False))
    got = check.with_gpudirect(passing, closed, "auto")
    assert got["status"] == "fail" and got["reason"].startswith("no GPUDirect RDMA: the closed GPU kernel module")
    assert "DOCA-OFED" in got["remediation"]
    assert check.with_gpudirect(passing, {"gpus": []}, "auto")["reason"].endswith(
        "; no NVIDIA GPU on the node: GPUDirect RDMA not applicable")
