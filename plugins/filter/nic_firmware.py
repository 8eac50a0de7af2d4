# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 4's filter: ``nic_firmware_selection`` (the PFs layer 4 sets and
their mlx_config devices, module_utils/sriov_vfs/sriov.py). Documented in
plugins/filter/nic_firmware_selection.yml.

It imports its module_utils when it is called: Ansible imports every filter
file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def nic_firmware_selection(nics, entries, num_vfs=0, extra_params=None, vendor="15b3", max_num_vfs=None):
    from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov
    if max_num_vfs is None:
        num_vfs = int(num_vfs or 0)
    return sriov.firmware_selection(nics or [], entries or [], num_vfs, extra_params or {},
                                    "" if vendor is None else str(vendor), max_num_vfs)


class FilterModule(object):
    def filters(self):
        return {"nic_firmware_selection": nic_firmware_selection}
