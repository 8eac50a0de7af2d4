# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn the inventory's NIC intent into module arguments
(module_utils/sriov_vfs/sriov.py): ``sriov_module_pfs`` (a gpufabric_nics entry as a
pfs entry of sriov_vf) and ``sriov_selected_pfs`` (the PFs gpufabric_nics
selects). Each filter is documented in plugins/filter/<name>.yml.

Each filter imports its module_utils when it is called: Ansible imports every
filter file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def sriov_module_pfs(entry):
    from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov
    try:
        return sriov.module_pfs(entry)
    except sriov.SriovError as exc:
        raise AnsibleFilterError("sriov_module_pfs: %s" % exc)


def sriov_selected_pfs(nics, entries):
    from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov
    return sriov.selected_pfs(nics or [], entries or [])


class FilterModule(object):
    def filters(self):
        return {"sriov_module_pfs": sriov_module_pfs, "sriov_selected_pfs": sriov_selected_pfs}
