# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check this host's variables against the argument specs of several roles of
the collection in one task, before any of them runs.

ansible checks a role's argument spec in a task of its own at the start of the
role (tagged always). site.yml imports its layer roles without that task
(rolespec_validate: false) and checks them all here instead: one task per host
instead of one per role, and every layer's input is checked before the first
layer changes anything. The check is ansible's own: the same
ArgumentSpecValidator on the same values (the role's defaults under the
host's variables, templated), as ansible.builtin.validate_argument_spec does.
The roles' argument specs and defaults are parsed once, where the action is
loaded (role_intent.preload, as the doctor's), and read from there by the
worker of each host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.utils.vars import combine_vars
from ansible_collections.gpufabric.stack.plugins.plugin_utils import layers, main_process, plain_data, role_intent

# the Jinja plugins loaded before the workers fork (plugin_utils/main_process.py)
main_process.load_jinja_plugins()

# the layer roles' files parsed in the main process; each host's worker reads them
role_intent.preload(layer.role for layer in layers.REGISTRY)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(("roles", "entry_point"))

    def _load(self, role, name):
        """A role's YAML file as role_intent reads it (ROLE_FILES: defaults
        trusted as templates, as ansible trusts a role's own; the argument
        spec is only read); {} when the role has no such file. A layer role's
        file comes parsed from the main process (role_intent.preload), the
        same object for every worker: read here, never changed; another
        role's is parsed once per run of this action."""
        trusted = dict(role_intent.ROLE_FILES)[name]
        return self._intents.load(os.path.join(role_intent.COLLECTION, "roles", role, name), trusted)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        roles = self._task.args.get("roles")
        entry_point = self._task.args.get("entry_point", "main")
        if not isinstance(roles, list) or not roles or not all(isinstance(r, str) and r for r in roles):
            result.update(failed=True, msg="roles must be a non-empty list of role names of gpufabric.stack, got %r" % (roles,))
            return result

        self._intents = role_intent.RoleIntents(self._loader, self._templar)
        specs, defaults = {}, {}
        for role in roles:
            data = self._load(role, "meta/argument_specs.yml")
            spec = (data.get("argument_specs") or {}).get(entry_point)
            if spec is None:
                result.update(failed=True, msg="role %s of gpufabric.stack has no argument spec %r (roles/%s/meta/argument_specs.yml)"
                              % (role, entry_point, role))
                return result
            specs[role] = spec.get("options") or {}
            # the role's defaults are the lowest precedence, as for the role's own check
            defaults = combine_vars(defaults, self._load(role, "defaults/main.yml"))

        available = combine_vars(defaults, task_vars)
        templar = self._templar.copy_with_new_env(available_variables=available)
        errors = {}
        for role, options in specs.items():
            values = templar.template({name: available[name] for name in options if name in available})
            # plain copies: the validator deep-copies them (plain_data.plain)
            checked = ArgumentSpecValidator(options).validate(plain_data.plain(values), validate_role_argument_spec=True)
            if checked.error_messages:
                errors[role] = list(checked.error_messages)

        # module_executions: none (the task counter of make bench reads it)
        result.update(changed=False, roles=list(specs), argument_errors=errors, module_executions=0)
        if errors:
            host = task_vars.get("inventory_hostname", "this host")
            result.update(failed=True, msg="%s: variables that do not match the argument spec of their role, nothing changed: %s" % (
                host, "; ".join("%s: %s" % (role, ", ".join(messages)) for role, messages in errors.items())))
        else:
            result["msg"] = "the variables of %s match their argument specs" % ", ".join(specs)
        return result
