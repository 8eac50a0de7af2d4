"""The twin's VFIO: vfio-pci as a PCI driver of the twin kernel, kmod's
answers for vfio-pci (held against outputs recorded on Debian 12's 6.1 with
kmod 30: fixtures/kmod_vfio_pci.json), IOMMU groups (and the fault that
puts a PF and its VFs in one), and the GPUs below the NICs' PCIe switches.

The bind rules checked here were seen on the VM nodes' real kernel
(tests/vm/sysfs_sequence.py runs them on both and compares)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import vfio_passthrough as vp
from simlab.node import agent as agent_mod
from simlab.node import boot, hardware, kmod
from simlab.node.kernel import KernelError
from simlab.node.sysfs import Link
from simlab.tools import agentclient, modprobe

pytestmark = pytest.mark.layers(6)

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "kmod_vfio_pci.json").read_text())
REAL_RELEASE = FIXTURE["recorded"]["kernel_release"]
VFIO = {"irqbypass", "vfio", "vfio_iommu_type1", "vfio_virqfd", "vfio_pci_core", "vfio_pci"}
PF0 = "/bus/pci/devices/0000:3b:00.0"
VF0, VF1 = "0000:3b:00.1", "0000:3b:00.2"
VFIO_DIR = "/bus/pci/drivers/vfio-pci"


def make_agent(tmp_path, monkeypatch, iommu=True, faults=None, gpus=8, nics=2):
    monkeypatch.setattr(boot, "LAB", tmp_path)
    hw = hardware.default_spec("node01", 1, nics=nics, gpus=gpus)
    fw = hardware.factory_firmware(hw)
    for nic in hardware.nic_specs(hw):
        for col in ("current", "next"):
            fw[nic.bdf][col].update(SRIOV_EN=1, NUM_OF_VFS=nic.totalvfs)
    cmdline = "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro" + (" intel_iommu=on iommu=pt" if iommu else "")
    a = agent_mod.Agent({"hw": hw, "firmware": fw, "cmdline": cmdline,
                         "bios": {"sriov": True, "iommu": True, "acs": False}, "faults": faults or {}})

    def request(req, sock_path=None, timeout=30):
        return json.loads(json.dumps(a.handle(json.loads(json.dumps(req)))))

    monkeypatch.setattr(agentclient, "request", request)
    return a


@pytest.fixture
def agent(tmp_path, monkeypatch):
    return make_agent(tmp_path, monkeypatch)


def vfs(a, n=2):
    k = a.kernel
    a.tree.write(f"{PF0}/sriov_numvfs", f"{n}\n".encode())
    for vf in k.pfs[0].vfs:
        vf.probed_at = 0
    k.generation += 1


def err(fn, *args):
    with pytest.raises(KernelError) as e:
        fn(*args)
    return errno.errorcode[e.value.errno]


def driver_of(t, bdf):
    e = t.lookup(f"/bus/pci/devices/{bdf}/driver")
    return os.path.basename(e.target) if isinstance(e, Link) else None


def load_vfio(a):
    rc = modprobe.main(["vfio-pci"])
    assert rc == 0


# ------------------------------------------------------------------ kmod
@pytest.mark.parametrize("case", FIXTURE["cases"], ids=lambda c: " ".join(c["argv"]) + (" [install rule]" if
                                                                                          c["modprobe_d"] else ""))
def test_modprobe_answers_as_kmod_did_on_debian_12(case, tmp_path, monkeypatch, capsys):
    a = make_agent(tmp_path, monkeypatch)
    conf = tmp_path / "modprobe.d"
    conf.mkdir()
    if case["modprobe_d"]:
        (conf / "zz-vfio-test.conf").write_text("\n".join(case["modprobe_d"]) + "\n")
    monkeypatch.setattr(modprobe, "CONF_DIRS", (str(conf),))
    a.handle({"op": "driver_modules", "load": case["loaded_before"]})
    delegated = []
    monkeypatch.setattr(modprobe, "_real", lambda argv: delegated.append(argv) or 1)
    rc = modprobe.main(case["argv"][1:])
    out = capsys.readouterr()
    if "not found in directory" in case["stderr"]:
        # a module the twin does not model: the real kmod answers
        assert delegated == [case["argv"][1:]]
        return
    assert not delegated
    real = {k: case[k].replace(REAL_RELEASE, kmod.release()) for k in ("stdout", "stderr")}
    assert (rc, out.out, out.err) == (case["rc"], real["stdout"], real["stderr"])
    if "loaded_after" in case:
        assert set(a.kernel.modules) & VFIO == set(case["loaded_after"])


def test_show_depends_is_computed_from_modules_dep_not_stored():
    """The chain of vfio_pci_core alone follows the same rules (modules.dep
    deepest first, vfio's post softdep after vfio)."""
    lines = modprobe.show_depends("vfio_pci_core", {})
    names = [os.path.basename(line.split()[1]) for line in lines]
    assert names == ["irqbypass.ko", "vfio.ko", "vfio.ko", "vfio_iommu_type1.ko", "vfio_virqfd.ko",
                     "vfio-pci-core.ko"]
    assert modprobe.show_depends("vfio", {"vfio": "/bin/true"})[0] == "install /bin/true "


def test_install_rules_follow_kmod_file_order(tmp_path):
    etc, lib = tmp_path / "etc", tmp_path / "lib"
    etc.mkdir()
    lib.mkdir()
    (lib / "a.conf").write_text("install vfio_pci /bin/true\n")
    (lib / "b.conf").write_text("install vfio-pci /bin/false\n")
    (etc / "b.conf").write_text("# the local file replaces lib's b.conf\n")
    assert modprobe.install_rules((str(etc), str(lib))) == {"vfio_pci": "/bin/true"}
    (etc / "c.conf").write_text("install vfio-pci \\\n  /bin/false --really\n")
    assert modprobe.install_rules((str(etc), str(lib))) == {"vfio_pci": "/bin/false --really"}


# ------------------------------------------------------------------ vfio-pci, the driver
def test_vfio_pci_driver_exists_only_while_its_module_is_loaded(agent):
    t = agent.tree
    assert t.lookup(VFIO_DIR) is None
    load_vfio(agent)
    assert t.listdir(VFIO_DIR) == ["bind", "module", "new_id", "remove_id", "uevent", "unbind"]
    assert t.readlink(f"{VFIO_DIR}/module") == "../../../../module/vfio_pci"
    assert modprobe.main(["-r", "vfio_pci"]) == 0
    assert t.lookup(VFIO_DIR) is None


def test_bind_rules_as_the_kernel_has_them(agent):
    """Seen on Debian 12's 6.1 (igbvf there, mlx5_core here)."""
    t, k = agent.tree, agent.kernel
    vfs(agent)
    load_vfio(agent)
    vf0 = f"/bus/pci/devices/{VF0}"
    assert err(t.write, f"{VFIO_DIR}/bind", VF0.encode()) == "ENODEV"        # no ID table: no match
    assert err(t.write, f"{VFIO_DIR}/unbind", VF0.encode()) == "ENODEV"      # not its device
    t.write(f"{vf0}/driver_override", b"vfio-pci\n")
    assert t.read(f"{vf0}/driver_override") == b"vfio-pci\n"
    assert err(t.write, f"{VFIO_DIR}/bind", VF0.encode()) == "EBUSY"         # matches, but bound
    t.write(f"{vf0}/driver/unbind", VF0.encode())
    assert driver_of(t, VF0) is None and t.lookup("/class/net/enp59s0f0v0") is None
    assert err(t.write, "/bus/pci/drivers/mlx5_core/bind", VF0.encode()) == "ENODEV"  # override names another
    t.write(f"{VFIO_DIR}/bind", f"{VF0}\n".encode())
    assert driver_of(t, VF0) == "vfio-pci"
    assert t.readlink(f"{VFIO_DIR}/{VF0}").endswith(f"/0000:39:01.0/{VF0}")
    assert t.lookup(f"{vf0}/net") is None and t.lookup(f"{vf0}/infiniband") is None
    assert "enp59s0f0v0" not in k.netdevs() and k.rdma_name(k.pfs[0], k.pfs[0].vfs[0]) not in k.rdma_devices()
    assert err(t.write, f"{VFIO_DIR}/bind", VF0.encode()) == "EBUSY"
    assert err(t.write, "/bus/pci/drivers/mlx5_core/unbind", VF0.encode()) == "ENODEV"
    t.write("/bus/pci/drivers_probe", VF0.encode())                          # bound: left alone
    assert driver_of(t, VF0) == "vfio-pci"
    # back: clear the override, leave vfio-pci, drivers_probe finds mlx5_core
    t.write(f"{vf0}/driver_override", b"\n")
    assert t.read(f"{vf0}/driver_override") == b"(null)\n"
    t.write(f"{vf0}/driver/unbind", VF0.encode())
    t.write("/bus/pci/drivers_probe", VF0.encode())
    assert driver_of(t, VF0) == "mlx5_core"
    k.pfs[0].vfs[0].probed_at = 0
    k.generation += 1
    assert t.readlink("/class/net/enp59s0f0v0/device") == f"../../../{VF0}"
    assert err(t.write, "/bus/pci/drivers_probe", b"0000:09:00.0") == "ENODEV"
    assert err(t.write, f"{VFIO_DIR}/bind", b"0000:09:00.0") == "ENODEV"


def test_vfio_pci_needs_an_iommu_group(tmp_path, monkeypatch):
    a = make_agent(tmp_path, monkeypatch, iommu=False)
    t = a.tree
    vfs(a)
    load_vfio(a)
    t.write(f"/bus/pci/devices/{VF0}/driver_override", b"vfio-pci")
    t.write(f"/bus/pci/devices/{VF0}/driver/unbind", VF0.encode())
    assert t.lookup(f"/bus/pci/devices/{VF0}/iommu_group") is None
    assert err(t.write, f"{VFIO_DIR}/bind", VF0.encode()) == "EINVAL"       # vfio_pci_probe fails
    t.write("/bus/pci/drivers_probe", VF0.encode())                          # the probe's error is not the writer's
    assert driver_of(t, VF0) is None


def test_loading_vfio_pci_takes_the_vfs_whose_override_names_it(agent):
    t = agent.tree
    vfs(agent)
    for bdf in (VF0, VF1):
        t.write(f"/bus/pci/devices/{bdf}/driver_override", b"vfio-pci")
        t.write(f"/bus/pci/devices/{bdf}/driver/unbind", bdf.encode())
    t.write("/bus/pci/drivers_probe", VF0.encode())                          # vfio-pci not loaded: nothing binds
    assert driver_of(t, VF0) is None
    load_vfio(agent)
    assert driver_of(t, VF0) == driver_of(t, VF1) == "vfio-pci"
    assert err(t.write, f"{VFIO_DIR}/bind", VF0.encode()) == "EBUSY"
    assert modprobe.main(["-r", "vfio_pci"]) == 0                           # released, the override stays
    assert driver_of(t, VF0) is None and t.read(f"/bus/pci/devices/{VF0}/driver_override") == b"vfio-pci\n"
    load_vfio(agent)
    assert driver_of(t, VF1) == "vfio-pci"


def test_removing_vfs_with_some_on_vfio_pci(agent):
    t = agent.tree
    vfs(agent)
    load_vfio(agent)
    t.write(f"/bus/pci/devices/{VF0}/driver_override", b"vfio-pci")
    t.write(f"/bus/pci/devices/{VF0}/driver/unbind", VF0.encode())
    t.write(f"{VFIO_DIR}/bind", VF0.encode())
    group = os.path.basename(t.readlink(f"/bus/pci/devices/{VF0}/iommu_group"))
    t.write(f"{PF0}/sriov_numvfs", b"0")
    assert t.read(f"{PF0}/sriov_numvfs") == b"0\n"
    assert [n for n in t.listdir(VFIO_DIR) if n.startswith("0000:")] == []
    assert t.lookup(f"/kernel/iommu_groups/{group}") is None
    vfs(agent)
    assert driver_of(t, VF0) == "mlx5_core" and t.read(f"/bus/pci/devices/{VF0}/driver_override") == b"(null)\n"


# ------------------------------------------------------------------ IOMMU groups
def test_each_function_has_its_own_iommu_group(agent):
    t = agent.tree
    vfs(agent)
    groups = {}
    for bdf in t.listdir("/bus/pci/devices"):
        g = os.path.basename(t.readlink(f"/bus/pci/devices/{bdf}/iommu_group"))
        assert t.listdir(f"/kernel/iommu_groups/{g}/devices") == [bdf]
        groups[bdf] = g
    assert len(set(groups.values())) == len(groups)
    g = groups[VF0]
    assert t.read(f"/kernel/iommu_groups/{g}/type") == b"DMA-FQ\n"
    assert t.read(f"/bus/pci/devices/{VF0}/iommu_group/devices/{VF0}/vendor") == b"0x15b3\n"


def test_iommu_shared_group_fault_puts_the_first_pf_and_its_vfs_in_one_group(tmp_path, monkeypatch):
    a = make_agent(tmp_path, monkeypatch, faults={"iommu-shared-group": True})
    t = a.tree
    vfs(a)
    g = os.path.basename(t.readlink(f"{PF0}/iommu_group"))
    assert t.listdir(f"/kernel/iommu_groups/{g}/devices") == ["0000:3b:00.0", VF0, VF1]
    assert os.path.basename(t.readlink(f"/bus/pci/devices/{VF1}/iommu_group")) == g
    other = os.path.basename(t.readlink("/bus/pci/devices/0000:86:00.0/iommu_group"))
    assert t.listdir(f"/kernel/iommu_groups/{other}/devices") == ["0000:86:00.0"]


def test_the_collection_sees_the_shared_group_and_the_gpus(tmp_path, monkeypatch):
    """What layer 6 reads (vfio_passthrough.vf_record) from the materialised
    tree: a VF alone in its group, or sharing the PF's under the fault; the
    GPU below the same PCIe switch first, then the NUMA node's."""
    for faults, expect_alone in (({}, True), ({"iommu-shared-group": True}, False)):
        a = make_agent(tmp_path / str(expect_alone), monkeypatch, faults=faults)
        vfs(a)
        root = tmp_path / ("sys-%s" % expect_alone)
        a.tree.materialize(str(root))
        fs = sysfs_nic.Sysfs(str(root))
        pf = {"pci_address": "0000:3b:00.0", "netdev": "enp59s0f0np0", "numa_node": 0}
        rec = vp.vf_record(fs, pf, {"index": 0, "pci_address": VF0, "driver": "mlx5_core"}, {})
        assert (rec["iommu_group_devices"] == [VF0]) is expect_alone, rec
        assert (vp.isolation_problem(rec) is None) is expect_alone
        assert rec["gpus"][0] == {"pci_address": "0000:3a:00.0", "vendor_device": "10de:2330", "numa_node": 0,
                                  "shares": "pcie_switch"}
        assert [g["shares"] for g in rec["gpus"][1:]] == ["numa_node"] * 3


# ------------------------------------------------------------------ GPUs and PCIe switches
def test_gpus_below_the_nics_pcie_switches(agent):
    t = agent.tree
    devices = t.listdir("/bus/pci/devices")
    gpus = [b for b in devices if t.read(f"/bus/pci/devices/{b}/vendor") == b"0x10de\n"]
    assert len(gpus) == 8
    for bdf in gpus:
        d = f"/bus/pci/devices/{bdf}"
        assert (t.read(f"{d}/device"), t.read(f"{d}/class")) == (b"0x2330\n", b"0x030200\n")
        assert t.lookup(f"{d}/driver") is None                               # no NVIDIA driver in the twin
    # GPU 0 and NIC 0 share one switch: root port 37:01.0, upstream 38:00.0, downstream 39:00.0 / 39:01.0
    assert t.readlink("/bus/pci/devices/0000:3a:00.0") == \
        "../../../devices/pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:00.0/0000:3a:00.0"
    assert t.readlink(PF0).startswith("../../../devices/pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:01.0/")
    for port in ("0000:38:00.0", "0000:39:00.0", "0000:39:01.0"):
        assert t.read(f"/bus/pci/devices/{port}/class") == b"0x060400\n"
        assert driver_of(t, port) == "pcieport"
    # a GPU is on its NIC's NUMA node; those without a NIC alternate sockets
    numa = {b: t.read(f"/bus/pci/devices/{b}/numa_node").strip() for b in gpus}
    assert numa["0000:3a:00.0"] == t.read(f"{PF0}/numa_node").strip() == b"0"
    assert numa["0000:85:00.0"] == t.read("/bus/pci/devices/0000:86:00.0/numa_node").strip() == b"1"
    assert sorted(numa.values()).count(b"0") == 4
    # every NIC path the collection reads is where it was
    assert t.read("/class/net/enp59s0f0np0/device/sriov_totalvfs") == b"16\n"
    assert t.read(f"{PF0}/subsystem/devices/0000:86:00.0/device") == b"0x1021\n"


def test_no_gpus_means_switches_for_the_nics_only(tmp_path, monkeypatch):
    a = make_agent(tmp_path, monkeypatch, gpus=0, nics=1)
    t = a.tree
    assert [t.read(f"/bus/pci/devices/{b}/class").strip() for b in t.listdir("/bus/pci/devices")] == \
        [b"0x060400"] * 3 + [b"0x020000"]
    with pytest.raises(ValueError, match="GPUs need more PCIe switches"):
        hardware.pcie_slots(hardware.default_spec("n", 1, nics=2, gpus=9))
