# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.stack.mlx_config judged from the play's reading of the node when
it holds: the kernel layer's first read carries layer 4's firmware queries
(nic_facts also_layers), the same queries the module runs first. A run over
``devices`` whose every device that reading queried in this run, with the
same tools, and whose values are already as wanted there returns what the
module would, changing nothing, without executing it. Anything else (a value
to set, a device or tool the reading lacks, a failed query, a reading of an
earlier run, the single-device form) executes the module, which queries the
firmware again and sets it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware import mlx_config
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import nic_firmware
from ansible_collections.gpufabric.stack.plugins.plugin_utils.judged_action import JudgedAction
from ansible_collections.gpufabric.stack.plugins.plugin_utils import main_process

# the Jinja plugins loaded before the workers fork (plugin_utils/main_process.py)
main_process.load_jinja_plugins()

# the module's options a judged run takes, with the module's defaults
OPTIONS = {"devices": None, "tool": "mstconfig", "flint_tool": "mstflint", "min_fw_version": "",
           "max_num_of_vfs": mlx_config.MAX_NUM_OF_VFS, "at_least": [], "where_present": {}}


def judged(reading, args, run):
    """The module's result for a run of ``args`` from ``reading`` (the play's,
    kept by nic_facts) in the run ``run``; None when the reading does not
    answer it or the module would change something."""
    if set(args) - set(OPTIONS) or not args.get("devices"):
        return None
    if not isinstance(reading, dict) or not run or reading.get("run") != run or not reading.get("firmware"):
        return None
    opts = dict((k, default if args.get(k) is None else args[k]) for k, default in OPTIONS.items())
    try:
        present = mlx_config.normalize_params("where_present", opts["where_present"], int(opts["max_num_of_vfs"])) \
            if opts["where_present"] else {}
    except (mlx_config.MlxConfigError, TypeError, ValueError):
        return None  # the module names the bad value
    checked = nic_firmware.checked_from_reading(reading, opts["devices"], opts["tool"], opts["flint_tool"],
                                                opts["at_least"], opts["max_num_of_vfs"], opts["min_fw_version"],
                                                where_present=present)
    if checked.get("failed") or checked.get("changed") or any(d.get("changed") for d in checked["devices"]):
        return None
    return {"changed": False, "reboot_required": checked["reboot_required"], "command": [],
            "devices": checked["devices"]}


class ActionModule(JudgedAction):
    MODULE = "gpufabric.stack.mlx_config"
    judged = staticmethod(judged)
