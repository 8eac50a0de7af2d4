"""The doctor action's read of a node: the BMC's Redfish read runs beside
the node's nic_facts run, not before it, and what either gives (an answer,
an error, an unreachable node) ends where it did when they ran one after
the other. The action runs with its I/O replaced: _read_bmc, _run_module
and the checks are stand-ins; the events only order the two reads, and a
read that waited in vain says so in its answer instead of hanging."""

import threading
import types

import pytest

from ansible_collections.gpufabric.stack.plugins.action import doctor as action
from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor, layers

pytestmark = pytest.mark.layers(1, 3)

# how long a stand-in waits for the other read before it gives up: only a
# guard against a hang, never reached when the reads overlap
GUARD_S = 30


class Check(object):
    """A check file's stand-in: passes, keeping what it was given."""

    def __init__(self, number, seen):
        self.number, self.seen = number, seen

    def check(self, reading, intent, host):
        self.seen[self.number] = reading
        return doctor.result(self.number, "pass", "read")


def node_action(read_bmc, run_module, seen):
    act = object.__new__(action.ActionModule)
    bmc_layer, node_layer = layers.get(1), layers.get(3)
    checks = {bmc_layer.number: Check(bmc_layer.number, seen), node_layer.number: Check(node_layer.number, seen)}
    wishes = {bmc_layer.number: {"bmc": True}, node_layer.number: {"nic_facts": {"sysfs_root": "/sys"}}}
    act._prepare = lambda todo, task_vars, host: (checks, {n: {} for n in checks}, wishes, {})
    act._role_intent = lambda role, names, task_vars: {"role": role}
    act._read_bmc = read_bmc
    act._run_module = run_module
    act._templar = types.SimpleNamespace(template=lambda value: value)
    return act, [bmc_layer, node_layer]


def run_node(act, todo):
    return act._node({}, todo, set(), {"inventory_hostname": "node01"}, "node01", ["gpu_workers"], False,
                     "doctor_node")


def test_the_bmc_read_runs_while_the_node_is_read():
    bmc_started, node_read = threading.Event(), threading.Event()
    seen = {}

    def read_bmc(intent):
        bmc_started.set()
        # answers only once the node's module ran: one after the other, it would wait in vain
        return {"intent": intent, "beside_the_node": node_read.wait(GUARD_S)}

    def run_module(module_name, module_args, task_vars):
        assert module_name == "gpufabric.stack.nic_facts"
        started = bmc_started.wait(GUARD_S)
        node_read.set()
        return {"nics": [], "bmc_started_first": started}

    act, todo = node_action(read_bmc, run_module, seen)
    result = run_node(act, todo)
    assert [r["status"] for r in result["results"]] == ["pass", "pass"]
    assert seen[1]["bmc"] == {"intent": {"role": "bmc"}, "beside_the_node": True}
    assert seen[3]["nic_facts"]["bmc_started_first"] is True
    assert result["reading"] == {"nics": [], "bmc_started_first": True}


def test_a_bmc_read_that_raises_fails_its_layer_after_the_node_read():
    seen = {}

    def read_bmc(intent):
        raise ValueError("bmc_timeout: 'soon' is not a number of seconds")

    act, todo = node_action(read_bmc, lambda **kw: {"nics": []}, seen)
    result = run_node(act, todo)
    first = result["results"][0]
    assert (first["layer"], first["status"]) == (1, "fail")
    assert first["evidence"] == ["ValueError: bmc_timeout: 'soon' is not a number of seconds"]
    assert result["results"][1]["status"] == "blocked"
    assert result["failed"] and "the layer 1 (bmc) check stopped with an error" in result["msg"]


def test_an_unreachable_node_still_waits_for_its_bmc_read():
    module_ran, done = threading.Event(), []

    def read_bmc(intent):
        # still reading when the node's module run comes back unreachable, and a while after
        # (a wait nothing ends: code that did not wait for this read would return meanwhile;
        # code that waits passes however long it is)
        module_ran.wait(GUARD_S)
        threading.Event().wait(0.5)
        done.append("bmc")
        return {}

    def run_module(module_name, module_args, task_vars):
        module_ran.set()
        return {"unreachable": True, "msg": "node01: no route"}

    act, todo = node_action(read_bmc, run_module, {})
    result = run_node(act, todo)
    assert result == {"unreachable": True, "msg": "node01: no route"}
    assert done == ["bmc"]
