# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind roles/node_maintenance (plugin_utils/node_maintenance.py):
the cordon and drain decision, the drain's outcome and the twin backend's
node state. Each filter is documented in plugins/filter/<name>.yml.

Each filter imports its module_utils when it is called: Ansible imports every
filter file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# the same wrapper as the rollout's filters: the collection's errors of bad
# input become AnsibleFilterError
from ansible_collections.gpufabric.stack.plugins.filter.rollout import _wrap


def node_maintenance_decision(node, objects=None, node_name=None, annotation=None, join_maintenance=True):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import node_maintenance
    return node_maintenance.decide(node or None, objects, node_name, annotation or node_maintenance.ROLLOUT_ANNOTATION,
                                   join_maintenance)


def node_maintenance_drain_outcome(result):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import node_maintenance
    return node_maintenance.drain_outcome(result)


def node_maintenance_twin_state(state, op, name, annotation=None, rollout_id=""):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import node_maintenance
    return node_maintenance.twin_apply(state, op, name, annotation or node_maintenance.ROLLOUT_ANNOTATION, rollout_id)


def node_maintenance_twin_drain(state, name, disable_eviction=False):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import node_maintenance
    return node_maintenance.twin_drain_result(state, name, disable_eviction)


class FilterModule(object):
    def filters(self):
        return dict((f.__name__, _wrap(f)) for f in (
            node_maintenance_decision, node_maintenance_drain_outcome, node_maintenance_twin_state,
            node_maintenance_twin_drain))
