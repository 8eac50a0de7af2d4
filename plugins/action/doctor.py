# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doctor: every layer judged by its check file
(plugin_utils/checks/<role>.py) against its role's intent (the role's
defaults, the inventory over them, the role's vars over both), in the
controller, one record per layer.  Where the reading comes from is the
layer's scope in the registry (plugin_utils/layers.py):

- node layers: what each check wants read merged into one nic_facts
  execution on the node and one Redfish read of its BMC made here; a layer
  given to --skip-tags is 'skipped' and not read, the layers above the first
  failing one are 'blocked by N' and not judged;
- the switch layer: one roce_switch gathered read of the switch;
- cluster layers: the Kubernetes API read once for the play (the task runs
  once, delegated to the first kube_control_plane host), every distinct
  object read once, every host of the play judged;
- fabric layers: the reading the role's coordination made across nodes
  (``reading``), judged here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from concurrent.futures import ThreadPoolExecutor

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.stack.plugins.plugin_utils import (
    doctor, kube_checks, layers, main_process, nic_reading, plain_data, role_intent)
from ansible_collections.gpufabric.stack.plugins.module_utils.bios import bmc_trust, redfish_bios

# the Jinja plugins loaded before the workers fork (plugin_utils/main_process.py)
main_process.load_jinja_plugins()

role_intent.import_checks(layer.role for layer in layers.REGISTRY)
role_intent.preload(layer.role for layer in layers.REGISTRY)

ARGS = {
    "layers": {"type": "list", "elements": "int"},
    "skip_tags": {"type": "list", "elements": "str"},
    "reading": {"type": "dict"},
    "node_result": {"type": "str", "default": "doctor_node"},
    "scope": {"type": "str", "choices": ["node", "switch", "cluster", "fabric"]},
}
ERRORS = (AnsibleError, KeyError, TypeError, ValueError)
# A role's defaults, vars and argument specs as loaded in this task: the
# cluster layers resolve four roles' intents for every host of the play.
_LOADED = {}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGS)

    def _host_vars(self, task_vars, host):
        """The variables of ``host`` as its own task would see them: the
        task's (play, magic, hostvars) with that host's inventory, facts and
        registered results over them."""
        if host == task_vars.get("inventory_hostname"):
            return task_vars
        variables = dict(task_vars)
        variables.update(task_vars["hostvars"].raw_get(host))
        variables["inventory_hostname"] = host
        variables["inventory_hostname_short"] = host.split(".")[0]
        variables["group_names"] = sorted(g for g, members in (task_vars.get("groups") or {}).items()
                                          if host in members and g != "all")
        return variables

    def _role_intent(self, role, names, task_vars):
        """``names`` of role ``role`` as the role sees them
        (plugin_utils/role_intent.py)."""
        return role_intent.RoleIntents(self._loader, self._templar, _LOADED).intent(role, names, task_vars)

    def _run_module(self, **kwargs):
        """_execute_module, counted in the result's module_executions."""
        self._module_executions += 1
        return self._execute_module(**kwargs)

    def _read_bmc(self, intent):
        """bios_facts' answer, read here (the controller, as a delegated
        bios_facts would): the system, the BIOS attributes or the error.
        An HTTPS read from this process: no module execution."""
        if not intent.get("bmc_address"):
            return {}
        address = redfish_bios.bmc_address(intent["bmc_address"])
        timeout = int(intent.get("bmc_timeout") or 30)
        pin = None
        if intent.get("bmc_pin_certs", True) and not intent.get("bmc_validate_certs"):
            # the BMC's certificate held to its pin before the password goes
            # out, on the very connections that carry it (bmc_trust)
            try:
                pin = bmc_trust.trust(address, intent.get("bmc_known_certs") or "bmc_known_certs.txt",
                                      timeout=timeout, write=not self._task.check_mode)["fingerprint"]
            except bmc_trust.TrustError as exc:
                return {"error": str(exc) if exc.unreachable else "BMC not trusted: %s" % exc}
        return redfish_bios.facts({"baseuri": address, "username": intent.get("bmc_username"),
                                   "password": intent.get("bmc_password"),
                                   "validate_certs": bool(intent.get("bmc_validate_certs")), "timeout": timeout,
                                   "pin": pin, "ca_path": intent.get("bmc_ca_path") or None,
                                   "vendor": intent.get("bmc_vendor") or "auto"})

    def _prepare(self, todo, task_vars, host):
        """(modules, intents, wishes, errors) of the layers ``todo`` on
        ``host``: each check file, its role's intent, what it wants read, and
        why a layer cannot be checked (a variable that does not template or
        has the wrong type; the layers below it still are)."""
        modules, intents, wishes, errors = {}, {}, {}, {}
        for layer in todo:
            module = modules[layer.number] = role_intent.check(layer.role)
            try:
                intents[layer.number] = self._role_intent(layer.role, module.INTENT, task_vars)
                wishes[layer.number] = module.reads(intents[layer.number], host)
            except ERRORS as exc:
                errors[layer.number] = "%s: %s" % (type(exc).__name__, exc)
        return modules, intents, wishes, errors

    def run(self, tmp=None, task_vars=None):
        _LOADED.clear()
        self._module_executions = 0
        result = self._run(super(ActionModule, self).run(tmp, task_vars), task_vars)
        # what the gpufabric.stack.task_counter callback counts for this task
        result["module_executions"] = self._module_executions
        return result

    def _run(self, result, task_vars):
        _valid, args = plain_data.validate_args(self, argument_spec=ARGS)
        host = task_vars.get("inventory_hostname", "?")
        groups = [g for g, members in (task_vars.get("groups") or {}).items() if host in members]
        if args["layers"] is None:
            todo = [layer for layer in layers.select(scope=("node", "switch")) if set(layer.hosts) & set(groups)]
        else:
            try:
                todo = [layers.get(n) for n in sorted(set(args["layers"]))]
            except ValueError as exc:
                raise AnsibleError("%s: layers: %s" % (host, exc))
        if args["scope"] is not None:
            # the layers of one kind among those given (doctor/tasks/layers.yml: the cluster layers of its list)
            todo = [layer for layer in todo if layer.scope == args["scope"]]
            if not todo:
                result.update(changed=False, results=[], hosts={})
                return result
        scopes = set(layer.scope for layer in todo)
        if len(scopes) > 1 and scopes != set(["node", "switch"]):
            raise AnsibleError("%s: layers: %s are read in different ways (%s); check each kind in its own task"
                               % (host, ", ".join(str(layer.number) for layer in todo), ", ".join(sorted(scopes))))
        skip = set(task_vars.get("ansible_skip_tags") or []) if args["skip_tags"] is None else set(args["skip_tags"])
        if "fabric" in scopes:
            if args["reading"] is None or len(todo) != 1:
                raise AnsibleError("%s: layers: layer %d (%s) is read across nodes by its role's tasks/doctor.yml, "
                                   "which gives its reading: one layer and its reading per task"
                                   % (host, todo[0].number, todo[0].role))
            return self._fabric(result, todo[0], args["reading"], task_vars, host)
        if args["reading"] is not None:
            raise AnsibleError("%s: reading: only a fabric layer (%s) is given its reading"
                               % (host, ", ".join(str(layer.number) for layer in layers.select(scope="fabric"))))
        if "cluster" in scopes:
            return self._cluster(result, todo, skip, args["node_result"], task_vars)
        return self._node(result, todo, skip, task_vars, host, groups, args["layers"] is None, args["node_result"])

    def _fabric(self, result, layer, reading, task_vars, host):
        """A fabric layer: its role's coordination read across nodes; the
        check judges that reading against the role's intent."""
        module = role_intent.check(layer.role)
        try:
            intent = self._role_intent(layer.role, module.INTENT, task_vars)
            res = doctor.record(module.check(reading, intent, host), "%s: the layer %d check" % (host, layer.number))
        except ERRORS as exc:
            error = "%s: %s" % (type(exc).__name__, exc)
            res = doctor.result(layer.number, "fail", "the %s check stopped with an error" % layer.role, [error],
                                "fix the variable the error names for this host")
            result.update(failed=True, msg="%s: the layer %d (%s) check stopped with an error: %s"
                          % (host, layer.number, layer.role, error))
        result.update(changed=False, results=[res])
        return result

    def _cluster(self, result, todo, skip, node_result, task_vars):
        """The cluster layers of every host of the play from one read of the
        API on the first kube_control_plane host (the task runs once,
        delegated there)."""
        hostvars = task_vars.get("hostvars") or {}
        api_host = ((task_vars.get("groups") or {}).get("kube_control_plane") or [""])[0]
        if api_host and (self._task.delegate_to != api_host or not self._task.run_once):
            raise AnsibleError("layers %s read the Kubernetes API once for the play on %s: run the task with "
                               "run_once: true and delegate_to: %s (it is %s, delegated to %r)"
                               % (", ".join(str(layer.number) for layer in todo), api_host, api_host,
                                  "run once" if self._task.run_once else "not run once", self._task.delegate_to))
        checked = [layer for layer in todo if layers.tag(layer.number) not in skip]
        hosts = [h for h in task_vars.get("ansible_play_batch") or [task_vars.get("inventory_hostname")]
                 if set(g for g, members in (task_vars.get("groups") or {}).items() if h in members)
                 & set(g for layer in checked for g in layer.hosts)]
        # each host's registered node_result, taken from hostvars once (each
        # access templates the whole result)
        registered = dict((h, (hostvars[h].get(node_result) or {}) if h in hostvars else None) for h in hosts)
        # a host whose node layers failed in this run (its registered
        # node_result): its cluster layers are blocked, neither read nor judged
        blocked = dict((h, first) for h, first in ((h, self._first_failure(registered[h], checked))
                                                   for h in hosts) if first is not None)
        prepared = dict((h, self._prepare(checked, self._host_vars(task_vars, h), h)) for h in hosts
                        if h not in blocked)

        wanted, queries = {}, {}
        for h, (_modules, _intents, wishes, _errors) in prepared.items():
            for wish in wishes.values():
                config = wish["cluster"]["kubeconfig"]
                for q in wish["cluster"]["queries"]:
                    queries.setdefault(config, {})[kube_checks.query_key(q)] = q
        answers, skipped = {}, {}
        for config in sorted(queries):
            if not api_host:
                skipped[config] = "no kube_control_plane host in the inventory"
                continue
            try:
                stat = self._run_module(module_name="ansible.builtin.stat", module_args={"path": config},
                                        task_vars=task_vars)
            except AnsibleConnectionFailure:
                stat = {"unreachable": True}
            if stat.get("unreachable"):
                skipped[config] = "control-plane host %s unreachable" % api_host
            elif not (stat.get("stat") or {}).get("exists"):
                skipped[config] = "no cluster: %s not found on %s" % (config, api_host)
            if config in skipped:
                continue
            for key, q in sorted(queries[config].items()):
                answers[(config, key)] = self._read_api(config, q, task_vars)

        by_host = {}
        for h in hosts:
            modules, intents, wishes, errors = prepared.get(h) or ({}, {}, {}, {})
            node = registered[h] or {}
            records = []
            for layer in todo:
                if layer not in checked:
                    records.append(doctor.result(layer.number, "skipped",
                                                 "not checked: --skip-tags " + layers.tag(layer.number)))
                    continue
                if h in blocked:
                    records.append(doctor.result(layer.number, "blocked", "blocked by layer %d" % blocked[h]))
                    continue
                if layer.number in errors:
                    records.append(doctor.result(layer.number, "fail", "the %s check stopped with an error"
                                                 % layer.role, [errors[layer.number]],
                                                 "fix the variable the error names for this host"))
                    continue
                config = wishes[layer.number]["cluster"]["kubeconfig"]
                if config in skipped:
                    # no cluster to read: the same record for every cluster layer
                    records.append(kube_checks.skipped(layer.number, skipped[config]))
                    continue
                reading = {"cluster": {"answers": dict((key, answers[(config, key)]) for key in queries[config]
                                                       if (config, key) in answers)},
                           "nic_facts": node.get("reading") or {}}
                try:
                    records.append(doctor.record(modules[layer.number].check(reading, intents[layer.number], h),
                                                 "%s: the layer %d check" % (h, layer.number)))
                except ERRORS as exc:
                    records.append(doctor.result(layer.number, "fail", "the %s check stopped with an error"
                                                 % layer.role, ["%s: %s" % (type(exc).__name__, exc)],
                                                 "fix the variable the error names for this host"))
            by_host[h] = records
        own = task_vars.get("inventory_hostname")
        result.update(changed=False, results=by_host.get(own, []), hosts=by_host, api_host=api_host,
                      api_reads=len(answers))
        return result

    @staticmethod
    def _first_failure(registered, checked):
        """The lowest layer below ``checked`` (the cluster layers) that
        failed in a host's ``registered`` node result; None when none did,
        or the host has no such result (None)."""
        if not checked or registered is None:
            return None
        below = min(layer.number for layer in checked)
        failed = [r.get("layer") for r in (registered.get("results") or [])
                  if isinstance(r, dict) and r.get("status") == "fail" and isinstance(r.get("layer"), int)
                  and r["layer"] < below]
        return min(failed) if failed else None

    def _read_api(self, config, q, task_vars):
        """One read: {resources}, {version} or {error}."""
        if q["kind"] == kube_checks.VERSION:
            got = self._run_module(module_name="kubernetes.core.k8s_cluster_info",
                                   module_args={"kubeconfig": config}, task_vars=task_vars)
            if got.get("failed") or got.get("unreachable") or "version" not in got:
                return {"error": got.get("msg") or "the API read failed"}
            return {"version": got["version"]}
        module_args = dict(q, kubeconfig=config)
        got = self._run_module(module_name="kubernetes.core.k8s_info", module_args=module_args,
                               task_vars=task_vars)
        if got.get("failed") or got.get("unreachable") or "resources" not in got:
            return {"error": got.get("msg") or "the API read failed"}
        return {"resources": got["resources"]}

    def _node(self, result, todo, skip, task_vars, host, groups, whole, node_result):
        """The node (or switch) layers of this host from one read of it;
        ``whole`` (no layers asked for: all of the host's) adds to that read
        what the host's cluster layers read on the node; a read of the NICs
        also takes what the host's fabric layers read (their NODE_READS)."""
        checked = [layer for layer in todo if layers.tag(layer.number) not in skip]
        modules, intents, wishes, errors = self._prepare(checked, task_vars, host)
        # what the host's cluster layers read on the node comes in the same read
        # and, where this task reads the node's NICs at all, what the host's fabric layers read on the
        # node (their checks come later, across nodes, and take this reading)
        reads_nics = any("nic_facts" in w for w in wishes.values())
        cluster = [layer for layer in layers.select(scope=("cluster", "fabric"))
                   if (whole or (layer.scope == "fabric" and reads_nics)) and set(layer.hosts) & set(groups)
                   and layers.tag(layer.number) not in skip]
        extra = [(layer.number, dict(role_intent.check(layer.role).NODE_READS)) for layer in cluster
                 if getattr(role_intent.check(layer.role), "NODE_READS", None)]

        readings = {}

        def bmc_failed(exc):
            for n in [n for n in wishes if wishes[n].get("bmc")]:
                errors[n] = "%s: %s" % (type(exc).__name__, exc)

        bmc_read = None
        # one thread for the BMC's Redfish read, beside the node's module runs (a BMC takes seconds
        # to answer, the node's tools as long again); leaving the block waits for it
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpufabric-doctor-bmc") as beside:
            if any(w.get("bmc") for w in wishes.values()):
                # read with the bmc role's settings (address, credentials, timeout), whichever layer
                # asks, templated here, before the thread starts
                try:
                    bmc_read = beside.submit(self._read_bmc, self._role_intent(
                        "bmc", role_intent.check("bmc").INTENT, task_vars))
                except ERRORS as exc:
                    bmc_failed(exc)
            unreachable = self._read_node(wishes, extra, task_vars, host, node_result, readings)
        if bmc_read is not None:
            try:
                readings["bmc"] = bmc_read.result()
            except ERRORS as exc:
                bmc_failed(exc)
        if unreachable:
            result.update(unreachable)
            return result
        answers = readings.pop("nic_facts")

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
                      switch=readings.get("roce_switch") or {}, nic_facts_calls=len(answers))
        stopped = [n for n in sorted(errors) if any(r["layer"] == n and r["status"] == "fail" for r in results)]
        if stopped:
            # the results are recorded; the task fails so that the error is seen
            result.update(failed=True, msg="%s: the layer %d (%s) check stopped with an error: %s"
                          % (host, stopped[0], layers.get(stopped[0]).role, errors[stopped[0]]))
        return result

    def _read_node(self, wishes, extra, task_vars, host, node_result, readings):
        """What the checks read besides the BMC, into ``readings``: the leaves'
        answers from their results (``switches``), the roce_switch read, and
        the node's nic_facts reads (``nic_facts``: ``{sysfs_root: answer}``).
        Returns the answer of a module run that found the host unreachable,
        else None."""
        if any(w.get("switches") for w in wishes.values()):
            hostvars = task_vars.get("hostvars") or {}
            readings["switches"] = {}
            for sw in (task_vars.get("groups") or {}).get("leaf_switches") or []:
                answer = ((hostvars[sw].get(node_result) or {}) if sw in hostvars else {}).get("switch")
                if answer:
                    readings["switches"][sw] = answer
        for number, wish in sorted(wishes.items()):
            if "roce_switch" in wish:
                answer = self._run_module(module_name="gpufabric.stack.roce_switch",
                                          module_args=wish["roce_switch"], task_vars=task_vars)
                if answer.get("unreachable"):
                    return answer
                answer.pop("invocation", None)
                readings["roce_switch"] = answer
        try:
            calls = nic_reading.merge_reads(
                [(n, w["nic_facts"]) for n, w in sorted(wishes.items()) if "nic_facts" in w] + extra)
        except ValueError as exc:
            raise AnsibleError("%s: %s" % (host, exc))
        kernel_proc = next((w["nic_facts"]["proc_root"] for w in wishes.values()
                            if "proc_root" in w.get("nic_facts", {})), None)
        answers = {}
        for root, options in sorted(calls.items()):
            if kernel_proc and "proc_root" not in options:
                options["proc_root"] = kernel_proc
            answer = self._run_module(module_name="gpufabric.stack.nic_facts", module_args=options,
                                      task_vars=task_vars)
            if answer.get("unreachable"):
                return answer
            answers[root] = answer
        readings["nic_facts"] = answers
        return None
