# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.stack.host_files with the contents rendered here and the
module left out when nothing differs.

A file may name a template of the role (``template``) instead of giving its
``content``: it is rendered on the controller with the task's variables, as
the template action renders (one templar over the task's variables; the
template lookup deep-copies every variable of the host for each file). With
``inspected``, a reading of the files and units on the host (nic_facts'
``inspected``, host_files.inspected), the rendered files are compared with
it first: when every file and unit is as wanted the module is not executed
and the task is skipped (``module_executions`` 0). Anything else, and a
reading that is missing or did not read a file, executes the module with
the rendered contents."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template

try:  # the variables the template action and lookup add (ansible_managed, template_path, ...)
    from ansible._internal._templating._template_vars import generate_ansible_template_vars
except ImportError:  # ansible-core before 2.19
    from ansible.template import generate_ansible_template_vars

from ansible_collections.gpufabric.stack.plugins.module_utils.host import host_files
from ansible_collections.gpufabric.stack.plugins.plugin_utils import main_process

# the Jinja plugins loaded before the workers fork (plugin_utils/main_process.py)
main_process.load_jinja_plugins()

MODULE = "gpufabric.stack.host_files"


def rendered_files(files, render):
    """``files`` with every ``template`` entry turned into its ``content``
    (``render(name, vars)``, the entry's ``vars`` over the task's variables);
    raises AnsibleActionFail naming the entry when it has both, its template is
    not a name or it has vars without a template. One with neither is the
    module's to name."""
    if not isinstance(files, list):
        raise AnsibleActionFail("files: a list is wanted, not %s" % type(files).__name__)
    out = []
    for i, entry in enumerate(files):
        if not isinstance(entry, dict):
            raise AnsibleActionFail("files[%d]: a dict is wanted, not %r" % (i, entry))
        label = "files[%d] (%s)" % (i, entry.get("path"))
        if "template" in entry and "content" in entry:
            raise AnsibleActionFail("%s: give content or template, not both" % label)
        if "template" not in entry:
            if "vars" in entry:
                raise AnsibleActionFail("%s: vars go with a template" % label)
            out.append(entry)
            continue
        if not isinstance(entry["template"], str) or not entry["template"]:
            raise AnsibleActionFail("%s: template must be a template's name, not %r" % (label, entry["template"]))
        extra = entry.get("vars") or {}
        if not isinstance(extra, dict):
            raise AnsibleActionFail("%s: vars must be a mapping of variable names to values, not %r" % (label, extra))
        done = dict((k, v) for k, v in entry.items() if k not in ("template", "vars"))
        done["content"] = render(entry["template"], extra)
        out.append(done)
    return out


def pending(files, enable_units, inspected):
    """What differs from the reading; every file when there is no reading."""
    inspected = inspected if isinstance(inspected, dict) else {}
    try:
        return host_files.pending(files, inspected.get("files"), list(enable_units or []), inspected.get("units"))
    except host_files.HostFilesError as exc:
        raise AnsibleActionFail(str(exc))


class ActionModule(ActionBase):

    TRANSFERS_FILES = False

    def _render(self, task_vars):
        def render(name, extra=None):
            try:
                source = self._find_needle("templates", name)
            except AnsibleError as exc:
                raise AnsibleActionFail("template %s: %s" % (name, exc))
            data = trust_as_template(self._loader.get_text_file_contents(source))
            searchpath = [os.path.dirname(source)]
            for path in task_vars.get("ansible_search_path", []):
                searchpath.extend([os.path.join(path, "templates"), path])
            # as the template lookup renders (the same ansible_managed and
            # template_* variables), over a shallow copy of the task's variables
            available = dict(task_vars)
            available.update(generate_ansible_template_vars(
                path=name, fullpath=source, include_ansible_managed="ansible_managed" not in available))
            # the entry's own variables, as a template task's vars
            available.update(extra or {})
            templar = self._templar.copy_with_new_env(searchpath=searchpath, available_variables=available)
            return templar.template(data, escape_backslashes=False)
        return render

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        has_reading = "inspected" in args
        inspected = args.pop("inspected", None)
        args["files"] = rendered_files(args.get("files"), self._render(task_vars or {}))
        if has_reading and not pending(args["files"], args.get("enable_units"), inspected):
            # skipped, as a task whose condition left it out: nothing ran on
            # the host; the module's answer where nothing differs besides
            result.update(changed=False, skipped=True, module_executions=0, written=[], daemon_reloaded=False,
                          udev_reloaded=False, units_enabled=[],
                          files=[{"path": f["path"], "state": "unchanged", "changes": []} for f in args["files"]],
                          skip_reason="every file and unit is as the reading of the host shows")
            return result
        result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
        result["module_executions"] = 1
        return result
