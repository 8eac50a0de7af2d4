# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.stack.bios_facts where the task runs on the controller (a
``local`` connection, as ``delegate_to: localhost`` gives): the Redfish read
is made from this process, as the doctor's layer 2 read is, with the module's
options and answer (``redfish_bios.facts``) and no module executed (no
interpreter started, nothing written to a temporary directory). On any other
connection (a jump host next to the BMCs) the module runs there."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible_collections.gpufabric.stack.plugins.module_utils.bios import redfish_bios
from ansible_collections.gpufabric.stack.plugins.plugin_utils import main_process

# the Jinja plugins loaded before the workers fork (plugin_utils/main_process.py)
main_process.load_jinja_plugins()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(redfish_bios.FACTS_ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        if getattr(self._connection, "transport", None) != "local":
            result.update(self._execute_module(module_name="gpufabric.stack.bios_facts",
                                               module_args=dict(self._task.args), task_vars=task_vars))
            result["module_executions"] = 1
            return result
        _valid, params = self.validate_argument_spec(argument_spec=redfish_bios.FACTS_ARGUMENT_SPEC)
        result.update(redfish_bios.facts(params))
        # what the gpufabric.stack.task_counter callback counts for this task
        result.update(changed=False, module_executions=0)
        return result
