# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 1, the BMC: reachable, the credentials accepted, the node powered
on. Reads the node's Redfish system (the doctor's one BMC read, bios_facts'
answer, shared with layer 2)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.module_utils.bios import redfish_bios
from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import result

LAYER = 1
INTENT = ("bmc_address", "bmc_username", "bmc_password", "bmc_validate_certs", "bmc_timeout", "bmc_vendor",
          "bmc_ca_path", "bmc_pin_certs", "bmc_known_certs")


def reads(intent, host):
    return {"bmc": True}


def error(answer, address):
    """'' when the BMC answered with its system, else what went wrong, led by
    'wrong credentials' or 'BMC unreachable' (redfish_bios.system_error, as
    the bmc role reads it from bios_facts)."""
    return redfish_bios.system_error(answer, address)


def check(reading, intent, host):
    if not intent.get("bmc_address"):
        return result(1, "fail", "no bmc_address for %s" % host, ["bmc_address is not set in the inventory"],
                      "Set bmc_address, bmc_username and bmc_password (vault) for %s." % host)
    answer = reading.get("bmc") or {}
    err = error(answer, intent["bmc_address"])
    if err.startswith("wrong credentials"):
        return result(1, "fail", "wrong credentials", [err],
                      "Fix bmc_username/bmc_password for %s (vault) or the account on the BMC." % host)
    if err.startswith("BMC not trusted"):
        return result(1, "fail", "BMC certificate not trusted", [err],
                      "Nothing was sent to the BMC. If its certificate was replaced on purpose (a new BMC, a "
                      "firmware update), remove its line from bmc_known_certs; the next run pins the new one. "
                      "Otherwise find out who answers at bmc_address.")
    if err:
        return result(1, "fail", "BMC unreachable", [err],
                      "Check bmc_address, the BMC network port and that the BMC web service is up "
                      "(reset the BMC if it hangs).")
    system = answer.get("system") or {}
    power = system.get("PowerState") or "Unknown"
    if power != "On":
        return result(1, "fail", "power off", ["Redfish PowerState of %s is %s" % (host, power)],
                      "Run the bmc role (tag layer01) to power the node on.")
    return result(1, "pass", "BMC reachable, node powered on",
                  ["%s %s serial %s, BIOS %s" % (system.get("Manufacturer") or "", system.get("Model") or "",
                                                 system.get("SerialNumber") or "", system.get("BiosVersion") or "")])
