# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Print the doctor's hosts x layers table to the terminal as it is, ANSI
colours included (a debug message would show the escape codes quoted)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor_report, main_process

# the Jinja plugins loaded before the workers fork (plugin_utils/main_process.py)
main_process.load_jinja_plugins()

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(("report", "color"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        report = self._task.args.get("report")
        if not isinstance(report, dict):
            result.update(failed=True, msg="report must be the doctor's report, a mapping of host to verdict and layers")
            return result
        color = self._task.args.get("color")
        if color is None:
            from ansible.utils.color import ANSIBLE_COLOR
            color = ANSIBLE_COLOR
        color = bool(color)
        lines = doctor_report.table(report, color)
        display.display("\n".join(lines))
        result.update(changed=False, lines=doctor_report.table(report, False), color=color)
        return result
