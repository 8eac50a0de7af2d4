# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 3's filters: ``kernel_iov_unassigned`` (the PFs whose SR-IOV BARs
the kernel left unassigned, plugin_utils/checks/kernel.py), ``pcie_vfio``
(whether gpufabric_nics give VFs to VMs) and ``pcie_bios_acs`` (the BIOS ACS
setting of layer 2 for gpufabric_pcie_p2p), both from module_utils/host/pcie.py,
the reader of the PCIe path. Documented in plugins/filter/<name>.yml.

It imports its module_utils when it is called: Ansible imports every filter
file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def kernel_iov_unassigned(nics, nic_vendor="15b3"):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import kernel
    return kernel.kernel_iov_unassigned(nics, nic_vendor)


def pcie_vfio(nics):
    from ansible_collections.gpufabric.stack.plugins.module_utils.host import pcie
    return pcie.hands_vfs_to_vms(nics)


def pcie_bios_acs(nics, want="auto"):
    from ansible.errors import AnsibleFilterError
    from ansible_collections.gpufabric.stack.plugins.module_utils.host import pcie
    try:
        return pcie.bios_acs(want, nics)
    except pcie.PcieError as exc:
        raise AnsibleFilterError("pcie_bios_acs: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"kernel_iov_unassigned": kernel_iov_unassigned, "pcie_vfio": pcie_vfio, "pcie_bios_acs": pcie_bios_acs}
