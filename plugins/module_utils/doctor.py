# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doctor's verdicts: per-layer checks as plain functions over facts the
playbook has gathered, and the report (verdict per host, first failing layer,
upper layers blocked).  Plain Python, unit-tested without Ansible."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.module_utils import sriov, vfio_passthrough

LAYERS = {
    1: "bmc", 2: "bios", 3: "kernel", 4: "nic_firmware", 5: "rdma_drivers", 6: "sriov_vfs",
    7: "roce_switch", 8: "roce_host", 9: "rdma_check", 10: "container_runtime", 11: "kubeadm",
    12: "cni", 13: "multus", 14: "sriov_operator", 15: "nccl_validate",
}
STATUSES = ("pass", "fail", "warn", "blocked", "skipped")


def result(layer, status, reason, evidence=None, remediation=None):
    if status not in STATUSES:
        raise ValueError("status %r is not one of %s" % (status, ", ".join(STATUSES)))
    return {"layer": layer, "name": LAYERS.get(layer, str(layer)), "status": status, "reason": reason,
            "evidence": evidence or [], "remediation": remediation or ""}


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


def check_nic_firmware(checked, pfs, nics, min_fw_version="", left_out=None):
    """Layer 4: the firmware of every selected PF readable, not older than
    ``min_fw_version``, SR-IOV on with enough VFs and nothing pending a reboot
    or differing from the intent. ``checked``: mlx_config's check-mode answer
    for the PFs (``devices``); ``pfs``: the selection ([{pci_address,
    num_vfs}], sriov.firmware_selection); ``nics``: nic_facts' nics;
    ``left_out``: the selected PFs that are not ConnectX
    ([{pci_address, vendor_device}], firmware_selection's ``left_out``). When
    every selected PF is left out the layer does not apply (skipped, shown
    ``-``); when some are, the others are judged and the verdict names those
    left out."""
    result_ = _nic_firmware_result(checked, pfs, nics, min_fw_version)
    return with_left_out(result_, pfs, left_out)


def with_left_out(res, pfs, left_out):
    """A ConnectX-only layer's result given the selected PFs of other vendors
    (``left_out``): 'skipped' as not applicable when they are all there is,
    else ``res`` naming them in its evidence (and in its reason when it
    passes)."""
    if not left_out:
        return res
    text = sriov.not_connectx(left_out)
    if not pfs:
        return result(res["layer"], "skipped", "not applicable: " + text,
                      ["%s (%s): not a ConnectX, this layer does not apply" % (p["pci_address"], p.get("vendor_device"))
                       for p in left_out])
    res = dict(res, evidence=list(res.get("evidence") or []) + ["left out: " + text])
    if res["status"] == "pass":
        res["reason"] = "%s (left out: %s)" % (res["reason"], text)
    return res


def _nic_firmware_result(checked, pfs, nics, min_fw_version=""):
    from ansible_collections.gpufabric.stack.plugins.module_utils.mlx_tools import compare_fw_versions

    checked = checked or {}
    devices = checked.get("devices") or []
    unreadable = [checked["msg"]] if not devices and checked.get("msg") else []
    old, off, few, pending, differs, ok = [], [], [], [], [], []
    for r in devices:
        addr = r.get("device")
        if r.get("failed"):
            unreadable.append(r.get("msg"))
            continue
        if min_fw_version:
            try:
                if compare_fw_versions(r.get("fw_version"), min_fw_version) < 0:
                    old.append("%s: firmware %s older than minimum %s" % (addr, r.get("fw_version"), min_fw_version))
            except ValueError as exc:
                unreadable.append("%s: cannot compare with nic_firmware_min_fw_version %r: %s"
                                  % (addr, min_fw_version, exc))
        for p in r.get("pending") or []:
            pending.append("%s: %s current %s next %s" % (addr, p["name"], p["current"], p["next"]))
        sysfs = next((n.get("sriov") or {} for n in nics or [] if n.get("pci_address") == addr), {})
        wanted = next((int(w["num_vfs"]) for w in pfs or [] if w["pci_address"] == addr), 0)
        if not sysfs.get("capable"):
            off.append("%s: no sriov_totalvfs, SRIOV_EN current %s next %s"
                       % (addr, (r.get("current") or {}).get("SRIOV_EN"), (r.get("next_boot") or {}).get("SRIOV_EN")))
        elif int(sysfs.get("totalvfs") or 0) < wanted:
            few.append("%s: sriov_totalvfs %s, %s wanted" % (addr, sysfs.get("totalvfs"), wanted))
        for c in r.get("changed_params") or []:
            differs.append("%s: %s next boot %s, wanted %s" % (addr, c["name"], c["next"], c["want"]))
        current = r.get("current") or {}
        ok.append("%s: firmware %s, SRIOV_EN %s, NUM_OF_VFS %s"
                  % (addr, r.get("fw_version"), current.get("SRIOV_EN"), current.get("NUM_OF_VFS")))
    fix = "Run the nic_firmware role (tag layer04); it sets the firmware and reboots the node once."
    reboot_fix = "Reboot the node (the nic_firmware role does it when it finds values pending)."
    if not pfs:
        return result(4, "fail", "no PF matches gpufabric_nics", [n["pci_address"] for n in nics or []],
                      "Fix the match entries of gpufabric_nics.")
    if unreadable:
        return result(4, "fail", "NIC firmware unreadable", unreadable,
                      "Install mstflint (or MFT) and check the PCI address.")
    if old:
        return result(4, "fail", old[0].split(": ", 1)[-1], old,
                      "Update the NIC firmware (mstflint -d <pci> -i <image> burn) and reboot.")
    if pending:
        return result(4, "warn", "firmware change pending a reboot: " + pending[0].split(": ", 1)[-1],
                      off + pending, reboot_fix)
    if off:
        return result(4, "fail", "SR-IOV disabled in NIC firmware (no sriov_totalvfs)", off, fix)
    if few or differs:
        return result(4, "fail", "NIC firmware differs from intent", few + differs, fix)
    return result(4, "pass", "SR-IOV enabled in NIC firmware with enough VFs", ok)


def check_rdma_drivers(pfs, nics, loaded, modules, sysfs_root="/sys", vendor=sriov.CONNECTX_VENDOR):
    """Layer 5: every selected PF (``pfs``, the nics gpufabric_nics selects)
    bound to a driver, the ``modules`` loaded (``loaded``: nic_facts'
    modules) and every selected PF of ``vendor`` (ConnectX, whose RDMA
    driver mlx5_ib this layer loads) with an RDMA device. A selected PF of
    another vendor (an igb has no RDMA engine) needs its driver only; the
    evidence names it."""
    kept, others = sriov.split_vendor(pfs, vendor)
    missing = [m for m in modules or [] if m not in (loaded or [])]
    unbound = [p["pci_address"] for p in pfs if p.get("driver") is None]
    no_rdma = [p["pci_address"] for p in kept if p.get("driver") is not None and not p.get("rdma_device")]
    fix = "Run the rdma_drivers role (tag layer05); it loads the modules and binds the PFs."
    if not pfs:
        return result(5, "fail", "no PF matches gpufabric_nics", [n["pci_address"] for n in nics or []],
                      "Fix the match entries of gpufabric_nics.")
    if unbound:
        return result(5, "fail", "PF %s has no driver bound" % unbound[0], ["%s: no driver" % a for a in unbound], fix)
    if missing:
        return result(5, "fail", "module %s not loaded" % missing[0],
                      ["%s/module/%s absent" % (sysfs_root, m) for m in missing], fix)
    if no_rdma:
        return result(5, "fail", "PF %s has no RDMA device" % no_rdma[0],
                      ["%s: driver bound, no infiniband/ entry" % a for a in no_rdma],
                      "Load mlx5_ib (rdma_drivers role); with DOCA-OFED check that its modules match the kernel.")
    evidence = ["%s %s" % (p["pci_address"], p.get("rdma_device")) for p in kept]
    evidence += ["%s (%s): driver %s bound, %s" % (p["pci_address"], p.get("vendor_device"), p.get("driver"),
                                                   "RDMA device %s" % p["rdma_device"] if p.get("rdma_device")
                                                   else "no RDMA device needed (not %s)" % vendor)
                 for p in others]
    reason = "modules loaded, every PF bound with an RDMA device"
    if others:
        reason = "modules loaded, every PF bound, every ConnectX with an RDMA device (%s)" % sriov.not_connectx(
            [sriov.left_out_entry(p) for p in others], vendor)
    return result(5, "pass", reason, evidence)


def check_sriov_vfs(pfs, nics, unit_enabled, udev_rule_present, persist=True, nm_unmanaged=True,
                    uptime_seconds=None, module_probe=None, iommu_active=None, unit_failed=False):
    """Layer 6: VF counts and netdevs as the inventory wants, persistence and
    NetworkManager exclusion in place, trust off where tenants share a NIC;
    VFs meant for VMs on vfio-pci, each alone in its IOMMU group, and vfio-pci
    loadable at the next boot (``module_probe``: nic_facts' modprobe -D)."""
    evidence, warnings = [], []
    missing_after_reboot = []
    passthrough = False
    for entry in nics:
        match = entry.get("match") or {}
        selected = sriov.selected_pfs(pfs, [entry])
        if not selected:
            return result(6, "fail", "no PF matches %s" % _fmt(match),
                          ["PFs: %s" % (", ".join(sriov.describe(p) for p in pfs) or "none")],
                          "fix gpufabric_nics for this host, or check layers 4-5 (firmware, driver)")
        want = int(entry.get("num_vfs") or 0)
        for pf in selected:
            name = pf.get("name") or pf["pci_address"]
            have = pf["sriov"].get("numvfs") or 0
            evidence.append("pf %s: %d VFs (sriov_totalvfs %s), inventory wants %d"
                            % (name, have, pf["sriov"].get("totalvfs"), want))
            try:
                drivers = sriov.vf_drivers("pf %s" % name, entry.get("vf_drivers"), want)
            except sriov.SriovError as exc:
                return result(6, "fail", "gpufabric_nics: %s" % exc, evidence, "fix vf_drivers in gpufabric_nics")
            to_vms = set(sriov.passthrough_indexes(drivers))
            passthrough |= bool(to_vms)
            if have == want:
                failed = _vf_drivers_result(name, pf, to_vms, evidence, module_probe)
                if failed:
                    return failed
                no_netdev = [v["index"] for v in pf.get("vfs", [])
                             if not v.get("netdev") and v["index"] not in to_vms]
                if no_netdev:
                    return result(6, "fail", "pf %s: VF %s without a netdev" % (name, ", ".join(map(str, no_netdev[:8]))),
                                  evidence, "check sriov_drivers_autoprobe and the VF driver binding (%s)"
                                  % _vf_driver_hint(pf))
                trusted = [v for v in (entry.get("vfs") or []) if v.get("trust")]
                defaults_trust = (entry.get("vf_defaults") or {}).get("trust")
                if defaults_trust or trusted:
                    warnings.append("pf %s: trust is on for %s VFs; tenants sharing this NIC can snoop"
                                    % (name, "all" if defaults_trust else len(trusted)))
                continue
            if have == 0 and want > 0:
                missing_after_reboot.append(name)
                continue
            return result(6, "fail", "pf %s: %d VFs, inventory wants %d" % (name, have, want), evidence,
                          "run site.yml --tags layer06 on this host (the count is set 0 then N)")
    if missing_after_reboot:
        names = ", ".join(missing_after_reboot)
        if persist and not unit_enabled:
            return result(6, "fail", "VFs missing after reboot: persistence unit not enabled (pf %s)" % names,
                          evidence + ["gpufabric-sriov.service is not enabled"],
                          "run site.yml --tags layer06 (installs and enables the unit), or "
                          "systemctl enable gpufabric-sriov.service && reboot")
        if persist:
            return result(6, "fail", "VFs missing on pf %s although the persistence unit is enabled" % names,
                          evidence, "journalctl -b -u gpufabric-sriov.service shows why the boot script failed")
        return result(6, "fail", "pf %s: no VFs, inventory wants some" % names, evidence,
                      "run site.yml --tags layer06")
    if passthrough:
        problem = ((module_probe or {}).get(sriov.PASSTHROUGH_DRIVER) or {}).get("problem")
        if problem:
            return result(6, "fail", "vfio-pci cannot be loaded, so the VFs meant for VMs stay on the kernel's "
                          "driver at the next boot: %s" % problem, evidence + [problem],
                          "remove the install or blacklist rule for vfio-pci from /etc/modprobe.d, or install the "
                          "kernel's vfio-pci module (linux-image of the running kernel)")
    if persist and not unit_enabled:
        return result(6, "fail", "VFs present but will be lost on reboot: persistence unit not enabled",
                      evidence, "run site.yml --tags layer06")
    if persist and unit_failed:
        return result(6, "fail", "the VF boot unit gpufabric-sriov.service failed at this boot, so the VFs may lack "
                      "settings the layout wants", evidence + ["gpufabric-sriov.service: ActiveState failed"],
                      "journalctl -b -u gpufabric-sriov.service shows the failing step; run site.yml --tags layer06")
    if nm_unmanaged and not udev_rule_present:
        return result(6, "fail", "NetworkManager may manage the VFs: the NM_UNMANAGED udev rule is missing",
                      evidence, "run site.yml --tags layer06 (installs the rule)")
    if warnings:
        return result(6, "warn", warnings[0], evidence + warnings, "set trust off unless a tenant owns the whole NIC")
    pfs_checked = len([e for e in evidence if e.startswith("pf ") and ", inventory wants " in e])
    return result(6, "pass", "%d PF(s) with the VFs the inventory wants" % pfs_checked, evidence)


def _vf_drivers_result(name, pf, to_vms, evidence, module_probe):
    """The first VF of ``pf`` on the wrong driver for its intent, or a VF
    meant for a VM that a VM cannot have (not alone in its IOMMU group), as a
    failed layer 6 result; None when every VF is where it should be. Adds a
    line per VF meant for a VM to ``evidence``."""
    vfs = pf.get("vfs") or []
    for vf in vfs:
        if vf["index"] in to_vms:
            evidence.append("pf %s VF %d: %s on %s, IOMMU group %s (%s), NUMA node %s" % (
                name, vf["index"], vf.get("pci_address"), vf.get("driver") or "no driver", vf.get("iommu_group"),
                ", ".join(vf.get("iommu_group_devices") or []) or "no IOMMU group", pf.get("numa_node")))
    kept = [v for v in vfs if v["index"] not in to_vms and v.get("driver") == sriov.PASSTHROUGH_DRIVER]
    if kept:
        v = kept[0]
        return result(6, "fail", "pf %s: VF %d (%s) is on vfio-pci, but the inventory keeps it on the kernel's "
                      "driver" % (name, v["index"], v.get("pci_address")), evidence,
                      "run site.yml --tags layer06 on this host (gives it back to %s), or add it to vf_drivers "
                      "if it is meant for a VM" % _vf_driver_hint(pf))
    wrong = [v for v in vfs if v["index"] in to_vms and v.get("driver") != sriov.PASSTHROUGH_DRIVER]
    if wrong:
        v = wrong[0]
        problem = ((module_probe or {}).get(sriov.PASSTHROUGH_DRIVER) or {}).get("problem")
        reason = "pf %s: VF %d (%s) is on %s, but the inventory gives it to VMs (vfio-pci)" % (
            name, v["index"], v.get("pci_address"), v.get("driver") or "no driver")
        if len(wrong) > 1:
            reason += " (and %d more VF(s))" % (len(wrong) - 1)
        if problem:
            return result(6, "fail", "%s: vfio-pci cannot be loaded: %s" % (reason, problem), evidence + [problem],
                          "remove the install or blacklist rule for vfio-pci from /etc/modprobe.d (or install the "
                          "kernel's vfio-pci module), then run site.yml --tags layer06")
        return result(6, "fail", reason, evidence,
                      "run site.yml --tags layer06 on this host (binds it to vfio-pci); journalctl -b -u "
                      "gpufabric-sriov.service shows a failed bind at boot")
    for v in vfs:
        if v["index"] not in to_vms:
            continue
        problem = vfio_passthrough.isolation_problem(dict(v, pf=name, pf_pci_address=pf["pci_address"], vf_index=v["index"]))
        if problem:
            return result(6, "fail", "pf %s: VF %d: %s" % (name, v["index"], problem), evidence,
                          vfio_passthrough.ISOLATION_FIX if v.get("iommu_group") else
                          "put intel_iommu=on or amd_iommu=on on the kernel command line (layer 3) and reboot")
    return None


def _vf_driver_hint(pf):
    """The driver a PF's VFs bind to, as far as sysfs tells: mlx5_core on a
    ConnectX, else the driver one of its VFs has, else the VF's PCI id."""
    if str(pf.get("vendor") or "").lower() == sriov.CONNECTX_VENDOR:
        return "mlx5_core"
    bound = sorted(set(v["driver"] for v in pf.get("vfs") or [] if v.get("driver")))
    if bound:
        return ", ".join(bound)
    return "the driver of its VFs, %s:%s" % (pf.get("vendor"), (pf.get("sriov") or {}).get("vf_device"))


def _fmt(match):
    return ", ".join("%s=%s" % kv for kv in sorted(match.items()) if kv[1])


def verdict(results):
    """Results sorted by layer, with every layer above the first failure
    turned into 'blocked by N'.  Returns (verdict, results)."""
    out, first = [], None
    for r in sorted(results, key=lambda r: r["layer"]):
        if first is not None and r["status"] not in ("skipped",):
            r = dict(r, status="blocked", reason="blocked by layer %d" % first["layer"], remediation="")
        out.append(r)
        if first is None and r["status"] == "fail":
            first = r
    if first is None:
        worst = "warn" if any(r["status"] == "warn" for r in out) else "pass"
        return {"status": worst, "layer": None, "reason": "all checked layers healthy"}, out
    return {"status": "fail", "layer": first["layer"], "reason": first["reason"],
            "remediation": first["remediation"]}, out


def layer_tag(layer):
    """The tag of a layer in site.yml and validate.yml: layer07."""
    return "layer%02d" % int(layer)


def _checked(layers, skip_tags):
    skip = set(skip_tags or [])
    return [(int(entry["layer"]), str(entry["role"])) for entry in layers or []
            if layer_tag(entry["layer"]) not in skip]


def earlier_failure(layers, host_facts, skip_tags=()):
    """The first failing result among layers ([{layer, role}], in the order
    checked) on a host whose facts hold each check's <role>_doctor_result; None
    when none failed.  A layer given to --skip-tags is not looked at.  A result
    left from an earlier check in the same play is never mistaken for this
    one's: every layer before the first failure ran again, and what comes
    after it is not looked at."""
    for _layer, role in _checked(layers, skip_tags):
        res = host_facts.get(role + "_doctor_result")
        if isinstance(res, dict) and res.get("status") == "fail":
            return res
    return None


def layer_results(layers, host_facts, skip_tags=()):
    """One result per layer of layers, in their order: 'skipped' for those
    given to --skip-tags, the check's <role>_doctor_result up to the first
    failing one, 'blocked by N' after it."""
    skip, out, first = set(skip_tags or []), [], None
    for entry in layers or []:
        layer, role = int(entry["layer"]), str(entry["role"])
        if layer_tag(layer) in skip:
            out.append(dict(result(layer, "skipped", "not checked: --skip-tags " + layer_tag(layer)), name=role))
        elif first is not None:
            out.append(dict(result(layer, "blocked", "blocked by layer %d" % first["layer"]), name=role))
        else:
            res = host_facts.get(role + "_doctor_result")
            if not isinstance(res, dict) or "status" not in res:
                res = dict(result(layer, "fail", "the %s check stopped with an error" % role, [],
                                  "see the failed task of this host in the play's output"), name=role)
            out.append(res)
            if res["status"] == "fail":
                first = res
    return out


def unreachable(host, message="host unreachable"):
    return {"status": "fail", "layer": 1, "reason": "%s: %s" % (host, message)}, [
        result(1, "fail", message, [], "check power and the BMC (layer 1), then the connection settings")]
