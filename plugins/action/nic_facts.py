# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.stack.nic_facts with the play's reading of the host: every
execution keeps its answer as the play's reading (the answer the task
registers, named by the host fact gpufabric_nic_reading; a task that does not
register its answer leaves no reading); with
``reuse`` a task takes that reading instead of reading again when it was
taken with the options the task gives; ``forget`` drops it (a layer that
changed what sysfs shows: firmware, VFs, QoS, a boot); ``also`` adds the
options a later layer reads with, so that its read in the run is this one;
``also_layers`` adds what the doctor's check of each of those layers reads
(its check file's reads, against its role's intent), so that the layer's own
task can judge the node from this reading (the sriov_vf and roce_qos
actions do). The
rules are plugin_utils/nic_reading.py's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import uuid

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.stack.plugins.plugin_utils import layers, main_process, nic_reading, role_intent

# the Jinja plugins loaded before the workers fork (plugin_utils/main_process.py)
main_process.load_jinja_plugins()

role_intent.import_checks(layer.role for layer in layers.REGISTRY)
role_intent.preload(layer.role for layer in layers.REGISTRY)


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
        options, left = self._with_layers(options, options.pop("also_layers", None) or [], task_vars, host)
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
        current = nic_reading.current(task_vars)
        run = nic_reading.run_id()
        if reuse and nic_reading.answers(current, options, run):
            result.update(dict((k, v) for k, v in current.items() if k not in ("options", "run")))
            # the same reading: a task registering this answer over the one the fact names keeps it
            result[nic_reading.READ_WITH] = current["options"]
            result[nic_reading.READING_ID] = task_vars["ansible_facts"][nic_reading.FACT]["id"]
            result.update(changed=False, reused=True, module_executions=0)
            return result
        answer = self._execute_module(module_name="gpufabric.stack.nic_facts", module_args=options,
                                      task_vars=task_vars)
        result.update(answer)
        result.update(reused=False, module_executions=1)
        if left:
            result["also_layers_left"] = left
        keep = nic_reading.kept(answer, options, run)
        if keep is not None:
            # a read stands for the node from now on: kept when the task
            # registers it, and an older reading dropped when it does not
            var = self._task.register
            if var and not (self._task.loop or self._task.loop_with):
                reading_id = uuid.uuid4().hex
                result[nic_reading.READ_WITH] = keep["options"]
                result[nic_reading.READING_ID] = reading_id
                result["ansible_facts"] = {nic_reading.FACT: nic_reading.pointer(keep, var, reading_id)}
            else:
                result["ansible_facts"] = {nic_reading.FACT: None}
        return result

    def _with_layers(self, options, numbers, task_vars, host):
        """``options`` with the nic_facts wish of each layer in ``numbers``
        (its check file's reads against its role's intent) joined in, and
        {layer: why} of those left out: a layer whose intent does not resolve
        here (its role's variables undefined or wrong), or whose wish another
        option of this read contradicts (another sysfs root), reads for
        itself, and its own task names any cause. AnsibleActionFail on a
        number that is no layer."""
        if not isinstance(numbers, list):
            raise AnsibleActionFail("%s: nic_facts also_layers takes a list of layer numbers, got %r" % (host, numbers))
        left = {}
        intents = role_intent.RoleIntents(self._loader, self._templar)
        for number in numbers:
            try:
                layer = layers.get(number)
            except (TypeError, ValueError) as exc:
                raise AnsibleActionFail("%s: nic_facts also_layers: %s" % (host, exc))
            check = role_intent.check(layer.role)
            try:
                wish = check.reads(intents.intent(layer.role, check.INTENT, task_vars), host).get("nic_facts")
            except (AnsibleError, KeyError, TypeError, ValueError) as exc:
                left[layer.number] = "%s: %s" % (type(exc).__name__, exc)
                continue
            if not wish:
                continue
            try:
                options = nic_reading.with_also(options, wish)
            except ValueError as exc:
                # e.g. its sysfs root is not this read's: the layer reads for itself
                left[layer.number] = "it reads %s" % exc
        return options, left
