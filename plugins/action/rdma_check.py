# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 9's coordination across nodes (the rdma_check role), one phase per
task, the logic in plugin_utils/rdma_check/rdma_pairs.py:

- ``cabling``: every node's cabling verdicts by LLDP, from the nodes' and
  the leaves' readings (run once for the play: each reading is taken from
  the host variables once, not once per node);
- ``links``: the node's PF link and RoCE v2 GID verdicts from its nic_facts
  reading (given, or read here), its cabling verdicts and, optionally,
  ``rdma link show``;
- ``plan``: the rounds of ib_write_bw pairs over the nodes taking part (run
  once for the play: every host gets the same plan);
- ``round``, ``serve``, ``run``, ``collect``: one round of the plan on this
  node through the perftest_round module, in one call or in three that
  every node makes in step;
- ``gate``: the result of every pair the node sent on in the round, from its
  own clients and its servers' results;
- ``recheck``: the plan again (run once for the play), with rounds after its
  own that run again the pairs that fell short: from host memory those that
  ran from GPU memory, once more those from host memory that measured under
  the gate.

The phases hand over through the results the role registers under fixed
names (see the module's documentation)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor, main_process, nic_reading, plain_data
from ansible_collections.gpufabric.stack.plugins.plugin_utils.rdma_check import cabling as cabling_check
from ansible_collections.gpufabric.stack.plugins.plugin_utils.rdma_check import rdma_pairs

# the Jinja plugins loaded before the workers fork (plugin_utils/main_process.py)
main_process.load_jinja_plugins()

PHASES = ("cabling", "links", "plan", "round", "serve", "run", "collect", "gate", "recheck")
ARGS = {
    "phase": {"type": "str", "required": True, "choices": list(PHASES)},
    # links
    "reading": {"type": "str", "default": ""},
    "sysfs_root": {"type": "str", "default": "/sys"},
    "vendor": {"type": "str", "default": ""},
    "nics": {"type": "list", "elements": "dict", "default": []},
    "cabling": {"type": "list", "elements": "dict", "default": []},
    "gid_index": {"type": "raw"},
    "addresses": {"type": "dict", "default": {}},
    "line_rate_mbps": {"type": "int"},
    "rdma_link_show": {"type": "bool", "default": False},
    "bandwidth": {"type": "bool", "default": True},
    "lldp": {"type": "bool", "default": False},
    "gpu_memory": {"type": "bool", "default": False},
    "gpudirect": {"type": "str", "default": "auto"},
    "lldp_readings": {"type": "str", "default": ""},
    "switch_readings": {"type": "str", "default": ""},
    # the cabling phase's answer for this node, when the play ran it
    "cabled": {"type": "dict"},
    "fail_on_errors": {"type": "bool", "default": False},
    # plan
    "pairs": {"type": "str", "default": "ring"},
    "port_base": {"type": "int", "default": 18515},
    "round_calls": {"type": "str", "default": "auto", "choices": ["auto", "one", "three"]},
    "below": {"type": "list", "elements": "dict", "default": []},
    "skip_tags": {"type": "list", "elements": "str"},
    "perftest": {"type": "dict", "default": {}},
    "run_dir": {"type": "str", "default": "/run/gpufabric-rdma-check"},
    "timeout": {"type": "int", "default": 60},
    "listen_timeout": {"type": "int", "default": 30},
    # round, serve, run, collect, gate
    "round": {"type": "int", "default": 0},
    "share": {"type": "raw", "default": rdma_pairs.DEFAULT_SHARE},
}
# the results the role registers, which later phases read (their own host's
# and, for the pairs' other ends, those of other hosts)
LINKED, PLANNED = "rdma_check_linked", "rdma_check_planned"
ONE_CALL, SERVED, RAN, COLLECTED, GATED = ("rdma_check_round", "rdma_check_served", "rdma_check_ran",
                                           "rdma_check_collected", "rdma_check_gated")


# a variable's dotted path, as reading, lldp_readings and switch_readings name one
VARIABLE_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _at(hostvars, host, path):
    """The value at the dotted ``path`` in ``host``'s variables (None when
    any step is missing, or no path is given)."""
    if not path or host not in hostvars:
        return None
    value = hostvars[host]
    for step in path.split("."):
        value = value.get(step) if hasattr(value, "get") else None
        if value is None:
            return None
    return value


def _unverified_cause(own, switch_views, switches):
    """Why a cable may show no LLDP at either end, from what was read."""
    causes = []
    if own.get("error"):
        causes.append("the node's LLDP could not be read (%s)" % own["error"])
    unread = [sw for sw in switches if sw not in switch_views]
    if unread:
        causes.append("no LLDP table was read from %s" % ", ".join(unread))
    if not causes:
        causes.append("neither end sends or hears LLDP on it: lldpd not running on the PF, LLDP off on the switch "
                      "port, or the NIC firmware's own LLDP agent taking the frames (layer 4)")
    return "; ".join(causes)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGS)

    def run(self, tmp=None, task_vars=None):
        self._module_executions = 0
        result = super(ActionModule, self).run(tmp, task_vars)
        _valid, args = plain_data.validate_args(self, argument_spec=ARGS)
        host = task_vars.get("inventory_hostname", "?")
        try:
            result.update(getattr(self, "_phase_" + args["phase"])(args, task_vars, host))
        except _Unreachable as exc:
            result.update(exc.answer)
        except rdma_pairs.PlanError as exc:
            raise AnsibleError("%s: layer 9 %s: %s" % (host, args["phase"], exc))
        result.setdefault("changed", False)
        # what the gpufabric.stack.task_counter callback counts for this task
        result["module_executions"] = self._module_executions
        return result

    def _module(self, name, module_args, task_vars):
        self._module_executions += 1
        answer = self._execute_module(module_name=name, module_args=module_args, task_vars=task_vars)
        if answer.get("unreachable"):
            raise _Unreachable(answer)
        return answer

    def _registered(self, task_vars, host, name):
        """``name`` as registered on ``host`` in this play ({} when not)."""
        if host == task_vars.get("inventory_hostname"):
            value = task_vars.get(name)
        else:
            hostvars = task_vars.get("hostvars") or {}
            value = hostvars[host].get(name) if host in hostvars else None
        return plain_data.plain(value) if isinstance(value, dict) else {}

    # -- links ------------------------------------------------------------

    def _phase_links(self, args, task_vars, host):
        # the node's reading taken from its variables as registered, not
        # passed as a task argument (which templates the whole answer again)
        if args["reading"] and not VARIABLE_PATH.match(args["reading"]):
            # a value given for the path (the answer itself) would read the node again unnoticed
            return {"failed": True, "msg": "%s: layer 9 links: reading names the variable of the node's nic_facts answer "
                    "by its dotted path (e.g. rdma_check_read), got %.80r" % (host, args["reading"])}
        given = _at({host: task_vars}, host, args["reading"])
        reading = nic_reading.pfs_of(plain_data.plain(given) if isinstance(given, dict) else None,
                                     args["sysfs_root"], args["vendor"])
        if reading is None:
            answer = self._module("gpufabric.stack.nic_facts", {"sysfs_root": args["sysfs_root"]}, task_vars)
            if answer.get("failed"):
                return {"failed": True, "msg": "%s: nic_facts: %s" % (host, answer.get("msg") or "failed")}
            reading = nic_reading.pfs_of(answer, args["sysfs_root"], args["vendor"])
        rdma_link = None
        if args["rdma_link_show"]:
            shown = self._module("ansible.builtin.command", {"argv": ["rdma", "link", "show"]}, task_vars)
            rdma_link = shown.get("stdout") or "" if shown.get("rc") == 0 else ""
        gid_index = None if args["gid_index"] in ("", None) else args["gid_index"]
        cabled, lldp_errors = None, []
        # what the reading lacks, read in one call: the LLDP neighbours, each
        # GPU's rail and the GPUDirect mode (for the runs from GPU memory)
        more = {}
        if args["lldp"] and "lldp" not in reading:
            more["lldp"] = True
        # a cabling plan that names the GPU of a PF is held to the node's PCIe path
        planned = any(c.get("node") == host and c.get("gpu") is not None for c in args["cabling"] or [])
        if (planned or (args["gpu_memory"] and args["bandwidth"])) and "pcie" not in reading:
            more["pcie"] = {"topo": True}
        if args["gpu_memory"] and args["bandwidth"]:
            if "gpudirect" not in reading:
                more["gpudirect"] = {"mode": args["gpudirect"]}
        if more:
            answer = self._module("gpufabric.stack.nic_facts", dict(more, sysfs_root=args["sysfs_root"]), task_vars)
            if "lldp" in more:
                reading = dict(reading, lldp=answer.get("lldp") or {"neighbors": [], "error": answer.get("msg")})
            for key in ("pcie", "gpudirect"):
                if key in more and answer.get(key) is not None:
                    reading = dict(reading, **{key: answer[key]})
        if args["lldp"]:
            mine = args["cabled"]
            if mine is None or "lldp" in more:
                # the play's cabling phase did not see this node's LLDP
                mine = self._cabling(args, task_vars, [host], (host, reading))[host]
            cabled, lldp_errors = mine["pfs"], list(mine["errors"])
        gpus = args["gpu_memory"] and args["bandwidth"]
        links = rdma_pairs.link_check(host, plain_data.plain(reading.get("nics") or []), args["nics"],
                                      args["cabling"], rdma_link, gid_index, args["addresses"],
                                      args["line_rate_mbps"], cabled,
                                      rails=plain_data.plain((reading.get("pcie") or {}).get("rails")) if gpus else None,
                                      gpudirect=((reading.get("gpudirect") or {}).get("plan") or {}).get("mode"),
                                      pcie_reading=plain_data.plain(reading.get("pcie")) if planned else None)
        links["errors"] = list(links.get("errors") or []) + lldp_errors
        if args["bandwidth"]:
            # the test's settings are inventory input like the cabling: named
            # here, on each node, before any pair runs
            links["errors"] = list(links.get("errors") or []) + rdma_pairs.input_problems(
                plain_data.plain(args["perftest"]), args["share"])
        answer = {"links": links, "bandwidth": args["bandwidth"]}
        if args["fail_on_errors"] and links["errors"]:
            # inventory problems stop the node before any pair runs
            answer.update(failed=True, msg="layer 9 rdma_check: %s" % "; ".join(links["errors"]))
        return answer

    def _phase_cabling(self, args, task_vars, host):
        """Every play host's cabling verdicts, for the links phase (run once
        for the play: registered on every host as ``rdma_check_cabled``)."""
        hosts = list(task_vars.get("ansible_play_hosts") or [host])
        return {"by_node": self._cabling(args, task_vars, hosts) if args["lldp"] else {}}

    def _cabling(self, args, task_vars, hosts, own=None):
        """``{host: {pfs, errors}}`` for each of ``hosts``: its cabling
        verdicts by PF (cabling.judge) from what LLDP shows, and the errors
        that make its own view unreadable. The nodes' views are their
        readings at ``lldp_readings`` in their host variables (``own``,
        ``(host, reading)``, stands for that host's), the leaves' tables
        their roce_switch answers at ``switch_readings``; each is read once."""
        hostvars = task_vars.get("hostvars") or {}
        cabling = plain_data.plain(args["cabling"])
        nodes = sorted(set(c.get("node") for c in cabling if c.get("node")))
        switches = sorted(set(c.get("switch") for c in cabling if c.get("switch")))

        def reading_of(node):
            if own and node == own[0]:
                return plain_data.plain(own[1])
            return plain_data.plain(_at(hostvars, node, args["lldp_readings"]) or {})
        readings = dict((node, reading_of(node)) for node in nodes)
        answers = dict((sw, plain_data.plain(_at(hostvars, sw, args["switch_readings"]) or {})) for sw in switches)
        host_views, switch_views, pfs, nos_of = cabling_check.views(readings, answers)
        for sw in switches:
            # a leaf not read in this run: the ports in the spelling of the inventory's NOS
            if sw not in nos_of and sw in hostvars and hostvars[sw].get("switch_nos"):
                nos_of[sw] = hostvars[sw].get("switch_nos")
        rack = cabling_check.Rack(cabling, pfs, cabling_check.canon_by_nos(nos_of))
        links, strangers = cabling_check.observed(rack, host_views, switch_views)
        out = {}
        for h in hosts:
            # a host the cabling does not name is judged on nothing, its own LLDP error aside
            reading = readings[h] if h in readings else reading_of(h)
            lldp = plain_data.plain(reading.get("lldp") or {})
            cause = dict(cabling_check.firmware_lldp(reading),
                         **{"": _unverified_cause(lldp, switch_views, switches)})
            out[h] = {"pfs": dict((row["pf"], row) for row in cabling_check.judge(rack, links, strangers, h, cause)),
                      "errors": ["%s: LLDP: %s" % (h, lldp.get("error"))] if lldp.get("failed") else []}
        return out

    # -- plan -------------------------------------------------------------

    def _phase_plan(self, args, task_vars, host):
        """One plan for the play: run once, it is registered on every host."""
        skip = (task_vars.get("ansible_skip_tags") or []) if args["skip_tags"] is None else args["skip_tags"]
        taking_part, left_out = [], []
        for h in task_vars.get("ansible_play_hosts") or [host]:
            linked = self._registered(task_vars, h, LINKED)
            links = linked.get("links")
            if not links or linked.get("skipped") or links.get("errors") or not linked.get("bandwidth", True):
                left_out.append(h)
                continue
            if args["below"]:
                checked = (task_vars.get("hostvars") or {}).get(h, {}).get("doctor_checked") or []
                if doctor.earlier_failure(args["below"], skip, plain_data.plain(checked)) is not None:
                    left_out.append(h)
                    continue
            taking_part.append(links)
        plan = rdma_pairs.plan_pairs(taking_part, args["pairs"], args["port_base"], args["gpu_memory"])
        perftest = rdma_pairs.perftest_options(plain_data.plain(args["perftest"]))
        duration = int(perftest.get("duration") or 0)
        forks = int(task_vars.get("ansible_forks") or 5)
        batch = task_vars.get("ansible_play_batch") or [host]
        return {
            "plan": plan,
            "nodes": [x["node"] for x in taking_part], "left_out": left_out,
            # one call per node and round needs every node of the batch running it at once
            "in_one": args["round_calls"] == "one" or (args["round_calls"] == "auto" and len(batch) <= forks),
            "perftest": perftest,
            "run_dir": args["run_dir"],
            "listen_timeout": args["listen_timeout"],
            "client_timeout": duration + args["timeout"],
            # servers also outlive the controller's work between their start
            # and the end of the round (two minutes of slack)
            "server_timeout": args["listen_timeout"] + duration + args["timeout"] + 120,
        }

    # what a registered result carries that is not the plan phase's answer
    RESULT_KEYS = ("changed", "failed", "skipped", "msg", "invocation", "module_executions", "recheck_from")

    def _phase_recheck(self, args, task_vars, host):
        """The play's plan with, after its rounds, the rounds that run again
        the pairs that fell short in them (rdma_pairs.recheck_rounds, from each
        node's gated pairs of this plan); ``recheck_from`` is the index of
        the first of those rounds (the plan's round count when there is none)."""
        planned = self._registered(task_vars, host, PLANNED)
        if "plan" not in planned:
            raise rdma_pairs.PlanError("no plan of the pairs in this play (phase=plan registered as %s)" % PLANNED)
        plan = planned["plan"]
        rounds = plan.get("rounds") or []
        by_node = self._registered(task_vars, host, GATED).get("by_node") or {}
        gated = []
        for node in planned.get("nodes") or []:
            # the pairs a node sent on in this plan (a result of an earlier plan has other ids or none)
            gated.extend(p for p in by_node.get(node) or [] if (p.get("client") or {}).get("node") == node)
        extra = rdma_pairs.recheck_rounds(plan, gated) if rounds else []
        # the plan phase's answer as registered, whatever it holds, with the rounds added
        answer = dict((k, v) for k, v in planned.items() if k not in self.RESULT_KEYS and not k.startswith("_ansible"))
        answer.update(plan=dict(plan, rounds=rounds + extra), recheck_from=len(rounds))
        return answer

    # -- one round --------------------------------------------------------

    def _round_of(self, args, task_vars, host):
        planned = self._registered(task_vars, host, PLANNED)
        if "plan" not in planned:
            raise rdma_pairs.PlanError("no plan of the pairs in this play (phase=plan registered as %s)" % PLANNED)
        serving, sending = rdma_pairs.round_pairs(planned["plan"], args["round"], host)
        return planned, serving, sending

    @staticmethod
    def _mode(planned):
        return "alive" if planned["perftest"].get("rdma_cm") else "tcp"

    @staticmethod
    def _stopped(answer):
        return any(s.get("stopped") for s in answer.get("servers") or [])

    def _phase_round(self, args, task_vars, host):
        planned, serving, sending = self._round_of(args, task_vars, host)
        servers = rdma_pairs.server_specs(serving, planned["perftest"])
        clients = rdma_pairs.client_specs(sending, planned["perftest"])
        if not servers and not clients:
            return {"servers": [], "clients": [], "not_listening": [], "started": []}
        answer = self._module("gpufabric.stack.perftest_round", {
            "phase": "round", "servers": servers, "clients": clients, "run_dir": planned["run_dir"],
            "timeout": planned["server_timeout"], "client_timeout": planned["client_timeout"],
            "listen_timeout": planned["listen_timeout"], "mode": self._mode(planned),
            "command": os.path.basename(str(planned["perftest"].get("command") or "ib_write_bw"))}, task_vars)
        answer.pop("invocation", None)
        answer["changed"] = self._stopped(answer)
        return answer

    def _phase_serve(self, args, task_vars, host):
        planned, serving, _sending = self._round_of(args, task_vars, host)
        servers = rdma_pairs.server_specs(serving, planned["perftest"])
        if not servers:
            return {"started": [], "not_listening": []}
        answer = self._module("gpufabric.stack.perftest_round", {
            "phase": "serve", "servers": servers, "run_dir": planned["run_dir"],
            "timeout": planned["server_timeout"], "listen_timeout": planned["listen_timeout"],
            "mode": self._mode(planned)}, task_vars)
        answer.pop("invocation", None)
        return answer

    def _phase_run(self, args, task_vars, host):
        planned, _serving, sending = self._round_of(args, task_vars, host)
        not_listening = dict((p["server"]["node"], [x.get("port") for x in self._registered(
            task_vars, p["server"]["node"], SERVED).get("not_listening") or []]) for p in sending)
        clients = rdma_pairs.client_specs(sending, planned["perftest"], not_listening)
        if not clients:
            return {"clients": []}
        answer = self._module("gpufabric.stack.perftest_round", {
            "phase": "run", "clients": clients, "timeout": planned["client_timeout"]}, task_vars)
        answer.pop("invocation", None)
        return answer

    def _phase_collect(self, args, task_vars, host):
        planned, serving, _sending = self._round_of(args, task_vars, host)
        ports = [p["port"] for p in serving if not p.get("blocked")]
        if not ports:
            return {"servers": []}
        answer = self._module("gpufabric.stack.perftest_round", {
            "phase": "collect", "ports": ports, "run_dir": planned["run_dir"],
            "command": os.path.basename(str(planned["perftest"].get("command") or "ib_write_bw"))}, task_vars)
        answer.pop("invocation", None)
        answer["changed"] = self._stopped(answer)
        return answer

    def _phase_gate(self, args, task_vars, host):
        """Every node's pairs it sent on, up to this round, in one task run
        once for the play (registered on every host): ``by_node[node]``, the
        earlier rounds' (this phase's result of the round before) and this
        one's, from each node's clients and its peers' servers. A node no
        longer in the play (failed, unreachable) is not gated: it takes no
        further part."""
        if not self._task.run_once:
            raise AnsibleError("%s: layer 9 gate: it gates every node of the plan at once: run the task with "
                               "run_once: true" % host)
        planned = self._registered(task_vars, host, PLANNED)
        if "plan" not in planned:
            raise rdma_pairs.PlanError("no plan of the pairs in this play (phase=plan registered as %s)" % PLANNED)
        one = planned["in_one"]
        share = rdma_pairs.check_share(args["share"])
        active = set(task_vars.get("ansible_play_hosts") or [host])
        earlier = (self._registered(task_vars, host, GATED).get("by_node") or {}) if args["round"] > 0 else {}
        answers = {}

        def answer(node, name):
            # each registered result taken from hostvars once (each access templates it)
            if (node, name) not in answers:
                answers[(node, name)] = self._registered(task_vars, node, name)
            return answers[(node, name)]

        def servers_of(node):
            if one:
                return answer(node, ONE_CALL).get("not_listening") or [], answer(node, ONE_CALL).get("servers") or []
            return answer(node, SERVED).get("not_listening") or [], answer(node, COLLECTED).get("servers") or []

        by_node = {}
        for node in planned.get("nodes") or []:
            if node not in active:
                continue
            _serving, sending = rdma_pairs.round_pairs(planned["plan"], args["round"], node)
            clients = answer(node, ONE_CALL if one else RAN).get("clients") or []
            by_node[node] = list(earlier.get(node) or []) + rdma_pairs.gate_round(sending, clients, servers_of, share)
        return {"by_node": by_node}


class _Unreachable(AnsibleError):
    def __init__(self, answer):
        super(_Unreachable, self).__init__(answer.get("msg") or "unreachable")
        self.answer = answer
