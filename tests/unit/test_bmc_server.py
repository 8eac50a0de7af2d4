"""The twin's Redfish BMCs over HTTPS, with the in-memory power driver."""

import base64
import http.client
import json
import ssl
import threading
import time

import pytest

from simlab.bmc import faults, state, vendors
from simlab.bmc.power import FakePowerDriver
from simlab.bmc.server import BmcLab

pytestmark = pytest.mark.layers(1, 2)

CTX = ssl._create_unverified_context()
SPEC = [
    {"name": "dell1", "port": 0, "vendor": "dell", "username": "root", "password": "calvin",
     "container": "c-dell1"},
    {"name": "hpe1", "port": 0, "vendor": "hpe", "username": "Administrator",
     "password": "hpe-pw", "container": "c-hpe1"},
    {"name": "smc1", "port": 0, "vendor": "supermicro", "username": "ADMIN",
     "password": "smc-pw", "container": "c-smc1", "bios_version": "3.0a"},
    {"name": "amd1", "port": 0, "vendor": "hpe", "username": "Administrator",
     "password": "hpe-pw", "container": "c-amd1", "cpu_vendor": "amd"},
]


@pytest.fixture
def lab(tmp_path):
    boots = []
    driver = FakePowerDriver(initial="On")

    def on_boot(container):
        name = container[2:]
        boots.append((name, state.load_bios(state.bios_path(tmp_path, name))))

    driver.on_boot = on_boot
    lab = BmcLab(tmp_path, SPEC, driver)
    lab.start()
    lab.boots = boots
    yield lab
    lab.stop()


class Client:
    def __init__(self, lab, name, user=None, password=None):
        entry = next(e for e in SPEC if e["name"] == name)
        self.port = lab.bmcs[name].port
        self.user = entry["username"] if user is None else user
        self.password = entry["password"] if password is None else password

    def req(self, method, path, body=None, auth=True, headers=None):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=CTX, timeout=10)
        h = {"Accept": "application/json", **(headers or {})}
        if auth:
            cred = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
            h["Authorization"] = "Basic " + cred
        data = None
        if body is not None:
            data = json.dumps(body)
            h["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None), dict(r.getheaders())
        finally:
            conn.close()

    def get(self, path, **kw):
        st, body, _ = self.req("GET", path, **kw)
        assert st == 200, (path, st, body)
        return body


def test_ready_file_lists_every_endpoint(lab, tmp_path):
    ready = json.loads((tmp_path / "bmc-ready").read_text())
    assert sorted(ready) == sorted(e["name"] for e in SPEC)
    assert ready["dell1"]["url"] == f"https://127.0.0.1:{lab.bmcs['dell1'].port}/redfish/v1"


def test_service_root_is_public_everything_else_needs_auth(lab):
    c = Client(lab, "dell1", password="wrong")
    st, body, _ = c.req("GET", "/redfish/v1/", auth=False)
    assert st == 200 and body["Vendor"] == "Dell"
    st, body, hdr = c.req("GET", "/redfish/v1/Systems")
    assert st == 401
    assert body["error"]["@Message.ExtendedInfo"][0]["MessageId"].endswith("NoValidSession")
    assert "calvin" not in json.dumps(body) and "wrong" not in json.dumps(body)
    assert hdr.get("WWW-Authenticate", "").startswith("Basic")
    st, _, _ = c.req("GET", "/redfish/v1/Systems", auth=False)
    assert st == 401
    assert Client(lab, "dell1").get("/redfish/v1/Systems")["Members@odata.count"] == 1


def test_sessions(lab):
    c = Client(lab, "hpe1")
    st, _, _ = c.req("POST", "/redfish/v1/SessionService/Sessions",
                     {"UserName": "Administrator", "Password": "nope"}, auth=False)
    assert st == 401
    st, body, hdr = c.req("POST", "/redfish/v1/SessionService/Sessions",
                          {"UserName": "Administrator", "Password": "hpe-pw"}, auth=False)
    assert st == 201 and hdr["Location"].startswith("/redfish/v1/SessionService/Sessions/")
    tok = {"X-Auth-Token": hdr["X-Auth-Token"]}
    st, sysd, _ = c.req("GET", "/redfish/v1/Systems/1", auth=False, headers=tok)
    assert st == 200 and sysd["Manufacturer"] == "HPE"
    assert c.req("DELETE", hdr["Location"], auth=False, headers=tok)[0] == 204
    assert c.req("GET", "/redfish/v1/Systems/1", auth=False, headers=tok)[0] == 401


def test_system_inventory_and_vendor_ids(lab):
    d = Client(lab, "dell1").get("/redfish/v1/Systems/System.Embedded.1")
    assert d["Manufacturer"] == "Dell Inc." and d["PowerState"] == "On"
    assert d["SerialNumber"] and d["BiosVersion"] == "1.6.10"
    assert d["Boot"]["BootOrder"] == ["Boot0001", "Boot0002", "Boot0003"]
    assert d["Bios"]["@odata.id"] == "/redfish/v1/Systems/System.Embedded.1/Bios"
    m = Client(lab, "dell1").get("/redfish/v1/Managers/iDRAC.Embedded.1")
    assert m["ManagerType"] == "BMC"
    s = Client(lab, "smc1").get("/redfish/v1/Systems/1")
    assert s["Manufacturer"] == "Supermicro" and s["BiosVersion"] == "3.0a"


def test_factory_defaults_sriov_and_vtd_off(lab):
    for name, sid in (("dell1", "System.Embedded.1"), ("hpe1", "1"), ("smc1", "1"),
                      ("amd1", "1")):
        attrs = Client(lab, name).get(f"/redfish/v1/Systems/{sid}/Bios")["Attributes"]
        vendor = next(e["vendor"] for e in SPEC if e["name"] == name)
        eff = vendors.effective(vendor, attrs)
        assert eff["sriov"] is False and eff["iommu"] is False, (name, attrs)
    hpe = Client(lab, "amd1").get("/redfish/v1/Systems/1/Bios")["Attributes"]
    assert "ProcAmdIoVt" in hpe and "IntelProcVtd" not in hpe


def test_pending_vs_current_and_reset_applies(lab):
    c = Client(lab, "dell1")
    bios = c.get("/redfish/v1/Systems/System.Embedded.1/Bios")
    settings_uri = bios["@Redfish.Settings"]["SettingsObject"]["@odata.id"]
    st, body, _ = c.req("PATCH", settings_uri, {
        "Attributes": {"SriovGlobalEnable": "Enabled", "ProcVirtualization": "Enabled"},
        "@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"}})
    # iDRAC: 202, the BIOS configuration job in Location (test_bmc_jobs.py)
    assert st == 202 and body["Attributes"] == {"SriovGlobalEnable": "Enabled",
                                                "ProcVirtualization": "Enabled"}
    cur = c.get("/redfish/v1/Systems/System.Embedded.1/Bios")["Attributes"]
    assert cur["SriovGlobalEnable"] == "Disabled"
    assert c.get(settings_uri)["Attributes"]["SriovGlobalEnable"] == "Enabled"
    # PATCH on the current resource is refused
    st, body, _ = c.req("PATCH", "/redfish/v1/Systems/System.Embedded.1/Bios",
                        {"Attributes": {"SriovGlobalEnable": "Enabled"}})
    assert st == 405 and "Bios/Settings" in body["error"]["message"]

    st, _, _ = c.req("POST", "/redfish/v1/Systems/System.Embedded.1/Actions/ComputerSystem.Reset",
                     {"ResetType": "ForceRestart"})
    assert st == 204
    assert lab.driver.events[-1] == ("force-restart", "c-dell1")
    # the node saw the new settings at boot (applied before the restart)
    name, seen = lab.boots[-1]
    assert name == "dell1" and seen["current"]["SriovGlobalEnable"] == "Enabled"
    assert seen["pending"] == {}
    cur = c.get("/redfish/v1/Systems/System.Embedded.1/Bios")["Attributes"]
    assert vendors.effective("dell", cur) == {"sriov": True, "iommu": True, "acs": True}
    assert c.get(settings_uri)["Attributes"] == {}


def test_settings_validation(lab):
    c = Client(lab, "hpe1")
    st, body, _ = c.req("PATCH", "/redfish/v1/Systems/1/Bios/Settings",
                        {"Attributes": {"SriovGlobalEnable": "Enabled"}})
    assert st == 400 and "SriovGlobalEnable" in body["error"]["message"]
    st, body, _ = c.req("PATCH", "/redfish/v1/Systems/1/Bios/Settings",
                        {"Attributes": {"Sriov": "On"}})
    assert st == 400 and "PropertyValueNotInList" in body["error"]["code"]
    # a pending value equal to the current one is not pending
    st, body, _ = c.req("PATCH", "/redfish/v1/Systems/1/Bios/Settings",
                        {"Attributes": {"Sriov": "Enabled"}})
    assert body["Attributes"] == {"Sriov": "Enabled"}
    st, body, _ = c.req("PATCH", "/redfish/v1/Systems/1/Bios/Settings",
                        {"Attributes": {"Sriov": "Disabled"}})
    assert st == 200 and body["Attributes"] == {}


def test_power_off_on_applies_pending_before_start(lab):
    c = Client(lab, "hpe1")
    reset = "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
    assert c.req("POST", reset, {"ResetType": "ForceOff"})[0] == 204
    assert c.get("/redfish/v1/Systems/1")["PowerState"] == "Off"
    c.req("PATCH", "/redfish/v1/Systems/1/Bios/Settings",
          {"Attributes": {"IntelProcVtd": "Enabled"}})
    assert c.req("POST", reset, {"ResetType": "On"})[0] == 204
    assert lab.driver.events[-2:] == [("force-off", "c-hpe1"), ("on", "c-hpe1")]
    assert lab.boots[-1][1]["current"]["IntelProcVtd"] == "Enabled"
    assert c.get("/redfish/v1/Systems/1")["PowerState"] == "On"
    st, body, _ = c.req("POST", reset, {"ResetType": "Explode"})
    assert st == 400



class SlowDriver(FakePowerDriver):
    """A driver whose restart takes until the test releases it, like many
    podman restarts at once: the BMC must answer before it acts."""

    answers_first = True

    def __init__(self):
        super().__init__(initial="On")
        self.release = threading.Event()
        self.started = threading.Event()

    def restart(self, container, force):
        self.started.set()
        assert self.release.wait(10)
        super().restart(container, force)


def test_a_reset_is_answered_before_it_is_carried_out(tmp_path):
    driver = SlowDriver()
    lab = BmcLab(tmp_path, SPEC[:1], driver)
    lab.start()
    try:
        c = Client(lab, "dell1")
        c.req("PATCH", "/redfish/v1/Systems/System.Embedded.1/Bios/Settings",
              {"Attributes": {"SriovGlobalEnable": "Enabled"},
               "@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"}})
        st, _, _ = c.req("POST", "/redfish/v1/Systems/System.Embedded.1/Actions/ComputerSystem.Reset",
                         {"ResetType": "ForceRestart"})
        assert st == 204
        assert driver.started.wait(10)
        assert driver.events == []  # answered; the restart has not finished
        # the BMC still serves requests while the restart runs
        assert c.get("/redfish/v1/Systems/System.Embedded.1")["PowerState"] == "On"
        driver.release.set()
        deadline = time.monotonic() + 10
        while not driver.events and time.monotonic() < deadline:
            time.sleep(0.05)
        assert driver.events == [("force-restart", "c-dell1")]
        # pending settings were applied at that POST
        cur = c.get("/redfish/v1/Systems/System.Embedded.1/Bios")["Attributes"]
        assert cur["SriovGlobalEnable"] == "Enabled"
    finally:
        driver.release.set()
        lab.stop()


def test_the_in_memory_driver_acts_before_the_answer(lab):
    c = Client(lab, "dell1")
    assert c.req("POST", "/redfish/v1/Systems/System.Embedded.1/Actions/ComputerSystem.Reset",
                 {"ResetType": "ForceRestart"})[0] == 204
    assert lab.driver.events[-1] == ("force-restart", "c-dell1")


def test_supermicro_keys_resolve_through_registry(lab):
    c = Client(lab, "smc1")
    bios = c.get("/redfish/v1/Systems/1/Bios")
    f = c.get(f"/redfish/v1/Registries/{bios['AttributeRegistry']}")
    loc = next(x["Uri"] for x in f["Location"] if x["Language"] == "en")
    reg = c.get(loc)["RegistryEntries"]["Attributes"]
    by_display = {a["DisplayName"]: a for a in reg}
    sriov = by_display["SR-IOV Support"]
    vtd = by_display["Intel VT for Directed I/O (VT-d)"]
    # keys carry a per-BIOS-build suffix, so they can only be found by display name
    assert sriov["AttributeName"].startswith("SR_IOVSupport_")
    assert sriov["AttributeName"] != "SR_IOVSupport_" + vendors.smc_suffix("2.1", "SR-IOV Support")
    assert vtd["AttributeName"] in bios["Attributes"]
    assert [v["ValueName"] for v in vtd["Value"]] == ["Enable", "Disable"]
    # the X13's pending settings object is Bios/SD (a recorded SYS-821GE-TNHR)
    assert bios["@Redfish.Settings"]["SettingsObject"]["@odata.id"] == "/redfish/v1/Systems/1/Bios/SD"
    st, _, _ = c.req("PATCH", "/redfish/v1/Systems/1/Bios/SD",
                     {"Attributes": {vtd["AttributeName"]: "Enabled"}})
    assert st == 400  # this attribute spells it "Enable"
    st, _, _ = c.req("PATCH", "/redfish/v1/Systems/1/Bios/SD",
                     {"Attributes": {vtd["AttributeName"]: "Enable",
                                     sriov["AttributeName"]: "Enabled"}})
    assert st == 200
    c.req("POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset",
          {"ResetType": "GracefulRestart"})
    attrs = c.get("/redfish/v1/Systems/1/Bios")["Attributes"]
    assert vendors.effective("supermicro", attrs)["sriov"] is True
    assert vendors.effective("supermicro", attrs)["iommu"] is True


def test_boot_order_and_one_time_boot(lab):
    c = Client(lab, "dell1")
    sysuri = "/redfish/v1/Systems/System.Embedded.1"
    st, _, _ = c.req("PATCH", sysuri, {"Boot": {"BootOrder": ["Boot0002", "Boot0001", "Boot0003"]}})
    assert st == 200
    assert c.get(sysuri)["Boot"]["BootOrder"][0] == "Boot0002"
    assert c.req("PATCH", sysuri, {"Boot": {"BootOrder": ["Boot0009"]}})[0] == 400
    c.req("PATCH", sysuri, {"Boot": {"BootSourceOverrideEnabled": "Once",
                                     "BootSourceOverrideTarget": "Pxe"}})
    assert c.get(sysuri)["Boot"]["BootSourceOverrideTarget"] == "Pxe"
    c.req("POST", f"{sysuri}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
    boot = c.get(sysuri)["Boot"]
    assert boot["BootSourceOverrideEnabled"] == "Disabled" and boot["BootOrder"][0] == "Boot0002"


def test_unreachable_fault_drops_connections(lab, tmp_path):
    c = Client(lab, "hpe1")
    faults.inject(tmp_path, "hpe1", "bmc-unreachable")
    with pytest.raises((ConnectionError, ssl.SSLError, http.client.HTTPException, OSError)):
        c.req("GET", "/redfish/v1/")
    assert Client(lab, "dell1").get("/redfish/v1/Systems")  # other BMCs unaffected
    assert faults.active(tmp_path, "hpe1") == ["bmc-unreachable"]
    faults.clear(tmp_path, "hpe1")
    assert c.get("/redfish/v1/")["Vendor"] == "HPE"


def test_bios_faults_change_current_and_clear_restores(lab, tmp_path):
    c = Client(lab, "smc1")
    names = {a: a for a in c.get("/redfish/v1/Systems/1/Bios")["Attributes"]}
    sriov = next(n for n in names if n.startswith("SR_IOVSupport_"))
    vtd = next(n for n in names if n.startswith("IntelVTforDirectedI_O"))
    c.req("PATCH", "/redfish/v1/Systems/1/Bios/SD",
          {"Attributes": {sriov: "Enabled", vtd: "Enable"}})
    c.req("POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", {"ResetType": "On"})
    c.req("POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset",
          {"ResetType": "ForceRestart"})
    assert vendors.effective("supermicro", c.get("/redfish/v1/Systems/1/Bios")["Attributes"])[
        "iommu"] is True
    r = faults.inject(tmp_path, "smc1", "bios-vtd-off")
    assert r["attribute"] == vtd and r["value"] == "Disable"
    faults.inject(tmp_path, "smc1", "bios-sriov-off")
    attrs = c.get("/redfish/v1/Systems/1/Bios")["Attributes"]
    assert attrs[vtd] == "Disable" and attrs[sriov] == "Disabled"
    out = faults.clear(tmp_path, "smc1")
    assert out["reboot_needed"] and sorted(out["cleared"]) == ["bios-sriov-off", "bios-vtd-off"]
    attrs = c.get("/redfish/v1/Systems/1/Bios")["Attributes"]
    assert attrs[vtd] == "Enable" and attrs[sriov] == "Enabled"
    with pytest.raises(ValueError):
        faults.inject(tmp_path, "smc1", "bios-on-fire")


def test_state_survives_restart_and_is_atomic(tmp_path):
    spec = [dict(SPEC[0])]
    lab = BmcLab(tmp_path, spec, FakePowerDriver())
    lab.start()
    c = Client(lab, "dell1")
    c.req("PATCH", "/redfish/v1/Systems/System.Embedded.1/Bios/Settings",
          {"Attributes": {"SriovGlobalEnable": "Enabled"}})
    lab.stop()
    assert not (tmp_path / "bmc-ready").exists()
    data = state.load_bios(tmp_path / "nodes" / "dell1")
    assert data["pending"] == {"SriovGlobalEnable": "Enabled"} and data["vendor"] == "dell"
    assert [p.name for p in (tmp_path / "nodes" / "dell1").iterdir()
            if p.name.endswith(".tmp")] == []
    lab2 = BmcLab(tmp_path, spec, FakePowerDriver())
    lab2.start()
    try:
        assert Client(lab2, "dell1").get(
            "/redfish/v1/Systems/System.Embedded.1/Bios/Settings")["Attributes"] == {
            "SriovGlobalEnable": "Enabled"}
    finally:
        lab2.stop()


def test_the_metadata_document_references_the_dsp8010_schema_of_every_type_served(lab):
    """$metadata (DSP0266 8.4.1) names, for every standard resource type the BMC serves
    (every resource its links reach, for each vendor), a DSP8010 CSDL file that exists and
    the namespaces of the type and its version; OEM types are the vendors' own CSDL."""
    import re
    import xml.etree.ElementTree as ET

    from tests.reference import REDFISH_CSDL
    edmx = "{http://docs.oasis-open.org/odata/ns/edmx}"
    for name in ("dell1", "hpe1", "smc1"):
        c = Client(lab, name)
        conn = http.client.HTTPSConnection("127.0.0.1", c.port, context=CTX, timeout=10)
        conn.request("GET", "/redfish/v1/$metadata")
        r = conn.getresponse()
        assert r.status == 200 and r.getheader("Content-Type") == "application/xml"
        doc = ET.fromstring(r.read())
        conn.close()
        included = set()
        for ref in doc.findall(f"{edmx}Reference"):
            assert (REDFISH_CSDL / ref.get("Uri").rsplit("/", 1)[1]).is_file(), ref.get("Uri")
            included |= {inc.get("Namespace") for inc in ref.findall(f"{edmx}Include")}
        seen, todo, types = set(), ["/redfish/v1/"], set()
        while todo:
            path = todo.pop()
            if path in seen or "/Actions/" in path:
                continue
            seen.add(path)
            st, body, _ = c.req("GET", path)
            assert st == 200, (name, path, st)
            if body.get("@odata.type"):
                types.add(body["@odata.type"].lstrip("#"))
            todo += [m for m in re.findall(r'"@odata\.id": "([^"#]+)"', json.dumps(body)) if m not in seen]
        standard = {t for t in types if (REDFISH_CSDL / (t.split(".")[0] + "_v1.xml")).is_file()}
        assert len(standard) >= 15 and any(t.startswith("Role.") for t in standard), (name, types)
        for t in standard:
            namespace, version = t.split(".")[0], ".".join(t.split(".")[:2])
            assert namespace in included and (version == namespace + "." + namespace or version in included), \
                (name, t)
