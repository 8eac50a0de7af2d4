# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Trust the BMC before its credentials are sent: on the controller (where
the Redfish calls go from), the BMC's TLS certificate is read with a
handshake alone and held to its pin in the known-certificates file, or
pinned there on first contact (module_utils/bios/bmc_trust.py). A changed
certificate fails the task naming the BMC and both fingerprints; nothing with
a credential has been sent. Documented in plugins/modules/bmc_trust.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpufabric.stack.plugins.module_utils.bios import bmc_trust
from ansible_collections.gpufabric.stack.plugins.plugin_utils import main_process

# the Jinja plugins loaded before the workers fork (plugin_utils/main_process.py)
main_process.load_jinja_plugins()

display = Display()

ARGS = {
    "address": {"type": "str", "required": True},
    "known_certs": {"type": "path", "required": True},
    "timeout": {"type": "int", "default": 30},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGS)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _valid, args = self.validate_argument_spec(argument_spec=ARGS)
        host = (task_vars or {}).get("inventory_hostname", "?")
        try:
            got = bmc_trust.trust(args["address"], args["known_certs"], timeout=args["timeout"],
                                  write=not self._task.check_mode)
        except bmc_trust.TrustError as exc:
            result.update(failed=True, module_executions=0, msg="%s: %s" % (host, exc))
            return result
        if got["status"] == "new":
            display.warning("%s: %s" % (host, got["message"]))
        # a pin written on the controller is not a change of the rack; a
        # handshake from the controller, no module executed
        result.update(changed=False, module_executions=0, **got)
        return result
