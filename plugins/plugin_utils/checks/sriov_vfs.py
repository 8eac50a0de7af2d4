# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 6, the SR-IOV VFs: counts and netdevs as the inventory wants,
persistence and NetworkManager exclusion in place, trust off where tenants
share a NIC; VFs meant for VMs on vfio-pci, each alone in its IOMMU group,
vfio-pci loadable at the next boot. Reads the node's nic_facts (nics, the
boot unit, the udev rule, modprobe -D vfio-pci)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov, vfio_passthrough
from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import result


LAYER = 6
INTENT = ("sriov_vfs_nics", "sriov_vfs_sysfs_root", "sriov_vfs_persist", "sriov_vfs_unit_name",
          "sriov_vfs_nm_unmanaged", "sriov_vfs_udev_rule_path", "sriov_vfs_wait_timeout", "sriov_vfs_passthrough_dir",
          "sriov_vfs_protected_addresses", "sriov_vfs_boot_paths", "sriov_vfs_boot_units")


def _passthrough(nics):
    return any(d.get("driver") == sriov.PASSTHROUGH_DRIVER
               for e in nics or [] for d in e.get("vf_drivers") or [] if isinstance(d, dict))


def module_options(intent):
    """The sriov_vf module's options (but sysfs_root and the inspected files)
    as the role's task gives them (roles/sriov_vfs/tasks/main.yml), with the
    module's defaults for those the task leaves out."""
    return {"pfs": [sriov.module_pfs(e) for e in intent.get("sriov_vfs_nics") or []],
            "wait_timeout": int(intent.get("sriov_vfs_wait_timeout") or 120), "ip_command": "ip",
            "nm_unmanaged_rule": intent["sriov_vfs_udev_rule_path"] if intent.get("sriov_vfs_nm_unmanaged", True) else None,
            "protected_addresses": list(intent.get("sriov_vfs_protected_addresses") or []),
            "passthrough_dir": intent.get("sriov_vfs_passthrough_dir"), "modprobe_command": "modprobe"}


def reads(intent, host):
    """The NICs, the VF settings, the boot unit, the udev rule, modprobe -D
    vfio-pci; also what the role's VF call would do (nic_facts' vfs: the
    module's own run in check mode) and the boot files it inspects, so that
    a site run whose first read carries this layer's (also_layers) answers
    the role's call (plugins/action/sriov_vf.py). The check itself judges
    from the NICs and the VF settings."""
    want = {"sysfs_root": intent["sriov_vfs_sysfs_root"], "vf_settings": True,
            "units": [intent["sriov_vfs_unit_name"] + ".service"],
            "files": [intent["sriov_vfs_udev_rule_path"]],
            "probe_modules": [sriov.PASSTHROUGH_DRIVER] if _passthrough(intent.get("sriov_vfs_nics")) else []}
    try:
        want["vfs"] = module_options(intent)
    except sriov.SriovError:
        pass  # the check names the bad entry; the role's call fails on it
    if intent.get("sriov_vfs_persist", True):
        want["inspect_files"] = list(intent.get("sriov_vfs_boot_paths") or [])
        want["inspect_units"] = list(intent.get("sriov_vfs_boot_units") or [])
    return {"nic_facts": want}


def check(reading, intent, host):
    facts = reading.get("nic_facts") or {}
    unit = intent["sriov_vfs_unit_name"] + ".service"
    return check_sriov_vfs(facts.get("nics") or [], intent.get("sriov_vfs_nics") or [],
                           (facts.get("units") or {}).get(unit) == "enabled",
                           bool((facts.get("files") or {}).get(intent["sriov_vfs_udev_rule_path"])),
                           bool(intent.get("sriov_vfs_persist", True)), bool(intent.get("sriov_vfs_nm_unmanaged", True)),
                           module_probe=facts.get("module_probe") or {}, iommu_active=facts.get("iommu_active"),
                           unit_failed=(facts.get("units_active") or {}).get(unit) == "failed",
                           vf_settings=facts.get("vf_settings"), unit=unit)


def check_sriov_vfs(pfs, nics, unit_enabled, udev_rule_present, persist=True, nm_unmanaged=True,
                    uptime_seconds=None, module_probe=None, iommu_active=None, unit_failed=False,
                    vf_settings=None, unit="gpufabric-sriov.service"):
    """Layer 6: VF counts and netdevs as the inventory wants, persistence and
    NetworkManager exclusion in place, trust off where tenants share a NIC;
    VFs meant for VMs on vfio-pci, each alone in its IOMMU group, and vfio-pci
    loadable at the next boot (``module_probe``: nic_facts' modprobe -D).
    ``vf_settings`` (nic_facts': each PF's VFs as ip reports them) is judged
    with the sriov_vf module's own plan (sriov.build_plan, settings_drift):
    what the module would change is what fails here."""
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
                          evidence + ["%s is not enabled" % unit],
                          "run site.yml --tags layer06 (installs and enables the unit), or "
                          "systemctl enable %s && reboot" % unit)
        if persist:
            return result(6, "fail", "VFs missing on pf %s although the persistence unit is enabled" % names,
                          evidence, "journalctl -b -u %s shows why the boot script failed" % unit)
        return result(6, "fail", "pf %s: no VFs, inventory wants some" % names, evidence,
                      "run site.yml --tags layer06")
    if passthrough:
        problem = ((module_probe or {}).get(sriov.PASSTHROUGH_DRIVER) or {}).get("problem")
        if problem:
            return result(6, "fail", "vfio-pci cannot be loaded, so the VFs meant for VMs stay on the kernel's "
                          "driver at the next boot: %s" % problem, evidence + [problem],
                          "remove the install or blacklist rule for vfio-pci from /etc/modprobe.d, or install the "
                          "kernel's vfio-pci module (linux-image of the running kernel)")
    if vf_settings and vf_settings.get("failed"):
        return result(6, "fail", "the VF settings cannot be read: %s" % vf_settings.get("msg"), evidence,
                      "check that iproute2's ip answers on this host")
    if vf_settings is not None:
        try:
            plan = sriov.build_plan(pfs, [sriov.module_pfs(e) for e in nics])
        except sriov.SriovError as exc:
            return result(6, "fail", "gpufabric_nics: %s" % exc, evidence, "fix gpufabric_nics for this host")
        drift = sriov.settings_drift(plan, dict((name, dict((int(k), v) for k, v in vfs.items()))
                                                for name, vfs in vf_settings.items()))
        if drift:
            return result(6, "fail", drift[0], evidence + drift,
                          "run site.yml --tags layer06 on this host (sets them as the inventory has them); "
                          "--check --diff shows the ip commands")
    if persist and not unit_enabled:
        return result(6, "fail", "VFs present but will be lost on reboot: persistence unit not enabled",
                      evidence, "run site.yml --tags layer06")
    if persist and unit_failed:
        return result(6, "fail", "the VF boot unit %s failed at this boot, so the VFs may lack "
                      "settings the layout wants" % unit, evidence + ["%s: ActiveState failed" % unit],
                      "journalctl -b -u %s shows the failing step; run site.yml --tags layer06" % unit)
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
