"""Redfish BMC endpoints of the twin, one HTTPS listener per node.

Resources served (paths relative to ``/redfish/v1``; ``<S>``, ``<M>``, ``<C>``
are the vendor's System, Manager and Chassis ids, e.g. ``System.Embedded.1``
and ``iDRAC.Embedded.1`` for Dell, ``1`` for HPE and Supermicro):

* service root (no authentication, as Redfish requires), ``Systems``,
  ``Systems/<S>`` (inventory, ``PowerState``, ``Boot``), its
  ``Actions/ComputerSystem.Reset`` with ``ResetActionInfo``, ``BootOptions``;
* ``Systems/<S>/Bios`` (current ``Attributes``; ``@Redfish.Settings`` points at
  ``Bios/Settings``), ``Bios/Settings`` (PATCH stores *pending* attributes,
  validated against the registry; pending values equal to current ones are
  dropped), ``Bios/Actions/Bios.ResetBios`` (stages factory defaults);
* Dell only: the iDRAC job queue ``Managers/<M>/Oem/Dell/Jobs`` (also at
  ``Managers/<M>/Jobs``, where POST ``{"TargetSettingsURI"}`` makes a BIOS
  configuration job); pending BIOS settings apply at a reset only through a
  scheduled job (see ``JOB_SCHEDULED``), as iDRAC does;
* ``Registries`` with the vendor's BIOS ``AttributeRegistry`` file and its
  English registry (``RegistryEntries.Attributes`` with ``DisplayName``);
* ``Managers``, ``Chassis``, ``SessionService/Sessions`` (POST returns
  ``X-Auth-Token`` and ``Location``; DELETE ends the session).

Authentication is HTTP basic or a session token; anything else gets 401 with
a Redfish error body.  Reset types ``On``, ``ForceOn``, ``ForceOff``,
``GracefulShutdown``, ``GracefulRestart``, ``ForceRestart``, ``PowerCycle``,
``PushPowerButton`` and ``Nmi`` act through the power driver; every power-on
or restart first makes pending BIOS settings current (on Dell, those of a
scheduled job or of ResetBios) and consumes a one-time boot override, like
POST.  As a real BMC does, the podman driver's BMCs
answer a reset request (204) before they carry it out, in a thread; one BMC's
power actions run one after the other.  A failure there is logged, as a real
BMC logs it in its event log.  The in-memory driver acts before the answer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import re
import secrets
import socket
import ssl
import struct
import subprocess
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from simlab.bmc import faults, state, vendors
from simlab.bmc.power import PowerError

log = logging.getLogger("simlab.bmc")

R = "/redfish/v1"
# Redfish's predefined roles and their privileges (DSP0266 13.2.7; Role schema)
ROLES = {"Administrator": ["Login", "ConfigureManager", "ConfigureUsers", "ConfigureComponents", "ConfigureSelf"],
         "Operator": ["Login", "ConfigureComponents", "ConfigureSelf"],
         "ReadOnly": ["Login", "ConfigureSelf"]}
# The resource types the BMC serves, by the DSP8010 CSDL file that defines each
# (the OData metadata document references them: /redfish/v1/$metadata)
METADATA_REFERENCES = {
    "ServiceRoot": "ServiceRoot.v1_15_0", "ComputerSystemCollection": None, "ComputerSystem": "ComputerSystem.v1_20_0",
    "ActionInfo": "ActionInfo.v1_3_0", "BootOptionCollection": None, "BootOption": "BootOption.v1_0_4",
    "Bios": "Bios.v1_2_0", "Settings": "Settings.v1_3_5", "MessageRegistryFileCollection": None,
    "MessageRegistryFile": "MessageRegistryFile.v1_1_3", "AttributeRegistry": "AttributeRegistry.v1_3_6",
    "ManagerCollection": None, "Manager": "Manager.v1_15_0", "ChassisCollection": None,
    "Chassis": "Chassis.v1_23_0", "SessionService": "SessionService.v1_1_8", "SessionCollection": None,
    "Session": "Session.v1_6_0", "AccountService": "AccountService.v1_18_1", "ManagerAccountCollection": None,
    "ManagerAccount": "ManagerAccount.v1_14_1", "RoleCollection": None, "Role": "Role.v1_3_3",
    "Message": "Message.v1_1_1",
}


def metadata_document() -> str:
    """The OData metadata document (DSP0266 8.4.1): a reference to the
    DSP8010 schema of every resource type served, and the service's entity
    container."""
    refs = []
    for name, version in METADATA_REFERENCES.items():
        includes = [f'    <edmx:Include Namespace="{name}"/>']
        if version:
            includes.append(f'    <edmx:Include Namespace="{version}"/>')
        refs.append(f'  <edmx:Reference Uri="http://redfish.dmtf.org/schemas/v1/{name}_v1.xml">\n'
                    + "\n".join(includes) + "\n  </edmx:Reference>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">\n'
            + "\n".join(refs) + "\n"
            '  <edmx:DataServices>\n'
            '    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">\n'
            f'      <EntityContainer Name="Service" Extends="{METADATA_REFERENCES["ServiceRoot"]}.ServiceContainer"/>\n'
            '    </Schema>\n'
            '  </edmx:DataServices>\n'
            '</edmx:Edmx>\n')


def service_document(root: dict) -> dict:
    """The OData service document (DSP0266 8.4.2): the service root and the
    resources it links at its top level."""
    value = [{"name": "Service", "kind": "Singleton", "url": f"{R}/"}]
    value += [{"name": k, "kind": "Singleton", "url": v["@odata.id"]} for k, v in root.items()
              if isinstance(v, dict) and set(v) == {"@odata.id"}]
    return {"@odata.context": f"{R}/$metadata", "value": value}


def described_by(body) -> str | None:
    """The Link header naming the JSON schema of a resource (DSP0266 8.2:
    rel=describedby), from its @odata.type."""
    typ = (body or {}).get("@odata.type") if isinstance(body, dict) else None
    if not typ:
        return None
    parts = typ.lstrip("#").split(".")
    name = ".".join(parts[:2]) if len(parts) == 3 else parts[0]
    return f"<http://redfish.dmtf.org/schemas/v1/{name}.json>; rel=describedby"


RESET_TYPES = ["On", "ForceOn", "ForceOff", "GracefulShutdown", "GracefulRestart",
               "ForceRestart", "PowerCycle", "PushPowerButton", "Nmi"]
BOOT_TARGETS = ["None", "Pxe", "Hdd", "Cd", "BiosSetup", "UefiHttp", "UefiTarget"]
BOOT_OPTIONS = [
    ("Boot0001", "PXE Device 1: Integrated NIC 1 Port 1 Partition 1", "Pxe"),
    ("Boot0002", "Hard drive C: NVMe M.2 Boot Device", "Hdd"),
    ("Boot0003", "UEFI HTTPv4 (MAC:00:00:00:00:00:01)", "UefiHttp"),
]


# iDRAC's BIOS configuration jobs (Dell's iDRAC-Redfish-Scripting and the
# DellJob resources of a recorded iDRAC 9, tests/unit/fixtures/bmc_real):
# pending BIOS settings apply at a reset only through a scheduled job, made by
# a PATCH carrying "@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"}
# (202, the job in Location) or by POST .../Jobs {"TargetSettingsURI"}; while
# one is scheduled, another PATCH is refused with SYS011, whose body is a
# live iDRAC's (tests/unit/fixtures/bmc_real/dell_errors/sys011.json).
JOB_SCHEDULED = {"JobState": "Scheduled", "Message": "Task successfully scheduled.", "MessageId": "JCP001",
                 "PercentComplete": 0}
JOB_COMPLETED = {"JobState": "Completed", "Message": "Job completed successfully.", "MessageId": "PR19",
                 "PercentComplete": 100}
SYS011 = ("Pending configuration values are already committed, unable to perform another set operation.",
          "Wait for the scheduled job to complete or delete the configuration jobs before attempting more set "
          "attribute operations.")


class RedfishError(Exception):
    def __init__(self, status: int, message_id: str, message: str, headers=None, error=None):
        super().__init__(message)
        self.status, self.message_id, self.message = status, message_id, message
        self.headers = headers or {}
        self.error = error  # a vendor's own error body, served as it is

    def body(self) -> dict:
        if self.error is not None:
            return self.error
        return {"error": {
            "code": f"Base.1.8.{self.message_id}",
            "message": self.message,
            "@Message.ExtendedInfo": [{
                "@odata.type": "#Message.v1_1_1.Message",
                "MessageId": f"Base.1.8.{self.message_id}",
                "Message": self.message,
                "Severity": "Critical" if self.status >= 500 else "Warning",
                "Resolution": "None.",
            }],
        }}


def _serial(prefix: str, name: str) -> str:
    import hashlib
    return prefix + hashlib.sha1(name.encode()).hexdigest()[:7].upper()


def initial_state(entry: dict) -> dict:
    """Factory-fresh bios.json contents for a spec entry."""
    vendor = vendors.check_vendor(entry["vendor"])
    prof = vendors.PROFILES[vendor]
    cpu = entry.get("cpu_vendor", "intel")
    ver = entry.get("bios_version") or prof["bios_version"]
    return {
        "vendor": vendor,
        "cpu_vendor": cpu,
        "current": vendors.factory_defaults(vendor, cpu, ver),
        "pending": {},
        "boot_order": [b[0] for b in BOOT_OPTIONS],
        "boot_override": {"enabled": "Disabled", "target": "None", "mode": "UEFI"},
        "system": {
            "manufacturer": prof["manufacturer"],
            "model": entry.get("model") or prof["model"],
            "serial": entry.get("serial") or _serial(prof["serial_prefix"], entry["name"]),
            "bios_version": ver,
            "uuid": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{entry['name']}.simlab")),
        },
    }


def ensure_state(state_dir, entry: dict) -> Path:
    """Create ``nodes/<name>/bios.json`` unless one for the same vendor and
    CPU vendor exists (BIOS state survives server restarts)."""
    p = state.bios_path(state_dir, entry["name"])
    with state.locked(p):
        if p.exists():
            try:
                cur = state.load_bios(p)
                if (cur.get("vendor") == vendors.check_vendor(entry["vendor"])
                        and cur.get("cpu_vendor", "intel") == entry.get("cpu_vendor", "intel")):
                    return p
            except (OSError, ValueError):
                pass
        state.save_bios(p, initial_state(entry))
    return p


class Bmc:
    """One node's BMC: Redfish resources and actions over its bios.json."""

    def __init__(self, state_dir, entry: dict, driver):
        self.state_dir = Path(state_dir)
        self.name = entry["name"]
        self.vendor = vendors.check_vendor(entry["vendor"])
        self.username = str(entry["username"])
        self.password = str(entry["password"])
        self.container = entry.get("container") or self.name
        self.port = int(entry.get("port", 0))
        self.driver = driver
        self.profile = vendors.PROFILES[self.vendor]
        self.sid = self.profile["system_id"]
        self.mid = self.profile["manager_id"]
        self.cid = self.profile["chassis_id"]
        self.reg = self.profile["registry"]
        self.bios_jobs = bool(self.profile.get("bios_jobs"))
        self.jobs_uri = f"{R}/Managers/{self.mid}/Oem/Dell/Jobs"
        self.bios_path = ensure_state(state_dir, entry)
        self.sessions: dict[str, str] = {}   # token -> session id
        self._power_lock = threading.Lock()

    # -- helpers --------------------------------------------------------
    def load(self) -> dict:
        return state.load_bios(self.bios_path)

    def registry_attributes(self) -> list[dict]:
        d = self.load()
        return vendors.registry_attributes(self.vendor, d.get("cpu_vendor", "intel"),
                                           d["system"]["bios_version"])

    def check_auth(self, headers) -> bool:
        token = headers.get("X-Auth-Token")
        if token:
            return any(hmac.compare_digest(token, t) for t in list(self.sessions))
        auth = headers.get("Authorization") or ""
        if not auth.lower().startswith("basic "):
            return False
        try:
            user, _, pw = base64.b64decode(auth[6:].strip()).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        return (hmac.compare_digest(user.encode(), self.username.encode())
                and hmac.compare_digest(pw.encode(), self.password.encode()))

    def power_state(self) -> str:
        try:
            return self.driver.state(self.container)
        except PowerError as e:
            log.warning("%s: power state: %s", self.name, e)
            return "Off"

    # -- resources ------------------------------------------------------
    def service_root(self) -> dict:
        return {
            "@odata.id": f"{R}/", "@odata.type": "#ServiceRoot.v1_15_0.ServiceRoot",
            "Id": "RootService", "Name": "Root Service", "RedfishVersion": "1.17.0",
            "UUID": self.load()["system"]["uuid"],
            "Vendor": self.profile["service_vendor"],
            "Product": self.profile["manager_model"],
            "Systems": {"@odata.id": f"{R}/Systems"},
            "Managers": {"@odata.id": f"{R}/Managers"},
            "Chassis": {"@odata.id": f"{R}/Chassis"},
            "Registries": {"@odata.id": f"{R}/Registries"},
            "SessionService": {"@odata.id": f"{R}/SessionService"},
            "AccountService": {"@odata.id": f"{R}/AccountService"},
            "Links": {"Sessions": {"@odata.id": f"{R}/SessionService/Sessions"}},
            **vendors.service_root_oem(self.vendor, self.load()["system"]),
        }

    @staticmethod
    def collection(uri: str, typ: str, name: str, members: list[str]) -> dict:
        return {"@odata.id": uri, "@odata.type": f"#{typ}.{typ}", "Name": name,
                "Members": [{"@odata.id": m} for m in members],
                "Members@odata.count": len(members)}

    def system(self) -> dict:
        d = self.load()
        s, ov = d["system"], d.get("boot_override", {})
        base = f"{R}/Systems/{self.sid}"
        cpu = ("Intel(R) Xeon(R) Platinum 8480+" if d.get("cpu_vendor", "intel") == "intel"
               else "AMD EPYC 9654 96-Core Processor")
        return {
            "@odata.id": base, "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
            "Id": self.sid, "Name": "System", "HostName": self.name,
            "SystemType": "Physical", "Manufacturer": s["manufacturer"], "Model": s["model"],
            "SerialNumber": s["serial"], "UUID": s["uuid"], "BiosVersion": s["bios_version"],
            "PowerState": self.power_state(),
            "Status": {"State": "Enabled", "Health": "OK"},
            "ProcessorSummary": {"Count": 2, "Model": cpu},
            "MemorySummary": {"TotalSystemMemoryGiB": 2048},
            "Boot": {
                "BootOrder": list(d.get("boot_order", [])),
                "BootOptions": {"@odata.id": f"{base}/BootOptions"},
                "BootSourceOverrideEnabled": ov.get("enabled", "Disabled"),
                "BootSourceOverrideTarget": ov.get("target", "None"),
                "BootSourceOverrideMode": ov.get("mode", "UEFI"),
                "BootSourceOverrideTarget@Redfish.AllowableValues": BOOT_TARGETS,
            },
            "Bios": {"@odata.id": f"{base}/Bios"},
            "Actions": {"#ComputerSystem.Reset": {
                "target": f"{base}/Actions/ComputerSystem.Reset",
                "@Redfish.ActionInfo": f"{base}/ResetActionInfo"}},
            "Links": {"Chassis": [{"@odata.id": f"{R}/Chassis/{self.cid}"}],
                      "ManagedBy": [{"@odata.id": f"{R}/Managers/{self.mid}"}]},
        }

    def bios(self, settings: bool = False) -> dict:
        d = self.load()
        base = f"{R}/Systems/{self.sid}/Bios"
        sd = self.profile["settings_id"]
        if settings:
            out = {"@odata.id": f"{base}/{sd}", "@odata.type": "#Bios.v1_2_0.Bios",
                   "Id": sd, "Name": "BIOS Configuration Pending Settings",
                   "AttributeRegistry": self.reg, "Attributes": dict(d["pending"])}
            if self.bios_jobs:
                # as the recorded iDRAC 9 serves it: the job queue linked
                out["Description"] = ("BIOS Configuration Pending Settings. These settings will be applied on "
                                      "next system reboot.")
                out["Oem"] = {"Dell": {"@odata.context": "/redfish/v1/$metadata#DellManager.DellManager",
                                       "@odata.type": "#DellManager.v1_2_0.DellManager",
                                       "Jobs": {"@odata.id": self.jobs_uri}}}
            return out
        return {
            "@odata.id": base, "@odata.type": "#Bios.v1_2_0.Bios", "Id": "Bios",
            "Name": "BIOS Configuration Current Settings", "AttributeRegistry": self.reg,
            "Attributes": dict(d["current"]),
            "@Redfish.Settings": {
                "@odata.type": "#Settings.v1_3_5.Settings",
                "SettingsObject": {"@odata.id": f"{base}/{sd}"},
                "SupportedApplyTimes": ["OnReset"]},
            "Actions": {"#Bios.ResetBios": {"target": f"{base}/Actions/Bios.ResetBios"}},
        }

    def registry_file(self) -> dict:
        return {"@odata.id": f"{R}/Registries/{self.reg}",
                "@odata.type": "#MessageRegistryFile.v1_1_3.MessageRegistryFile",
                "Id": self.reg, "Name": "BIOS Attribute Registry File",
                "Registry": self.reg, "Languages": ["en"],
                "Location": [{"Language": "en", "Uri": f"{R}/Registries/{self.reg}/Registry"}]}

    def registry(self) -> dict:
        d = self.load()
        return {"@odata.id": f"{R}/Registries/{self.reg}/Registry",
                "@odata.type": "#AttributeRegistry.v1_3_6.AttributeRegistry",
                "Id": self.reg, "Name": "BIOS Attribute Registry", "Language": "en",
                "OwningEntity": self.profile["service_vendor"], "RegistryVersion": "1.0.0",
                # SystemId: the schema's ^[A-Za-z0-9]+$ (the DMTF validator
                # holds it); a published iDRAC registry of a PowerEdge R750
                # gives the service tag there
                "SupportedSystems": [{"ProductName": d["system"]["model"],
                                      "SystemId": re.sub(r"[^A-Za-z0-9]", "", d["system"]["serial"]),
                                      "FirmwareVersion": d["system"]["bios_version"]}],
                "RegistryEntries": {"Attributes": self.registry_attributes()}}

    def get(self, path: str) -> dict:
        sys_base = f"{R}/Systems/{self.sid}"
        if path == f"{R}/Systems":
            return self.collection(path, "ComputerSystemCollection", "Computer System Collection",
                                   [sys_base])
        if path == sys_base:
            return self.system()
        if path == f"{sys_base}/ResetActionInfo":
            return {"@odata.id": path, "@odata.type": "#ActionInfo.v1_3_0.ActionInfo",
                    "Id": "ResetActionInfo", "Name": "Reset Action Info",
                    "Parameters": [{"Name": "ResetType", "Required": True, "DataType": "String",
                                    "AllowableValues": RESET_TYPES}]}
        if path == f"{sys_base}/BootOptions":
            return self.collection(path, "BootOptionCollection", "Boot Options",
                                   [f"{path}/{b[0]}" for b in BOOT_OPTIONS])
        for ref, disp, _ in BOOT_OPTIONS:
            if path == f"{sys_base}/BootOptions/{ref}":
                return {"@odata.id": path, "@odata.type": "#BootOption.v1_0_4.BootOption",
                        "Id": ref, "Name": disp, "DisplayName": disp,
                        "BootOptionReference": ref, "BootOptionEnabled": True}
        if path == f"{sys_base}/Bios":
            return self.bios()
        if path == f"{sys_base}/Bios/{self.profile['settings_id']}":
            return self.bios(settings=True)
        if path == f"{R}/Registries":
            return self.collection(path, "MessageRegistryFileCollection", "Registries",
                                   [f"{R}/Registries/{self.reg}"])
        if path == f"{R}/Registries/{self.reg}":
            return self.registry_file()
        if path == f"{R}/Registries/{self.reg}/Registry":
            return self.registry()
        if self.bios_jobs and path in (self.jobs_uri, f"{R}/Managers/{self.mid}/Jobs"):
            jobs = self.load().get("jobs", [])
            return {"@odata.context": "/redfish/v1/$metadata#DellJobCollection.DellJobCollection",
                    "@odata.type": "#DellJobCollection.DellJobCollection", "@odata.id": path,
                    "Description": "Collection of Job Instances",
                    "Members": [{"@odata.id": f"{path}/{j['Id']}"} for j in jobs],
                    "Members@odata.count": len(jobs), "Name": "JobQueue"}
        if self.bios_jobs:
            for j in self.load().get("jobs", []):
                if path in (f"{self.jobs_uri}/{j['Id']}", f"{R}/Managers/{self.mid}/Jobs/{j['Id']}"):
                    return self.job(path, j)
        if path == f"{R}/Managers":
            return self.collection(path, "ManagerCollection", "Manager Collection",
                                   [f"{path}/{self.mid}"])
        if path == f"{R}/Managers/{self.mid}":
            return {"@odata.id": path, "@odata.type": "#Manager.v1_15_0.Manager",
                    "Id": self.mid, "Name": "Manager", "ManagerType": "BMC",
                    "Model": self.profile["manager_model"],
                    "FirmwareVersion": self.profile["manager_firmware"],
                    "PowerState": "On", "Status": {"State": "Enabled", "Health": "OK"},
                    "Links": {"ManagerForServers": [{"@odata.id": sys_base}]},
                    "Actions": {"#Manager.Reset": {
                        "target": f"{path}/Actions/Manager.Reset",
                        "ResetType@Redfish.AllowableValues": ["GracefulRestart"]}}}
        if path == f"{R}/Chassis":
            return self.collection(path, "ChassisCollection", "Chassis Collection",
                                   [f"{path}/{self.cid}"])
        if path == f"{R}/Chassis/{self.cid}":
            s = self.load()["system"]
            return {"@odata.id": path, "@odata.type": "#Chassis.v1_23_0.Chassis",
                    "Id": self.cid, "Name": "Chassis", "ChassisType": "RackMount",
                    "Manufacturer": s["manufacturer"], "Model": s["model"],
                    "SerialNumber": s["serial"], "PowerState": self.power_state(),
                    "Status": {"State": "Enabled", "Health": "OK"},
                    "Links": {"ComputerSystems": [{"@odata.id": sys_base}],
                              "ManagedBy": [{"@odata.id": f"{R}/Managers/{self.mid}"}]}}
        if path == f"{R}/SessionService":
            return {"@odata.id": path, "@odata.type": "#SessionService.v1_1_8.SessionService",
                    "Id": "SessionService", "Name": "Session Service", "ServiceEnabled": True,
                    "SessionTimeout": 1800,
                    "Sessions": {"@odata.id": f"{path}/Sessions"}}
        if path == f"{R}/SessionService/Sessions":
            return self.collection(path, "SessionCollection", "Session Collection",
                                   [f"{path}/{sid}" for sid in self.sessions.values()])
        for token, sid in list(self.sessions.items()):
            if path == f"{R}/SessionService/Sessions/{sid}":
                return {"@odata.id": path, "@odata.type": "#Session.v1_6_0.Session",
                        "Id": sid, "Name": "User Session", "UserName": self.username}
        if path == f"{R}/AccountService":
            return {"@odata.id": path, "@odata.type": "#AccountService.v1_18_1.AccountService",
                    "Id": "AccountService", "Name": "Account Service", "ServiceEnabled": True,
                    "Accounts": {"@odata.id": f"{path}/Accounts"}, "Roles": {"@odata.id": f"{path}/Roles"}}
        if path == f"{R}/AccountService/Accounts":
            return self.collection(path, "ManagerAccountCollection", "Accounts Collection", [f"{path}/1"])
        if path == f"{R}/AccountService/Accounts/1":
            # the one account of the lab's credentials (read-only here: accounts are not managed)
            return {"@odata.id": path, "@odata.type": "#ManagerAccount.v1_14_1.ManagerAccount",
                    "Id": "1", "Name": "User Account", "UserName": self.username, "Password": None,
                    "RoleId": "Administrator", "Enabled": True, "Locked": False, "AccountTypes": ["Redfish"],
                    "Links": {"Role": {"@odata.id": f"{R}/AccountService/Roles/Administrator"}}}
        if path == f"{R}/AccountService/Roles":
            return self.collection(path, "RoleCollection", "Roles Collection",
                                   [f"{path}/{role}" for role in ROLES])
        for role, privileges in ROLES.items():
            if path == f"{R}/AccountService/Roles/{role}":
                return {"@odata.id": path, "@odata.type": "#Role.v1_3_3.Role", "Id": role, "Name": role,
                        "RoleId": role, "IsPredefined": True, "AssignedPrivileges": privileges}
        raise RedfishError(404, "ResourceMissingAtURI", f"The resource at the URI {path} was not found.")

    def allowed(self, path: str) -> str:
        """The methods a resource takes (the Allow header, DSP0266 7.5):
        every resource is read with GET and HEAD; the system and the BIOS
        settings object take PATCH, the sessions collection and actions POST,
        a session DELETE."""
        sys_base = f"{R}/Systems/{self.sid}"
        methods = ["GET", "HEAD"]
        if path in (sys_base, f"{sys_base}/Bios/{self.profile['settings_id']}"):
            methods.append("PATCH")
        if path == f"{R}/SessionService/Sessions" or "/Actions/" in path or \
                (self.bios_jobs and path in (self.jobs_uri, f"{R}/Managers/{self.mid}/Jobs")):
            methods = ["POST"] if "/Actions/" in path else methods + ["POST"]
        if path.startswith(f"{R}/SessionService/Sessions/"):
            methods.append("DELETE")
        return ", ".join(methods)

    @staticmethod
    def job(path: str, j: dict) -> dict:
        """A DellJob as the recorded iDRAC 9 serves one."""
        return {"@odata.context": "/redfish/v1/$metadata#DellJob.DellJob", "@odata.id": path,
                "@odata.type": "#DellJob.v1_2_0.DellJob", "ActualRunningStartTime": j.get("ActualRunningStartTime"),
                "ActualRunningStopTime": j.get("CompletionTime"), "CompletionTime": j.get("CompletionTime"),
                "Description": "Job Instance", "EndTime": "TIME_NA", "Id": j["Id"], "JobState": j["JobState"],
                "JobType": "BIOSConfiguration", "Message": j["Message"], "MessageArgs": [],
                "MessageArgs@odata.count": 0, "MessageId": j["MessageId"], "Name": "Configure: BIOS.Setup.1-1",
                "PercentComplete": j["PercentComplete"], "StartTime": j["StartTime"], "TargetSettingsURI": None}

    def scheduled_job(self, d: dict) -> dict | None:
        return next((j for j in d.get("jobs", []) if j["JobState"] == "Scheduled"), None)

    def _new_job(self, d: dict) -> str:
        import time as _time
        jid = "JID_%012d" % (int(_time.time() * 1000) % 10**12)
        while any(j["Id"] == jid for j in d.get("jobs", [])):
            jid = "JID_%012d" % (int(jid[4:]) + 1)
        d.setdefault("jobs", []).append(dict(JOB_SCHEDULED, Id=jid, StartTime=_time.strftime("%Y-%m-%dT%H:%M:%S"),
                                             CompletionTime=None))
        return f"{R}/Managers/{self.mid}/Jobs/{jid}"

    def _sys011(self, attrs) -> RedfishError:
        names = sorted(attrs)
        return RedfishError(400, "GeneralError", SYS011[0], error={"error": {
            "@Message.ExtendedInfo": [{
                "Message": SYS011[0], "MessageArgs": names[:1], "MessageArgs@odata.count": len(names[:1]),
                "MessageId": "IDRAC.2.14.SYS011", "RelatedProperties": ["#/Attributes/%s" % n for n in names[:1]],
                "RelatedProperties@odata.count": len(names[:1]), "Resolution": SYS011[1], "Severity": "Warning"}],
            "code": "Base.1.18.GeneralError",
            "message": "A general error has occurred. See ExtendedInfo for more information"}})

    def create_job(self, body: dict) -> str:
        """POST .../Jobs {"TargetSettingsURI": the BIOS settings object}: the
        job that applies the pending settings at the next reset."""
        target = f"{R}/Systems/{self.sid}/Bios/{self.profile['settings_id']}"
        if body.get("TargetSettingsURI") != target:
            raise RedfishError(400, "PropertyValueNotInList",
                               f"TargetSettingsURI must be {target}; got {body.get('TargetSettingsURI')!r}")
        with state.update_bios(self.bios_path) as d:
            if self.scheduled_job(d):
                raise self._sys011(d["pending"] or {"TargetSettingsURI": target})
            if not d["pending"]:
                raise RedfishError(400, "GeneralError", "No pending data present to create a Configuration job.")
            return self._new_job(d)

    # -- modifications --------------------------------------------------
    def patch_system(self, body: dict) -> None:
        boot = body.get("Boot")
        extra = set(body) - {"Boot"}
        if extra or not isinstance(boot, dict):
            raise RedfishError(400, "PropertyNotWritable",
                               f"Only Boot can be modified on this system; got {sorted(body)}")
        refs = [b[0] for b in BOOT_OPTIONS]
        known = {"BootOrder", "BootSourceOverrideEnabled", "BootSourceOverrideTarget",
                 "BootSourceOverrideMode"}
        for k in boot:
            if k not in known:
                raise RedfishError(400, "PropertyUnknown", f"The property Boot/{k} is not known.")
        if "BootOrder" in boot:
            order = boot["BootOrder"]
            if (not isinstance(order, list) or any(r not in refs for r in order)
                    or len(set(order)) != len(order)):
                raise RedfishError(400, "PropertyValueNotInList",
                                   f"BootOrder must list boot options from {refs}")
        if boot.get("BootSourceOverrideEnabled", "Once") not in ("Once", "Continuous", "Disabled"):
            raise RedfishError(400, "PropertyValueNotInList", "Invalid BootSourceOverrideEnabled")
        if boot.get("BootSourceOverrideTarget", "None") not in BOOT_TARGETS:
            raise RedfishError(400, "PropertyValueNotInList", "Invalid BootSourceOverrideTarget")
        if boot.get("BootSourceOverrideMode", "UEFI") not in ("UEFI", "Legacy"):
            raise RedfishError(400, "PropertyValueNotInList", "Invalid BootSourceOverrideMode")
        with state.update_bios(self.bios_path) as d:
            if "BootOrder" in boot:
                d["boot_order"] = list(boot["BootOrder"])
            ov = d.setdefault("boot_override", {"enabled": "Disabled", "target": "None",
                                                "mode": "UEFI"})
            for key, field in (("BootSourceOverrideEnabled", "enabled"),
                               ("BootSourceOverrideTarget", "target"),
                               ("BootSourceOverrideMode", "mode")):
                if key in boot:
                    ov[field] = boot[key]

    def patch_settings(self, body: dict) -> dict:
        attrs = body.get("Attributes")
        if not isinstance(attrs, dict):
            raise RedfishError(400, "PropertyMissing",
                               "The request body must carry an Attributes object.")
        table = {a["AttributeName"]: a for a in self.registry_attributes()}
        for k, v in attrs.items():
            if k not in table:
                raise RedfishError(400, "PropertyUnknown",
                                   f"The property {k} is not in the list of valid properties "
                                   f"for the resource.")
            allowed = [x["ValueName"] for x in table[k]["Value"]]
            if v not in allowed:
                raise RedfishError(400, "PropertyValueNotInList",
                                   f"The value {v} for the property {k} is not in the list of "
                                   f"acceptable values {allowed}.")
        apply_time = body.get("@Redfish.SettingsApplyTime")
        if apply_time is not None and not isinstance(apply_time, dict):
            raise RedfishError(400, "PropertyValueTypeError",
                               "The value for @Redfish.SettingsApplyTime must be an object.")
        apply_time = (apply_time or {}).get("ApplyTime")
        if apply_time is not None and apply_time != "OnReset":
            raise RedfishError(400, "PropertyValueNotInList",
                               f"The value {apply_time} for @Redfish.SettingsApplyTime/ApplyTime is not in the "
                               f"list of acceptable values ['OnReset'].")
        location = None
        with state.update_bios(self.bios_path) as d:
            if self.bios_jobs and self.scheduled_job(d):
                raise self._sys011(attrs)
            d["pending"].update(attrs)
            d["pending"] = {k: v for k, v in d["pending"].items() if d["current"].get(k) != v}
            if self.bios_jobs and apply_time == "OnReset" and d["pending"]:
                location = self._new_job(d)
        if location:
            return 202, self.bios(settings=True), {"Location": location}
        return 200, self.bios(settings=True), {}

    def reset_bios(self) -> None:
        d = self.load()
        with state.update_bios(self.bios_path) as d:
            defaults = vendors.factory_defaults(self.vendor, d.get("cpu_vendor", "intel"),
                                                d["system"]["bios_version"])
            d["pending"] = {k: v for k, v in defaults.items() if d["current"].get(k) != v}
            # the defaults apply at the next reset without a job (these, not
            # what is PATCHed after them)
            d["reset_bios_pending"] = dict(d["pending"])

    def _post(self) -> None:
        import time as _time
        with state.update_bios(self.bios_path) as d:
            job = self.scheduled_job(d) if self.bios_jobs else None
            defaults = d.pop("reset_bios_pending", None) or {}
            if self.bios_jobs and not job and defaults:
                d["current"].update({k: v for k, v in defaults.items() if d["pending"].get(k) == v})
                d["pending"] = {k: v for k, v in d["pending"].items() if defaults.get(k) != v}
            if self.bios_jobs and not job:
                if d["pending"]:
                    log.info("%s: POST left BIOS settings %s pending: no configuration job", self.name, d["pending"])
                ov = d.get("boot_override")  # the one-time boot override is consumed all the same
                if ov and ov.get("enabled") == "Once":
                    ov.update(enabled="Disabled", target="None")
                return
            changed = state.apply_pending(d)
            if job:
                now = _time.strftime("%Y-%m-%dT%H:%M:%S")
                job.update(JOB_COMPLETED, ActualRunningStartTime=now, CompletionTime=now)
        if changed:
            log.info("%s: POST applied BIOS settings %s", self.name, changed)

    def reset(self, reset_type) -> None:
        if reset_type not in RESET_TYPES:
            raise RedfishError(400, "ActionParameterValueNotInList",
                               f"The value {reset_type} for the parameter ResetType is not in "
                               f"the list of acceptable values {RESET_TYPES}.")
        if self.driver.answers_first:
            threading.Thread(target=self._reset_logged, args=(reset_type,),
                             name=f"reset-{self.name}", daemon=True).start()
        else:
            self._reset(reset_type)

    def _reset_logged(self, reset_type) -> None:
        try:
            self._reset(reset_type)
        except Exception:  # noqa: BLE001 - nobody waits for this thread; the log is the record
            log.exception("%s: reset %s failed", self.name, reset_type)

    def _reset(self, reset_type) -> None:
        with self._power_lock:
            on = self.power_state() == "On"
            try:
                if reset_type in ("On", "ForceOn"):
                    if not on:
                        self._post()
                        self.driver.on(self.container)
                elif reset_type in ("ForceOff", "GracefulShutdown"):
                    if on:
                        self.driver.off(self.container, force=reset_type == "ForceOff")
                elif reset_type in ("ForceRestart", "GracefulRestart", "PowerCycle"):
                    self._post()
                    if on:
                        self.driver.restart(self.container, force=reset_type != "GracefulRestart")
                    else:
                        self.driver.on(self.container)
                elif reset_type == "PushPowerButton":
                    if on:
                        self.driver.off(self.container, force=False)
                    else:
                        self._post()
                        self.driver.on(self.container)
            except PowerError as e:
                raise RedfishError(500, "InternalError", f"Power action {reset_type} failed: {e}")
        log.info("%s: reset %s", self.name, reset_type)

    def create_session(self, body: dict) -> tuple[str, str]:
        user, pw = str(body.get("UserName", "")), str(body.get("Password", ""))
        if not (hmac.compare_digest(user.encode(), self.username.encode())
                and hmac.compare_digest(pw.encode(), self.password.encode())):
            raise RedfishError(401, "NoValidSession", "Invalid username or password.")
        token, sid = secrets.token_hex(16), secrets.token_hex(4)
        self.sessions[token] = sid
        return token, f"{R}/SessionService/Sessions/{sid}"

    def delete_session(self, path: str) -> None:
        for token, sid in list(self.sessions.items()):
            if path == f"{R}/SessionService/Sessions/{sid}":
                del self.sessions[token]
                return
        raise RedfishError(404, "ResourceMissingAtURI", f"The resource at the URI {path} was not found.")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "simlab-bmc"
    sys_version = ""
    timeout = 30
    # an answer's headers and body are two writes: without TCP_NODELAY a kept-alive
    # connection's next answer waits on the client's delayed ACK (40 ms)
    disable_nagle_algorithm = True

    @property
    def bmc(self) -> Bmc:
        return self.server.bmc

    def log_message(self, fmt, *args):
        log.debug("%s %s", self.bmc.name, fmt % args)

    def _send(self, status: int, body=None, headers=None, content_type="application/json; charset=utf-8"):
        if isinstance(body, str):
            data = body.encode()
        else:
            data = b"" if body is None else json.dumps(body, indent=1).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("OData-Version", "4.0")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if data and self.command != "HEAD":
            self.wfile.write(data)

    def _body(self) -> dict:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return {}
        try:
            body = json.loads(raw)
        except ValueError:
            raise RedfishError(400, "MalformedJSON", "The request body is not valid JSON.")
        if not isinstance(body, dict):
            raise RedfishError(400, "MalformedJSON", "The request body must be a JSON object.")
        return body

    def _path(self) -> str:
        p = urlsplit(self.path).path
        while len(p) > 1 and p.endswith("/"):
            p = p[:-1]
        return p

    def _read(self, status: int, path: str, body, content_type="application/json; charset=utf-8"):
        """A GET or HEAD answer with the headers DSP0266 asks of one (7.5):
        the methods the resource takes, no caching, its schema."""
        headers = {"Allow": self.bmc.allowed(path), "Cache-Control": "no-cache"}
        link = described_by(body)
        if link:
            headers["Link"] = link
        if path.startswith(f"{R}/AccountService/Accounts/"):
            headers["ETag"] = '"%s"' % hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
        return self._send(status, body, headers, content_type)

    def _dispatch(self):
        path, m, b = self._path(), self.command, self.bmc
        try:
            # the service root, the version document and the OData documents are read without
            # credentials, and a session is made without them (DSP0266 13.3.3)
            public = (m in ("GET", "HEAD") and path in ("/redfish", R, f"{R}/odata", f"{R}/$metadata")) or \
                     (m == "POST" and path in (f"{R}/SessionService/Sessions", f"{R}/SessionService/Sessions/Members"))
            if self.headers.get("Authorization") or self.headers.get("X-Auth-Token"):
                faults.count_credentials(b.state_dir, b.name)
            odata_version = self.headers.get("OData-Version")
            if odata_version is not None and odata_version.strip() != "4.0":
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                raise RedfishError(412, "PreconditionFailed",
                                   f"OData-Version {odata_version} is not supported; this service speaks 4.0.")
            if not public and not b.check_auth(self.headers):
                # drain the body so the connection stays usable
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                raise RedfishError(401, "NoValidSession",
                                   "Authentication failed: invalid username or password, "
                                   "or no valid session.",
                                   {"WWW-Authenticate": 'Basic realm="RedfishService"'})
            sys_base = f"{R}/Systems/{b.sid}"
            if m in ("GET", "HEAD"):
                if path == "/redfish":
                    return self._read(200, path, {"v1": f"{R}/"})
                if path == R:
                    return self._read(200, path, b.service_root())
                if path == f"{R}/odata":
                    return self._read(200, path, service_document(b.service_root()))
                if path == f"{R}/$metadata":
                    return self._read(200, path, metadata_document(), "application/xml")
                return self._read(200, path, b.get(path))
            if path in ("/redfish", R, f"{R}/odata", f"{R}/$metadata"):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                raise RedfishError(405, "OperationNotAllowed", f"{m} is not allowed on {path}.",
                                   {"Allow": "GET, HEAD"})
            if m == "POST":
                body = self._body()
                if path == f"{sys_base}/Actions/ComputerSystem.Reset":
                    b.reset(body.get("ResetType"))
                    return self._send(204)
                if path == f"{sys_base}/Bios/Actions/Bios.ResetBios":
                    b.reset_bios()
                    return self._send(204)
                if path == f"{R}/Managers/{b.mid}/Actions/Manager.Reset":
                    return self._send(204)
                if b.bios_jobs and path in (b.jobs_uri, f"{R}/Managers/{b.mid}/Jobs"):
                    loc = b.create_job(body)
                    return self._send(200, None, {"Location": loc})
                if path in (f"{R}/SessionService/Sessions", f"{R}/SessionService/Sessions/Members"):
                    token, loc = b.create_session(body)
                    return self._send(201, b.get(loc), {"X-Auth-Token": token, "Location": loc})
                b.get(path)  # 404 for unknown resources
                raise RedfishError(405, "ActionNotSupported", f"POST is not allowed on {path}.",
                                   {"Allow": b.allowed(path)})
            if m == "PATCH":
                body = self._body()
                if path == sys_base:
                    b.patch_system(body)
                    return self._send(200, b.system())
                if path == f"{sys_base}/Bios/{b.profile['settings_id']}":
                    return self._send(*b.patch_settings(body))
                b.get(path)
                msg = (f"{path} is read-only; PATCH {sys_base}/Bios/{b.profile['settings_id']} to stage BIOS "
                       f"settings." if path == f"{sys_base}/Bios" else f"PATCH is not allowed on {path}.")
                raise RedfishError(405, "PropertyNotWritable", msg, {"Allow": b.allowed(path)})
            if m == "DELETE":
                if path.startswith(f"{R}/SessionService/Sessions/"):
                    b.delete_session(path)
                    return self._send(204)
                b.get(path)
                raise RedfishError(405, "ActionNotSupported", f"DELETE is not allowed on {path}.",
                                   {"Allow": b.allowed(path)})
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            raise RedfishError(405, "ActionNotSupported", f"{m} is not supported.", {"Allow": b.allowed(path)})
        except RedfishError as e:
            log.info("%s: %s %s -> %s %s", b.name, m, path, e.status, e.message_id)
            return self._send(e.status, e.body(), e.headers)
        except Exception as e:  # noqa: BLE001 - answer 500 rather than drop the client
            log.exception("%s: %s %s failed", b.name, m, path)
            err = RedfishError(500, "InternalError", f"Internal error: {e}")
            return self._send(500, err.body())

    do_GET = do_HEAD = do_POST = do_PATCH = do_DELETE = do_PUT = _dispatch


class BmcHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, bmc: Bmc, ssl_ctx: ssl.SSLContext):
        self.bmc, self.ssl_ctx = bmc, ssl_ctx
        self._replaced = None
        super().__init__(addr, Handler)

    def replaced_ctx(self) -> ssl.SSLContext:
        """The context of the certificate this BMC presents under
        bmc-cert-changed (made by the fault's injection)."""
        if self._replaced is None:
            cert, key = ensure_certificate(self.bmc.state_dir, replaced_for=self.bmc.name)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(cert), str(key))
            self._replaced = ctx
        return self._replaced

    def finish_request(self, request, client_address):
        if faults.is_unreachable(self.bmc.state_dir, self.bmc.name):
            # reset the connection: SO_LINGER 0 sends RST on close
            try:
                request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            request.close()
            return
        request.settimeout(30)
        ctx = self.ssl_ctx
        if faults.cert_changed(self.bmc.state_dir, self.bmc.name):
            ctx = self.replaced_ctx()
        try:
            tls = ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as e:
            log.debug("%s: TLS handshake failed: %s", self.bmc.name, e)
            return
        try:
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def handle_error(self, request, client_address):
        log.debug("%s: connection error from %s", self.bmc.name, client_address, exc_info=True)


def ensure_certificate(state_dir, replaced_for: str | None = None) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, shared by all of a lab's BMCs;
    with ``replaced_for``, the one that BMC presents instead under the
    bmc-cert-changed fault (a new key, as a BMC whose certificate was
    regenerated, or someone else answering at its address)."""
    d = Path(state_dir) / "bmc" / "tls"
    if replaced_for:
        d = d / "replaced" / replaced_for
    cert, key = d / "cert.pem", d / "key.pem"
    if cert.exists() and key.exists():
        return cert, key
    d.mkdir(parents=True, exist_ok=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec",
                    "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "3650",
                    "-subj", "/CN=simlab-bmc",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    key.chmod(0o600)
    return cert, key


def load_spec(path) -> list[dict]:
    """A spec file: a JSON list of entries, or ``{"bmcs": [...]}``."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    entries = data.get("bmcs") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a list of BMC entries")
    names = set()
    for e in entries:
        for k in ("name", "port", "vendor", "username", "password"):
            if k not in e:
                raise ValueError(f"{path}: BMC entry {e.get('name', '?')!r} lacks {k!r}")
        vendors.check_vendor(e["vendor"])
        if e["name"] in names:
            raise ValueError(f"{path}: duplicate BMC name {e['name']!r}")
        names.add(e["name"])
    return entries


class BmcLab:
    """All BMCs of a lab, each on its own 127.0.0.1 port, served by threads."""

    READY = "bmc-ready"

    def __init__(self, state_dir, entries: list[dict], driver, host: str = "127.0.0.1"):
        self.state_dir = Path(state_dir)
        self.entries, self.driver, self.host = entries, driver, host
        self.bmcs: dict[str, Bmc] = {}
        self.servers: list[BmcHTTPServer] = []
        self.threads: list[threading.Thread] = []

    def start(self) -> dict:
        ready = self.state_dir / self.READY
        ready.unlink(missing_ok=True)
        cert, key = ensure_certificate(self.state_dir)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        try:
            for e in self.entries:
                bmc = Bmc(self.state_dir, e, self.driver)
                srv = BmcHTTPServer((self.host, int(e["port"])), bmc, ctx)
                bmc.port = srv.server_address[1]
                self.bmcs[bmc.name] = bmc
                self.servers.append(srv)
        except BaseException:
            for s in self.servers:
                s.server_close()
            raise
        for srv in self.servers:
            t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1},
                                 name=f"bmc-{srv.bmc.name}", daemon=True)
            t.start()
            self.threads.append(t)
        info = self.endpoints()
        tmp = ready.with_suffix(".tmp")
        tmp.write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(ready)
        return info

    def endpoints(self) -> dict:
        return {n: {"port": b.port, "address": f"{self.host}:{b.port}",
                    "url": f"https://{self.host}:{b.port}/redfish/v1", "vendor": b.vendor}
                for n, b in self.bmcs.items()}

    def stop(self) -> None:
        (self.state_dir / self.READY).unlink(missing_ok=True)
        stoppers = [threading.Thread(target=s.shutdown, daemon=True) for s in self.servers]
        for t in stoppers:
            t.start()
        for t in stoppers + self.threads:
            t.join(timeout=5)
        for s in self.servers:
            s.server_close()
