# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.stack.nic_facts with the play's reading of the host: every
execution keeps its answer as the host fact gpufabric_nic_reading; with
``reuse`` a task takes that reading instead of reading again when it was
taken with the options the task gives; ``forget`` drops it (a layer that
changed what sysfs shows: firmware, VFs, QoS, a boot); ``also`` adds the
options a later layer reads with, so that its read in the run is this one.
The rules are plugin_utils/nic_reading.py's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.stack.plugins.plugin_utils import nic_reading


def run_id():
    """This ansible-playbook run: the pid and start time of the process that
    forked this worker (the strategy's), so that a reading kept in a fact
    cache by an earlier run never answers."""
    parent = os.getppid()
    try:
        with open("/proc/%d/stat" % parent) as handle:
            # field 22, after the command name in parentheses
            started = handle.read().rsplit(")", 1)[1].split()[19]
    except (IOError, OSError, IndexError):
        started = "?"
    return "%d:%s" % (parent, started)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        options = dict(self._task.args)
        host = task_vars.get("inventory_hostname", "?")
        try:
            options = nic_reading.with_also(options, options.pop("also", None))
        except ValueError as exc:
            raise AnsibleActionFail("%s: nic_facts also: %s" % (host, exc))
        try:
            reuse = boolean(options.pop("reuse", False), strict=True)
            forget = boolean(options.pop("forget", False), strict=True)
        except TypeError as exc:
            raise AnsibleActionFail("%s: reuse and forget take a boolean: %s"
                                    % (task_vars.get("inventory_hostname", "?"), exc))
        if forget:
            if options:
                raise AnsibleActionFail("%s: forget drops the play's reading and reads nothing; it takes no other "
                                        "option, got %s" % (task_vars.get("inventory_hostname", "?"),
                                                            ", ".join(sorted(options))))
            result.update(changed=False, forgotten=True, module_executions=0,
                          ansible_facts={nic_reading.FACT: None})
            return result
        facts = task_vars.get("ansible_facts") or {}
        current = facts.get(nic_reading.FACT)
        run = run_id()
        if reuse and nic_reading.answers(current, options, run):
            result.update(dict((k, v) for k, v in current.items() if k not in ("options", "run")))
            result.update(changed=False, reused=True, module_executions=0)
            return result
        answer = self._execute_module(module_name="gpufabric.stack.nic_facts", module_args=options,
                                      task_vars=task_vars)
        result.update(answer)
        result.update(reused=False, module_executions=1)
        keep = nic_reading.kept(answer, options, run)
        if keep is not None:
            result["ansible_facts"] = {nic_reading.FACT: keep}
        return result
