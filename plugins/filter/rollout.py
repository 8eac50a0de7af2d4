# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind playbooks/rollout.yml and roles/node_maintenance."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: rollout_plan
short_description: The batches a staged rollout walks through a pool
description:
  - Splits the pool's hosts into batches with ansible-playbook's own serial semantics (a count, a percentage
    rounded down but at least 1, or a list whose last value repeats) and lists batches that would take more
    than one control-plane node down at once.
  - The same plugin file provides C(rollout_default_serial), C(rollout_batch_of), C(rollout_layers),
    C(rollout_signals), C(node_maintenance_decision), C(node_maintenance_drain_outcome),
    C(node_maintenance_twin_state), C(node_maintenance_twin_drain), C(report_merge), C(report_merge_record)
    and C(rollout_record_line).
positional: _input, pool, serial, control_plane_hosts
options:
  _input:
    description: The pool's hosts, in inventory order.
    type: list
    elements: str
    required: true
  pool:
    description: Name of the pool (an inventory group).
    type: str
    required: true
  serial:
    description: A count, a percentage such as C(20%), or a list of those.
    type: raw
    required: true
  control_plane_hosts:
    description: Hosts of the control-plane group.
    type: list
    elements: str
"""

EXAMPLES = r"""
plan: "{{ groups[pool] | gpufabric.stack.rollout_plan(pool, '20%', groups['kube_control_plane'] | default([])) }}"
"""

RETURN = r"""
_value:
  description: "{pool, serial, batches, control_plane_conflicts}"
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.stack.plugins.module_utils.deferred import deferred

nm = deferred("node_maintenance")
rollout = deferred("rollout")


def _wrap(func):
    def inner(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (rollout.RolloutError, nm.MaintenanceError) as exc:
            raise AnsibleFilterError(str(exc))
    inner.__name__ = func.__name__
    return inner


def rollout_plan(pool_hosts, pool, serial, control_plane_hosts=None):
    return rollout.plan(pool, pool_hosts, serial, control_plane_hosts)


def rollout_default_serial(pool_hosts, control_plane_hosts, control_plane_serial=1, worker_serial="20%"):
    return rollout.default_serial(pool_hosts, control_plane_hosts, control_plane_serial, worker_serial)


def rollout_batch_of(the_plan, host):
    return rollout.batch_of(the_plan, host)


def rollout_layers(layers, run_tags=None, skip_tags=None, wanted=None):
    return rollout.select_layers(layers, run_tags, skip_tags, wanted)


def rollout_signals(facts, paths):
    return rollout.signals(facts, paths)


def node_maintenance_decision(node, objects=None, node_name=None, annotation=None, join_maintenance=True):
    return nm.decide(node or None, objects, node_name, annotation or nm.ROLLOUT_ANNOTATION, join_maintenance)


def node_maintenance_drain_outcome(result):
    return nm.drain_outcome(result)


def node_maintenance_twin_state(state, op, name, annotation=None, rollout_id=""):
    return nm.twin_apply(state, op, name, annotation or nm.ROLLOUT_ANNOTATION, rollout_id)


def node_maintenance_twin_drain(state, name, disable_eviction=False):
    return nm.twin_drain_result(state, name, disable_eviction)


def report_merge(fragments):
    return rollout.merge_reports(fragments)


def report_merge_record(record):
    return rollout.record_fragment(record)


def rollout_record_line(record):
    return rollout.record_line(record)


class FilterModule(object):
    def filters(self):
        return dict((f.__name__, _wrap(f)) for f in (
            rollout_plan, rollout_default_serial, rollout_batch_of, rollout_layers, rollout_signals,
            node_maintenance_decision, node_maintenance_drain_outcome, node_maintenance_twin_state,
            node_maintenance_twin_drain, report_merge, report_merge_record, rollout_record_line))
