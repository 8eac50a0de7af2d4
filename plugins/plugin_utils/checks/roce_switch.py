# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 7, the RoCE switch fabric: the leaf switch's GPU-facing ports as
the RoCE intent wants them (trust, DSCP map, PFC, ECN, CNP, MTU, PFC
watchdog). Reads the switch's running configuration through roce_switch
(state gathered, over SSH from the controller), which lists the drift from
the intent; the answer is also what layer 8 compares each cabled PF with."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import result

LAYER = 7
INTENT = ("roce_switch_host", "roce_switch_port", "roce_switch_nos", "roce_switch_username", "roce_switch_password",
          "roce_switch_known_hosts", "roce_switch_host_key_checking", "roce_switch_gpu_ports", "roce_switch_intent",
          "roce_switch_timeout", "roce_switch_lldp")


def reads(intent, host):
    """roce_switch's options for the one gathered read of the switch."""
    args = {"name": host, "host": intent["roce_switch_host"], "port": int(intent["roce_switch_port"]),
            "nos": intent["roce_switch_nos"], "username": intent["roce_switch_username"],
            "password": intent["roce_switch_password"], "host_key_checking": intent["roce_switch_host_key_checking"],
            "ports": intent["roce_switch_gpu_ports"], "config": intent["roce_switch_intent"], "state": "gathered",
            "timeout": intent["roce_switch_timeout"], "lldp": bool(intent.get("roce_switch_lldp", True))}
    if intent.get("roce_switch_known_hosts"):
        args["known_hosts"] = intent["roce_switch_known_hosts"]
    return {"roce_switch": args}


def check(reading, intent, host):
    answer = reading.get("roce_switch") or {}
    if answer.get("failed"):
        return result(LAYER, "fail", str(answer.get("msg") or "the switch could not be read"), [],
                      "check the switch address, credentials and host key")
    drift = ["%s %s" % (host, d) for d in answer.get("drift") or []]
    if drift:
        return result(LAYER, "fail", drift[0], drift,
                      "run the roce_switch role (tag layer07) on %s; use --check --diff to see the commands first"
                      % host)
    return result(LAYER, "pass", "switch matches the RoCE intent on %d GPU-facing ports"
                  % len(intent.get("roce_switch_gpu_ports") or []), [])
