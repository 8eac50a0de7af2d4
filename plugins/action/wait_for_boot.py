# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wait until a node answers with a boot marker other than the one read
before a reset that was made elsewhere (its BMC).  A BMC answers a reset
request at once and resets the server afterwards, so "the node answers" alone
may still be the old boot; ansible.builtin.reboot compares boot markers for
the same reason, but it also issues the reboot itself."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

ARGS = {
    "previous": {"type": "str", "default": ""},
    "boot_time_command": {"type": "str", "default": "cat /proc/sys/kernel/random/boot_id"},
    "delay": {"type": "int", "default": 0},
    "sleep": {"type": "int", "default": 2},
    "timeout": {"type": "int", "default": 600},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGS)

    def _marker(self, command):
        """(marker, error): the node's boot marker, or why it was not read."""
        try:
            res = self._low_level_execute_command(command, sudoable=False)
        except Exception as exc:  # pylint: disable=broad-except  # any connection error: the node is down
            try:
                self._connection.reset()
            except Exception:  # pylint: disable=broad-except
                pass
            return None, str(exc) or exc.__class__.__name__
        out = (res.get("stdout") or "").strip()
        if res.get("rc") != 0 or not out:
            return None, "'%s' returned rc %s: %s" % (command, res.get("rc"),
                                                      ((res.get("stderr") or "").strip() or out)[-300:])
        return out, None

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _valid, args = self.validate_argument_spec(argument_spec=ARGS)
        host = task_vars.get("inventory_hostname", "?") if task_vars else "?"
        for key in ("delay", "sleep", "timeout"):
            if args[key] < 0:
                result.update(failed=True, msg="%s: %s must not be negative, got %d" % (host, key, args[key]))
                return result
        previous = (args["previous"] or "").strip()
        # check mode made no reset: the node only has to answer
        want_new = bool(previous) and not self._task.check_mode
        start = time.monotonic()
        if args["delay"]:
            time.sleep(args["delay"])
        deadline = start + args["timeout"]
        attempts = 0
        while True:
            attempts += 1
            marker, error = self._marker(args["boot_time_command"])
            if marker is not None and (not want_new or marker != previous):
                break
            if marker is not None:
                error = "the node still answers with the boot marker it had before the reset (%s)" % previous
            display.vvv("%s: not booted yet: %s" % (host, error))
            if time.monotonic() + args["sleep"] > deadline:
                result.update(failed=True, attempts=attempts, elapsed=int(time.monotonic() - start),
                              msg="%s: no new boot within %d s: %s" % (host, args["timeout"], error))
                return result
            time.sleep(args["sleep"])
        result.update(changed=False, attempts=attempts, elapsed=int(time.monotonic() - start),
                      boot_marker=marker, new_boot=marker != previous if previous else None)
        return result
