"""The twin's PCI ``resource`` files: 13 "start end flags" lines as
resource_show() prints them, with IOV BAR 7 zero exactly when sriov_numvfs
would answer ENOMEM (host-interfaces.md 4.2)."""

import errno

import pytest

from simlab.node import hardware
from simlab.node.kernel import Kernel, KernelError
from simlab.node.sysfs import Tree

pytestmark = pytest.mark.layers(6)

PF0 = "/bus/pci/devices/0000:3b:00.0"
REALLOC = "ro intel_iommu=on iommu=pt pci=realloc"


def make(sriov_en=1, bios_sriov=True, faults=None, cmdline="ro intel_iommu=on iommu=pt"):
    hw = hardware.default_spec("node01", 1)
    fw = hardware.factory_firmware(hw)
    for state in fw.values():
        state["current"].update(SRIOV_EN=sriov_en, NUM_OF_VFS=16 if sriov_en else 0)
    k = Kernel(hw, fw, cmdline, {"sriov": bios_sriov, "iommu": True}, faults)
    return Tree(k)


def rows(tree, path=PF0):
    lines = tree.read(f"{path}/resource").decode().splitlines()
    return [tuple(int(x, 16) for x in line.split()) for line in lines]


def test_format_and_bar0():
    r = rows(make())
    assert len(r) == 13
    start, end, flags = r[0]
    assert end - start + 1 == 0x2000000 and flags == 0x14220C
    assert all(row == (0, 0, 0) for row in r[1:7] + r[8:])
    text = make().read(f"{PF0}/resource").decode().splitlines()[0]
    assert text == f"0x{start:016x} 0x{end:016x} 0x{flags:016x}"


def test_iov_bar_holds_every_vf_bar():
    t = make()
    start, end, _ = rows(t)[7]
    assert end - start + 1 == 16 * 0x100000
    t.write(f"{PF0}/sriov_numvfs", b"2\n")
    vf1 = rows(t, "/bus/pci/devices/0000:3b:00.2")
    assert vf1[0][0] == start + 0x100000 and vf1[0][1] == start + 0x200000 - 1


@pytest.mark.parametrize("kwargs", [
    {"sriov_en": 0},                                  # no SR-IOV capability: no IOV BARs at all
    {"bios_sriov": False},                            # BIOS reserved no VF BAR window
    {"faults": {"numvfs-enomem": True}},              # short MMIO window, no pci=realloc
])
def test_iov_bar_zero_when_unassigned(kwargs):
    t = make(**kwargs)
    assert rows(t)[7] == (0, 0, 0)
    assert rows(t)[0][1] > 0


def test_zero_iov_bar_goes_with_enomem_and_realloc_assigns_it():
    t = make(faults={"numvfs-enomem": True})
    with pytest.raises(KernelError) as e:
        t.write(f"{PF0}/sriov_numvfs", b"2\n")
    assert e.value.errno == errno.ENOMEM
    t = make(faults={"numvfs-enomem": True}, cmdline=REALLOC)
    assert rows(t)[7] != (0, 0, 0)
    t.write(f"{PF0}/sriov_numvfs", b"2\n")
