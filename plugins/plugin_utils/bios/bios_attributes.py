# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The BIOS intent (SR-IOV, IOMMU, ACS) mapped to each vendor's attributes,
for the bios role (filters bios_vendor, bios_plan) and the
doctor's layer 2 check (checks/bios.py).

Vendor names (see docs/layers/02-bios.md):

* Dell: ``SriovGlobalEnable``; IOMMU is ``ProcVirtualization`` on Intel (it
  also exposes the DMAR table) and ``IommuSupport`` on AMD (which needs
  ``ProcVirtualization`` too); ACS ``PcieAcsControl`` where present.
* HPE: ``Sriov``; ``IntelProcVtd`` (Intel) or ``ProcAmdIoVt`` (AMD), with
  ``ProcVirtualization`` on; ACS ``AccessControlService`` (a recorded iLO 5
  ProLiant DL385 Gen10 Plus v2) where present.
* Supermicro: keys carry a per-BIOS suffix, so they are resolved through the
  BIOS attribute registry by ``DisplayName``: "SR-IOV Support", "Intel VT for
  Directed I/O (VT-d)" or "IOMMU" (AMD), "PCIe ACSCTL" (a recorded X13
  SYS-821GE-TNHR).  Values are taken from the registry's ``Value`` list; where
  the BIOS reports the ``ValueDisplayName`` (the X13 registry lists ``0``/``1``
  as ValueName, ``Enabled``/``Disabled`` or ``Enable``/``Disable`` as display
  names, and its Bios resource says ``Enabled``), the display names.
* Lenovo XCC (Intel): ``DevicesandIOPorts_SRIOV``,
  ``DevicesandIOPorts_IntelVTforDirectedIOVTd``, ACS ``Processors_PCIeACSCTL``
  (a recorded ThinkSystem SR670 V2); no AMD Lenovo BIOS is recorded.

The recordings are in tests/unit/fixtures/bmc_real (README: where from).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.stack.plugins.module_utils.bios import redfish_bios


class BiosError(ValueError):
    """An intent or a BIOS this mapping cannot handle; the message names it."""


class BiosReadOnly(BiosError):
    """An attribute that must change is read-only in the BIOS's registry."""


def _fail(msg):
    raise BiosError(msg)


VENDORS = ("dell", "hpe", "supermicro", "lenovo")
CPU_VENDORS = ("intel", "amd")
SWITCHES = ("sriov", "iommu", "acs")

# switch -> cpu vendor -> attribute names that must all take the value
_NAMED = {
    "dell": {
        "sriov": {"intel": ["SriovGlobalEnable"], "amd": ["SriovGlobalEnable"]},
        "iommu": {"intel": ["ProcVirtualization"], "amd": ["IommuSupport"]},
        "acs": {"intel": ["PcieAcsControl"], "amd": ["PcieAcsControl"]},
    },
    "hpe": {
        "sriov": {"intel": ["Sriov"], "amd": ["Sriov"]},
        "iommu": {"intel": ["IntelProcVtd"], "amd": ["ProcAmdIoVt"]},
        # the recorded iLO 5's name first; AcsControl kept for BIOSes that spell it so
        "acs": {"intel": ["AccessControlService", "AcsControl"], "amd": ["AccessControlService", "AcsControl"]},
    },
    "lenovo": {
        "sriov": {"intel": ["DevicesandIOPorts_SRIOV"], "amd": []},
        "iommu": {"intel": ["DevicesandIOPorts_IntelVTforDirectedIOVTd"], "amd": []},
        "acs": {"intel": ["Processors_PCIeACSCTL"], "amd": []},
    },
}
# Attributes that must be on for the IOMMU switch to be on (only turned on, never off).
_IOMMU_PREREQ = {"dell": {"amd": ["ProcVirtualization"]},
                 "hpe": {"intel": ["ProcVirtualization"], "amd": ["ProcVirtualization"]}}

_DISPLAY = {
    "sriov": {"intel": ["SR-IOV Support"], "amd": ["SR-IOV Support"]},
    "iommu": {"intel": ["Intel VT for Directed I/O (VT-d)"], "amd": ["IOMMU"]},
    "acs": {"intel": ["PCIe ACSCTL"], "amd": ["PCIe ACSCTL"]},
}
# Key shapes of Supermicro attributes, for BIOSes whose registry is unavailable.
_SMC_KEYS = {
    "sriov": {"intel": "sriovsupport", "amd": "sriovsupport"},
    "iommu": {"intel": "intelvtfordirectediovtd", "amd": "iommu"},
    "acs": {"intel": "pcieacsctl", "amd": "pcieacsctl"},
}
ON = ("Enabled", "Enable")
OFF = ("Disabled", "Disable")


def bios_vendor(name):
    """Map a Redfish Manufacturer or ServiceRoot Vendor to a vendor key."""
    vendor = redfish_bios.manufacturer_vendor(name)
    if not vendor:
        _fail("unsupported BMC vendor %r (expected Dell, HPE, Supermicro or Lenovo; "
              "set bmc_vendor explicitly)" % (name,))
    return vendor


def _norm(key):
    return re.sub(r"[^0-9a-z]", "", re.sub(r"_[0-9A-Fa-f]{4}$", "", key).lower())


def _registry_map(registry):
    """DisplayName -> registry entry, from a list of registry attributes or a
    whole AttributeRegistry document."""
    if isinstance(registry, dict):
        registry = registry.get("RegistryEntries", {}).get("Attributes", [])
    return {a.get("DisplayName"): a for a in (registry or []) if a.get("AttributeName")}


def _resolve(vendor, cpu, switch, current, registry):
    """Attribute names carrying ``switch`` (empty list if the BIOS has none)."""
    if vendor == "supermicro":
        reg = _registry_map(registry)
        names = [reg[d]["AttributeName"] for d in _DISPLAY[switch][cpu] if d in reg]
        if not names:
            want = _SMC_KEYS[switch][cpu]
            names = [k for k in current if _norm(k) == want]
        return [n for n in names if n in current]
    return [n for n in _NAMED[vendor][switch][cpu] if n in current]


def _value(name, on, current, registry):
    """The spelling of on/off this attribute accepts: the registry's
    ValueName, or its ValueDisplayName where the BIOS reports the current
    value in those (a Supermicro X13: ValueName 0/1)."""
    allowed = None
    for a in _registry_map(registry).values():
        if a["AttributeName"] == name:
            allowed = [v.get("ValueName") for v in a.get("Value", [])]
            shown = [v.get("ValueDisplayName") for v in a.get("Value", [])]
            if str(current.get(name, "")) in shown and str(current.get(name, "")) not in allowed:
                allowed = shown
    if not allowed:
        cur = str(current.get(name, ""))
        allowed = ["Enable", "Disable"] if cur in ("Enable", "Disable") else ["Enabled", "Disabled"]
    for v in (ON if on else OFF):
        if v in allowed:
            return v
    _fail("BIOS attribute %s accepts %s, none of which means %s"
          % (name, allowed, "enabled" if on else "disabled"))


def _check(vendor, cpu_vendor):
    if vendor not in VENDORS:
        _fail("unknown BIOS vendor %r (expected one of %s)" % (vendor, ", ".join(VENDORS)))
    if cpu_vendor not in CPU_VENDORS:
        _fail("unknown CPU vendor %r (expected intel or amd)" % (cpu_vendor,))


def bios_plan(current, vendor, cpu_vendor="intel", sriov=True, iommu=True, acs=False,
              registry=None, pending=None, job_queue="", bios_jobs=None):
    """What to stage so that the BIOS matches the intent.

    Returns ``{"desired": {attr: value}, "stage": {attr: value},
    "reset_needed": bool, "attributes": {switch: [attr, ...]},
    "skipped": [switch, ...]}``: ``stage`` holds only attributes whose current
    value differs and that are not already pending with the desired value;
    ``reset_needed`` is true while any desired value is not current.  SR-IOV
    and IOMMU attributes must exist (an error names what was looked for);
    the ACS switch is skipped where the BIOS has none."""
    _check(vendor, cpu_vendor)
    if vendor == "lenovo" and cpu_vendor == "amd":
        _fail("lenovo BIOS (amd CPU): its attribute names are not known here (only an Intel XCC is recorded); "
              "set the attributes by hand")
    current = dict(current or {})
    pending = dict(pending or {})
    intent = {"sriov": bool(sriov), "iommu": bool(iommu), "acs": bool(acs)}
    desired, names, skipped = {}, {}, []
    for switch in SWITCHES:
        found = _resolve(vendor, cpu_vendor, switch, current, registry)
        if not found:
            if switch == "acs":
                skipped.append(switch)
                continue
            where = (_DISPLAY[switch][cpu_vendor] if vendor == "supermicro"
                     else _NAMED[vendor][switch][cpu_vendor])
            _fail("%s BIOS (%s CPU): no %s attribute found (looked for %s)"
                  % (vendor, cpu_vendor, switch, ", ".join(where)))
        names[switch] = found
        for n in found:
            desired[n] = _value(n, intent[switch], current, registry)
        if switch == "iommu" and intent["iommu"]:
            for n in _IOMMU_PREREQ.get(vendor, {}).get(cpu_vendor, []):
                if n in current:
                    desired[n] = _value(n, True, current, registry)
    # to stage: what differs and is not pending as wanted, and what is as
    # wanted but pending another value (a reset would undo it)
    stage = {k: v for k, v in desired.items()
             if (current.get(k) != v and pending.get(k) != v) or (current.get(k) == v and pending.get(k, v) != v)}
    entries = registry.get("RegistryEntries", {}).get("Attributes", []) if isinstance(registry, dict) else registry
    by_name = dict((a.get("AttributeName"), a) for a in entries or [] if isinstance(a, dict))
    read_only = sorted(k for k in stage if by_name.get(k, {}).get("ReadOnly") is True)
    if read_only:
        raise BiosReadOnly("%s BIOS: %s read-only in the attribute registry (current %s, wanted %s): it follows "
                           "another setting or cannot be set through Redfish; set it in BIOS setup"
                           % (vendor, ", ".join(read_only) + (" is" if len(read_only) == 1 else " are"),
                              dict((k, current.get(k)) for k in read_only), dict((k, stage[k]) for k in read_only)))
    reset_needed = any(current.get(k) != v for k, v in desired.items())
    open_jobs = list(bios_jobs or []) if job_queue else []
    return {"desired": desired, "stage": stage, "reset_needed": reset_needed,
            "attributes": names, "skipped": skipped,
            "job_needed": bool(job_queue) and bios_jobs is not None and not open_jobs and reset_needed
            and not stage,
            "blocked_by": [j.get("id") for j in open_jobs] if stage else []}


def bios_state(current, vendor, cpu_vendor="intel", registry=None):
    """``{"sriov": bool|None, "iommu": bool|None, "acs": bool|None,
    "attributes": {switch: [attr, ...]}}``: None where the BIOS has no such
    attribute.  IOMMU counts as on only if its prerequisites are on too."""
    _check(vendor, cpu_vendor)
    current = dict(current or {})
    out = {"attributes": {}}
    for switch in SWITCHES:
        found = _resolve(vendor, cpu_vendor, switch, current, registry)
        out["attributes"][switch] = found
        if not found:
            out[switch] = None
            continue
        on = all(str(current[n]) in ON + ("Auto",) for n in found)
        if switch == "iommu":
            on = on and all(str(current[n]) in ON for n in
                            _IOMMU_PREREQ.get(vendor, {}).get(cpu_vendor, []) if n in current)
        out[switch] = on
    return out
