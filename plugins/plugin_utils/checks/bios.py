# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 2, the BIOS: SR-IOV and the IOMMU (VT-d, AMD-Vi) enabled, ACS as
wanted, nothing pending a reset. Reads the current and pending BIOS
attributes from the doctor's one BMC read (bios_facts' answer, shared with
layer 1)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufabric.stack.plugins.plugin_utils.bios import bios_attributes
from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import result

LAYER = 2
INTENT = ("bmc_address", "bmc_vendor", "bios_cpu_vendor", "bios_sriov", "bios_iommu", "bios_acs")


def reads(intent, host):
    return {"bmc": True}


def check(reading, intent, host):
    """SR-IOV or VT-d disabled (fail), settings pending a reboot or differing
    from the intent (warn), or as wanted (pass); an unreadable BIOS fails."""
    answer = reading.get("bmc") or {}
    error = answer.get("error") or ""
    if not intent.get("bmc_address"):
        error = "no bmc_address for %s" % host
    if error:
        return result(2, "fail", "BIOS unreadable", [error], "Fix layer 1 first (bmc role check).")
    bmc_vendor = intent.get("bmc_vendor")
    cpu_vendor = intent.get("bios_cpu_vendor") or "intel"
    sriov, iommu, acs = (bool(intent.get("bios_sriov", True)), bool(intent.get("bios_iommu", True)),
                         bool(intent.get("bios_acs", False)))
    try:
        vendor = (bios_attributes.bios_vendor(answer.get("manufacturer")) if bmc_vendor in (None, "", "auto")
                  else bmc_vendor)
        current, pending, registry = answer.get("current") or {}, answer.get("pending") or {}, answer.get("registry")
        state = bios_attributes.bios_state(current, vendor, cpu_vendor, registry=registry)
        plan = bios_attributes.bios_plan(current, vendor, cpu_vendor, sriov, iommu, acs, registry=registry,
                                         pending=pending, job_queue=answer.get("job_queue") or "",
                                         bios_jobs=answer.get("bios_jobs"))
    except bios_attributes.BiosReadOnly as exc:
        return result(2, "fail", "BIOS attribute read-only", [str(exc)],
                      "Set it in the BIOS setup of %s (or the setting it follows); Redfish cannot change it." % host)
    except bios_attributes.BiosError as exc:
        return result(2, "fail", "BIOS attributes not understood: %s" % exc,
                      ["manufacturer %s, bmc_vendor %s, bios_cpu_vendor %s"
                       % (answer.get("manufacturer"), bmc_vendor, cpu_vendor)],
                      "Set bmc_vendor and bios_cpu_vendor for %s to match the server." % host)
    names = state["attributes"]
    fix = "Run the bios role (tag layer02); it stages the setting and resets the node once."

    def now(attrs):
        return json.dumps(dict((n, current.get(n)) for n in attrs))

    queue, jobs = answer.get("job_queue") or "", answer.get("bios_jobs")
    if plan["job_needed"]:
        # iDRAC: a reset leaves them pending (no configuration job)
        broken = (sriov and not state["sriov"]) or (iommu and not state["iommu"])
        return result(2, "fail" if broken else "warn", "settings pending with no BIOS configuration job",
                      ["pending %s, current %s" % (json.dumps(pending), now(pending)),
                       "the BMC's job queue %s holds no BIOS configuration job that has not run, so a reset leaves "
                       "them pending" % queue],
                      "Run the bios role (tag layer02): it schedules the job and resets the node once "
                      "(by hand: POST {\"TargetSettingsURI\": \"%s\"} to the manager's Jobs, then reset)."
                      % (answer.get("settings_uri") or "Bios/Settings"))
    if plan["reset_needed"] and not plan["stage"]:
        return result(2, "warn", "settings pending a reboot",
                      ["pending %s, current %s" % (json.dumps(pending), now(pending))]
                      + ["BMC job %s %s: %s" % (j["id"], j["state"], j["message"]) for j in jobs or []],
                      "Reset the node through its BMC (bios role with bios_reboot: true).")
    if sriov and not state["sriov"]:
        return result(2, "fail", "SR-IOV disabled in BIOS", ["current " + now(names["sriov"])], fix)
    if iommu and not state["iommu"]:
        return result(2, "fail", "VT-d disabled", ["current " + now(names["iommu"])], fix)
    if pending:
        return result(2, "warn", "settings pending a reboot", ["pending " + json.dumps(pending)],
                      "Reset the node through its BMC, or clear the pending settings.")
    if plan["reset_needed"]:
        return result(2, "warn", "BIOS differs from intent", ["wanted " + json.dumps(plan["desired"])], fix)
    return result(2, "pass", "SR-IOV and IOMMU enabled in BIOS", ["%s %s" % (vendor, json.dumps(plan["desired"]))])
