# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.stack.sriov_vf judged from the play's reading of the node when
it holds: the kernel layer's first read carries layer 6's (nic_facts
also_layers), whose ``vfs`` is the module's own run in check mode; a run
whose every option that reading was taken with and which would change
nothing there returns that answer without executing the module. Anything
else (a change to make, other options, a reading of an earlier run, a failed
plan, check mode's own run) executes the module."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.plugin_utils import main_process, nic_reading
from ansible_collections.gpufabric.stack.plugins.plugin_utils.judged_action import JudgedAction, inspected_of, task_wish

# the Jinja plugins loaded before the workers fork (plugin_utils/main_process.py)
main_process.load_jinja_plugins()

# sriov_vf's options that nic_facts' vfs option takes, with the module's defaults
VFS_OPTIONS = {"pfs": [], "wait_timeout": 120, "ip_command": "ip", "nm_unmanaged_rule": None,
               "protected_addresses": [], "passthrough_dir": None, "modprobe_command": "modprobe"}


def wish(args):
    """The nic_facts options whose reading answers a sriov_vf run of
    ``args`` (the task's); None when it takes an option no reading answers."""
    return task_wish(args, "vfs", VFS_OPTIONS)


def judged(reading, args, run):
    """The module's result on the node from ``reading`` (the play's, kept by
    nic_facts) for a run of ``args`` in the run ``run``; None when the
    reading does not answer it or the module would change something."""
    want = wish(args)
    if want is None or not nic_reading.answers(reading, want, run):
        return None
    plan = reading.get("vfs")
    if not isinstance(plan, dict) or plan.get("failed") or plan.get("changed") is not False or "pfs" not in plan:
        return None
    return {"changed": False, "pfs": plan["pfs"], "commands": list(plan.get("commands") or []),
            "passthrough": plan.get("passthrough") or [], "inspected": inspected_of(reading, want)}


class ActionModule(JudgedAction):
    MODULE = "gpufabric.stack.sriov_vf"
    judged = staticmethod(judged)
