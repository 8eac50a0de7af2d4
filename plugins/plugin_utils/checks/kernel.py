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
          "kernel_proc_root", "kernel_pcie_p2p", "kernel_vfio", "kernel_gpudirect_off")


def acs_options(intent):
    """nic_facts' ``acs`` option of this intent (the role reads the same)."""
    return {"p2p": intent.get("kernel_pcie_p2p") or "auto", "vfio": _bool(intent.get("kernel_vfio")),
            "gpudirect_off": _bool(intent.get("kernel_gpudirect_off"))}


def _bool(value):
    return value is True or str(value).strip().lower() in ("true", "yes", "1", "on")


def reads(intent, host):
    return {"nic_facts": {"sysfs_root": intent["kernel_sysfs_root"], "proc_root": intent["kernel_proc_root"],
                          "acs": acs_options(intent)}}


def check(reading, intent, host):
    facts = reading.get("nic_facts") or {}
    return check_kernel(facts, list(intent.get("kernel_args") or []),
                        bool(intent.get("kernel_iommu", True)), bool(intent.get("kernel_verify_iov_bars", True)),
                        str(intent.get("kernel_nic_vendor") or "15b3"), intent["kernel_sysfs_root"],
                        intent["kernel_proc_root"], acs=facts.get("acs"))


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
                 sysfs_root="/sys", proc_root="/proc", acs=None):
    """Layer 3: every wanted argument on the booted command line, the IOMMU
    active when it is asked for, every SR-IOV capable PF with its IOV BARs
    assigned, and ACS on the PCIe switch ports as kernel_pcie_p2p wants it
    (``acs``: nic_facts' plan).  reading: a nic_facts result (cmdline,
    iommus, nics)."""
    cmdline = reading.get("cmdline")
    if cmdline is None:
        return result(3, "fail", "cannot read %s/cmdline" % proc_root, [],
                      "Check kernel_proc_root (%s) for this host." % proc_root)
    booted_args = [a.strip("'\"") for a in cmdline.split()]
    booted = "booted: " + " ".join(booted_args)
    acs = acs or {}
    wanted = list(wanted) + ([acs["arg"]] if acs.get("arg") else [])
    missing = [a for a in wanted if a not in booted_args]
    iommus = list(reading.get("iommus") or [])
    unassigned = kernel_iov_unassigned(reading.get("nics"), nic_vendor) if verify_iov_bars else []
    if missing:
        return result(3, "fail", "flag %s missing from /proc/cmdline" % " ".join(missing),
                      [booted, "wanted: " + " ".join(wanted)]
                      + (["PCIe %s" % e for e in acs.get("evidence") or []] if acs.get("arg") in missing else []),
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
    acs_verdict = check_acs(acs, booted, sysfs_root)
    if acs_verdict:
        return acs_verdict
    reason = "kernel arguments present" + (" and IOMMU active" if iommu else "")
    if acs.get("mode") == "gpudirect":
        reason += "; ACS redirect off between the GPUs and their NICs"
    elif acs.get("mode") == "isolate":
        reason += "; ACS on above the NICs whose VFs go to VMs"
    return result(3, "pass", reason, [booted] + ["iommu: " + i for i in iommus]
                  + ["PCIe %s" % e for e in acs.get("evidence") or []])


def check_acs(acs, booted, sysfs_root="/sys"):
    """Layer 3's verdict on ACS (None when there is nothing to say): a port
    that still sends GPU/NIC peer traffic up to the root complex on a
    GPUDirect node, a disable_acs_redir argument or a port without ACS where
    VFs go to VMs, config space that could not be read."""
    mode = acs.get("mode")
    evidence = [booted] + ["PCIe %s" % e for e in acs.get("evidence") or []]
    if acs.get("unwanted"):
        return result(3, "fail", "%s on the command line of a node whose VFs go to VMs: the PCIe switches let "
                      "peer traffic bypass the IOMMU" % " ".join(acs["unwanted"]), evidence,
                      "Run the kernel role (tag layer03); with gpufabric_pcie_p2p isolate (or auto with vfio-pci "
                      "VFs) it takes the argument away and reboots the node once.")
    if mode == "gpudirect" and acs.get("redirecting"):
        first = acs["redirecting"][0]
        ports = sorted(set(r["port"] for r in acs["redirecting"]))
        return result(3, "fail", "ACS redirects GPU-NIC peer traffic to the root complex on PCIe port %s (GPU %s, "
                      "NIC %s%s; ACSCtl: %s)%s" % (
                          first["port"], first["gpu"], first.get("rdma") or first["nic"],
                          " at %s" % first["nic"] if first.get("rdma") else "", first["acsctl"],
                          " and %d more port(s)" % (len(ports) - 1) if len(ports) > 1 else ""),
                      evidence + ["redirecting: %s (GPU %s, NIC %s)" % (r["port"], r["gpu"], r["nic"])
                                  for r in acs["redirecting"]],
                      "The argument %s is on the command line but does not name this port's device: check "
                      "kernel_extra_args and the BIOS's ACS setting (bios_acs, layer 2)." % acs["arg"]
                      if acs.get("arg") and acs["arg"] in booted.split() else
                      "Run the kernel role (tag layer03); it adds %s and reboots the node once (or set "
                      "gpufabric_pcie_p2p: isolate where the node's devices go to VMs)." % acs.get("arg"))
    if mode == "isolate" and acs.get("open"):
        first = acs["open"][0]
        return result(3, "fail", "ACS off on PCIe port %s above NIC %s, whose VFs go to VMs (ACSCtl: %s): a VM "
                      "could reach the devices beside it" % (first["port"], first["nic"], first["acsctl"]),
                      evidence + ["open: %s above %s" % (o["port"], o["nic"]) for o in acs["open"]],
                      "Enable ACS in the BIOS (bios_acs: true, layer 2) and keep the IOMMU on (layer 3); remove any "
                      "pci=disable_acs_redir= or config_acs= from the boot loader's defaults.")
    if acs.get("unknown"):
        return result(3, "warn", "cannot read ACS of PCIe port %s: config space past 256 bytes needs root"
                      % ", ".join(acs["unknown"]), evidence,
                      "Run validate.yml with become (root reads %s/bus/pci/devices/<port>/config whole)." % sysfs_root)
    return None
