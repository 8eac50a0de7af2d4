# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 3's filter: ``kernel_iov_unassigned`` (the PFs whose SR-IOV BARs
the kernel left unassigned, plugin_utils/checks/kernel.py). Documented in
plugins/filter/kernel_iov_unassigned.yml.

It imports its module_utils when it is called: Ansible imports every filter
file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def kernel_iov_unassigned(nics, nic_vendor="15b3"):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import kernel
    return kernel.kernel_iov_unassigned(nics, nic_vendor)


class FilterModule(object):
    def filters(self):
        return {"kernel_iov_unassigned": kernel_iov_unassigned}
