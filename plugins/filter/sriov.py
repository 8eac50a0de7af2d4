# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn the inventory's NIC intent into module arguments:
``sriov_module_pfs`` (a gpufabric_nics entry as a pfs entry of sriov_vf),
``sriov_selected_pfs`` (the PFs gpufabric_nics selects) and
``nic_firmware_selection`` (the PFs layer 4 sets and their mlx_config
devices)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: sriov_module_pfs
short_description: One gpufabric_nics entry as a pfs entry of gpufabric.stack.sriov_vf
description:
  - Flattens C(match) (name, pci_address or vendor_device) into the entry and keeps num_vfs, vf_mtu,
    vf_defaults and vfs.
  - The same plugin file provides C(sriov_selected_pfs) (nic_facts' nics and gpufabric_nics -> the nics that an
    entry's C(match) selects by name, PCI address, short or full, or vendor:device, in their order) and
    C(nic_firmware_selection) (nic_facts' nics, gpufabric_nics, the least NUM_OF_VFS, extra firmware params
    and the PCI vendor the firmware tools know, C(15b3) -> C(pfs) [{pci_address, num_vfs}] and C(devices)
    [{device, params}] for C(gpufabric.stack.mlx_config), the selected PFs of other vendors in C(left_out)
    [{pci_address, vendor_device, name}], and C(not_applicable) (why the layer does not apply, when every
    selected PF is of another vendor) or C(left_out_text) (naming those left out, when some are)).
positional: _input
options:
  _input:
    description: One entry of gpufabric_nics.
    type: dict
    required: true
"""

EXAMPLES = r"""
pfs: "{{ gpufabric_nics | map('gpufabric.stack.sriov_module_pfs') | list }}"
"""

RETURN = r"""
_value:
  description: The pfs entry.
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.stack.plugins.module_utils.deferred import deferred

sriov = deferred("sriov")

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
    return sriov.selected_pfs(nics or [], entries or [])


def nic_firmware_selection(nics, entries, num_vfs=0, extra_params=None, vendor="15b3"):
    return sriov.firmware_selection(nics or [], entries or [], int(num_vfs or 0), extra_params or {},
                                    "" if vendor is None else str(vendor))


class FilterModule(object):
    def filters(self):
        return {"sriov_module_pfs": sriov_module_pfs, "sriov_selected_pfs": sriov_selected_pfs,
                "nic_firmware_selection": nic_firmware_selection}
