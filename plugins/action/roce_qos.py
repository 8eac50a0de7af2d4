# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.stack.roce_qos judged from the play's reading of the node when
it holds: a merged run whose every option the reading was taken with (the
kernel layer's first read carries layer 8's, nic_facts also_layers) and
whose gathered answer there drifts in nothing returns what the module would,
changing nothing, without executing it. Anything else (another state, a
reading of other options or of an earlier run, a drift, a failed read) runs
the module, which reads the node again and converges it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos_host
from ansible_collections.gpufabric.stack.plugins.plugin_utils import main_process, nic_reading
from ansible_collections.gpufabric.stack.plugins.plugin_utils.judged_action import JudgedAction, inspected_of, task_wish

# the Jinja plugins loaded before the workers fork (plugin_utils/main_process.py)
main_process.load_jinja_plugins()

# roce_qos' options that nic_facts' qos option takes, with the module's defaults
QOS_OPTIONS = {"node": "host", "pfs": [], "config": None, "roce_mode": None, "tos": None, "config_name": "",
               "rdma_port": 1, "firmware_query": True, "qos_tool": "auto"}


def wish(args):
    """The nic_facts options whose reading answers a roce_qos run of
    ``args`` (the task's), or None when the run takes an option a reading
    does not answer (another state, the driver of rendered)."""
    if args.get("state", "merged") != "merged":
        return None
    return task_wish(dict((k, v) for k, v in args.items() if k != "state"), "qos", QOS_OPTIONS)


def judged(reading, args, run):
    """The module's merged result on the node from ``reading`` (the play's,
    kept by nic_facts) for a run of ``args`` in the run ``run``; None when
    the reading does not answer it or the module would change something."""
    want = wish(args)
    if want is None or not nic_reading.answers(reading, want, run):
        return None
    result = roce_qos_host.merged_from_gathered(reading.get("qos"), want["qos"]["node"])
    if result is None:
        return None
    result["inspected"] = inspected_of(reading, want)
    return result


class ActionModule(JudgedAction):
    MODULE = "gpufabric.stack.roce_qos"
    judged = staticmethod(judged)
