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

from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.stack.plugins.plugin_utils import nic_reading

# sriov_vf's options that nic_facts' vfs option takes, with the module's defaults
VFS_OPTIONS = {"pfs": [], "wait_timeout": 120, "ip_command": "ip", "nm_unmanaged_rule": None,
               "protected_addresses": [], "passthrough_dir": None, "modprobe_command": "modprobe"}
READ_OPTIONS = ("sysfs_root", "inspect_files", "inspect_units")


def wish(args):
    """The nic_facts options whose reading answers a sriov_vf run of
    ``args`` (the task's); None when it takes an option no reading answers."""
    if set(args) - set(VFS_OPTIONS) - set(READ_OPTIONS):
        return None
    want = {"sysfs_root": args.get("sysfs_root") or "/sys",
            "vfs": dict((k, args.get(k, default)) for k, default in VFS_OPTIONS.items())}
    for name in ("inspect_files", "inspect_units"):
        if args.get(name):
            want[name] = list(args[name])
    return want


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
    inspected = reading.get("inspected") or {}
    return {"changed": False, "pfs": plan["pfs"], "commands": list(plan.get("commands") or []),
            "passthrough": plan.get("passthrough") or [],
            "inspected": {
                "files": dict((p, (inspected.get("files") or {}).get(p)) for p in want.get("inspect_files") or []),
                "units": dict((u, (inspected.get("units") or {}).get(u)) for u in want.get("inspect_units") or [])}}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        reading = (task_vars.get("ansible_facts") or {}).get(nic_reading.FACT)
        answer = judged(reading, dict(self._task.args), nic_reading.run_id()) if reading else None
        if answer is not None:
            result.update(answer)
            result.update(judged_from_reading=True, module_executions=0)
            return result
        result.update(self._execute_module(module_name="gpufabric.stack.sriov_vf", module_args=dict(self._task.args),
                                           task_vars=task_vars))
        result.update(judged_from_reading=False, module_executions=1)
        return result
