# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind the doctor (playbooks/validate.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: doctor_layers
short_description: The layers of the registry checked on a group of hosts, as [{layer, role}]
description:
  - Returns the entries of the layer registry (C(module_utils/layers.py)) checked on hosts of inventory group
    I(_input), of the given I(scope), among I(numbers), lowest first, each as C({layer, role}).
  - The same plugin file provides the doctor's plumbing that validate.yml and the rollout's health gate use
    C(doctor_failed) (whether a host failed one of the given layers in this run, from the doctor action's records
    of the host, its C(doctor_checked)), C(doctor_layer_results) (a host's record per layer, the checks' own, skipped for
    --skip-tags, blocked above the first failure), C(doctor_verdict) (first failing layer per host, upper layers
    blocked), C(doctor_json) (report.json, every record checked), C(doctor_table) (a hosts x layers text table,
    ANSI colours optional), C(doctor_junit) (JUnit XML, one testsuite per host), C(doctor_html) (a self-contained
    HTML rack view), C(doctor_use_color) (whether to colour), and C(kernel_iov_unassigned) (the PFs of a vendor
    whose IOV BARs the kernel could not assign, for the kernel role).
positional: _input, scope, numbers
options:
  _input:
    description: An inventory group (gpu_workers, leaf_switches, kube_control_plane); null for every layer.
    type: str
  scope:
    description: "C(node) (read on the node by the M(gpufabric.stack.doctor) action), C(switch) (read on the switch
      by it), C(cluster) (read through the Kubernetes API once for the play by it) or C(fabric) (read across nodes by
      the role's tasks/doctor.yml and judged by it), or a list of them; null for all."
    type: raw
  numbers:
    description: Only these layer numbers.
    type: list
    elements: int
"""

EXAMPLES = r"""
doctor_layers: "{{ 'gpu_workers' | gpufabric.stack.doctor_layers }}"
fabric_layers: "{{ 'gpu_workers' | gpufabric.stack.doctor_layers('fabric') }}"
"""

RETURN = r"""
_value:
  description: The layers, as [{layer, role}].
  type: list
  elements: dict
"""

from ansible_collections.gpufabric.stack.plugins.module_utils.deferred import deferred

doctor = deferred("doctor")
doctor_report = deferred("doctor_report")


def kernel_iov_unassigned(nics, nic_vendor="15b3"):
    from ansible_collections.gpufabric.stack.plugins.module_utils.checks import kernel
    return kernel.kernel_iov_unassigned(nics, nic_vendor)


def doctor_layers(group=None, scope=None, numbers=None):
    """[{layer, role}] of the layer registry checked on hosts of inventory
    ``group``, of ``scope`` (node, switch, fabric, or a list), among
    ``numbers``."""
    from ansible_collections.gpufabric.stack.plugins.module_utils import layers
    return layers.entries(layers.select(group, scope, numbers))


def doctor_failed(entries, skip_tags=None, given=None):
    return doctor.earlier_failure(entries, skip_tags or [], given) is not None


def doctor_layer_results(entries, skip_tags=None, given=None):
    return doctor.layer_results(entries, skip_tags or [], given)


def doctor_verdict(results):
    v, rows = doctor.verdict(results or [])
    return {"verdict": v, "layers": rows}


def doctor_table(report, color=False):
    """report: {host: {verdict, layers}} -> list of text lines (ANSI colours with color)."""
    return doctor_report.table(report or {}, bool(color))


def doctor_json(report):
    """report -> report.json text (every record checked)."""
    return doctor_report.json_report(report or {})


def doctor_junit(report, name="gpufabric doctor", timestamp=None):
    """report -> JUnit XML text (one testsuite per host, one testcase per layer)."""
    return doctor_report.junit_xml(report or {}, name, timestamp)


def doctor_html(report, switches=None, cabling=None, title="gpufabric doctor", generated=None):
    """report -> a self-contained HTML rack view."""
    return doctor_report.html_report(report or {}, switches, cabling, title, generated)


def doctor_use_color(value=None):
    """True/False as given; None or 'auto' follows Ansible's own colour
    decision (a terminal on stdout, ANSIBLE_NOCOLOR, ANSIBLE_FORCE_COLOR)."""
    if isinstance(value, bool):
        return value
    if value is None or str(value).strip().lower() in ("", "auto", "none"):
        from ansible.utils.color import ANSIBLE_COLOR
        return bool(ANSIBLE_COLOR)
    return str(value).strip().lower() in ("1", "true", "yes", "on")


class FilterModule(object):
    def filters(self):
        return {"kernel_iov_unassigned": kernel_iov_unassigned, "doctor_layers": doctor_layers,
                "doctor_failed": doctor_failed,
                "doctor_layer_results": doctor_layer_results, "doctor_verdict": doctor_verdict,
                "doctor_table": doctor_table, "doctor_json": doctor_json, "doctor_junit": doctor_junit, "doctor_html": doctor_html,
                "doctor_use_color": doctor_use_color}
