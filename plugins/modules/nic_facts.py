#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nic_facts
short_description: Report NIC physical functions, their SR-IOV state, VFs and RDMA devices from sysfs
version_added: "0.1.0"
description:
  - Reads sysfs and returns every NIC physical function (PF) of the host with its netdev, PCI address,
    vendor:device, driver, NUMA node, link type and speed, SR-IOV capability and VF counts, its VFs
    (netdev, PCI address, RDMA device) and the RDMA device of the PF with its RoCE v2 GID index.
  - netdev, PCI function and RDMA device are tied together through the links sysfs provides, never by
    name patterns, so C(mlx5_N) and C(rocep59s0f0) style RDMA names both work.
  - With I(units) and I(files), the same call also reports whether the node keeps its NIC settings across a
    reboot (the boot units' unit-file states from one C(systemctl show), and whether the boot files exist), so
    a check of every layer asks each node once.
  - Read-only; safe in check mode.
options:
  sysfs_root:
    description:
      - Where sysfs is mounted. C(/sys) on a host; the rack twin serves its own tree elsewhere.
    type: path
    default: /sys
  vendor:
    description:
      - Only report PFs of this PCI vendor id (hex, without C(0x)), for example C(15b3) for NVIDIA/Mellanox.
      - Empty reports every PCI network function.
    type: str
    default: ""
  proc_root:
    description:
      - Where procfs is mounted, for C(cmdline). C(/proc) on a host; the rack twin serves its own.
    type: path
    default: /proc
  units:
    description:
      - systemd units whose unit-file state to report in RV(units), for example C(gpufabric-sriov.service).
    type: list
    elements: str
    default: []
  files:
    description:
      - Absolute paths whose presence to report in RV(files), for example a udev rule.
    type: list
    elements: path
    default: []
  modules_load_dir:
    description:
      - The directory of C(*.conf) files that systemd-modules-load reads at boot, reported in RV(modules_load) with
        every reading, so the layer that writes a file there can leave the write out when it would change nothing.
    type: path
    default: /etc/modules-load.d
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpufabric.stack.boot_files
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - gpufabric.stack maintainers (@gpufabric)
"""

EXAMPLES = r"""
- name: Read the NICs of a GPU node
  gpufabric.stack.nic_facts:
    vendor: "15b3"
  register: nics

- name: Show the RoCE v2 GID index of every PF
  ansible.builtin.debug:
    msg: "{{ item.name }} {{ item.rdma_device }} gid {{ item.rdma.roce_v2_gid_index }}"
  loop: "{{ nics.nics }}"
"""

RETURN = r"""
nics:
  description: One entry per PF, sorted by PCI address.
  returned: always
  type: list
  elements: dict
  contains:
    name: {description: Netdev name (null when no driver is bound), type: str}
    pci_address: {description: PCI address, type: str, sample: "0000:3b:00.0"}
    vendor_device: {description: PCI vendor and device id, type: str, sample: "15b3:1021"}
    driver: {description: Bound PCI driver or null, type: str}
    numa_node: {description: NUMA node of the PCI device, type: int}
    link_type: {description: ETH or IB, type: str}
    speed_mbps: {description: "Link speed in Mb/s, null when the link is down", type: int}
    sriov:
      description:
        - C(capable) is false when SR-IOV is off in the NIC firmware (no sriov_* files).
        - C(iov_bars_assigned) is false when none of the PF's IOV BARs (lines 7-12 of its C(resource) file) has an
          address, null when the file cannot be read.
      type: dict
      sample: {capable: true, totalvfs: 16, numvfs: 8, iov_bars_assigned: true}
    vfs:
      description: VFs with index, pci_address, netdev, rdma_device, driver, mtu.
      type: list
    rdma_device: {description: RDMA device of the PF, type: str, sample: mlx5_0}
    rdma:
      description: "Port 1 of the RDMA device: state, link_layer, gids, roce_v2_gid_index."
      type: dict
iommu_active:
  description: Whether the kernel has an active IOMMU (entries under class/iommu).
  returned: always
  type: bool
iommus:
  description: The active IOMMUs, the entries under class/iommu.
  returned: always
  type: list
  elements: str
  sample: [dmar0, dmar1]
modules:
  description: The kernel modules under C(module/) (loaded ones, and built-ins with parameters).
  returned: always
  type: list
  elements: str
  sample: [ib_core, mlx5_core, mlx5_ib]
cmdline:
  description: The booted kernel command line (C(<proc_root>/cmdline)), null when it cannot be read.
  returned: always
  type: str
  sample: BOOT_IMAGE=/boot/vmlinuz-6.1.0 root=/dev/sda1 ro intel_iommu=on iommu=pt
units:
  description:
    - "The unit-file state of each of I(units): enabled, disabled, static, masked and so on, or an empty string for a
      unit systemd does not know."
    - Empty when systemctl failed (see RV(units_error)); ask systemd per unit then.
  returned: always
  type: dict
  sample: {gpufabric-sriov.service: enabled, gpufabric-roce-qos.service: disabled}
units_error:
  description: Why RV(units) is empty although I(units) was given, else an empty string.
  returned: always
  type: str
files:
  description: Whether each of I(files) exists.
  returned: always
  type: dict
  sample: {/etc/udev/rules.d/70-gpufabric-nm-unmanaged.rules: true}
modules_load:
  description: The C(*.conf) files of I(modules_load_dir), each as in RV(inspected) (sha256, mode, owner, group);
    empty when the directory does not exist.
  returned: always
  type: dict
  sample: {/etc/modules-load.d/gpufabric-rdma.conf: {sha256: 3f1e..., mode: "0644", owner: root, group: root}}
inspected:
  description: The files of I(inspect_files) (null when absent, else sha256, mode, owner, group) and whether each unit
    of I(inspect_units) is enabled.
  returned: always
  type: dict
  sample: {files: {/etc/default/grub.d/gpufabric.cfg: null}, units: {}}
sysfs_root:
  description: The sysfs root read.
  returned: always
  type: str
  sample: /sys
proc_root:
  description: The procfs root read.
  returned: always
  type: str
  sample: /proc
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.stack.plugins.module_utils import boot_state, host_files, sysfs_nic


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_root=dict(type="path", default="/sys"),
            vendor=dict(type="str", default=""),
            proc_root=dict(type="path", default="/proc"),
            units=dict(type="list", elements="str", default=[]),
            files=dict(type="list", elements="path", default=[]),
            modules_load_dir=dict(type="path", default="/etc/modules-load.d"),
            **host_files.INSPECT_ARGS
        ),
        supports_check_mode=True,
    )
    bad = [f for f in module.params["files"] if not f.startswith("/")]
    if bad:
        module.fail_json(msg="files: %s is not an absolute path" % bad[0])
    if not module.params["modules_load_dir"].startswith("/"):
        module.fail_json(msg="modules_load_dir: %s is not an absolute path" % module.params["modules_load_dir"])
    try:
        inspected = host_files.inspected(module)
        modules_load = host_files.inspect_dir(module.params["modules_load_dir"])
        nics = sysfs_nic.discover(module.params["sysfs_root"])
    except (sysfs_nic.SysfsError, host_files.HostFilesError) as exc:
        module.fail_json(msg=str(exc))
    vendor = module.params["vendor"].lower().replace("0x", "")
    if vendor:
        nics = [n for n in nics if n["vendor"] == vendor]
    iommus = sysfs_nic.iommus(module.params["sysfs_root"])
    units, units_error = {}, ""
    if module.params["units"]:
        systemctl = module.get_bin_path("systemctl")
        if systemctl:
            units, units_error = boot_state.unit_file_states(
                lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C", "SYSTEMD_PAGER": ""}),
                module.params["units"], systemctl)
        else:
            units_error = "systemctl not found"
    module.exit_json(changed=False, nics=nics, iommu_active=bool(iommus), iommus=iommus,
                     modules=sysfs_nic.modules(module.params["sysfs_root"]),
                     cmdline=sysfs_nic.cmdline(module.params["proc_root"]),
                     units=units, units_error=units_error, files=boot_state.files_present(module.params["files"]),
                     inspected=inspected, modules_load=modules_load,
                     sysfs_root=module.params["sysfs_root"], proc_root=module.params["proc_root"])


if __name__ == "__main__":
    main()
