# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The play's shared reading of the NICs (one nic_facts call per host for
layers 3, 4, 5 and 9 when nothing changed in between). Documented in
nic_reading.yml."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def nic_reading(reading, sysfs_root, vendor=""):
    if not isinstance(reading, dict) or "nics" not in reading or reading.get("sysfs_root") != sysfs_root:
        return None
    result = dict(reading)
    vendor = (vendor or "").lower().replace("0x", "")
    if vendor:
        result["nics"] = [n for n in result.get("nics") or [] if n.get("vendor") == vendor]
    return result


class FilterModule(object):
    def filters(self):
        return {"nic_reading": nic_reading}
