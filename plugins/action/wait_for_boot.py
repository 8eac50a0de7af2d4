# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wait until a node answers with a boot marker other than the one read
before a reset, made elsewhere (its BMC: the bmc role's reset path) or, with
``reboot_command``, by this action on the node (the reboot role).  A BMC
answers a reset request at once and resets the server afterwards, and a node
told to reboot may answer for a while from its old boot, so "the node
answers" alone is not a new boot; the boot markers are compared, as
ansible.builtin.reboot does.  Unlike that module, the node is asked every
``sleep`` seconds (no backoff to 12 s between tries), and nothing is run on it
but the marker, the reboot and the test command (no fact gathering, no
search for the shutdown binary): one reboot and one wait in one task, so the
role's ``throttle`` holds both."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.gpufabric.stack.plugins.plugin_utils import main_process

# the Jinja plugins loaded before the workers fork (plugin_utils/main_process.py)
main_process.load_jinja_plugins()

display = Display()

ARGS = {
    "previous": {"type": "str", "default": ""},
    "boot_time_command": {"type": "str", "default": "cat /proc/sys/kernel/random/boot_id"},
    "delay": {"type": "int", "default": 0},
    "sleep": {"type": "int", "default": 2},
    "timeout": {"type": "int", "default": 600},
    "reboot_command": {"type": "str", "default": ""},
    "test_command": {"type": "str", "default": ""},
    "post_delay": {"type": "int", "default": 0},
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

    def _reboot(self, command):
        """Run the reboot command; None when it was taken (a connection the
        shutdown closes under it counts), else why it failed."""
        try:
            res = self._low_level_execute_command(command, sudoable=True)
        except AnsibleConnectionFailure:
            res = {"rc": 0}
        finally:
            try:
                self._connection.reset()
            except Exception:  # pylint: disable=broad-except  # the node is going down
                pass
        if res.get("rc") != 0:
            return "'%s' returned rc %s: %s" % (command, res.get("rc"),
                                                ((res.get("stderr") or "").strip() or (res.get("stdout") or "").strip())[-300:])
        return None

    def _test(self, command):
        try:
            res = self._low_level_execute_command(command, sudoable=True)
        except Exception as exc:  # pylint: disable=broad-except  # not usable yet
            return str(exc) or exc.__class__.__name__
        if res.get("rc") != 0:
            return "'%s' returned rc %s: %s" % (command, res.get("rc"), (res.get("stderr") or "").strip()[-300:])
        return None

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _valid, args = self.validate_argument_spec(argument_spec=ARGS)
        host = task_vars.get("inventory_hostname", "?") if task_vars else "?"
        for key in ("delay", "sleep", "timeout", "post_delay"):
            if args[key] < 0:
                result.update(failed=True, msg="%s: %s must not be negative, got %d" % (host, key, args[key]))
                return result
        previous = (args["previous"] or "").strip()
        start = time.monotonic()
        if args["reboot_command"] and self._task.check_mode:
            # nothing is rebooted in check mode: say it would be, and wait for nothing
            result.update(changed=True, rebooted=False, attempts=0, elapsed=0)
            return result
        rebooted = False
        if args["reboot_command"] and not self._task.check_mode:
            if not previous:
                previous, error = self._marker(args["boot_time_command"])
                if previous is None:
                    result.update(failed=True, msg="%s: cannot read the boot marker before the reboot: %s" % (host, error))
                    return result
            error = self._reboot(args["reboot_command"])
            if error:
                result.update(failed=True, rebooted=False, msg="%s: the reboot command failed: %s" % (host, error))
                return result
            rebooted = True
        # check mode made no reset: the node only has to answer
        want_new = bool(previous) and not self._task.check_mode
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
        # the marker answers: the node may still be starting what the test needs
        while args["test_command"] and not self._task.check_mode:
            error = self._test(args["test_command"])
            if error is None:
                break
            if time.monotonic() + args["sleep"] > deadline:
                result.update(failed=True, attempts=attempts, elapsed=int(time.monotonic() - start),
                              msg="%s: booted again, but the test command did not pass within %d s: %s"
                                  % (host, args["timeout"], error))
                return result
            time.sleep(args["sleep"])
        if args["post_delay"] and not self._task.check_mode:
            time.sleep(args["post_delay"])
        result.update(changed=rebooted or bool(args["reboot_command"] and self._task.check_mode),
                      rebooted=rebooted, attempts=attempts,
                      elapsed=int(time.monotonic() - start), boot_marker=marker,
                      new_boot=marker != previous if previous else None)
        return result
