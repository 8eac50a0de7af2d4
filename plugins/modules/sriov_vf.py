#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sriov_vf
short_description: Create SR-IOV virtual functions and set their MAC, VLAN, trust, spoof-check, link state, MTU and GUIDs
version_added: "0.1.0"
description:
  - Selects PFs by netdev name, PCI address or vendor:device and brings each to the wanted VF count and per-VF
    settings in one call for all PFs of a host.
  - "Follows the kernel's order of operations: C(sriov_numvfs) is written only when the count changes, 0 first
    and then N; the module waits until every VF has its C(physfn) link and netdev, then sets per-VF settings
    through the PF (C(ip link set dev <pf> vf N ...)) and VF MTUs."
  - Every value is checked before anything changes; a count above C(sriov_totalvfs), SR-IOV off in the NIC
    firmware, a PF without a bound driver and MMIO exhaustion (ENOMEM) are reported as different causes, naming
    the PF and the value.
  - Defaults are the safe ones for NICs shared by tenants, spoof-check on and trust off.
  - "The action plugin answers a run from the play's reading of the node (kept by M(gpufabric.stack.nic_facts), named by the
    fact C(gpufabric_nic_reading)) without executing this module when that reading was taken in this ansible-playbook
    run with this task's options (its I(vfs) option, this module's own run in check mode, and I(sysfs_root),
    I(inspect_files), I(inspect_units); nic_facts' I(also_layers) puts layer 6's there) and that run changes
    nothing: it returns that run's answer, RV(judged_from_reading) true. Anything else executes the module."
options:
  pfs:
    description: PF selections and the VF layout wanted on each.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Netdev name of the PF. Exactly one of I(name), I(pci_address), I(vendor_device).
        type: str
      pci_address:
        description: PCI address of the PF, for example C(0000:3b:00.0).
        type: str
      vendor_device:
        description: PCI vendor:device in hex, for example C(15b3:1021); selects every matching PF.
        type: str
      num_vfs:
        description: Number of VFs wanted. C(0) removes all VFs.
        type: int
        required: true
      vf_defaults:
        description: Settings applied to every VF unless I(vfs) overrides them.
        type: dict
        suboptions:
          trust: {description: Trust mode (lets the VF set promiscuous mode and change its MAC)., type: bool, default: false}
          spoofchk: {description: MAC spoof checking., type: bool, default: true}
          link_state: {description: VF link state policy., type: str, choices: [auto, enable, disable], default: auto}
          vlan: {description: VLAN tag the PF inserts (0 for none)., type: int}
          qos: {description: 802.1p priority with I(vlan)., type: int}
          max_tx_rate: {description: Maximum transmit rate in Mb/s (0 for unlimited)., type: int}
      vfs:
        description: Per-VF settings, by VF index.
        type: list
        elements: dict
        suboptions:
          index: {description: VF index (0 to num_vfs - 1)., type: int, required: true}
          mac: {description: Administrative MAC address., type: str}
          vlan: {description: VLAN tag., type: int}
          qos: {description: 802.1p priority., type: int}
          trust: {description: Trust mode., type: bool}
          spoofchk: {description: MAC spoof checking., type: bool}
          link_state: {description: Link state policy., type: str, choices: [auto, enable, disable]}
          node_guid: {description: IB node GUID (InfiniBand PFs only)., type: str}
          port_guid: {description: IB port GUID (InfiniBand PFs only)., type: str}
          max_tx_rate: {description: Maximum transmit rate in Mb/s., type: int}
          mtu: {description: MTU of this VF's netdev., type: int}
      vf_mtu:
        description: MTU of every VF netdev (a per-VF I(mtu) overrides it). Unset leaves MTUs alone.
        type: int
      vf_drivers:
        description:
          - The driver of VF ranges. VFs no entry names keep the kernel's VF driver (C(default)).
          - C(vfio-pci) hands the VFs to VMs (VFIO passthrough). Their MAC, VLAN, spoof-check and trust are set on
            the PF first; then C(driver_override) names vfio-pci, the VF leaves its driver and vfio-pci binds it.
            The PF stays on its driver. Before any change the module checks that an IOMMU is active and that
            vfio-pci is loaded or loadable (C(modprobe -D)); before a VF is handed over, that it is alone in its
            IOMMU group and that its netdev carries neither a default route nor a protected address.
        type: list
        elements: dict
        suboptions:
          vfs:
            description: VF indexes, a range like C(4-7) or C(0,2-3), or one index.
            type: raw
            required: true
          driver:
            description: C(default) (the kernel's VF driver) or C(vfio-pci).
            type: str
            required: true
            choices: [default, vfio-pci]
  sysfs_root:
    description: Where sysfs is mounted.
    type: path
    default: /sys
  wait_timeout:
    description: Seconds to wait for new VFs to get their physfn links and netdevs.
    type: int
    default: 120
  ip_command:
    description: The iproute2 C(ip) binary used to set per-VF settings through the PF.
    type: str
    default: ip
  nm_unmanaged_rule:
    description:
      - Path of a udev rule that marks every VF of the selected PFs C(NM_UNMANAGED), one line per VF matched on its
        PCI address (C(KERNELS)). It is written before the VFs are created, for the addresses the kernel will give
        them (the PF's C(sriov_offset) and C(sriov_stride)), and a running udevd reloads it, so NetworkManager never
        sees a VF without it. Written again, with the VFs announced again, if the VFs came up elsewhere.
      - Left alone when not set.
    type: path
  protected_addresses:
    description:
      - Addresses that must stay reachable (the management address the controller connects to). A VF whose netdev
        (or a bond or bridge it is enslaved to) holds one, or carries a default route, is never handed to
        vfio-pci; the module fails naming the VF, the netdev and the address or route. The server address of
        C(SSH_CONNECTION) is always protected when the module runs over SSH.
    type: list
    elements: str
    default: []
  passthrough_dir:
    description:
      - Where to write, for the hypervisor, the VFs handed to vfio-pci (C(vfs.json) with PCI address, IOMMU group, NUMA
        node, PF, VF index, MAC, VLAN and the GPUs nearby) and two snippets rendered from them,
        C(kubevirt-permitted-host-devices.yaml) and C(nova-pci.conf). Nothing is applied to KubeVirt or Nova.
      - Written when some VF is meant for vfio-pci or the directory exists already; left alone when not set.
    type: path
  modprobe_command:
    description: The kmod C(modprobe) binary, to check (C(-D)) and load vfio-pci.
    type: str
    default: modprobe
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpufabric.stack.boot_files
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
author:
  - gpufabric.stack maintainers (@gpufabric)
"""

EXAMPLES = r"""
- name: Eight VFs on every ConnectX-7 PF, tenant-safe defaults, jumbo MTU
  gpufabric.stack.sriov_vf:
    pfs:
      - vendor_device: "15b3:1021"
        num_vfs: 8
        vf_mtu: 9000

- name: A VF with a fixed MAC and VLAN on one PF
  gpufabric.stack.sriov_vf:
    pfs:
      - name: enp59s0f0np0
        num_vfs: 4
        vfs:
          - {index: 0, mac: "02:00:00:00:3b:00", vlan: 100, qos: 3}
"""

RETURN = r"""
judged_from_reading:
  description: True when the action answered from the play's reading of the node and executed nothing on it.
  returned: always
  type: bool
passthrough:
  description: Per VF handed to vfio-pci, what a hypervisor needs to place a VM (as written to I(passthrough_dir)/vfs.json).
  returned: always
  type: list
  elements: dict
  sample: [{pci_address: "0000:01:10.4", vendor_device: "8086:10ca", pf: enp1s0, pf_pci_address: "0000:01:00.0",
            vf_index: 2, driver: vfio-pci, iommu_group: "17", iommu_group_devices: ["0000:01:10.4"], numa_node: 0,
            mac: "02:00:00:00:01:02", vlan: 0, gpus: []}]
pfs:
  description:
    - Per PF, the VF count before and after and the VFs with their settings.
    - C(boot_lines), the shell lines of the boot script that recreate this PF's layout (the role's
      C(sriov-vfs.sh) wraps them), built from the same steps as the run.
  returned: always
  type: list
  elements: dict
commands:
  description: The sysfs writes and ip commands run (or, in check mode, that would run).
  returned: always
  type: list
  elements: str
inspected:
  description: The files of I(inspect_files) (null when absent, else sha256, mode, owner, group) and whether each
    unit of I(inspect_units) is enabled, read before any change.
  returned: always
  type: dict
  sample: {files: {/etc/systemd/system/gpufabric-sriov.service: {sha256: "9f2c...", mode: "0644", owner: root,
           group: root}}, units: {gpufabric-sriov.service: true}}
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.stack.plugins.module_utils.host import host_files, sysfs_nic
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov, sriov_host


def main():
    module = AnsibleModule(
        argument_spec=dict(sriov_host.OPTIONS, sysfs_root=dict(type="path", default="/sys"), **host_files.INSPECT_ARGS),
        supports_check_mode=True,
    )
    try:
        inspected = host_files.inspected(module)
        changed, results, commands, before, after, passthrough = sriov_host.run(module, sriov_host.IpBackend(module))
    except (sriov.SriovError, sysfs_nic.SysfsError, host_files.HostFilesError) as exc:
        module.fail_json(msg=str(exc))
    out = dict(changed=changed, pfs=results, commands=commands, inspected=inspected, passthrough=passthrough)
    if module._diff:
        out["diff"] = dict(before=json.dumps(before, indent=2, sort_keys=True) + "\n",
                           after=json.dumps(after, indent=2, sort_keys=True) + "\n")
    module.exit_json(**out)


if __name__ == "__main__":
    main()
