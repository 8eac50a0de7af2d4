"""The rack twin's NVIDIA driver against real outputs
(tests/unit/fixtures/gpudirect_real/, each with its source): the taint
letters of /sys/module/nvidia, layer 5's reading of them, and kmod's error
when nvidia_peermem cannot be inserted over the inbox ib_core."""

from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_drivers import gpudirect as G
from simlab.tools import modprobe
from test_twin_kernel import make
from test_twin_vfio import make_agent

pytestmark = pytest.mark.layers(5)

REAL = Path(__file__).parent / "fixtures" / "gpudirect_real"


def body(name):
    return (REAL / name).read_text().split("# ---\n", 1)[1]


def twin_tree(tmp_path, faults=None, driver="inbox"):
    _k, tree, _ = make(faults=faults, driver=driver)
    root = tmp_path / "sys"
    tree.materialize(str(root))
    return str(root)


def test_the_closed_driver_reads_as_real_closed_drivers_do(tmp_path):
    version, taint = body("sys-module-nvidia-taint-fedora43-580.142.txt").split()
    assert taint == "POE" and version == "580.142"
    root = twin_tree(tmp_path, faults={"gpu-driver-closed": True})
    twin = Path(root, "module/nvidia/taint").read_text().strip()
    assert twin == taint                                   # the twin prints what a real closed DKMS build shows
    for real in (taint, body("sys-module-nvidia-taint-blog-po.txt").strip()):
        d = tmp_path / real / "module/nvidia"
        d.mkdir(parents=True)
        (d / "taint").write_text(real + "\n")
        assert G.read(str(tmp_path / real), str(tmp_path))["driver"]["open"] is False, real
    # the open module (a licence the kernel does not taint with P), and nvidia_peermem is never P
    root = twin_tree(tmp_path / "open")
    assert Path(root, "module/nvidia/taint").read_text().strip() == "OE"
    r = G.read(root, str(tmp_path))
    assert r["driver"]["open"] is True and len(r["gpus"]) == 8 and r["memory_peers"] is None


def test_memory_peers_only_on_doca_ofed(tmp_path):
    assert G.read(twin_tree(tmp_path, driver="ofed"), str(tmp_path))["memory_peers"] == []


def test_modprobe_nvidia_peermem_over_the_inbox_ib_core_fails_as_kmod_does(tmp_path, monkeypatch, capsys):
    real = body("kmod-insert-unknown-symbol-debian12.txt").strip()
    make_agent(tmp_path, monkeypatch)
    assert modprobe.main(["nvidia-peermem"]) == 1
    assert capsys.readouterr().err.strip() == real.replace("'nft_compat'", "'nvidia_peermem'")


def test_modprobe_nvidia_peermem_over_doca_ofed_loads_it(tmp_path, monkeypatch):
    a = make_agent(tmp_path, monkeypatch)
    a.kernel.ofed = True
    assert modprobe.main(["nvidia_peermem"]) == 0
    assert "nvidia_peermem" in a.kernel.modules
