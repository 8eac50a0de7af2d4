# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind the doctor (playbooks/validate.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: doctor_sriov_vfs
short_description: The doctor's layer 6 verdict for one host
description:
  - Compares nic_facts with the host's gpufabric_nics and the persistence and udev state; returns
    {layer, name, status, reason, evidence, remediation}.
  - The same plugin file provides C(doctor_verdict) (first failing layer per host, upper layers blocked)
    and C(doctor_table) (a hosts x layers text table).
positional: _input, nics, unit_enabled, udev_rule_present
options:
  _input:
    description: The nics list returned by gpufabric.stack.nic_facts.
    type: list
    required: true
  nics:
    description: The host's gpufabric_nics.
    type: list
    required: true
  unit_enabled:
    description: Whether the persistence unit is enabled.
    type: bool
    required: true
  udev_rule_present:
    description: Whether the NM_UNMANAGED udev rule is installed.
    type: bool
    required: true
"""

EXAMPLES = r"""
result: "{{ facts.nics | gpufabric.stack.doctor_sriov_vfs(gpufabric_nics, true, true) }}"
"""

RETURN = r"""
_value:
  description: The layer result.
  type: dict
"""

from ansible_collections.gpufabric.stack.plugins.module_utils import doctor

SYMBOL = {"pass": "ok", "fail": "FAIL", "warn": "warn", "blocked": "blocked", "skipped": "-"}


def doctor_sriov_vfs(pfs, nics, unit_enabled, udev_rule_present, persist=True, nm_unmanaged=True):
    return doctor.check_sriov_vfs(pfs, nics, unit_enabled, udev_rule_present, persist, nm_unmanaged)


def doctor_verdict(results):
    v, rows = doctor.verdict(results or [])
    return {"verdict": v, "layers": rows}


def doctor_table(report):
    """report: {host: {verdict, layers}} -> list of text lines."""
    layers = sorted({r["layer"] for h in report.values() for r in h["layers"]})
    width = max([len(h) for h in report] + [4])
    head = "%-*s  %s  verdict" % (width, "host", " ".join("L%-6d" % n for n in layers))
    lines = [head, "-" * len(head)]
    for host in sorted(report):
        by = dict((r["layer"], r["status"]) for r in report[host]["layers"])
        cells = " ".join("%-7s" % SYMBOL.get(by.get(n, "skipped"), "?") for n in layers)
        v = report[host]["verdict"]
        text = "healthy" if v["status"] != "fail" else "layer %s: %s" % (v["layer"], v["reason"])
        lines.append("%-*s  %s  %s" % (width, host, cells, text))
    return lines


class FilterModule(object):
    def filters(self):
        return {"doctor_sriov_vfs": doctor_sriov_vfs, "doctor_verdict": doctor_verdict,
                "doctor_table": doctor_table}
