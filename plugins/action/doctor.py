# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doctor's node layers on one host in one task: what each layer's check
wants read (module_utils/checks/<role>.py ``reads``) merged into one
nic_facts execution on the node and one Redfish read of its BMC made here on
the controller, then every check judged here, in layer order, against its
role's intent (the role's defaults, the inventory over them, the role's
vars over both).  A layer given to --skip-tags is 'skipped' and not read; the
layers above the first failing one are 'blocked by N' and not judged."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import os

from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.stack.plugins.module_utils import doctor, layers, redfish_bios

COLLECTION = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKS = "ansible_collections.gpufabric.stack.plugins.module_utils.checks."
LIST_OPTIONS = ("units", "files", "probe_modules")
DICT_OPTIONS = ("firmware", "qos", "runtime")

ARGS = {
    "layers": {"type": "list", "elements": "int"},
    "skip_tags": {"type": "list", "elements": "str"},
}


def merge_reads(wanted):
    """The nic_facts calls that answer every layer's ``nic_facts`` wish:
    {sysfs_root: options}, one call per sysfs root, lists joined; ValueError
    when two layers want a different option of the same kind (their roles'
    settings disagree) naming both."""
    calls = {}
    for number, wish in wanted:
        root = wish.get("sysfs_root") or "/sys"
        call = calls.setdefault(root, {"sysfs_root": root})
        for key, value in wish.items():
            if key == "sysfs_root":
                continue
            if key in LIST_OPTIONS:
                call[key] = list(call.get(key) or []) + [v for v in value if v not in (call.get(key) or [])]
            elif key in call and call[key] != value:
                raise ValueError("layers %s and %d want different nic_facts %s on %s: %r and %r"
                                 % (call["_who"][key], number, key, root, call[key], value))
            else:
                call[key] = value
                call.setdefault("_who", {})[key] = number
    for call in calls.values():
        call.pop("_who", None)
    return calls


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGS)

    def _role_intent(self, role, names, task_vars):
        """``names`` of role ``role`` as the role sees them: its defaults,
        the inventory and play over them, its vars/main.yml over both."""
        base = os.path.join(COLLECTION, "roles", role)
        variables = {}
        path = os.path.join(base, "defaults", "main.yml")
        if os.path.exists(path):
            variables.update(self._loader.load_from_file(path, trusted_as_template=True) or {})
        variables.update(task_vars)
        path = os.path.join(base, "vars", "main.yml")
        if os.path.exists(path):
            variables.update(self._loader.load_from_file(path, trusted_as_template=True) or {})
        templar = self._templar.copy_with_new_env(available_variables=variables)
        intent = dict((name, templar.template(variables[name])) for name in names if name in variables)
        return self._validated(role, intent, task_vars.get("inventory_hostname", "?"))

    def _validated(self, role, intent, host):
        """``intent`` checked and typed by the role's own argument spec (its
        main entry point's options of these names); AnsibleError naming the
        host, the role and every bad variable otherwise."""
        path = os.path.join(COLLECTION, "roles", role, "meta", "argument_specs.yml")
        specs = (self._loader.load_from_file(path) or {}).get("argument_specs") or {} if os.path.exists(path) else {}
        options = (specs.get("main") or {}).get("options") or {}
        spec = dict((name, dict((k, v) for k, v in options[name].items()
                                if k not in ("required", "description", "default", "version_added")))
                    for name in intent if name in options)
        if not spec:
            return intent
        checked = ArgumentSpecValidator(spec).validate(dict((k, intent[k]) for k in spec))
        if checked.error_messages:
            raise AnsibleError("%s: the %s role's variables: %s" % (host, role, "; ".join(checked.error_messages)))
        out = dict(intent)
        out.update(checked.validated_parameters)
        return out

    def _read_bmc(self, intent):
        """bios_facts' answer, read here (the controller, as a delegated
        bios_facts would): the system, the BIOS attributes or the error."""
        if not intent.get("bmc_address"):
            return {}
        address = redfish_bios.bmc_address(intent["bmc_address"])
        get = redfish_bios.https_getter(address, intent.get("bmc_username") or "", intent.get("bmc_password") or "",
                                        validate_certs=bool(intent.get("bmc_validate_certs")),
                                        timeout=int(intent.get("bmc_timeout") or 30))
        return redfish_bios.read_bios(get, address, vendor=intent.get("bmc_vendor") or "auto")

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _valid, args = self.validate_argument_spec(argument_spec=ARGS)
        host = task_vars.get("inventory_hostname", "?")
        groups = [g for g, members in (task_vars.get("groups") or {}).items() if host in members]
        if args["layers"] is None:
            todo = [layer for layer in layers.select(scope="node") if set(layer.hosts) & set(groups)]
        else:
            try:
                todo = [layers.get(n) for n in sorted(set(args["layers"]))]
            except ValueError as exc:
                raise AnsibleError("%s: layers: %s" % (host, exc))
            other = [layer for layer in todo if layer.scope != "node"]
            if other:
                raise AnsibleError("%s: layers: layer %d (%s) is read across hosts, not by this action; its role's "
                                   "check.yml reads it" % (host, other[0].number, other[0].role))
        skip = set(task_vars.get("ansible_skip_tags") or []) if args["skip_tags"] is None else set(args["skip_tags"])
        checked = [layer for layer in todo if layers.tag(layer.number) not in skip]

        modules, intents, wishes, errors = {}, {}, {}, {}
        for layer in checked:
            module = modules[layer.number] = importlib.import_module(CHECKS + layer.role)
            try:
                intents[layer.number] = self._role_intent(layer.role, module.INTENT, task_vars)
                wishes[layer.number] = module.reads(intents[layer.number], host)
            except (AnsibleError, KeyError, TypeError, ValueError) as exc:
                # a variable that does not template or has the wrong type: this
                # layer cannot be checked; the layers below it still are
                errors[layer.number] = "%s: %s" % (type(exc).__name__, exc)

        readings = {}
        if any(w.get("bmc") for w in wishes.values()):
            # read with the bmc role's settings (address, credentials, timeout), whichever layer asks
            try:
                bmc = importlib.import_module(CHECKS + "bmc")
                readings["bmc"] = self._read_bmc(self._role_intent("bmc", bmc.INTENT, task_vars))
            except (AnsibleError, KeyError, TypeError, ValueError) as exc:
                for n in [n for n in wishes if wishes[n].get("bmc")]:
                    errors[n] = "%s: %s" % (type(exc).__name__, exc)
        if any(w.get("switches") for w in wishes.values()):
            hostvars = task_vars.get("hostvars") or {}
            readings["switches"] = dict((sw, hostvars[sw]["roce_switch_check"])
                                        for sw in (task_vars.get("groups") or {}).get("leaf_switches") or []
                                        if sw in hostvars and "roce_switch_check" in hostvars[sw])
        try:
            calls = merge_reads([(n, w["nic_facts"]) for n, w in sorted(wishes.items()) if "nic_facts" in w])
        except ValueError as exc:
            raise AnsibleError("%s: %s" % (host, exc))
        kernel_proc = next((w["nic_facts"]["proc_root"] for w in wishes.values()
                            if "proc_root" in w.get("nic_facts", {})), None)
        answers = {}
        for root, options in sorted(calls.items()):
            if kernel_proc and "proc_root" not in options:
                options["proc_root"] = kernel_proc
            answer = self._execute_module(module_name="gpufabric.stack.nic_facts", module_args=options,
                                          task_vars=task_vars)
            if answer.get("unreachable"):
                result.update(answer)
                return result
            answers[root] = answer

        results, first, details = [], None, {}
        for layer in todo:
            if layer not in checked:
                results.append(doctor.result(layer.number, "skipped",
                                             "not checked: --skip-tags " + layers.tag(layer.number)))
                continue
            if first is not None:
                results.append(doctor.result(layer.number, "blocked", "blocked by layer %d" % first["layer"]))
                continue
            if layer.number in errors:
                first = doctor.result(layer.number, "fail", "the %s check stopped with an error" % layer.role,
                                      [errors[layer.number]], "fix the variable the error names for this host")
                results.append(first)
                continue
            reading = dict(readings)
            want = wishes[layer.number].get("nic_facts")
            if want is not None:
                answer = answers[want.get("sysfs_root") or "/sys"]
                if answer.get("failed"):
                    res = doctor.result(layer.number, "fail", "the node could not be read: %s"
                                        % (answer.get("msg") or "nic_facts failed"), [],
                                        "fix what the message names, then run validate.yml again")
                    results.append(res)
                    first = res
                    continue
                reading["nic_facts"] = answer
            res = doctor.record(modules[layer.number].check(reading, intents[layer.number], host),
                                "%s: the layer %d check" % (host, layer.number))
            results.append(res)
            if hasattr(modules[layer.number], "details"):
                details[str(layer.number)] = modules[layer.number].details(reading, intents[layer.number], host)
            if res["status"] == "fail":
                first = res
        default_root = self._templar.template(task_vars.get("gpufabric_sysfs_root")) or "/sys"
        result.update(changed=False, results=results, details=details, reading=answers.get(default_root) or {},
                      nic_facts_calls=len(answers))
        stopped = [n for n in sorted(errors) if any(r["layer"] == n and r["status"] == "fail" for r in results)]
        if stopped:
            # the results are recorded; the task fails so that the error is seen
            result.update(failed=True, msg="%s: the layer %d (%s) check stopped with an error: %s"
                          % (host, stopped[0], layers.get(stopped[0]).role, errors[stopped[0]]))
        return result
