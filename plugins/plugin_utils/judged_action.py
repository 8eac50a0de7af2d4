# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action of a layer's module that is judged from the play's reading of
the node (kept by nic_facts, plugin_utils/nic_reading.py) when that
reading answers the task: the subclass's ``judged`` returns the module's
result from it, or None, and the module is executed then. sriov_vf's,
mlx_config's and roce_qos' actions (layers 6, 4 and 8) are such. A run that
changed the node drops that reading (nic_facts' forget), so the next layer of
the play reads the node again."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.stack.plugins.plugin_utils import nic_reading


# what a module's run takes beyond its own options, each answered by a reading as nic_facts reads it
READ_OPTIONS = ("sysfs_root", "inspect_files", "inspect_units")


def task_wish(args, key, options):
    """The nic_facts options whose reading answers a module run of ``args``
    (the task's): the module's ``options`` (with its defaults) under the
    nic_facts option ``key``, its sysfs root and the files and units it
    inspects; None when ``args`` has an option no reading answers."""
    if set(args) - set(options) - set(READ_OPTIONS):
        return None
    want = {"sysfs_root": args.get("sysfs_root") or "/sys",
            key: dict((k, args.get(k, default)) for k, default in options.items())}
    for name in ("inspect_files", "inspect_units"):
        if args.get(name):
            want[name] = list(args[name])
    return want


def inspected_of(reading, want):
    """The boot files and units of ``want`` (its inspect_files and
    inspect_units) as ``reading`` inspected them: what the module returns
    as ``inspected`` for those options."""
    inspected = reading.get("inspected") or {}
    return {"files": dict((p, (inspected.get("files") or {}).get(p)) for p in want.get("inspect_files") or []),
            "units": dict((u, (inspected.get("units") or {}).get(u)) for u in want.get("inspect_units") or [])}


def forget_when_changed(result):
    """``result``, with the play's reading of the node dropped (the fact
    nic_facts' ``forget`` clears) when the run changed the node: what the
    module changed (VFs, firmware values, QoS, MTU) is no longer what that
    reading shows."""
    if result.get("changed"):
        facts = dict(result.get("ansible_facts") or {})
        facts[nic_reading.FACT] = None
        result["ansible_facts"] = facts
    return result


class JudgedAction(ActionBase):
    """Subclasses name their ``MODULE`` and give ``judged(reading, args,
    run)``: the module's result for a run of ``args`` from ``reading`` in the
    ansible-playbook run ``run``, or None to execute the module."""
    TRANSFERS_FILES = False
    MODULE = None

    @staticmethod
    def judged(reading, args, run):
        raise NotImplementedError

    def run(self, tmp=None, task_vars=None):
        result = super(JudgedAction, self).run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        reading = nic_reading.current(task_vars)
        answer = self.judged(reading, dict(self._task.args), nic_reading.run_id()) if reading else None
        if answer is not None:
            result.update(answer)
            result.update(judged_from_reading=True, module_executions=0)
            return forget_when_changed(result)
        result.update(self._execute_module(module_name=self.MODULE, module_args=dict(self._task.args),
                                           task_vars=task_vars))
        result.update(judged_from_reading=False, module_executions=1)
        return forget_when_changed(result)
