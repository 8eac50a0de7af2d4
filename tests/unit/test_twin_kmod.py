"""The twin's kmod (simlab/tools/modprobe.py, modinfo.py, over the module
table simlab/node/kmod.py) held against what kmod 30 printed for Debian 12's
6.1 kernel: ``modprobe -D`` of the RDMA, ConnectX and bridge modules and
``modinfo`` of mlx5_core, mlx5_ib and ib_core (fixtures/kmod_modules.json,
fixtures/driver_stack_real/*-6.1.0-50-simlab-vm.txt, recorded on the VM
image's own kmod), and DOCA-OFED's mlx5_core against the published
MLNX_OFED 24.10 capture. The VM tier runs the same commands live
(tests/vm/test_vm_twin_faithful.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_drivers import driver_stack
from simlab.node import kmod
from simlab.tools import modinfo, modprobe
from tests.unit.test_tool_twins import make_state, run
from tests.unit.test_twin_vfio import make_agent

pytestmark = pytest.mark.layers(5)

FIXTURES = Path(__file__).parent / "fixtures"
RECORDED = json.loads((FIXTURES / "kmod_modules.json").read_text())
REAL_RELEASE = RECORDED["recorded"]["kernel_release"]
# what differs by the machine and the key, not by the module: the signer,
# its key and the signature's bytes (their layout is compared)
_KEY_VALUE = re.compile(r"(?m)^(signer|sig_key):( +).*$")
_HEX = re.compile(r"[0-9A-F]{2}")


def _keyless(text: str) -> str:
    return _HEX.sub("XX", _KEY_VALUE.sub(r"\1:\2KEY", text))


def _capture(name: str) -> str:
    return (FIXTURES / "driver_stack_real" / name).read_text().partition("# ---\n")[2]


@pytest.fixture
def inbox(tmp_path, monkeypatch):
    a = make_agent(tmp_path, monkeypatch)
    monkeypatch.setattr(kmod, "release", lambda: REAL_RELEASE)
    return a


@pytest.mark.parametrize("case", RECORDED["cases"], ids=lambda c: " ".join(c["argv"]))
def test_the_twins_kmod_answers_as_kmod_did_on_debian_12(case, inbox, monkeypatch, capsys):
    delegated = []
    tool = modprobe if case["argv"][0] == "modprobe" else modinfo
    monkeypatch.setattr(tool, "_real", lambda argv: delegated.append(argv) or case["rc"])
    rc, out, err = run(capsys, tool, case["argv"][1:])
    if case["rc"] and case["stderr"]:
        # a module the twin does not model, or a command line kmod refuses:
        # the real tool answers, with the node's own release
        assert delegated == [case["argv"][1:]] and (out, err) == ("", "")
        return
    assert not delegated
    assert (rc, out, err) == (case["rc"], case["stdout"], case["stderr"])


@pytest.mark.parametrize("module", modinfo.MODULES)
def test_modinfo_prints_the_inbox_module_line_for_line(module, inbox, capsys):
    """Every line of Debian 12's 6.1.0-50 module, in kmod's order, the
    signature's lines after two tabs, trailing spaces kept; and the parser
    reads the twin's text as it reads the capture."""
    real = _capture(f"modinfo-{module}-inbox-debian12-6.1.0-50-simlab-vm.txt")
    rc, out, _ = run(capsys, modinfo, [module])
    assert rc == 0 and _keyless(out) == _keyless(real)
    mine, theirs = driver_stack.parse_modinfo(out, module), driver_stack.parse_modinfo(real, module)
    assert {k: v for k, v in mine.items() if k not in ("signer", "sig_key", "signature")} == \
        {k: v for k, v in theirs.items() if k not in ("signer", "sig_key", "signature")}
    assert driver_stack.disk_stack(mine) == "inbox"


def test_modinfo_of_doca_ofeds_mlx5_core_has_the_published_lines(tmp_path, monkeypatch, capsys):
    """MLNX_OFED 24.10's mlx5_core as published (its trailing space and the
    signature's tabs lost in publishing): the same fields in the same order
    and the same values, the signature's bytes aside."""
    from simlab.node import agent as agent_mod, boot
    from simlab.tools import agentclient
    monkeypatch.setattr(boot, "LAB", tmp_path)
    a = agent_mod.Agent(make_state(driver="ofed"))
    monkeypatch.setattr(agentclient, "request", lambda req, sock_path=None, timeout=30: a.handle(req))
    monkeypatch.setattr(kmod, "release", lambda: "6.1.0-31-amd64")
    rc, out, _ = run(capsys, modinfo, ["mlx5_core"])
    real = _capture("modinfo-mlx5_core-mlnxofed-24.10-debian12.txt")

    def lines(text):          # the signature's bytes aside, every value compared
        text = re.sub(r"(?m)^(signature: +|\t\t| {16})((?:[0-9A-F]{2}:)*[0-9A-F]{2}:?)$",
                      lambda m: "\t\t" + _HEX.sub("XX", m.group(2)), text)
        return [ln.rstrip() for ln in text.splitlines()]
    assert rc == 0 and lines(out) == lines(real)
    assert driver_stack.disk_stack(driver_stack.parse_modinfo(out, "mlx5_core")) == "ofed"


def test_the_module_table_is_modules_dep_as_recorded():
    """simlab.node.kmod's files and their modules.dep lists are the
    recorded kernel's, for every module of Debian's kernel the twin models."""
    recorded = dict(RECORDED["recorded"]["modules_dep"])
    recorded.update(json.loads((FIXTURES / "kmod_vfio_pci.json").read_text())["recorded"]["modules_dep"])
    by_file = {f: m for m, (f, _) in kmod.MODULES_DEP.items()}
    for module, (path, deps) in kmod.MODULES_DEP.items():
        if path.startswith("updates/dkms/"):
            continue              # the NVIDIA driver: DKMS's, not Debian's kernel's
        assert path in recorded, module
        assert " ".join(kmod.MODULES_DEP[d][0] for d in deps) == recorded[path], module
    assert set(recorded) <= set(by_file)


def test_a_booted_node_has_what_mlx5_ib_and_rdma_ucm_load(inbox):
    assert inbox.kernel.modules >= {"mlx5_core", "mlxfw", "psample", "pci_hyperv_intf", "ib_core", "ib_uverbs",
                                    "mlx5_ib", "configfs", "ib_cm", "iw_cm", "rdma_cm", "rdma_ucm"}


def test_removing_mlx5_ib_makes_kmods_one_pass_over_its_list(inbox, capsys):
    """One pass over modules.dep's list, last first, each removed if nothing
    loaded needs it at its turn, not again after (the rule kmod_vfio_pci.json
    recorded: vfio_pci takes vfio_pci_core, not vfio_virqfd): rdma_cm goes
    with rdma_ucm, the modules rdma_cm needed stay; mlx5_core goes with
    mlx5_ib, the modules it needed stay."""
    rc, out, _ = run(capsys, modprobe, ["-r", "-v", "rdma_ucm"])
    assert rc == 0 and out == "rmmod rdma_ucm\nrmmod rdma_cm\n"
    assert {"ib_cm", "iw_cm", "configfs"} <= inbox.kernel.modules
    rc, out, _ = run(capsys, modprobe, ["-r", "-v", "mlx5_ib"])
    assert rc == 0 and out == "rmmod mlx5_ib\nrmmod ib_uverbs\nrmmod mlx5_core\n"
    assert {"psample", "mlxfw", "pci_hyperv_intf", "ib_core"} <= inbox.kernel.modules
    assert not any(p.bound for p in inbox.kernel.pfs)
    rc, out, _ = run(capsys, modprobe, ["-v", "mlx5_ib"])
    assert rc == 0 and out == "".join(f"insmod /lib/modules/{REAL_RELEASE}/{kmod.MODULES_DEP[m][0]} \n"
                                      for m in ("ib_uverbs", "mlx5_core", "mlx5_ib"))
    assert all(p.bound for p in inbox.kernel.pfs)


def test_the_nvidia_modules_are_on_disk_only_with_the_driver(tmp_path, monkeypatch, capsys):
    """The NVIDIA driver's DKMS modules: -D prints their chain where the
    driver is installed; on a node without it kmod finds the module asked
    for nowhere."""
    with_gpu = make_agent(tmp_path / "a", monkeypatch)
    monkeypatch.setattr(kmod, "release", lambda: REAL_RELEASE)
    rc, out, _ = run(capsys, modprobe, ["-D", "nvidia-peermem"])
    assert rc == 0 and out == "".join(f"insmod /lib/modules/{REAL_RELEASE}/{f} \n" for f in (
        "kernel/drivers/infiniband/core/ib_core.ko", "updates/dkms/nvidia.ko", "updates/dkms/nvidia-peermem.ko"))
    assert with_gpu.kernel.gpu_driver
    make_agent(tmp_path / "b", monkeypatch, gpus=0)
    for argv in (["-D", "nvidia_peermem"], ["nvidia_peermem"]):
        rc, out, err = run(capsys, modprobe, argv)
        assert (rc, out, err) == (1, "", "modprobe: FATAL: Module nvidia_peermem not found in directory "
                                         f"/lib/modules/{REAL_RELEASE}\n")


def test_on_a_doca_ofed_node_its_modules_are_dkms_files(tmp_path, monkeypatch, capsys):
    """DOCA-OFED's modules are under updates/dkms (modinfo's filename and
    modprobe -v's insmod lines agree); its modules.dep is not recorded, so
    -D of an RDMA module says the twin does not model it, where -D of
    vfio-pci, which OFED does not ship, prints Debian's chain."""
    from simlab.node import agent as agent_mod, boot
    from simlab.tools import agentclient
    monkeypatch.setattr(boot, "LAB", tmp_path)
    a = agent_mod.Agent(make_state(driver="ofed"))
    monkeypatch.setattr(agentclient, "request", lambda req, sock_path=None, timeout=30: a.handle(req))
    monkeypatch.setattr(kmod, "release", lambda: REAL_RELEASE)
    rc, out, _ = run(capsys, modinfo, ["-n", "mlx5_ib"])
    assert (rc, out) == (0, f"/lib/modules/{REAL_RELEASE}/updates/dkms/mlx5_ib.ko\n")
    run(capsys, modprobe, ["-r", "mlx5_ib"])
    rc, out, _ = run(capsys, modprobe, ["-v", "mlx5_ib"])
    assert rc == 0 and f"insmod /lib/modules/{REAL_RELEASE}/updates/dkms/mlx5_ib.ko \n" in out
    rc, out, err = run(capsys, modprobe, ["-D", "mlx5_ib"])
    assert (rc, out) == (2, "") and "does not model -D of a DOCA-OFED node's RDMA modules" in err
    rc, out, _ = run(capsys, modprobe, ["-D", "vfio-pci"])
    assert rc == 0 and out.endswith(f"insmod /lib/modules/{REAL_RELEASE}/kernel/drivers/vfio/pci/vfio-pci.ko \n")


SEQUENCE_MODULES = {"configfs", "ib_cm", "ib_core", "ib_uverbs", "iw_cm", "mlx5_core", "mlx5_ib", "mlxfw",
                    "pci_hyperv_intf", "psample", "rdma_cm", "rdma_ucm", "overlay"}


def test_loading_and_removing_in_turn_as_kmod_did_on_a_vm_node(inbox, monkeypatch, capsys):
    """kmod 30 on a VM node, loading and removing the ConnectX and RDMA
    modules in turn (kmod_modules.json's sequence): several modules named
    at once, one in use stopping the run after what was removed, -a, -q,
    -n, --first-time, configfs held by its mount, parameters on the insmod
    line; the twin prints the same and ends each step with the same modules
    loaded."""
    monkeypatch.setattr(modprobe, "_real", lambda argv: pytest.fail(f"real modprobe called: {argv}"))
    for case in RECORDED["sequence"]:
        assert inbox.kernel.modules & SEQUENCE_MODULES == set(case["loaded_before"]) or case is RECORDED["sequence"][0]
        got = run(capsys, modprobe, case["argv"][1:])
        want = (case["rc"], case["stdout"], case["stderr"])
        assert got == want, " ".join(case["argv"])
        assert inbox.kernel.modules & SEQUENCE_MODULES == set(case["loaded_after"]), " ".join(case["argv"])
