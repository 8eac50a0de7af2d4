# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 4, the NIC firmware: readable, not older than the minimum, SR-IOV on
with enough VFs, nothing pending a reboot or differing from the intent.
Reads the firmware queries of the selected ConnectX PFs in the node's
nic_facts (its firmware option, as mlx_config asks them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware import mlx_config
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov
from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import result


LAYER = 4
INTENT = ("nic_firmware_nics", "nic_firmware_num_vfs", "nic_firmware_extra_params", "nic_firmware_tool",
          "nic_firmware_flint_tool", "nic_firmware_max_num_vfs", "nic_firmware_min_fw_version", "gpufabric_sysfs_root")


def reads(intent, host):
    return {"nic_facts": {"sysfs_root": intent.get("gpufabric_sysfs_root") or "/sys",
                          "firmware": {"match": [e.get("match") or {} for e in intent.get("nic_firmware_nics") or []],
                                       "tool": intent["nic_firmware_tool"],
                                       "flint_tool": intent["nic_firmware_flint_tool"]}}}


def check(reading, intent, host):
    facts = reading.get("nic_facts") or {}
    nics = facts.get("nics") or []
    selection = sriov.firmware_selection(nics, intent.get("nic_firmware_nics") or [],
                                         int(intent.get("nic_firmware_num_vfs") or 0),
                                         intent.get("nic_firmware_extra_params") or {}, sriov.CONNECTX_VENDOR)
    checked = checked_from_reading(facts, selection["devices"], intent["nic_firmware_tool"],
                                   intent["nic_firmware_flint_tool"], ["NUM_OF_VFS"],
                                   intent.get("nic_firmware_max_num_vfs"))
    return check_nic_firmware(checked, selection["pfs"], nics, intent.get("nic_firmware_min_fw_version") or "",
                              selection["left_out"])


def checked_from_reading(reading, devices, tool="mstconfig", flint_tool="mstflint", at_least=(), max_num_of_vfs=None,
                         min_fw_version="", where_present=None):
    """What mlx_config with ``devices`` ([{device, params}]) returns in check
    mode ({devices: [...]}, plus failed and msg when a device failed), judged
    from the firmware queries of ``reading`` (nic_facts taken with its
    firmware option); a device the reading lacks, or read with other tools,
    is a failed device naming it. ``where_present``: mlx_config's option of
    that name, normalized (mlx_config.normalize_params)."""
    held = dict((r.get("device"), r) for r in (reading or {}).get("firmware") or [])
    try:
        plan = mlx_config.plan_devices(devices, int(mlx_config.MAX_NUM_OF_VFS if max_num_of_vfs is None
                                                    else max_num_of_vfs))
    except mlx_config.MlxConfigError as exc:
        return {"failed": True, "msg": str(exc), "devices": []}

    def judge(device, wanted, entry):
        got = held.get(device)
        if got is None:
            raise mlx_config.MlxConfigError("%s: the node's read has no firmware query of this PF" % device)
        if (got.get("tool"), got.get("flint_tool") or "") != (tool, flint_tool or ""):
            raise mlx_config.MlxConfigError("%s: read with %s/%s, not %s/%s" % (
                device, got.get("tool"), got.get("flint_tool"), tool, flint_tool))
        if "msg" in got:
            raise mlx_config.MlxConfigError(got["msg"])
        wanted = mlx_config.with_present(device, wanted, got, where_present or {})
        checked = mlx_config.check_reading(got, wanted, at_least=list(at_least or []), min_fw_version=min_fw_version)
        checked.pop("parsed")
        entry.update(checked)
    return mlx_config.run_devices(plan, judge)


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
    from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware.mlx_tools import compare_fw_versions

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
