"""Layer 1's and 2's Redfish reads, the BIOS plan and the doctor's layer 2
verdict replayed against recordings of real BMCs (Mockup Creator captures of
a Dell R750 iDRAC 9, an HPE DL385 Gen10 Plus v2 iLO 5, a Lenovo SR670 V2 XCC
and a Supermicro X13 SYS-821GE-TNHR: tests/unit/fixtures/bmc_real, README
there), and the twin's BMC of each vendor held to its recording."""

import json
import re
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.bios import redfish_bios
from ansible_collections.gpufabric.stack.plugins.plugin_utils.bios import bios_attributes as ba
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import bios as bios_check
from simlab.bmc.power import FakePowerDriver
from simlab.bmc.server import BmcLab

pytestmark = pytest.mark.layers(1, 2)

REAL = Path(__file__).resolve().parent / "fixtures" / "bmc_real"
# what was recorded: the server, its CPU, the system link, the settings link, and the BIOS as found
RECORDED = {
    "dell": ("PowerEdge R750", "intel", "/redfish/v1/Systems/System.Embedded.1",
             "/redfish/v1/Systems/System.Embedded.1/Bios/Settings",
             {"sriov": ["SriovGlobalEnable"], "iommu": ["ProcVirtualization"], "acs": []}),
    "hpe": ("ProLiant DL385 Gen10 Plus v2", "amd", "/redfish/v1/Systems/1", "/redfish/v1/systems/1/bios/settings/",
            {"sriov": ["Sriov"], "iommu": ["ProcAmdIoVt"], "acs": ["AccessControlService"]}),
    "lenovo": ("ThinkSystem SR670 V2", "intel", "/redfish/v1/Systems/1", "/redfish/v1/Systems/1/Bios/Pending",
               {"sriov": ["DevicesandIOPorts_SRIOV"], "iommu": ["DevicesandIOPorts_IntelVTforDirectedIOVTd"],
                "acs": ["Processors_PCIeACSCTL"]}),
    "supermicro": ("SYS-821GE-TNHR", "intel", "/redfish/v1/Systems/1", "/redfish/v1/Systems/1/Bios/SD",
                   {"sriov": ["SR_IOVSupport_0047"], "iommu": ["IntelVTforDirectedI_O_VT_d__1E32"],
                    "acs": ["PCIeACSCTL_1E3C"]}),
}


def replay(vendor, log=None):
    """A getter answering from the recording, as the BMC did: a path is its
    directory's index.json; iLO matches paths without regard to case (its
    links are lower case, the recorded directories as the creator met them)."""
    root = REAL / vendor

    def get(path):
        if log is not None:
            log.append(path)
        cur = root
        for part in [p for p in path.split("/") if p]:
            match = [c for c in cur.iterdir() if c.name == part] or \
                    [c for c in cur.iterdir() if c.name.lower() == part.lower()] if cur.is_dir() else []
            if not match:
                return 404, None, "Not Found"
            cur = match[0]
        if not (cur / "index.json").exists():
            return 404, None, "Not Found"
        return 200, json.loads((cur / "index.json").read_text()), ""
    return get


@pytest.mark.parametrize("vendor", sorted(RECORDED))
def test_the_read_follows_each_recorded_bmc_and_the_plan_names_its_attributes(vendor):
    model, cpu, system_uri, settings_uri, names = RECORDED[vendor]
    log = []
    out = redfish_bios.read_bios(replay(vendor, log), "bmc")
    assert out["error"] == "" and out["vendor"] == vendor, out["error"]
    assert out["system"]["Model"] == model and out["system_uri"] == system_uri
    assert out["settings_uri"] == settings_uri
    assert log[:2] == ["/redfish/v1/", "/redfish/v1/Systems"]      # from the service root, by its links
    # layer 1's boot order is the recorded system's Boot.BootOrder, its references as the BMC spells them
    recorded = replay(vendor)(system_uri)[1]["Boot"]["BootOrder"]
    assert recorded and out["boot_order"] == recorded
    assert all(re.match(r"^Boot[0-9A-F]{4}$", ref) for ref in out["boot_order"]), out["boot_order"]
    # nothing is pending on any of them (iLO and XCC answer every attribute)
    assert out["pending"] == {}
    assert len(out["current"]) > 250
    state = ba.bios_state(out["current"], vendor, cpu, registry=out["registry"])
    assert state["attributes"] == names
    assert state["sriov"] is True and state["iommu"] is True        # as these servers were recorded
    plan = ba.bios_plan(out["current"], vendor, cpu, sriov=True, iommu=True, acs=True, registry=out["registry"],
                        pending=out["pending"])
    assert plan["skipped"] == ([] if names["acs"] else ["acs"])
    # every value planned is one the BIOS reports for that attribute's kind (the X13 reports display names)
    for attr, value in plan["desired"].items():
        assert value in ("Enabled", "Enable", "Disabled", "Disable"), (attr, value)
    if vendor == "supermicro":
        assert out["registry"]["RegistryEntries"]["Attributes"]
        assert plan["desired"] == {"SR_IOVSupport_0047": "Enabled", "IntelVTforDirectedI_O_VT_d__1E32": "Enable",
                                   "PCIeACSCTL_1E3C": "Enable"}
        assert plan["stage"] == {"PCIeACSCTL_1E3C": "Enable"}         # ACS is off there


@pytest.mark.parametrize("vendor", sorted(RECORDED))
def test_the_doctors_layer_2_on_each_recorded_bmc(vendor):
    """GPUDirect intent (ACS off): what the doctor says of each recorded BIOS."""
    model, cpu, _system, _settings, names = RECORDED[vendor]
    answer = redfish_bios.read_bios(replay(vendor), "bmc")
    got = bios_check.check({"bmc": answer}, {"bmc_address": "bmc", "bmc_vendor": "auto", "bios_cpu_vendor": cpu,
                                             "bios_sriov": True, "bios_iommu": True, "bios_acs": False}, "node01")
    if names["acs"] and vendor != "supermicro":
        # ACS on where the intent has it off: not a failure, a difference to converge
        assert got["status"] == "warn" and got["reason"] == "BIOS differs from intent", got
    else:
        assert got["status"] == "pass", got


@pytest.mark.parametrize("vendor", ["dell", "hpe", "supermicro"])
def test_the_twins_bmc_reads_as_its_recording(vendor, tmp_path):
    """The twin's BMC of each vendor against the recording of that vendor:
    the same read path (service root, Systems, system, Bios, its settings
    object), the same attribute names for SR-IOV, the IOMMU and ACS for the
    recorded CPU, and the same value spellings. Dell's ACS attribute is the
    twin's own (the recorded R750 has none): the one difference, named."""
    _model, cpu, _system, _settings, names = RECORDED[vendor]
    real = redfish_bios.read_bios(replay(vendor), "bmc")
    lab = BmcLab(tmp_path / "lab", [{"name": "n1", "port": 0, "vendor": vendor, "username": "root",
                                     "password": "calvin", "container": "c1", "cpu_vendor": cpu}],
                 FakePowerDriver(initial="On"))
    lab.start()
    try:
        twin = redfish_bios.read_bios(redfish_bios.https_getter("127.0.0.1:%d" % lab.bmcs["n1"].port, "root",
                                                                "calvin", timeout=10), "twin")
    finally:
        lab.stop()
    assert twin["error"] == "" and twin["vendor"] == real["vendor"]
    # the boot order in the recorded form: UEFI Boot#### references (a BMC's own order, so not the same list)
    assert twin["boot_order"] and real["boot_order"]
    assert all(re.match(r"^Boot[0-9A-F]{4}$", ref) for ref in twin["boot_order"] + real["boot_order"])
    for key in ("system_uri", "bios_uri", "settings_uri"):
        # the same resources, as the service names them (iLO's links are lower case)
        assert twin[key].lower().rstrip("/").split("/")[-1] == real[key].lower().rstrip("/").split("/")[-1], key
    real_state = ba.bios_state(real["current"], vendor, cpu, registry=real["registry"])
    twin_state = ba.bios_state(twin["current"], vendor, cpu, registry=twin["registry"])
    differ = dict((s, (twin_state["attributes"][s], real_state["attributes"][s])) for s in ("sriov", "iommu", "acs")
                  if [a.rsplit("_", 1)[0] if vendor == "supermicro" else a for a in twin_state["attributes"][s]]
                  != [a.rsplit("_", 1)[0] if vendor == "supermicro" else a for a in real_state["attributes"][s]])
    assert differ == ({"acs": (["PcieAcsControl"], [])} if vendor == "dell" else {}), differ
    # the service root's Oem object: the same vendor key and type (the version aside)
    real_root, twin_root = replay(vendor)("/redfish/v1/")[1], twin_root_of(vendor, tmp_path)
    kind = lambda root: dict((k, str((v or {}).get("@odata.type") or "").split(".")[0])   # noqa: E731
                             for k, v in (root.get("Oem") or {}).items())
    assert kind(twin_root) == kind(real_root), (kind(twin_root), kind(real_root))


def twin_root_of(vendor, tmp_path):
    """The twin BMC's service root, of a second lab (the first one stopped)."""
    lab = BmcLab(tmp_path / "lab2", [{"name": "n1", "port": 0, "vendor": vendor, "username": "root",
                                      "password": "calvin", "container": "c1"}], FakePowerDriver(initial="On"))
    lab.start()
    try:
        return redfish_bios.https_getter("127.0.0.1:%d" % lab.bmcs["n1"].port, "root", "calvin", timeout=10)(
            "/redfish/v1/")[1]
    finally:
        lab.stop()
