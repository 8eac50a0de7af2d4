# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind playbooks/rollout.yml and playbooks/report-merge.yml
(plugin_utils/rollout.py). Each filter is documented in
plugins/filter/<name>.yml.

Each filter imports its module_utils when it is called: Ansible imports every
filter file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools

from ansible.errors import AnsibleFilterError


def _wrap(func):
    """func, raising AnsibleFilterError for the collection's own errors of bad
    input (ValueError subclasses of its module_utils and plugin_utils, such as
    RolloutError or MaintenanceError); filter/node_maintenance.py uses it too."""
    @functools.wraps(func)
    def inner(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ValueError as exc:
            if type(exc).__module__.startswith("ansible_collections.gpufabric.stack.plugins."):
                raise AnsibleFilterError(str(exc))
            raise
    return inner


def rollout_plan(pool_hosts, pool, serial, control_plane_hosts=None):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import rollout
    return rollout.plan(pool, pool_hosts, serial, control_plane_hosts)


def rollout_default_serial(pool_hosts, control_plane_hosts, control_plane_serial=1, worker_serial="20%"):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import rollout
    return rollout.default_serial(pool_hosts, control_plane_hosts, control_plane_serial, worker_serial)


def rollout_batch_of(the_plan, host):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import rollout
    return rollout.batch_of(the_plan, host)


def rollout_layers(layers, run_tags=None, skip_tags=None, wanted=None):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import rollout
    return rollout.select_layers(layers, run_tags, skip_tags, wanted)


def rollout_signals(facts, paths):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import rollout
    return rollout.signals(facts, paths)


def report_merge(fragments):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import rollout
    return rollout.merge_reports(fragments)


def report_merge_record(record):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import rollout
    return rollout.record_fragment(record)


def rollout_record_line(record):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import rollout
    return rollout.record_line(record)


class FilterModule(object):
    def filters(self):
        return dict((f.__name__, _wrap(f)) for f in (
            rollout_plan, rollout_default_serial, rollout_batch_of, rollout_layers, rollout_signals,
            report_merge, report_merge_record, rollout_record_line))
