# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SR-IOV VF layout: validate the wanted layout, plan it against what sysfs
and the PF driver report, and apply it in the kernel's order.

The order is the one drivers/pci/iov.c and the SR-IOV Network Operator use:
write ``sriov_numvfs`` only when the count changes, and then 0 before N (N
while M != 0 is EBUSY); wait until every VF has its ``physfn`` link and its
netdev; only then set per-VF MAC, VLAN, trust, spoof-check, link state and
GUIDs (through the PF, as ``ip link set <pf> vf N ...`` does) and VF MTUs.

Plain Python: the Ansible module wraps it, unit tests drive it directly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import re
import time

from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic

MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
GUID_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){7}$")
PCI_RE = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
VD_RE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{4}$")
LINK_STATES = ("auto", "enable", "disable")
VF_KEYS = ("mac", "vlan", "qos", "trust", "spoofchk", "link_state", "node_guid", "port_guid",
           "max_tx_rate", "min_tx_rate")
# Safe for a NIC shared by tenants: a VF cannot spoof MACs or see other traffic.
VF_DEFAULTS = {"spoofchk": True, "trust": False, "link_state": "auto"}
# What a VF range may be bound to: the kernel's own VF driver (the default),
# or vfio-pci, which hands the VF to a VM (VFIO passthrough).
PASSTHROUGH_DRIVER = "vfio-pci"
VF_DRIVERS = ("default", PASSTHROUGH_DRIVER)


class SriovError(Exception):
    """A problem with the wanted layout or the host; the message names the
    PF, the value and the cause."""


CONNECTX_VENDOR = "15b3"


def pf_label(pf):
    return "pf %s (%s)" % (pf.get("name") or "-", pf["pci_address"])


def describe(pf):
    """A NIC as people name it: ``enp1s0 (0000:01:00.0, 8086:10c9, SR-IOV 7
    VFs)``, ``eth0 (0000:00:03.0, 1af4:1041, no SR-IOV)``, or without a
    netdev ``0000:86:00.0 (15b3:1021, no netdev: no driver bound)``."""
    sr = pf.get("sriov") or {}
    cap = "SR-IOV %s VFs" % sr.get("totalvfs") if sr.get("capable") else "no SR-IOV"
    if pf.get("name"):
        return "%s (%s, %s, %s)" % (pf["name"], pf["pci_address"], pf.get("vendor_device"), cap)
    why = "no driver bound" if not pf.get("driver") else "driver %s, no netdev" % pf["driver"]
    return "%s (%s, no netdev: %s, %s)" % (pf["pci_address"], pf.get("vendor_device"), why, cap)


def _listing(pfs):
    return ", ".join(describe(p) for p in pfs) or "none"


def _selector(spec):
    """(key, value) of a one-key selection; a PCI address and vendor:device
    are hex and compared in lower case, a netdev name as the kernel spells it
    (enP2p1s0f0np0 has a capital P)."""
    keys = [k for k in ("name", "pci_address", "vendor_device") if spec.get(k)]
    if len(keys) != 1:
        raise SriovError("each entry of pfs must have exactly one of name, pci_address, vendor_device; got %s"
                         % (", ".join(keys) or "none"))
    value = str(spec[keys[0]])
    return keys[0], value if keys[0] == "name" else value.lower()


def select(pfs, spec):
    """PFs matched by one entry of the module's ``pfs`` option."""
    key, value = _selector(spec)
    if key == "pci_address":
        if not PCI_RE.match(value):
            raise SriovError("pci_address %r is not a PCI address like 0000:3b:00.0" % spec[key])
        if len(value) == 7:
            value = "0000:" + value
        hits = [p for p in pfs if p["pci_address"] == value]
    elif key == "vendor_device":
        if not VD_RE.match(value):
            raise SriovError("vendor_device %r is not vendor:device in hex like 15b3:1021" % spec[key])
        hits = [p for p in pfs if p["vendor_device"] == value]
    else:
        hits = [p for p in pfs if p["name"] == value]
    if not hits:
        raise SriovError("no PF matches %s=%s; NICs on this host: %s" % (key, spec[key], _listing(pfs)))
    return hits


def select_any(pfs, matches):
    """The PCI addresses (sorted) of the PFs that any key of any ``match``
    dict (gpufabric_nics' ``match``: name, pci_address, vendor_device) selects
    by :func:`select`'s rule. Every key counts and a key that selects nothing
    or is malformed is passed over: the widest reading of a match list, which
    a layer may narrow."""
    chosen = set()
    for match in matches or []:
        for key in ("name", "pci_address", "vendor_device"):
            if (match or {}).get(key):
                try:
                    chosen.update(p["pci_address"] for p in select(pfs, {key: match[key]}))
                except SriovError:
                    pass
    return sorted(chosen)


def selected_pfs(pfs, entries):
    """The PFs of ``pfs`` (nic_facts' nics) that an entry of ``entries``
    (gpufabric_nics) selects by :func:`select_any`, in the order of ``pfs``."""
    chosen = set(select_any(pfs, [(e or {}).get("match") or {} for e in entries or []]))
    return [p for p in pfs or [] if p["pci_address"] in chosen]


def _vendor(pf):
    return str(pf.get("vendor") or str(pf.get("vendor_device") or "").split(":")[0]).lower().replace("0x", "")


def split_vendor(pfs, vendor=CONNECTX_VENDOR):
    """(kept, left_out): the PFs of ``pfs`` (nic_facts' nics) whose PCI
    vendor is ``vendor`` and the others, each in their order. An empty vendor
    keeps every PF."""
    vendor = str(vendor or "").lower().replace("0x", "")
    kept = [p for p in pfs or [] if not vendor or _vendor(p) == vendor]
    return kept, [p for p in pfs or [] if vendor and _vendor(p) != vendor]


def left_out_entry(pf):
    return {"pci_address": pf["pci_address"], "vendor_device": pf.get("vendor_device"), "name": pf.get("name")}


def not_connectx(left_out, vendor=CONNECTX_VENDOR):
    """``0000:01:00.0 is 8086:10c9, not a ConnectX (15b3)``, for every PF of
    ``left_out`` ([{pci_address, vendor_device}]); empty when there is none."""
    if not left_out:
        return ""
    what = "a ConnectX (%s)" % vendor if str(vendor).lower() == CONNECTX_VENDOR else "of vendor %s" % vendor
    return "%s, not %s" % (", ".join("%s is %s" % (p["pci_address"], p.get("vendor_device")) for p in left_out),
                           what)


def vendor_selection(pfs, vendor=CONNECTX_VENDOR):
    """What a layer that manages only the NICs of ``vendor`` (4 and 8:
    ConnectX) does with the PFs ``pfs`` its selection names:
    ``{pfs, left_out: [{pci_address, vendor_device, name}], not_applicable,
    left_out_text}``. ``not_applicable`` is the reason the layer does not
    apply (``not applicable: 0000:01:00.0 is 8086:10c9, not a ConnectX
    (15b3)``) when every PF is left out, else empty; ``left_out_text`` names
    the PFs left out of a mixed selection, else empty."""
    kept, left = split_vendor(pfs, vendor)
    left = [left_out_entry(p) for p in left]
    text = not_connectx(left, vendor)
    return {"pfs": kept, "left_out": left,
            "not_applicable": "not applicable: " + text if left and not kept else "",
            "left_out_text": "left out: " + text if left and kept else ""}


FIRMWARE_VFS_CEILING = 127  # the NUM_OF_VFS field of every ConnectX (mlx_config.MAX_NUM_OF_VFS)


def _vf_count(value):
    """``value`` as a VF count (a non-negative whole number, as an int or its
    digits), else None; booleans are not counts."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    text = str(value).strip() if value is not None else ""
    return int(text) if text.isdigit() else None


def _as_json(value):
    """``value`` as the inventory would write it in JSON (``"missing"``,
    ``true``, ``200``)."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def firmware_input_problems(entries, num_vfs, max_num_vfs):
    """Layer 4's inputs against the firmware's limit, all of them before any
    PF is written (each PF gets its own NUM_OF_VFS, so a bad count on a later
    entry would otherwise fail only after earlier PFs changed): a list of
    problems, each naming the variable and its value, empty when they hold."""
    problems = []
    ceiling = _vf_count(max_num_vfs)
    if ceiling is None or ceiling > FIRMWARE_VFS_CEILING:
        return ["nic_firmware_max_num_vfs is %s, not in 0..%d" % (_as_json(max_num_vfs), FIRMWARE_VFS_CEILING)]
    limit = "above %d, the largest NUM_OF_VFS the firmware accepts (nic_firmware_max_num_vfs)" % ceiling
    least = _vf_count(num_vfs)
    if least is None or least > ceiling:
        problems.append("nic_firmware_num_vfs is %s: %s" % (_as_json(num_vfs), limit))
    for index, entry in enumerate(entries or []):
        raw = (entry or {}).get("num_vfs", "missing") if isinstance(entry, dict) else "missing"
        count = _vf_count(raw)
        where = "gpufabric_nics[%d].num_vfs (nic_firmware_nics)" % index
        if count is None:
            problems.append("%s is %s, not a VF count" % (where, _as_json(raw)))
        elif count > ceiling:
            problems.append("%s is %d: %s" % (where, count, limit))
    return problems


def firmware_selection(pfs, entries, num_vfs=0, extra_params=None, vendor=CONNECTX_VENDOR, max_num_vfs=None):
    """Layer 4's PFs: those of ``pfs`` (nic_facts' nics) that an entry of
    ``entries`` (gpufabric_nics: match, num_vfs) selects by :func:`select_any`,
    in the order of ``pfs``, and of PCI vendor ``vendor`` (the firmware tools
    know ConnectX only). Returns ``{pfs: [{pci_address, num_vfs}], devices:
    [{device, params}], left_out, not_applicable, left_out_text, problems}``:
    each PF wants the largest num_vfs of the entries selecting it and never
    less than ``num_vfs``, and its mlx_config params are ``extra_params`` with
    SRIOV_EN true and that NUM_OF_VFS; the selected PFs of another vendor are
    ``left_out`` as :func:`vendor_selection` says. With ``max_num_vfs`` the
    counts are first held to it (:func:`firmware_input_problems`); when one
    fails, ``problems`` names them and nothing is selected."""
    problems = [] if max_num_vfs is None else firmware_input_problems(entries, num_vfs, max_num_vfs)
    if problems:
        return {"pfs": [], "devices": [], "left_out": [], "not_applicable": "", "left_out_text": "",
                "problems": problems}
    wanted = {}
    for entry in entries or []:
        for address in select_any(pfs, [(entry or {}).get("match") or {}]):
            wanted[address] = max(wanted.get(address, int(num_vfs or 0)), int((entry or {}).get("num_vfs") or 0))
    by_vendor = vendor_selection([p for p in pfs or [] if p["pci_address"] in wanted], vendor)
    chosen = [{"pci_address": p["pci_address"], "num_vfs": wanted[p["pci_address"]]} for p in by_vendor["pfs"]]
    devices = [{"device": pf["pci_address"],
                "params": dict(extra_params or {}, SRIOV_EN=True, NUM_OF_VFS=pf["num_vfs"])} for pf in chosen]
    return dict(by_vendor, pfs=chosen, devices=devices, problems=[])


def no_sriov_message(pfs, pf, num):
    """Why ``num`` VFs cannot be made on ``pf``, which has no sriov_totalvfs:
    the NIC has no SR-IOV capability (or, on a ConnectX, SR-IOV is off in its
    firmware), and which NICs of ``pfs`` have one."""
    name = pf.get("name") or "pf"
    text = "%s (%s, %s) has no SR-IOV capability (no sriov_totalvfs), so it cannot have the %d VFs asked for" % (
        name, pf["pci_address"], pf.get("vendor_device"), num)
    if pf.get("vendor") == CONNECTX_VENDOR:
        text += ("; SR-IOV is disabled in the NIC firmware: set SRIOV_EN=1 and NUM_OF_VFS>=%d with mlxconfig and "
                 "reboot (layer 4)" % num)
    capable = [p for p in pfs if (p.get("sriov") or {}).get("capable")]
    return text + "; SR-IOV capable PFs on this host: %s" % _listing(capable)


def _check_vf_settings(label, where, settings, link_type):
    mac = settings.get("mac")
    if mac is not None and not MAC_RE.match(str(mac)):
        raise SriovError("%s: %s: mac %r is not a MAC address like 02:00:00:00:00:01" % (label, where, mac))
    if mac is not None and int(str(mac).split(":")[0], 16) & 1:
        raise SriovError("%s: %s: mac %s is a multicast address" % (label, where, mac))
    vlan = settings.get("vlan")
    if vlan is not None and not 0 <= int(vlan) <= 4095:
        raise SriovError("%s: %s: vlan %s is outside 0-4095" % (label, where, vlan))
    qos = settings.get("qos")
    if qos is not None and not 0 <= int(qos) <= 7:
        raise SriovError("%s: %s: qos %s is outside 0-7" % (label, where, qos))
    state = settings.get("link_state")
    if state is not None and state not in LINK_STATES:
        raise SriovError("%s: %s: link_state %r is not one of %s" % (label, where, state, ", ".join(LINK_STATES)))
    for key in ("trust", "spoofchk"):
        if settings.get(key) is not None and not isinstance(settings[key], bool):
            raise SriovError("%s: %s: %s %r is not a boolean" % (label, where, key, settings[key]))
    for key in ("node_guid", "port_guid"):
        val = settings.get(key)
        if val is None:
            continue
        if not GUID_RE.match(str(val)):
            raise SriovError("%s: %s: %s %r is not a GUID like 11:22:33:44:55:66:77:88" % (label, where, key, val))
        if link_type != "IB":
            raise SriovError("%s: %s: %s applies to InfiniBand PFs only; this PF is %s" % (label, where, key, link_type))
    mtu = settings.get("mtu")
    if mtu is not None and not 68 <= int(mtu) <= 9978:
        raise SriovError("%s: %s: mtu %s is outside 68-9978" % (label, where, mtu))


# the keys of a gpufabric_nics entry that the sriov_vf module takes
MODULE_KEYS = ("num_vfs", "vf_mtu", "vf_defaults", "vfs", "vf_drivers")


def module_pfs(entry):
    """A gpufabric_nics entry as a ``pfs`` entry of the sriov_vf module (the
    role and the doctor's layer 6 check build the module's plan from it)."""
    if not isinstance(entry, dict):
        raise SriovError("each NIC entry must be a mapping, got %r" % (entry,))
    match = entry.get("match") or {}
    keys = [k for k in ("name", "pci_address", "vendor_device") if match.get(k)]
    if len(keys) != 1:
        raise SriovError("'match' must have exactly one of name, pci_address, vendor_device; got %r" % (match,))
    out = {keys[0]: match[keys[0]]}
    for key in MODULE_KEYS:
        if entry.get(key) is not None:
            out[key] = entry[key]
    return out


def settings_drift(plan, current):
    """What the module would change on VFs that exist, as the doctor names
    it: for each (pf, desired) of :func:`build_plan` whose VF count is the
    intended one, every per-VF setting that differs (:func:`vf_changes`, the
    module's own comparison) and every VF MTU off the intent (``current``:
    {pf netdev: {vf index: ip's vfinfo}}). Returns [text]."""
    out = []
    for pf, want in plan:
        num = want["num_vfs"]
        if not num or (pf["sriov"].get("numvfs") or 0) != num:
            continue
        label = pf["name"] or pf["pci_address"]
        have = (current or {}).get(pf["name"]) or {}
        sysfs_vfs = dict((v["index"], v) for v in pf.get("vfs") or [])
        for idx in range(num):
            desired = want["vfs"][idx]
            cur = have.get(idx) or have.get(str(idx))
            if cur is not None:
                for key, value in sorted(vf_changes(cur, desired).items()):
                    out.append("pf %s VF %d: %s %s vs intent %s" % (label, idx, key, _shown(cur.get(key)), _shown(value)))
            mtu = desired.get("mtu", want["vf_mtu"]) if want["drivers"].get(idx) != PASSTHROUGH_DRIVER else None
            info = sysfs_vfs.get(idx) or {}
            if mtu is not None and info.get("netdev") and info.get("mtu") is not None and info["mtu"] != mtu:
                out.append("pf %s VF %d: mtu %s vs intent %s" % (label, idx, info["mtu"], mtu))
    return out


def _shown(value):
    if isinstance(value, bool):
        return "on" if value else "off"
    return "none" if value is None else str(value)


def build_plan(pfs, wanted):
    """Resolve the module's ``pfs`` entries against discovered PFs and check
    every value before anything changes.  Returns a list of
    ``(pf_facts, desired)`` where desired is
    ``{num_vfs, vf_mtu, vfs: {index: settings}}``."""
    plan = []
    seen = {}
    for n, spec in enumerate(wanted):
        for pf in select(pfs, spec):
            label = pf_label(pf)
            if pf["pci_address"] in seen:
                raise SriovError("%s is matched by pfs[%d] and pfs[%d]; each PF may be matched once"
                                 % (label, seen[pf["pci_address"]], n))
            seen[pf["pci_address"]] = n
            num = spec.get("num_vfs")
            if num is None or int(num) < 0:
                raise SriovError("%s: num_vfs must be a number >= 0, got %r" % (label, num))
            num = int(num)
            sriov = pf["sriov"]
            if not sriov["capable"]:
                if num == 0:
                    plan.append((pf, {"num_vfs": 0, "vf_mtu": None, "vfs": {}, "drivers": {}}))
                    continue
                raise SriovError(no_sriov_message(pfs, pf, num))
            if num > sriov["totalvfs"]:
                raise SriovError("%s: %d VFs requested, but sriov_totalvfs is %d (firmware NUM_OF_VFS): "
                                 "lower num_vfs or raise NUM_OF_VFS (layer 4)" % (label, num, sriov["totalvfs"]))
            if num != sriov["numvfs"] and not pf["bound"]:
                raise SriovError("%s: no driver is bound to the PF, so sriov_numvfs cannot be written (ENOENT): "
                                 "load and bind its driver (%s, layer 5)" % (label, _driver_hint(pf)))
            defaults = dict(VF_DEFAULTS)
            defaults.update({k: v for k, v in (spec.get("vf_defaults") or {}).items() if v is not None})
            _check_vf_settings(label, "vf_defaults", defaults, pf["link_type"])
            vf_mtu = spec.get("vf_mtu")
            if vf_mtu is not None:
                _check_vf_settings(label, "vf_mtu", {"mtu": vf_mtu}, pf["link_type"])
            vfs = {}
            for i in range(num):
                vfs[i] = dict(defaults)
            for entry in spec.get("vfs") or []:
                idx = entry.get("index")
                if idx is None or not 0 <= int(idx) < num:
                    raise SriovError("%s: vfs entry index %r is outside 0-%d (num_vfs %d)" % (label, idx, num - 1, num))
                settings = {k: v for k, v in entry.items() if k != "index" and v is not None}
                _check_vf_settings(label, "vf %d" % int(idx), settings, pf["link_type"])
                vfs[int(idx)].update(settings)
            macs = [s["mac"].lower() for s in vfs.values() if s.get("mac")]
            if len(macs) != len(set(macs)):
                raise SriovError("%s: the same MAC is given to more than one VF" % label)
            drivers = vf_drivers(label, spec.get("vf_drivers"), num)
            for idx in sorted(drivers):
                if drivers[idx] == PASSTHROUGH_DRIVER and "mtu" in vfs[idx]:
                    raise SriovError("%s: vf %d: mtu %s cannot be set on a VF handed to a VM (vfio-pci): the VM "
                                     "sets its MTU" % (label, idx, vfs[idx]["mtu"]))
            plan.append((pf, {"num_vfs": num, "vf_mtu": vf_mtu, "vfs": vfs, "drivers": drivers}))
    return plan


def vf_range(text):
    """The VF indexes of a range like ``4-7``, ``0,2-3`` or ``5`` (an int is
    one index), in order; ValueError when it is not one."""
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if "-" in part:
            low, high = part.split("-", 1)
            low, high = int(low), int(high)
            if low > high:
                raise ValueError(part)
            out += list(range(low, high + 1))
        else:
            out.append(int(part))
    if any(i < 0 for i in out):
        raise ValueError(text)
    return out


def vf_drivers(label, entries, num):
    """``{index: driver}`` for every VF of a PF with ``num`` VFs, from the
    ``vf_drivers`` entries (``{vfs: "4-7", driver: vfio-pci}``); VFs no entry
    names keep the kernel's driver (``default``). Every entry is checked:
    a range outside 0..num-1, a VF named twice, an unknown driver fail
    naming the PF and the value."""
    drivers = dict((i, "default") for i in range(num))
    named = {}
    for n, entry in enumerate(entries or []):
        entry = entry or {}
        driver = entry.get("driver", "default")
        if driver not in VF_DRIVERS:
            raise SriovError("%s: vf_drivers[%d]: driver %r is not one of %s" % (label, n, driver, ", ".join(VF_DRIVERS)))
        try:
            indexes = vf_range(entry.get("vfs"))
        except (TypeError, ValueError):
            raise SriovError("%s: vf_drivers[%d]: vfs %r is not a VF range like 4-7 or 0,2-3"
                             % (label, n, entry.get("vfs")))
        for idx in indexes:
            if idx >= num:
                raise SriovError("%s: vf_drivers[%d]: VF %d of %r is outside 0-%d (num_vfs %d); a range names VFs "
                                 "only, never the PF" % (label, n, idx, entry.get("vfs"), num - 1, num))
            if idx in named:
                raise SriovError("%s: VF %d is named by vf_drivers[%d] and vf_drivers[%d]" % (label, idx, named[idx], n))
            named[idx] = n
            drivers[idx] = driver
    return drivers


def passthrough_indexes(drivers):
    return sorted(i for i, d in (drivers or {}).items() if d == PASSTHROUGH_DRIVER)


def index_ranges(indexes):
    """``[4, 5, 6, 7, 9]`` as ``4-7,9``."""
    out, run = [], []
    for i in sorted(indexes):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append("%d-%d" % (run[0], run[-1]) if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        out.append("%d-%d" % (run[0], run[-1]) if len(run) > 1 else str(run[0]))
    return ",".join(out)


def modprobe_problem(name, rc, out, err):
    """Why ``modprobe -D <name>`` (kmod's --show-depends: a dry run that
    ignores whether the module is loaded) says the module cannot be loaded,
    else None: a failure (module not found for this kernel), or an ``install``
    rule that runs a command instead of loading it (``install vfio-pci
    /bin/false``)."""
    lines = [line.strip() for line in (out or "").splitlines() if line.strip()]
    if rc != 0:
        text = (err or "").strip() or "; ".join(lines) or "exit %s" % rc
        return "modprobe -D %s failed (exit %s): %s" % (name, rc, text)
    for line in lines:
        if line.startswith("install "):
            return "an install rule replaces loading %s: %r (modprobe -D %s; see /etc/modprobe.d)" % (name, line, name)
    if not any(line.startswith(("insmod ", "builtin ")) for line in lines):
        return "modprobe -D %s names no module file: %r" % (name, "; ".join(lines))
    return None


def _norm(key, value):
    if key in ("mac", "node_guid", "port_guid") and value is not None:
        return str(value).lower()
    return value


def vf_changes(current, desired):
    """Settings (keys of VF_KEYS) that differ between a VF's current state and
    the desired one."""
    out = {}
    for key, want in desired.items():
        if key == "mtu" or key not in VF_KEYS:
            continue
        have = current.get(key) if current else None
        if key == "vlan" and have is None:
            have = 0
        if key == "qos" and have is None:
            have = 0
        if _norm(key, have) != _norm(key, want):
            out[key] = want
    return out


def vf_settings_to_send(desired, changes):
    """What ``ip link set ... vf`` carries for ``changes`` (of vf_changes):
    iproute2 sends a VF's VLAN and QoS in one call and reads a missing qos
    as 0 (iplink_parse_vf_vlan_info), so a change of either sends both as
    the intent has them, one it is silent on as 0: what the boot script
    sends (boot_settings), and no VLAN left priority-tagged by an old QoS."""
    out = dict(changes)
    if "vlan" in out or "qos" in out:
        out["vlan"] = desired.get("vlan") or 0
        out["qos"] = desired.get("qos") or 0
    return out


def ip_args(pf_name, index, changes):
    """``ip link set dev <pf> vf N ...`` arguments for one VF's changes (VLAN
    and QoS go together, as iproute2 takes them)."""
    args = ["link", "set", "dev", pf_name, "vf", str(index)]
    order = ("mac", "vlan", "trust", "spoofchk", "state", "node_guid", "port_guid", "max_tx_rate", "min_tx_rate")
    merged = dict(changes)
    if "qos" in merged and "vlan" not in merged:
        merged["vlan"] = merged.get("vlan", 0)
    for key in order:
        src = "link_state" if key == "state" else key
        if src not in merged:
            continue
        val = merged[src]
        if isinstance(val, bool):
            val = "on" if val else "off"
        args += [key, str(val)]
        if key == "vlan" and "qos" in merged:
            args += ["qos", str(merged["qos"])]
    return args


def write_sysfs(path, value):
    """Write like ``echo N >``, with the errno of the write itself."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, ("%s\n" % value).encode())
    finally:
        os.close(fd)


def _driver_hint(pf):
    return "mlx5_core" if pf.get("vendor") == CONNECTX_VENDOR else "the driver of %s" % pf.get("vendor_device")


def numvfs_error(pf, value, exc):
    label = pf_label(pf)
    code = exc.errno
    path = "sriov_numvfs"
    if code == errno.EBUSY:
        why = "VFs already enabled (EBUSY); the count must be set to 0 first"
    elif code == errno.ERANGE:
        why = "more than sriov_totalvfs (ERANGE)"
    elif code == errno.ENOENT:
        why = "no driver bound to the PF (ENOENT): load and bind its driver (%s, layer 5)" % _driver_hint(pf)
    elif code == errno.ENOMEM:
        why = ("not enough MMIO resources for SR-IOV (ENOMEM): enable SR-IOV in the BIOS (layer 2) "
               "or add pci=realloc to the kernel command line (layer 3)")
    else:
        why = "%s (%s)" % (os.strerror(code), errno.errorcode.get(code, code))
    return SriovError("%s: writing %s to %s failed: %s" % (label, value, path, why))


def set_numvfs(fs, pf, num, log):
    path = fs.pci(pf["pci_address"], "sriov_numvfs")
    current = pf["sriov"]["numvfs"]
    steps = ([0] if current else []) + ([num] if num else [])
    for value in steps:
        try:
            write_sysfs(path, value)
        except OSError as exc:
            raise numvfs_error(pf, value, exc)
        log.append("echo %d > %s" % (value, path))


def wait_vfs(fs, pf, num, timeout, autoprobe=True, clock=time.monotonic, sleep=time.sleep):
    """Until every VF has its physfn link and, with autoprobe, its netdev
    (a VF already handed to vfio-pci has none)."""
    deadline = clock() + timeout
    while True:
        vfs = sysfs_nic.vf_list(fs, pf["pci_address"])
        ready = [v for v in vfs if v["pci_address"]
                 and os.path.exists(fs.pci(v["pci_address"], "physfn"))
                 and (v["netdev"] or not autoprobe or v.get("driver") == PASSTHROUGH_DRIVER)]
        if len(vfs) == num and len(ready) == num:
            return vfs
        if clock() > deadline:
            missing = sorted(set(range(num)) - {v["index"] for v in ready})
            raise SriovError("%s: %d of %d VFs not ready after %ss (VF %s without physfn or netdev)"
                             % (pf_label(pf), len(missing), num, timeout, ", ".join(map(str, missing[:8]))))
        sleep(0.1)


def vf_addresses(pf, num):
    """The PCI addresses VFs 0..num-1 of a PF get, before they exist: the PF's
    routing ID plus First VF Offset plus index times VF Stride, carried into
    the bus number, as pci_iov_virtfn_bus() and pci_iov_virtfn_devfn() in
    drivers/pci/iov.c compute them. None when sysfs gives no offset or stride."""
    info = pf.get("sriov") or {}
    offset, stride = info.get("offset"), info.get("stride")
    if offset is None or stride is None or not PCI_RE.match(pf.get("pci_address") or ""):
        return None
    domain, bus, devfn = pf["pci_address"].split(":")
    dev, fn = devfn.split(".")
    bus, devfn = int(bus, 16), (int(dev, 16) << 3) | int(fn)
    out = []
    for index in range(num):
        rid = devfn + offset + stride * index
        out.append("%s:%02x:%02x.%d" % (domain, bus + (rid >> 8), (rid & 0xff) >> 3, rid & 7))
    return out


NM_RULE_HEADER = (
    "# Written by gpufabric.stack.sriov_vf (layer 6) before it creates the VFs.\n"
    "# The VFs of these PFs belong to pods: NetworkManager must not manage them.\n"
)


def nm_unmanaged_rule(vfs_by_pf):
    """The udev rule that marks the VFs NM_UNMANAGED: ``vfs_by_pf`` is a list
    of (PF label, [VF PCI address, ...]). One line per VF, matched on the VF's
    PCI device (KERNELS), so it can be in place before the VF appears."""
    lines = [NM_RULE_HEADER]
    for label, addresses in vfs_by_pf:
        if not addresses:
            continue
        lines.append("# %s: %d VF(s)\n" % (label, len(addresses)))
        for address in addresses:
            lines.append('SUBSYSTEM=="net", ACTION=="add|change|move", KERNELS=="%s", ENV{NM_UNMANAGED}="1"\n'
                         % address)
    return "".join(lines)


def write_file(path, text, mode=0o644):
    """Replace a file atomically (a temporary file beside it, then rename),
    creating its directory; True when the content changed."""
    try:
        with open(path) as f:
            if f.read() == text:
                return False
    except (IOError, OSError):
        pass
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    tmp = "%s.gpufabric-tmp" % path
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.rename(tmp, path)
    return True


def bind_steps(fs, vf_bdf, current, driver):
    """The sysfs writes that move a VF from the driver ``current`` (None when
    unbound) to ``driver``, in the kernel's order, as [(path, value)]:

    - to vfio-pci: ``driver_override`` names it (vfio-pci has no ID table; the
      override is what lets it match), the VF leaves its driver
      (``driver/unbind``), and ``drivers/vfio-pci/bind`` takes it;
    - back to the kernel's driver (``default``): the override is cleared, the
      VF leaves vfio-pci, and ``drivers_probe`` finds its own driver.

    Empty when the VF is where it should be."""
    if driver == PASSTHROUGH_DRIVER:
        if current == PASSTHROUGH_DRIVER:
            return []
        steps = [(fs.pci(vf_bdf, "driver_override"), PASSTHROUGH_DRIVER)]
        if current:
            steps.append((fs.pci(vf_bdf, "driver", "unbind"), vf_bdf))
        return steps + [(fs.p("bus", "pci", "drivers", PASSTHROUGH_DRIVER, "bind"), vf_bdf)]
    if current is not None and current != PASSTHROUGH_DRIVER:
        return []
    steps = [(fs.pci(vf_bdf, "driver_override"), "")]
    if current:
        steps.append((fs.pci(vf_bdf, "driver", "unbind"), vf_bdf))
    return steps + [(fs.p("bus", "pci", "drivers_probe"), vf_bdf)]


def bind_vf(label, index, steps, log, write=None):
    """Run :func:`bind_steps`' writes, logging each like ``echo X > path``;
    a failed write names the PF, the VF, the file and the errno."""
    write = write or write_sysfs
    for path, value in steps:
        try:
            write(path, value)
        except OSError as exc:
            why = "%s (%s)" % (os.strerror(exc.errno), errno.errorcode.get(exc.errno, exc.errno))
            hint = ""
            if exc.errno == errno.EINVAL and path.endswith("/bind"):
                hint = ": vfio-pci refuses a device without an IOMMU group (IOMMU off: layer 3)"
            raise SriovError("%s: VF %d: writing %r to %s failed: %s%s" % (label, index, value, path, why, hint))
        log.append("echo %s > %s" % (value, path) if value else "echo > %s" % path)


def carriers(addresses_by_dev, default_route_devs, masters, protected):
    """The netdevs whose loss would cut the host off: those with a default
    route, or an address in ``protected`` (the management address), and any
    netdev enslaved (``masters``: dev -> master) to one of them. Returns
    ``{dev: why}``."""
    out = {}
    for dev in default_route_devs:
        out.setdefault(dev, "carries the default route")
    for dev, addrs in (addresses_by_dev or {}).items():
        hit = sorted(set(addrs) & set(protected or []))
        if hit:
            out.setdefault(dev, "has the management address %s" % ", ".join(hit))
    changed = True
    while changed:
        changed = False
        for dev, master in (masters or {}).items():
            if master in out and dev not in out:
                out[dev] = "is enslaved to %s, which %s" % (master, out[master])
                changed = True
    return out


# What a VF has when the kernel makes it, on every driver: trust off, link
# state auto, no VLAN; the boot script sends those only when they differ
# (igb has no link-state setting at all: EOPNOTSUPP). Spoof checking starts
# on with some drivers and off with others, so it is always sent.
NEW_VF = {"trust": False, "link_state": "auto", "vlan": 0, "qos": 0, "max_tx_rate": 0, "min_tx_rate": 0}


def boot_settings(vf):
    """The per-VF settings the boot script sends for one VF of the module's
    result: every setting the module applies, less what a new VF already has."""
    out = {}
    for key in VF_KEYS:
        value = vf.get(key)
        if key == "mtu" or value is None or value == "":
            continue
        if key in NEW_VF and value == NEW_VF[key] and key != "spoofchk":
            continue
        out[key] = value
    return out


def boot_lines(pf, sysfs="$SYSFS"):
    """Shell lines that recreate one PF's VF layout at boot, from the module's
    result for it (``pci_address``, ``num_vfs``, ``vfs``: index, pci_address,
    the per-VF settings, ``mtu``, ``driver``): the VF count (0, then N), the
    per-VF settings through the PF (:func:`ip_args`, as the module sends them),
    the VF MTUs on their netdevs, and the VFs meant for VMs moved to vfio-pci
    with :func:`bind_steps`' writes.  The script defines ``set_numvfs``,
    ``wait_vfs``, ``netdev_of``, ``driver_of`` and ``fail`` and sets ``$PF``
    per PF (roles/sriov_vfs/templates/sriov-vfs.sh.j2)."""
    pci, num = pf["pci_address"], int(pf["num_vfs"])
    lines = ["set_numvfs %s %d" % (pci, num)]
    if not num:
        return lines
    lines += ["wait_vfs %s %d" % (pci, num), "PF=$(netdev_of %s)" % pci]
    fs = sysfs_nic.Sysfs(sysfs)
    moves = []
    for vf in sorted(pf["vfs"], key=lambda v: v["index"]):
        idx = vf["index"]
        args = ip_args('"$PF"', idx, boot_settings(vf))
        lines.append('ip %s || fail "%s ($PF) VF %d: ip link set failed"' % (" ".join(args), pci, idx))
        if vf.get("mtu") and vf.get("driver") != PASSTHROUGH_DRIVER:
            lines.append('echo %d > "%s/class/net/$(netdev_of %s)/mtu"' % (int(vf["mtu"]), sysfs, vf["pci_address"]))
        if vf.get("driver") == PASSTHROUGH_DRIVER:
            moves.append(vf)
    if moves:
        lines.append('[ -d "%s" ] || modprobe %s || fail "%s: %s cannot be loaded"'
                     % (fs.p("bus", "pci", "drivers", PASSTHROUGH_DRIVER), PASSTHROUGH_DRIVER, pci,
                        PASSTHROUGH_DRIVER))
    for vf in moves:
        steps = []
        for path, value in bind_steps(fs, vf["pci_address"], "bound at creation", PASSTHROUGH_DRIVER):
            if path.endswith("/driver/unbind"):
                steps.append('if [ -e "%s" ]; then echo %s > "%s"; fi' % (path[:-len("/unbind")], value, path))
            else:
                steps.append('echo %s > "%s"' % (value, path))
        lines.append('if [ "$(driver_of %s)" != %s ]; then' % (vf["pci_address"], PASSTHROUGH_DRIVER))
        lines += ["  " + step for step in steps]
        lines.append("fi")
    lines.append('log "%s ($PF): %d VFs"' % (pci, num))
    return lines
