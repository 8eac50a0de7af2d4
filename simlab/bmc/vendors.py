"""BIOS attribute catalogues of the twin's BMC vendors, and what they mean.

Each vendor profile names its BIOS attributes the way that vendor's Redfish
service does (see docs/layers/02-bios.md):

* ``dell`` (iDRAC-like): ``SriovGlobalEnable`` and ``ProcVirtualization``
  (``Enabled``/``Disabled``).  On Intel CPUs ``ProcVirtualization`` also exposes
  the DMAR table, so it is the VT-d switch; AMD systems add ``IommuSupport``.
* ``hpe`` (iLO-like): ``Sriov``, ``ProcVirtualization`` and ``IntelProcVtd``
  (Intel) or ``ProcAmdIoVt`` (AMD).
* ``supermicro``: keys derived from the setup screen's display names with a
  per-BIOS-build hex suffix (``SR_IOVSupport_0047``,
  ``IntelVTforDirectedI_O_VT_d__1E32``), values that mix ``Enabled`` and
  ``Enable``.  Clients must resolve them through the attribute registry's
  ``DisplayName`` ("SR-IOV Support", "Intel VT for Directed I/O (VT-d)").

The ACS switch: HPE's ``AccessControlService`` and Supermicro's
``PCIeACSCTL_XXXX`` with DisplayName "PCIe ACSCTL" are the names recorded
BMCs give (tests/unit/fixtures/bmc_real: an iLO 5 DL385 Gen10 Plus v2, an X13
SYS-821GE-TNHR); Dell's ``PcieAcsControl`` is this twin's own (the recorded
iDRAC 9 R750 has no ACS attribute; the role skips ACS there), with the same
DisplayName.

This module runs inside the node containers as well (Debian's python3):
standard library only.
"""

from __future__ import annotations

import hashlib
import re

VENDORS = ("dell", "hpe", "supermicro")
CPU_VENDORS = ("intel", "amd")

# Display names shared by all vendors for the switches the stack cares about.
SRIOV_DISPLAY = {"dell": "SR-IOV Global Enable", "hpe": "SR-IOV",
                 "supermicro": "SR-IOV Support"}
ACS_DISPLAY = "PCIe ACSCTL"

PROFILES = {
    "dell": {
        "manufacturer": "Dell Inc.",
        "model": "PowerEdge XE9680",
        "bios_version": "1.6.10",
        "system_id": "System.Embedded.1",
        "manager_id": "iDRAC.Embedded.1",
        "chassis_id": "System.Embedded.1",
        "manager_model": "16G Monolithic",
        "manager_firmware": "7.00.00.171",
        "service_vendor": "Dell",
        "oem": "Dell",
        "registry": "BiosAttributeRegistry.v1_0_3",
        "settings_id": "Settings",
        "serial_prefix": "SVC",
        # pending BIOS settings apply only through a configuration job
        # (simlab/bmc/server.py, JOB_SCHEDULED)
        "bios_jobs": True,
    },
    "hpe": {
        "manufacturer": "HPE",
        "model": "ProLiant XD685 Gen11",
        "bios_version": "U63 v1.52 (02/20/2025)",
        "system_id": "1",
        "manager_id": "1",
        "chassis_id": "1",
        "manager_model": "iLO 6",
        "manager_firmware": "iLO 6 v1.62",
        "service_vendor": "HPE",
        "oem": "Hpe",
        "registry": "BiosAttributeRegistryU63.v1_2_10",
        "settings_id": "Settings",
        "serial_prefix": "CZ",
    },
    "supermicro": {
        "manufacturer": "Supermicro",
        "model": "SYS-821GE-TNHR",
        "bios_version": "2.1",
        "system_id": "1",
        "manager_id": "1",
        "chassis_id": "1",
        "manager_model": "ASPEED",
        "manager_firmware": "01.03.16",
        "service_vendor": "Supermicro",
        "oem": "Supermicro",
        "registry": "BiosAttributeRegistry.1.0.0",
        # the X13's pending settings object (a recorded SYS-821GE-TNHR)
        "settings_id": "SD",
        "serial_prefix": "S",
    },
}


def service_root_oem(vendor: str, system: dict) -> dict:
    """The service root's ``Oem`` as the vendor's BMC serves it: iDRAC 9's
    DellServiceRoot (recorded R750, tests/unit/fixtures/bmc_real/dell; published
    dumps of an R650), iLO's HpeiLOServiceExt (recorded iLO 5 DL385; ManagerType
    as iLO 6 gives it), and the X13's ``Supermicro`` object without an
    ``@odata.type`` (recorded SYS-821GE-TNHR; its DumpService link, a resource
    the twin does not serve, left out), which DMTF's Service Validator warns
    about on the real one as on the twin."""
    if vendor == "dell":
        return {"Oem": {"Dell": {"@odata.context": "/redfish/v1/$metadata#DellServiceRoot.DellServiceRoot",
                                 "@odata.type": "#DellServiceRoot.v1_0_0.DellServiceRoot",
                                 "IsBranded": 0, "ManagerMACAddress": "00:00:00:00:00:00",
                                 "ServiceTag": system.get("serial", "")}}}
    if vendor == "hpe":
        return {"Oem": {"Hpe": {"@odata.context": "/redfish/v1/$metadata#HpeiLOServiceExt.HpeiLOServiceExt",
                                "@odata.type": "#HpeiLOServiceExt.v2_3_0.HpeiLOServiceExt",
                                "Manager": [{"ManagerType": PROFILES["hpe"]["manager_model"],
                                             "ManagerFirmwareVersion": PROFILES["hpe"]["manager_firmware"]}]}}}
    return {"Oem": {"Supermicro": {}}}


def _enum(name, display, values, default, menu, help_text=""):
    return {
        "AttributeName": name,
        "DisplayName": display,
        "HelpText": help_text or display,
        "MenuPath": menu,
        "Type": "Enumeration",
        "ReadOnly": False,
        "ResetRequired": True,
        "Value": [{"ValueName": v, "ValueDisplayName": v} for v in values],
        "DefaultValue": default,
    }


def smc_suffix(bios_version: str, display: str) -> str:
    """The per-build hex suffix a Supermicro BIOS appends to an attribute key."""
    digest = hashlib.sha1(f"{bios_version}\0{display}".encode()).hexdigest()
    return digest[:4].upper()


def _smc_key(base: str, bios_version: str, display: str) -> str:
    return f"{base}_{smc_suffix(bios_version, display)}"


def registry_attributes(vendor: str, cpu_vendor: str = "intel",
                        bios_version: str | None = None) -> list[dict]:
    """The AttributeRegistry ``RegistryEntries.Attributes`` list of a profile.

    ``DefaultValue`` is the factory default: SR-IOV and VT-d/IOMMU disabled,
    ACS enabled."""
    vendor = check_vendor(vendor)
    if cpu_vendor not in CPU_VENDORS:
        raise ValueError(f"unknown CPU vendor {cpu_vendor!r} (expected one of {CPU_VENDORS})")
    ver = bios_version or PROFILES[vendor]["bios_version"]
    ed = ("Enabled", "Disabled")
    if vendor == "dell":
        attrs = [
            _enum("BootMode", "Boot Mode", ("Uefi", "Bios"), "Uefi", "./BootSettingsRef"),
            _enum("LogicalProc", "Logical Processor", ed, "Enabled", "./ProcSettingsRef"),
            _enum("ProcVirtualization", "Virtualization Technology", ed, "Disabled",
                  "./ProcSettingsRef",
                  "Enables the virtualization capabilities of the processor "
                  "(VT-x and, on Intel, the DMAR table for VT-d)."),
            _enum("SriovGlobalEnable", SRIOV_DISPLAY["dell"], ed, "Disabled",
                  "./IntegratedDevicesRef",
                  "Enables BIOS configuration of SR-IOV devices."),
            _enum("PcieAcsControl", ACS_DISPLAY, ed, "Enabled", "./IntegratedDevicesRef"),
            _enum("SysProfile", "System Profile",
                  ("PerfPerWattOptimizedDapc", "PerfOptimized", "Custom"),
                  "PerfPerWattOptimizedDapc", "./SysProfileSettingsRef"),
        ]
        if cpu_vendor == "amd":
            attrs.insert(3, _enum("IommuSupport", "IOMMU Support", ed, "Disabled",
                                  "./ProcSettingsRef"))
        return attrs
    if vendor == "hpe":
        attrs = [
            _enum("BootMode", "Boot Mode", ("Uefi", "LegacyBios"), "Uefi", "./BootOptions"),
            _enum("WorkloadProfile", "Workload Profile",
                  ("GeneralPowerEfficientCompute", "HighPerformanceCompute", "Custom"),
                  "GeneralPowerEfficientCompute", "./WorkloadProfile"),
            _enum("ProcVirtualization", "Virtualization Technology", ed, "Enabled",
                  "./SystemOptions/VirtualizationOptions"),
            _enum("Sriov", SRIOV_DISPLAY["hpe"], ed, "Disabled",
                  "./SystemOptions/VirtualizationOptions"),
            _enum("AccessControlService", ACS_DISPLAY, ed, "Enabled", "./PciDeviceSettings"),
        ]
        if cpu_vendor == "intel":
            attrs.insert(3, _enum("IntelProcVtd", "Intel(R) VT-d", ed, "Disabled",
                                  "./SystemOptions/VirtualizationOptions"))
        else:
            attrs.insert(3, _enum("ProcAmdIoVt", "AMD I/O Virtualization Technology (AMD-Vi)",
                                  ed, "Disabled", "./SystemOptions/VirtualizationOptions"))
        return attrs
    # supermicro
    k = lambda base, disp: _smc_key(base, ver, disp)  # noqa: E731
    en = ("Enable", "Disable")
    attrs = [
        _enum(k("Hyper_Threading_ALL_", "Hyper-Threading [ALL]"), "Hyper-Threading [ALL]",
              en, "Enable", "./Advanced/CPU Configuration"),
        _enum(k("Above4GDecoding", "Above 4G Decoding"), "Above 4G Decoding", ed, "Enabled",
              "./Advanced/PCIe/PCI/PnP Configuration"),
        _enum(k("SR_IOVSupport", SRIOV_DISPLAY["supermicro"]), SRIOV_DISPLAY["supermicro"], ed,
              "Disabled", "./Advanced/PCIe/PCI/PnP Configuration"),
        _enum(k("ARISupport", "ARI Support"), "ARI Support", ed, "Enabled",
              "./Advanced/PCIe/PCI/PnP Configuration"),
    ]
    if cpu_vendor == "intel":
        attrs += [
            _enum(k("IntelVirtualizationTechnology", "Intel Virtualization Technology"),
                  "Intel Virtualization Technology", en, "Enable",
                  "./Advanced/CPU Configuration"),
            _enum(k("IntelVTforDirectedI_O_VT_d_", "Intel VT for Directed I/O (VT-d)"),
                  "Intel VT for Directed I/O (VT-d)", en, "Disable",
                  "./Advanced/Chipset Configuration/North Bridge/IIO Configuration"),
        ]
    else:
        attrs += [
            _enum(k("SVMMode", "SVM Mode"), "SVM Mode", ed, "Enabled",
                  "./Advanced/CPU Configuration"),
            _enum(k("IOMMU", "IOMMU"), "IOMMU", ("Auto", "Enabled", "Disabled"), "Disabled",
                  "./Advanced/NB Configuration"),
        ]
    attrs.append(_enum(k("PCIeACSCTL", ACS_DISPLAY), ACS_DISPLAY, en, "Enable",
                       "./Advanced/PCIe/PCI/PnP Configuration"))
    return attrs


def factory_defaults(vendor: str, cpu_vendor: str = "intel",
                     bios_version: str | None = None) -> dict:
    """Attribute name -> factory default value of a profile."""
    return {a["AttributeName"]: a["DefaultValue"]
            for a in registry_attributes(vendor, cpu_vendor, bios_version)}


def check_vendor(vendor: str) -> str:
    v = (vendor or "").lower()
    if v not in VENDORS:
        raise ValueError(f"unknown BMC vendor {vendor!r} (expected one of {', '.join(VENDORS)})")
    return v


_SUFFIX = re.compile(r"_[0-9A-F]{4}$")


def _norm(key: str) -> str:
    """Supermicro key without its build suffix and punctuation, lower case:
    ``IntelVTforDirectedI_O_VT_d__1E32`` -> ``intelvtfordirectediovtd``."""
    return re.sub(r"[^0-9a-z]", "", _SUFFIX.sub("", key).lower())


def _on(value) -> bool:
    return str(value) in ("Enabled", "Enable", "Auto", "True", "true", "On")


# Which attribute(s) carry each switch; the first one present decides.
_KEYS = {
    "dell": {"sriov": ("SriovGlobalEnable",),
             "iommu": ("IommuSupport", "ProcVirtualization"),
             "acs": ("PcieAcsControl",)},
    "hpe": {"sriov": ("Sriov",),
            "iommu": ("IntelProcVtd", "ProcAmdIoVt"),
            "acs": ("AccessControlService",)},
    "supermicro": {"sriov": ("sriovsupport",),
                   "iommu": ("intelvtfordirectediovtd", "iommu"),
                   "acs": ("pcieacsctl",)},
}


def effective(vendor: str, attributes: dict) -> dict:
    """What the firmware does with these *current* attributes at POST.

    Returns ``{"sriov": bool, "iommu": bool, "acs": bool}``: SR-IOV BAR space
    reserved, the IOMMU (VT-d / AMD-Vi) exposed to the OS, ACS enabled on the
    PCIe ports.  A switch whose attribute is absent counts as off, except ACS
    which firmware leaves on unless told otherwise."""
    vendor = check_vendor(vendor)
    table = _KEYS[vendor]
    if vendor == "supermicro":
        attrs = {_norm(k): v for k, v in attributes.items()}
    else:
        attrs = attributes
    out = {}
    for switch, keys in table.items():
        val = None
        for key in keys:
            if key in attrs:
                val = attrs[key]
                break
        out[switch] = (switch == "acs") if val is None else _on(val)
    return out


def switch_attribute(vendor: str, attributes: dict, switch: str) -> str | None:
    """Name of the attribute in ``attributes`` that carries ``switch``
    (``sriov``, ``iommu`` or ``acs``), or None."""
    vendor = check_vendor(vendor)
    for key in _KEYS[vendor][switch]:
        for name in attributes:
            if (_norm(name) if vendor == "supermicro" else name) == key:
                return name
    return None


def off_value(vendor: str, attributes: dict, name: str) -> str:
    """The "disabled" spelling this attribute uses (``Disabled`` or ``Disable``)."""
    cur = str(attributes.get(name, ""))
    return "Disable" if cur in ("Enable", "Disable") else "Disabled"
