# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 3, the kernel: the wanted arguments on the booted command line, the
IOMMU active when asked for, the IOV BARs of every SR-IOV capable PF
assigned. Reads the node's nic_facts (cmdline, iommus, nics)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import result


LAYER = 3
INTENT = ("kernel_args", "kernel_iommu", "kernel_verify_iov_bars", "kernel_nic_vendor", "kernel_sysfs_root",
          "kernel_proc_root")


def reads(intent, host):
    return {"nic_facts": {"sysfs_root": intent["kernel_sysfs_root"], "proc_root": intent["kernel_proc_root"]}}


def check(reading, intent, host):
    return check_kernel(reading.get("nic_facts") or {}, list(intent.get("kernel_args") or []),
                        bool(intent.get("kernel_iommu", True)), bool(intent.get("kernel_verify_iov_bars", True)),
                        str(intent.get("kernel_nic_vendor") or "15b3"), intent["kernel_sysfs_root"],
                        intent["kernel_proc_root"])


def kernel_iov_unassigned(nics, nic_vendor):
    """The PCI addresses of the SR-IOV capable PFs of vendor nic_vendor whose
    IOV BARs the kernel could not assign (nic_facts' sriov.iov_bars_assigned
    false): writing their sriov_numvfs answers ENOMEM."""
    prefix = "%s:" % str(nic_vendor).lower().replace("0x", "")
    return sorted(n["pci_address"] for n in nics or []
                  if str(n.get("vendor_device") or "").lower().startswith(prefix)
                  and (n.get("sriov") or {}).get("capable")
                  and (n.get("sriov") or {}).get("iov_bars_assigned") is False)


def check_kernel(reading, wanted, iommu=True, verify_iov_bars=True, nic_vendor="15b3",
                 sysfs_root="/sys", proc_root="/proc"):
    """Layer 3: every wanted argument on the booted command line, the IOMMU
    active when it is asked for, and every SR-IOV capable PF with its IOV
    BARs assigned.  reading: a nic_facts result (cmdline, iommus, nics)."""
    cmdline = reading.get("cmdline")
    if cmdline is None:
        return result(3, "fail", "cannot read %s/cmdline" % proc_root, [],
                      "Check kernel_proc_root (%s) for this host." % proc_root)
    booted_args = cmdline.split()
    booted = "booted: " + " ".join(booted_args)
    missing = [a for a in wanted if a not in booted_args]
    iommus = list(reading.get("iommus") or [])
    unassigned = kernel_iov_unassigned(reading.get("nics"), nic_vendor) if verify_iov_bars else []
    if missing:
        return result(3, "fail", "flag %s missing from /proc/cmdline" % " ".join(missing),
                      [booted, "wanted: " + " ".join(wanted)],
                      "Run the kernel role (tag layer03); it edits the boot loader and reboots the node once.")
    if iommu and not iommus:
        return result(3, "fail", "IOMMU not active (no /sys/class/iommu entries) although the flag is set: "
                      "VT-d off in BIOS (layer 2)", [booted, sysfs_root + "/class/iommu is empty"],
                      "Enable VT-d/AMD-Vi with the bios role (tag layer02), which resets the node.")
    if unassigned:
        realloc = "pci=realloc" in booted_args
        return result(3, "fail", "IOV BARs unassigned on PF %s: not enough MMIO for the VFs (ENOMEM on sriov_numvfs)%s"
                      % (", ".join(unassigned), " although pci=realloc is set" if realloc
                         else ", pci=realloc missing from /proc/cmdline"),
                      [booted] + ["%s/bus/pci/devices/%s/resource: IOV BAR lines 7-12 have no address" % (sysfs_root, a)
                                  for a in unassigned],
                      "Enable Above 4G decoding / a larger MMIO window in the BIOS, or lower NUM_OF_VFS (layer 4)."
                      if realloc else
                      "Set kernel_pci_realloc: true for this host and run the kernel role (tag layer03); it adds "
                      "pci=realloc and reboots the node once. Or enable Above 4G decoding in the BIOS.")
    return result(3, "pass", "kernel arguments present" + (" and IOMMU active" if iommu else ""),
                  [booted] + ["iommu: " + i for i in iommus])
