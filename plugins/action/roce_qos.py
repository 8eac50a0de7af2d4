# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.stack.roce_qos judged from the play's reading of the node when
it holds: a merged run whose every option the reading was taken with (the
kernel layer's first read carries layer 8's, nic_facts also_layers) and
whose gathered answer there drifts in nothing returns what the module would,
changing nothing, without executing it. Anything else (another state, a
reading of other options or of an earlier run, a drift, a failed read) runs
the module, which reads the node again and converges it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos_host
from ansible_collections.gpufabric.stack.plugins.plugin_utils import nic_reading

# roce_qos' options that nic_facts' qos option takes, with the module's defaults
QOS_OPTIONS = {"node": "host", "pfs": [], "config": None, "roce_mode": None, "tos": None, "config_name": "",
               "rdma_port": 1, "firmware_query": True, "qos_tool": "auto"}
# what the module's merged run takes beyond them, each answered by the reading as nic_facts reads it
READ_OPTIONS = ("sysfs_root", "inspect_files", "inspect_units", "state")


def wish(args):
    """The nic_facts options whose reading answers a roce_qos run of
    ``args`` (the task's), or None when the run takes an option a reading
    does not answer (another state, the driver of rendered)."""
    if args.get("state", "merged") != "merged" or set(args) - set(QOS_OPTIONS) - set(READ_OPTIONS):
        return None
    want = {"sysfs_root": args.get("sysfs_root") or "/sys",
            "qos": dict((k, args.get(k, default)) for k, default in QOS_OPTIONS.items())}
    for name in ("inspect_files", "inspect_units"):
        if args.get(name):
            want[name] = list(args[name])
    return want


def judged(reading, args, run):
    """The module's merged result on the node from ``reading`` (the play's,
    kept by nic_facts) for a run of ``args`` in the run ``run``; None when
    the reading does not answer it or the module would change something."""
    want = wish(args)
    if want is None or not nic_reading.answers(reading, want, run):
        return None
    result = roce_qos_host.merged_from_gathered(reading.get("qos"), want["qos"]["node"])
    if result is None:
        return None
    inspected = reading.get("inspected") or {}
    result["inspected"] = {
        "files": dict((path, (inspected.get("files") or {}).get(path)) for path in want.get("inspect_files") or []),
        "units": dict((unit, (inspected.get("units") or {}).get(unit)) for unit in want.get("inspect_units") or [])}
    return result


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
        result.update(self._execute_module(module_name="gpufabric.stack.roce_qos", module_args=dict(self._task.args),
                                           task_vars=task_vars))
        result.update(judged_from_reading=False, module_executions=1)
        return result
