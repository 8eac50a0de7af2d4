# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A nic_facts answer as a layer sees it: the PFs of one vendor under one
sysfs root, or None. Documented in nic_reading.yml; the play's reading itself
is kept by the nic_facts action (module_utils/nic_reading.py)."""

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
