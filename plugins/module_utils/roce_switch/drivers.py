# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Driver lookup by NOS name or netmiko device type."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from .dell_sonic import DellSonicDriver
from .eos import EosDriver
from .model import RoceSwitchError
from .nvue import NvueDriver
from .nxos import NxosDriver
from .onyx import OnyxDriver
from .sonic_community import CommunitySonicDriver

DRIVERS = dict((d.nos, d) for d in (OnyxDriver, NvueDriver, EosDriver, NxosDriver, DellSonicDriver,
                                    CommunitySonicDriver))
BY_DEVICE_TYPE = dict((d.device_type, d) for d in DRIVERS.values())
BY_DEVICE_TYPE["mellanox"] = OnyxDriver
# Old NOS names still accepted (the module warns that they are deprecated).
ALIASES = {"sonic": "sonic-dell"}


def get_driver(nos=None, device_type=None, switch="switch"):
    if nos:
        nos = ALIASES.get(nos, nos)
        if nos not in DRIVERS:
            raise RoceSwitchError("%s: unknown NOS %r; expected one of %s" % (switch, nos, ", ".join(sorted(DRIVERS))))
        return _named(DRIVERS[nos](), switch)
    if device_type:
        if device_type not in BY_DEVICE_TYPE:
            raise RoceSwitchError("%s: unsupported device_type %r; expected one of %s"
                                  % (switch, device_type, ", ".join(sorted(BY_DEVICE_TYPE))))
        return _named(BY_DEVICE_TYPE[device_type](), switch)
    raise RoceSwitchError("%s: give nos or device_type" % switch)


def _named(driver, switch):
    driver.switch = switch
    return driver
