"""The doctor's layer 3 verdict (module_utils doctor.check_kernel, the
filter doctor_kernel): over a nic_facts reading of the twin kernel's sysfs
and over hand-made readings for each way the layer fails."""

import pytest

from ansible_collections.gpufabric.stack.plugins.filter import kernel as kernel_filters
from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor
from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import kernel as kernel_check
from test_twin_kernel import make

pytestmark = pytest.mark.layers(3)

WANTED = ["intel_iommu=on", "iommu=pt"]


def reading(tmp_path, cmdline, **kw):
    """What nic_facts returns for the twin kernel's tree: nics, iommus, cmdline."""
    k, t, _ = make(cmdline=cmdline, **kw)
    root = tmp_path / "sys"
    t.materialize(str(root))
    return {"nics": sysfs_nic.discover(str(root)), "iommus": sysfs_nic.iommus(str(root)), "cmdline": cmdline,
            "sysfs_root": str(root), "proc_root": "/proc"}


def test_a_healthy_node_passes_with_the_booted_line_and_the_iommus_as_evidence(tmp_path):
    r = reading(tmp_path, "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt")
    assert r["iommus"], "the twin with VT-d on and the flag set has an active IOMMU"
    v = kernel_check.check_kernel(r, WANTED, sysfs_root=r["sysfs_root"])
    assert v["layer"] == 3 and v["name"] == "kernel" and v["status"] == "pass"
    assert v["reason"] == "kernel arguments present and IOMMU active"
    assert v["evidence"][0] == "booted: BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt"
    assert v["evidence"][1:] == ["iommu: " + i for i in r["iommus"]]


def test_missing_flags_are_named_in_the_order_wanted(tmp_path):
    r = reading(tmp_path, "BOOT_IMAGE=/vmlinuz ro")
    v = kernel_check.check_kernel(r, WANTED + ["pci=realloc"])
    assert v["status"] == "fail"
    assert v["reason"] == "flag intel_iommu=on iommu=pt pci=realloc missing from /proc/cmdline"
    assert v["evidence"] == ["booted: BOOT_IMAGE=/vmlinuz ro", "wanted: intel_iommu=on iommu=pt pci=realloc"]
    assert "tag layer03" in v["remediation"]


def test_an_inactive_iommu_points_at_the_bios(tmp_path):
    r = reading(tmp_path, "ro intel_iommu=on iommu=pt", bios={"sriov": True, "iommu": False})
    assert r["iommus"] == []
    v = kernel_check.check_kernel(r, WANTED, sysfs_root="/host/sys")
    assert v["status"] == "fail" and "VT-d off in BIOS (layer 2)" in v["reason"]
    assert v["evidence"][1] == "/host/sys/class/iommu is empty"
    # without the IOMMU wanted there is nothing to say about it
    assert kernel_check.check_kernel(r, [], iommu=False)["status"] == "pass"


def test_pfs_without_iov_bars_fail_with_the_fix_that_fits_the_booted_line(tmp_path):
    r = reading(tmp_path, "ro intel_iommu=on iommu=pt", faults={"numvfs-enomem": True})
    pfs = sorted(n["pci_address"] for n in r["nics"])
    v = kernel_check.check_kernel(r, WANTED, sysfs_root="/sys")
    assert v["status"] == "fail"
    assert v["reason"] == ("IOV BARs unassigned on PF %s: not enough MMIO for the VFs (ENOMEM on sriov_numvfs), "
                           "pci=realloc missing from /proc/cmdline" % ", ".join(pfs))
    assert v["evidence"][1:] == ["/sys/bus/pci/devices/%s/resource: IOV BAR lines 7-12 have no address" % a for a in pfs]
    assert "kernel_pci_realloc: true" in v["remediation"]
    # pci=realloc booted and still no room: the BIOS must give more MMIO
    still = dict(r, cmdline=r["cmdline"] + " pci=realloc")
    v = kernel_check.check_kernel(still, WANTED)
    assert v["reason"].endswith("although pci=realloc is set") and "Above 4G" in v["remediation"]
    # not asked to verify, or the PFs are of another vendor: nothing to say
    assert kernel_check.check_kernel(r, WANTED, verify_iov_bars=False)["status"] == "pass"
    assert kernel_check.check_kernel(r, WANTED, nic_vendor="8086")["status"] == "pass"
    assert kernel_check.kernel_iov_unassigned(r["nics"], "0x15B3") == pfs


@pytest.mark.parametrize("nics,unassigned", [
    ([], []),
    ([{"pci_address": "0000:3b:00.0", "vendor_device": "15b3:101d",
       "sriov": {"capable": False, "totalvfs": None, "numvfs": None}}], []),
    ([{"pci_address": "0000:3b:00.1", "vendor_device": "15b3:101d",
       "sriov": {"capable": True, "iov_bars_assigned": None}},
      {"pci_address": "0000:3b:00.0", "vendor_device": "15b3:101d",
       "sriov": {"capable": True, "iov_bars_assigned": False}},
      {"pci_address": "0000:18:00.0", "vendor_device": "8086:1592",
       "sriov": {"capable": True, "iov_bars_assigned": False}}], ["0000:3b:00.0"]),
])
def test_only_capable_pfs_of_the_vendor_known_to_lack_bars_count(nics, unassigned):
    # iov_bars_assigned None (resource unreadable) is not evidence of a missing window
    assert kernel_filters.kernel_iov_unassigned(nics, "15b3") == unassigned


def test_an_unreadable_command_line_is_a_failing_verdict_not_an_error():
    v = kernel_check.check_kernel({"nics": [], "iommus": [], "cmdline": None}, WANTED, proc_root="/host/proc")
    assert v["status"] == "fail" and v["reason"] == "cannot read /host/proc/cmdline"
    assert "kernel_proc_root" in v["remediation"]
