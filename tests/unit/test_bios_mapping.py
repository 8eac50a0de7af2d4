"""BIOS intent -> vendor attribute mapping (plugins/filter/bios.py), checked
against the twin's independent vendor catalogues."""

import json

import pytest

from ansible_collections.gpufabric.stack.plugins.filter import bios
from ansible_collections.gpufabric.stack.plugins.plugin_utils.bios import bios_attributes
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import bios as bios_check
from simlab.bmc import vendors

pytestmark = pytest.mark.layers(2)


def _twin(vendor, cpu="intel", version=None):
    reg = vendors.registry_attributes(vendor, cpu, version)
    return vendors.factory_defaults(vendor, cpu, version), reg


@pytest.mark.parametrize("vendor,cpu", [("dell", "intel"), ("dell", "amd"), ("hpe", "intel"),
                                        ("hpe", "amd"), ("supermicro", "intel"),
                                        ("supermicro", "amd")])
def test_plan_applied_turns_switches_on(vendor, cpu):
    cur, reg = _twin(vendor, cpu, "9.9" if vendor == "supermicro" else None)
    assert bios_attributes.bios_state(cur, vendor, cpu, reg)["sriov"] is False
    plan = bios.bios_plan(cur, vendor, cpu, True, True, False, registry=reg)
    assert plan["reset_needed"] and plan["stage"]
    after = dict(cur, **plan["stage"])
    # the twin's firmware model agrees with the filter's reading
    assert vendors.effective(vendor, after) == {"sriov": True, "iommu": True, "acs": False}
    st = bios_attributes.bios_state(after, vendor, cpu, reg)
    assert (st["sriov"], st["iommu"], st["acs"]) == (True, True, False)
    again = bios.bios_plan(after, vendor, cpu, True, True, False, registry=reg)
    assert again["stage"] == {} and again["reset_needed"] is False


def test_dell_and_hpe_names():
    cur, reg = _twin("dell")
    plan = bios.bios_plan(cur, "dell", "intel", registry=reg)
    assert plan["stage"] == {"SriovGlobalEnable": "Enabled", "ProcVirtualization": "Enabled",
                             "PcieAcsControl": "Disabled"}
    cur, _ = _twin("hpe", "amd")
    plan = bios.bios_plan(cur, "hpe", "amd", acs=True)
    assert plan["stage"] == {"Sriov": "Enabled", "ProcAmdIoVt": "Enabled"}


def test_supermicro_resolved_by_display_name_with_value_spelling():
    cur, reg = _twin("supermicro", "intel", "1.4")
    plan = bios.bios_plan(cur, "supermicro", "intel", registry=reg)
    (sriov,) = plan["attributes"]["sriov"]
    (vtd,) = plan["attributes"]["iommu"]
    assert sriov.startswith("SR_IOVSupport_") and vtd.startswith("IntelVTforDirectedI_O_VT_d_")
    assert plan["stage"][sriov] == "Enabled" and plan["stage"][vtd] == "Enable"
    # registry keyed differently than the key pattern: registry wins
    reg2 = [dict(a) for a in reg]
    cur2 = dict(cur)
    for a in reg2:
        if a["DisplayName"] == "SR-IOV Support":
            cur2["SriovKnob_0001"] = cur2.pop(a["AttributeName"])
            a["AttributeName"] = "SriovKnob_0001"
    assert bios.bios_plan(cur2, "supermicro", "intel", registry=reg2)["attributes"]["sriov"] == [
        "SriovKnob_0001"]


def test_pending_not_restaged_but_reset_still_needed():
    cur, reg = _twin("dell")
    pending = {"SriovGlobalEnable": "Enabled", "ProcVirtualization": "Enabled",
               "PcieAcsControl": "Disabled"}
    plan = bios.bios_plan(cur, "dell", "intel", registry=reg, pending=pending)
    assert plan["stage"] == {} and plan["reset_needed"] is True


def test_missing_attribute_and_bad_vendor_fail_clearly():
    with pytest.raises(Exception, match="no sriov attribute.*SriovGlobalEnable"):
        bios.bios_plan({"ProcVirtualization": "Enabled"}, "dell", "intel")
    with pytest.raises(Exception, match="unknown BIOS vendor 'fujitsu'"):
        bios.bios_plan({}, "fujitsu")
    with pytest.raises(Exception, match="lenovo BIOS .amd CPU.: its attribute names are not known here"):
        bios.bios_plan({}, "lenovo", "amd")
    with pytest.raises(Exception, match="unsupported BMC vendor"):
        bios.bios_vendor("Acme Computers")
    assert bios.bios_vendor("Dell Inc.") == "dell"
    assert bios.bios_vendor("HPE") == "hpe"
    assert bios.bios_vendor("Supermicro") == "supermicro"


def test_acs_optional():
    cur, reg = _twin("dell")
    del cur["PcieAcsControl"]
    plan = bios.bios_plan(cur, "dell", "intel", acs=False)
    assert plan["skipped"] == ["acs"] and "PcieAcsControl" not in plan["desired"]
    assert bios_attributes.bios_state(cur, "dell")["acs"] is None


def _answer(vendor, cur, reg=None, pending=None, manufacturer=None):
    return {"error": "", "manufacturer": manufacturer or {"dell": "Dell Inc.", "hpe": "HPE",
                                                            "supermicro": "Supermicro"}[vendor],
            "current": cur, "pending": pending or {}, "registry": reg}


def bios_doctor(answer, bmc_vendor="auto", cpu_vendor="intel", sriov=True, iommu=True, acs=False):
    """The layer 2 check (checks/bios.py) on one bios_facts answer."""
    return bios_check.check({"bmc": answer}, {"bmc_address": "10.0.0.1", "bmc_vendor": bmc_vendor,
                                              "bios_cpu_vendor": cpu_vendor, "bios_sriov": sriov, "bios_iommu": iommu,
                                              "bios_acs": acs}, "node01")


@pytest.mark.parametrize("vendor,cpu", [("dell", "intel"), ("hpe", "amd"), ("supermicro", "intel")])
def test_the_doctors_verdict_from_one_answer(vendor, cpu):
    """bios_doctor: factory defaults (SR-IOV off) fail; the plan staged and
    pending warns; applied passes with the vendor and the desired values."""
    cur, reg = _twin(vendor, cpu, "9.9" if vendor == "supermicro" else None)
    v = bios_doctor(_answer(vendor, cur, reg), "auto", cpu)
    assert (v["layer"], v["status"], v["reason"]) == (2, "fail", "SR-IOV disabled in BIOS")
    names = bios_attributes.bios_state(cur, vendor, cpu, reg)["attributes"]["sriov"]
    assert v["evidence"] == ["current " + json.dumps({n: cur[n] for n in names})]
    plan = bios.bios_plan(cur, vendor, cpu, True, True, False, registry=reg)
    v = bios_doctor(_answer(vendor, cur, reg, pending=plan["stage"]), "auto", cpu)
    assert (v["status"], v["reason"]) == ("warn", "settings pending a reboot")
    assert v["evidence"][0].startswith("pending " + json.dumps(plan["stage"]) + ", current ")
    assert "bios_reboot: true" in v["remediation"]
    after = dict(cur, **plan["stage"])
    v = bios_doctor(_answer(vendor, after, reg), "auto", cpu)
    assert v == {"layer": 2, "name": "bios", "status": "pass", "reason": "SR-IOV and IOMMU enabled in BIOS",
                 "evidence": ["%s %s" % (vendor, json.dumps(plan["desired"]))], "remediation": ""}


def test_the_doctors_verdict_names_vtd_pending_drift_and_an_unreadable_bios():
    cur, _ = _twin("dell")
    on = dict(cur, SriovGlobalEnable="Enabled", ProcVirtualization="Enabled", PcieAcsControl="Disabled")
    v = bios_doctor(_answer("dell", dict(on, ProcVirtualization="Disabled")))
    assert (v["status"], v["reason"], v["evidence"]) == ("fail", "VT-d disabled",
                                                         ['current {"ProcVirtualization": "Disabled"}'])
    # VT-d not wanted (the intent is off): its being off is as wanted
    assert bios_doctor(_answer("dell", dict(on, ProcVirtualization="Disabled")), iommu=False)["status"] == "pass"
    # something pending that the intent does not need
    v = bios_doctor(_answer("dell", on, pending={"BootMode": "Uefi"}))
    assert (v["status"], v["evidence"]) == ("warn", ['pending {"BootMode": "Uefi"}'])
    # ACS wanted on, off in the BIOS: differs from the intent, nothing staged
    v = bios_doctor(_answer("dell", on), acs=True)
    assert (v["status"], v["reason"]) == ("warn", "BIOS differs from intent")
    # bmc_vendor given: the Manufacturer string is not consulted
    assert bios_doctor(_answer("dell", on, manufacturer="Some OEM"), "dell")["status"] == "pass"
    v = bios_doctor({"error": "HTTP 401 from https://10.0.0.1/redfish/v1/Systems", "current": {}, "pending": {}})
    assert v == {"layer": 2, "name": "bios", "status": "fail", "reason": "BIOS unreadable",
                 "evidence": ["HTTP 401 from https://10.0.0.1/redfish/v1/Systems"],
                 "remediation": "Fix layer 1 first (bmc role check)."}
