# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Count what a playbook run costs per host: module executions (each one a
round trip to the host, or a process on the controller when delegated),
controller-side actions, changed and skipped results, the time of every task,
and the commands the roce_switch module sent to each switch."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: task_counter
type: aggregate
short_description: Count module executions per host and time every task
description:
  - Counts, per host, the task results of a run. Every loop item is one result.
  - Module executions are also counted per role of the task, per host.
  - A C(module execution) is a result that ran a module, on the host or delegated to another one; a result of an
    action that only runs on the controller (C(set_fact), C(debug), C(assert), C(fail), C(meta), the includes,
    C(validate_argument_spec), C(add_host), C(group_by), C(set_stats), C(include_vars), C(pause) and the
    actions listed in O(controller_actions)) is counted as a C(controller action) instead. A skipped result is
    neither. A result that says how many modules its action executed (an integer C(module_executions), as
    C(gpufabric.stack.doctor) returns) counts that many, and one that executed none is a controller action.
  - On a real rack every module execution on a host is at least one SSH round trip (one with pipelining), so
    their number per host bounds how fast a run that changes nothing can be.
  - Records the wall time of every task (from its start to the start of the next one, as
    C(ansible.posix.profile_tasks) measures it) with its role, and, for each C(gpufabric.stack.roce_switch)
    result, the state, the number of configuration commands sent and the number of show commands used.
  - At the end of the run writes all of it as JSON to O(output), or, when O(output) is not set, prints one line
    per host.
version_added: "0.1.0"
author: gpufabric.stack maintainers (@gpufabric)
requirements:
  - enabled in configuration, for example C(ANSIBLE_CALLBACKS_ENABLED=gpufabric.stack.task_counter)
options:
  output:
    description:
      - File to write the counts to, as JSON, when the playbook ends. Its directory must exist.
      - Not set prints a summary line per host instead.
    type: path
    env:
      - name: GPUFABRIC_TASK_COUNTER_FILE
    ini:
      - section: callback_task_counter
        key: output
  controller_actions:
    description:
      - More action names (short or fully qualified) that run only on the controller and execute no module.
    type: list
    elements: str
    default: [gpufabric.stack.doctor_print]
    env:
      - name: GPUFABRIC_TASK_COUNTER_CONTROLLER_ACTIONS
    ini:
      - section: callback_task_counter
        key: controller_actions
"""

EXAMPLES = r"""
# Count the module executions of a no-change re-run:
#   ANSIBLE_CALLBACKS_ENABLED=gpufabric.stack.task_counter \
#   GPUFABRIC_TASK_COUNTER_FILE=/tmp/counts.json ansible-playbook playbooks/site.yml
# /tmp/counts.json then holds, among others:
#   {"hosts": {"node01": {"module_executions": 31, "delegated": 6, "controller_actions": 40,
#                         "changed": 0, "skipped": 12, "failed": 0, "unreachable": 0, "results": 71,
#                         "by_role": {"kernel": 8, "sriov_vfs": 9, ...}}, ...},
#    "tasks": [{"name": "...", "role": "kernel", "action": "ansible.builtin.slurp", "seconds": 1.9, "hosts": 8}, ...],
#    "roce_switch": {"leaf1": [{"state": "merged", "commands": 0, "show_commands": 1, "changed": false}]}}
"""

import json
import time

from ansible.plugins.callback import CallbackBase

# Actions that run on the controller only: they execute no module anywhere.
CONTROLLER_ACTIONS = frozenset((
    "set_fact", "debug", "assert", "fail", "meta", "include_tasks", "import_tasks", "include_role",
    "import_role", "include_vars", "add_host", "group_by", "set_stats", "pause", "validate_argument_spec",
    "end_play", "noop",
))
_BUILTIN_PREFIXES = ("ansible.builtin.", "ansible.legacy.")
HOST_KEYS = ("results", "module_executions", "delegated", "controller_actions", "changed", "skipped", "failed",
             "unreachable")


def is_controller_action(action, extra=()):
    """True for an action that runs no module (set_fact, debug, ...)."""
    action = action or ""
    if action in extra:
        return True
    for prefix in _BUILTIN_PREFIXES:
        if action.startswith(prefix):
            action = action[len(prefix):]
            break
    return action in CONTROLLER_ACTIONS or action in extra


def classify(action, result, extra=(), delegated=False):
    """Count one task result: a dict of HOST_KEYS increments. A loop result
    counts each item; a skipped item is skipped, nothing else. delegated:
    the task has delegate_to (the result says so too, except for loops)."""
    counts = dict.fromkeys(HOST_KEYS, 0)
    items = result.get("results") if isinstance(result.get("results"), list) else None
    # a loop's results carry their loop variable; a module's own "results"
    # (the doctor action's records, for one) is one execution
    if items and not all(isinstance(e, dict) and "ansible_loop_var" in e for e in items):
        items = None
    entries = items if items is not None and items else [result]
    delegated = delegated or bool(result.get("_ansible_delegated_vars"))
    for entry in entries:
        if not isinstance(entry, dict):
            entry = {}
        counts["results"] += 1
        if entry.get("skipped"):
            counts["skipped"] += 1
            continue
        if entry.get("changed"):
            counts["changed"] += 1
        if entry.get("failed"):
            counts["failed"] += 1
        if entry.get("unreachable"):
            counts["unreachable"] += 1
        # an action that says how many modules it executed (gpufabric.stack.doctor)
        ran = entry.get("module_executions")
        ran = ran if isinstance(ran, int) and not isinstance(ran, bool) else None
        if is_controller_action(action, extra) or ran == 0:
            counts["controller_actions"] += 1
        elif ran is not None:
            counts["module_executions"] += ran
            if delegated or entry.get("_ansible_delegated_vars"):
                counts["delegated"] += ran
        else:
            counts["module_executions"] += 1
            if delegated or entry.get("_ansible_delegated_vars"):
                counts["delegated"] += 1
    return counts


def roce_switch_record(result):
    """What a roce_switch result says about the switch session."""
    commands = result.get("commands") or []
    return {
        "state": ((result.get("invocation") or {}).get("module_args") or {}).get("state"),
        "commands": len(commands),
        "command_lines": list(commands),
        "show_commands": result.get("show_commands"),
        "changed": bool(result.get("changed")),
        "failed": bool(result.get("failed")),
    }


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpufabric.stack.task_counter"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None):
        super(CallbackModule, self).__init__(display=display)
        self.hosts = {}
        self.tasks = []
        self.switches = {}
        self.playbook = None
        self.started = time.time()
        self._current = None
        self._extra = ()

    def set_options(self, task_keys=None, var_options=None, direct=None):
        super(CallbackModule, self).set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        self._extra = tuple(self.get_option("controller_actions") or ())

    # ------------------------------------------------------------ timing
    def _close_task(self):
        if self._current is not None:
            self._current["seconds"] = round(time.time() - self._current.pop("_t0"), 3)
            self.tasks.append(self._current)
            self._current = None

    def _start_task(self, task, handler=False):
        self._close_task()
        role = task._role.get_name(include_role_fqcn=False) if getattr(task, "_role", None) else None
        self._current = {"name": task.get_name(), "role": role, "action": task.action, "path": task.get_path(),
                         "handler": handler, "hosts": 0, "_t0": time.time()}

    def v2_playbook_on_start(self, playbook):
        self.playbook = getattr(playbook, "_file_name", None)
        self.started = time.time()

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._start_task(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._start_task(task, handler=True)

    # ------------------------------------------------------------ results
    def _count(self, result, **force):
        host = result._host.get_name()
        data = dict(result._result)
        data.update(force)
        counts = classify(result._task.action, data, self._extra, delegated=bool(result._task.delegate_to))
        mine = self.hosts.setdefault(host, dict(dict.fromkeys(HOST_KEYS, 0), by_role={}))
        for key, value in counts.items():
            mine[key] += value
        if counts["module_executions"]:
            role = result._task._role.get_name(include_role_fqcn=False) if result._task._role else "(play)"
            mine["by_role"][role] = mine["by_role"].get(role, 0) + counts["module_executions"]
        if self._current is not None:
            self._current["hosts"] += 1
        if (result._task.action or "").endswith("roce_switch") and not data.get("skipped"):
            self.switches.setdefault(host, []).append(roce_switch_record(data))

    def v2_runner_on_ok(self, result):
        self._count(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._count(result, failed=True)

    def v2_runner_on_skipped(self, result):
        self._count(result, skipped=True)

    def v2_runner_on_unreachable(self, result):
        self._count(result, unreachable=True)

    # ------------------------------------------------------------ end
    def v2_playbook_on_stats(self, stats):
        self._close_task()
        recap = {}
        for host in sorted(stats.processed):
            s = stats.summarize(host)
            recap[host] = {k: s.get(k, 0) for k in ("ok", "changed", "failures", "unreachable", "skipped",
                                                    "rescued", "ignored")}
        doc = {"playbook": self.playbook, "seconds": round(time.time() - self.started, 3),
               "hosts": self.hosts, "recap": recap, "tasks": self.tasks, "roce_switch": self.switches}
        path = self.get_option("output")
        if path:
            with open(path, "w") as fh:
                json.dump(doc, fh, indent=1, sort_keys=True)
                fh.write("\n")
            return
        for host in sorted(self.hosts):
            h = self.hosts[host]
            self._display.display("%s: %d module executions (%d delegated), %d controller actions, %d changed, %d skipped"
                                  % (host, h["module_executions"], h["delegated"], h["controller_actions"],
                                     h["changed"], h["skipped"]))
