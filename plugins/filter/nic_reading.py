# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The play's shared reading of the NICs (one nic_facts call per host for
layers 3, 4, 5 and 9 when nothing changed in between)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: nic_reading
short_description: A layer's view of the play's shared NIC reading, or none when the layer must read again
description:
  - The first of layers 3, 4, 5 and 9 that needs the NICs in a play reads them with C(gpufabric.stack.nic_facts)
    and keeps the result as the host fact C(gpufabric_nic_reading). A layer that changes what sysfs shows (a
    reboot, new firmware settings, drivers loaded, VFs created, an MTU set) drops it.
  - This filter gives a later layer that reading with only the PFs of I(vendor), in the shape nic_facts returns;
    or none when there is no reading or it was taken under another sysfs root, and the layer reads itself.
positional: _input, sysfs_root, vendor
options:
  _input:
    description: A nic_facts result (C(gpufabric_nic_reading)), or none.
    type: dict
    required: true
  sysfs_root:
    description: The sysfs root the layer reads.
    type: str
    required: true
  vendor:
    description: PCI vendor id the layer keeps (hex, with or without C(0x)); empty keeps every NIC.
    type: str
    default: ""
"""

EXAMPLES = r"""
nic_firmware_facts: "{{ gpufabric_nic_reading | default(none) | gpufabric.stack.nic_reading('/sys', '15b3') }}"
"""

RETURN = r"""
_value:
  description: The nic_facts result (C(nics), C(iommus), C(iommu_active)) restricted to I(vendor), or none.
  type: dict
"""


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
