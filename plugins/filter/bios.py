# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that map the BIOS intent (SR-IOV, IOMMU, ACS) to vendor attributes
(plugin_utils/bios/bios_attributes.py). Documented in bios_vendor.yml and
bios_plan.yml.

Each filter imports its module_utils when it is called: Ansible imports every
filter file of the collection in each worker that looks up one of its filters,
and bios_attributes pulls in the Redfish client.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def bios_vendor(name):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.bios import bios_attributes
    try:
        return bios_attributes.bios_vendor(name)
    except bios_attributes.BiosError as exc:
        raise AnsibleFilterError(str(exc))


def bios_plan(current, vendor, cpu_vendor="intel", sriov=True, iommu=True, acs=False, registry=None, pending=None,
              job_queue="", bios_jobs=None):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.bios import bios_attributes
    try:
        return bios_attributes.bios_plan(current, vendor, cpu_vendor, sriov, iommu, acs, registry=registry,
                                         pending=pending, job_queue=job_queue, bios_jobs=bios_jobs)
    except bios_attributes.BiosError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"bios_vendor": bios_vendor, "bios_plan": bios_plan}
