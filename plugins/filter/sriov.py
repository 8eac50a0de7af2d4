# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn the inventory's NIC intent into module arguments
(module_utils/sriov.py): ``sriov_module_pfs`` (a gpufabric_nics entry as a
pfs entry of sriov_vf), ``sriov_selected_pfs`` (the PFs gpufabric_nics
selects) and ``nic_firmware_selection`` (the PFs layer 4 sets and their
mlx_config devices). Each filter is documented in plugins/filter/<name>.yml.

Each filter imports its module_utils when it is called: Ansible imports every
filter file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

KEEP = ("num_vfs", "vf_mtu", "vf_defaults", "vfs", "vf_drivers")


def sriov_module_pfs(entry):
    if not isinstance(entry, dict):
        raise AnsibleFilterError("sriov_module_pfs: each NIC entry must be a mapping, got %r" % (entry,))
    match = entry.get("match") or {}
    keys = [k for k in ("name", "pci_address", "vendor_device") if match.get(k)]
    if len(keys) != 1:
        raise AnsibleFilterError("sriov_module_pfs: 'match' must have exactly one of name, pci_address, "
                                 "vendor_device; got %r" % (match,))
    out = {keys[0]: match[keys[0]]}
    for key in KEEP:
        if entry.get(key) is not None:
            out[key] = entry[key]
    return out


def sriov_selected_pfs(nics, entries):
    from ansible_collections.gpufabric.stack.plugins.module_utils import sriov
    return sriov.selected_pfs(nics or [], entries or [])


def nic_firmware_selection(nics, entries, num_vfs=0, extra_params=None, vendor="15b3"):
    from ansible_collections.gpufabric.stack.plugins.module_utils import sriov
    return sriov.firmware_selection(nics or [], entries or [], int(num_vfs or 0), extra_params or {},
                                    "" if vendor is None else str(vendor))


class FilterModule(object):
    def filters(self):
        return {"sriov_module_pfs": sriov_module_pfs, "sriov_selected_pfs": sriov_selected_pfs,
                "nic_firmware_selection": nic_firmware_selection}
