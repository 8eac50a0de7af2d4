# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that map the BIOS intent (SR-IOV, IOMMU, ACS) to vendor attributes
(module_utils/bios_attributes.py):

``bios_vendor``   Redfish Manufacturer/Vendor string -> dell | hpe | supermicro
``bios_plan``     intent + current/pending attributes (+ registry) -> what to stage
``bios_state``    current attributes (+ registry) -> which switches are on
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.stack.plugins.module_utils.deferred import deferred

B = deferred("bios_attributes")


def _call(fn, *args, **kwargs):
    try:
        return getattr(B, fn)(*args, **kwargs)
    except B.BiosError as exc:
        raise AnsibleFilterError(str(exc))


def bios_vendor(name):
    return _call("bios_vendor", name)


def bios_plan(current, vendor, cpu_vendor="intel", sriov=True, iommu=True, acs=False, registry=None, pending=None):
    return _call("bios_plan", current, vendor, cpu_vendor, sriov, iommu, acs, registry=registry, pending=pending)


def bios_state(current, vendor, cpu_vendor="intel", registry=None):
    return _call("bios_state", current, vendor, cpu_vendor, registry=registry)


class FilterModule(object):
    def filters(self):
        return {"bios_vendor": bios_vendor, "bios_plan": bios_plan, "bios_state": bios_state}
