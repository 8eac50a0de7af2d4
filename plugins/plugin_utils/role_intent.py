# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's intent read outside the role: its defaults, the inventory and
play over them, its vars/main.yml over both, typed by the role's own
argument spec. The doctor judges every layer against it; nic_facts' reading
takes a later layer's wish from it (also_layers), so that both ask for what
the layer's check file (plugin_utils/checks/<role>.py) reads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import os

from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data

COLLECTION = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKS = "ansible_collections.gpufabric.stack.plugins.plugin_utils.checks."


def check(role):
    """The doctor's check file of a layer's role (plugin_utils/checks/<role>.py)."""
    return importlib.import_module(CHECKS + role)


def import_checks(roles):
    """Import the check files of ``roles`` now. An action plugin that calls
    checks does this when it is loaded: ansible's strategy loads the action's
    class in the controller's main process before it forks a worker per host,
    so the checks (and what they import) are compiled once per run and every
    worker inherits them; imported in the worker, each host's worker compiles
    them again (ansible's collection loader keeps no compiled code)."""
    for role in roles:
        check(role)


# the role files preload() parsed: {(path, trusted): data}
_PARSED = {}
# what a role's intent is read from: (path in the role, trusted as a template)
ROLE_FILES = (("defaults/main.yml", True), ("vars/main.yml", True), ("meta/argument_specs.yml", False))


def _parse(loader, path, trusted):
    """The YAML file at ``path`` ({} when absent), parsed to be only read:
    neither the loader's cache nor its deep copy."""
    if not os.path.exists(path):
        return {}
    return loader.load_from_file(path, cache="none", unsafe=True, trusted_as_template=trusted) or {}


def preload(roles):
    """Parse the intent files of ``roles`` now (ROLE_FILES), for the same
    reason as import_checks: done when an action is loaded, in the
    controller's main process, every worker forked for a host inherits them;
    otherwise each host's worker parses the same files again. A role's files
    are its own, not the inventory's: read with a plain loader. A file that
    loader cannot parse (a YAML error, a whole file encrypted with vault) is
    left to the task's loader, which parses it, or names the error, in the
    host's task."""
    from ansible.parsing.dataloader import DataLoader
    loader = DataLoader()
    for role in roles:
        for name, trusted in ROLE_FILES:
            path = os.path.join(COLLECTION, "roles", role, name)
            if (path, trusted) not in _PARSED:
                try:
                    _PARSED[(path, trusted)] = _parse(loader, path, trusted)
                except (AnsibleError, TypeError):
                    # TypeError: an ansible-core without trusted_as_template (before 2.19)
                    pass


class RoleIntents(object):
    """The intents of roles as a task sees them: ``loader`` and ``templar``
    are the action's; ``cache`` keeps each parsed file (a dict the caller
    clears when its task starts)."""

    def __init__(self, loader, templar, cache=None):
        self._loader, self._templar = loader, templar
        self._cache = {} if cache is None else cache

    def load(self, path, trusted=False):
        """The YAML file at ``path`` ({} when absent), loaded once per cache
        unless preload() parsed it."""
        key = (path, trusted)
        if key in _PARSED:
            return _PARSED[key]
        if key not in self._cache:
            self._cache[key] = _parse(self._loader, path, trusted)
        return self._cache[key]

    def intent(self, role, names, task_vars):
        """``names`` of role ``role`` as the role sees them: its defaults,
        the inventory and play over them, its vars/main.yml over both; a
        name whose value templates to ``omit`` is left out."""
        base = os.path.join(COLLECTION, "roles", role)
        variables = dict(self.load(os.path.join(base, "defaults", "main.yml"), trusted=True))
        variables.update(task_vars)
        variables.update(self.load(os.path.join(base, "vars", "main.yml"), trusted=True))
        templar = self._templar.copy_with_new_env(available_variables=variables)
        omit = task_vars.get("omit")
        intent = {}
        for name in names:
            if name in variables:
                value = templar.template(variables[name])
                if omit is None or value != omit:
                    intent[name] = value
        return self.validated(role, intent, task_vars.get("inventory_hostname", "?"))

    def validated(self, role, intent, host):
        """``intent`` checked and typed by the role's own argument spec (its
        main entry point's options of these names); AnsibleError naming the
        host, the role and every bad variable otherwise."""
        specs = self.load(os.path.join(COLLECTION, "roles", role, "meta", "argument_specs.yml")).get(
            "argument_specs") or {}
        options = (specs.get("main") or {}).get("options") or {}
        spec = dict((name, dict((k, v) for k, v in options[name].items()
                                if k not in ("required", "description", "default", "version_added")))
                    for name in intent if name in options)
        if not spec:
            return intent
        # plain copies: the validator deep-copies them (plain_data.plain)
        checked = ArgumentSpecValidator(spec).validate(dict((k, plain_data.plain(intent[k])) for k in spec))
        if checked.error_messages:
            raise AnsibleError("%s: the %s role's variables: %s" % (host, role, "; ".join(checked.error_messages)))
        out = dict(intent)
        out.update(checked.validated_parameters)
        return out
