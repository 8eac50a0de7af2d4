#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: container_runtime_facts
short_description: Read in one call what Kubernetes needs from a node's container runtime
version_added: "0.1.0"
description:
  - Reads the containerd unit (state and start time), asks containerd for its version over its socket
    (C(ctr version), only when the unit is active), dumps the configuration it loads
    (C(containerd config dump)), and reads the kernel modules, sysctls, active swap, the kubelet's
    configuration, the CNI plugin directory and the NVIDIA container runtime binary.
  - The doctor's layer 10 check (C(plugins/plugin_utils/checks/container_runtime.py)) judges the same reading,
    made by M(gpufabric.stack.nic_facts)'s I(runtime) option in the doctor's one read of the node.
  - Read-only; safe in check mode. A missing command is reported in the result, not as a failure.
options:
  gather_subset:
    description:
      - The parts to read; C(all) reads every part the doctor judges (not C(version), C(swap_boot),
        C(cni_distro) or C(paths), which only the role's converge reads, in the same one call, to leave out
        every step that has nothing to do).
    type: list
    elements: str
    choices: [all, unit, ctr, config, modules, sysctls, swaps, kubelet, cni, nvidia, version, swap_boot, cni_distro,
              paths]
    default: [all]
  unit:
    description: The containerd systemd unit, without C(.service).
    type: str
    default: containerd
  config_path:
    description: The containerd configuration file containerd loads.
    type: path
    default: /etc/containerd/config.toml
  sysfs_root:
    description: Where sysfs is mounted; loaded modules are C(<sysfs_root>/module/<name>).
    type: path
    default: /sys
  modules:
    description: Kernel modules that must be loaded (or built into the kernel).
    type: list
    elements: str
    default: []
  sysctls:
    description: Sysctls and the values Kubernetes needs, read with C(sysctl -n).
    type: dict
    default: {}
  cni_bin_dir:
    description: Directory of the CNI plugin binaries.
    type: path
    default: /opt/cni/bin
  nvidia_runtime_path:
    description: Path of the NVIDIA container runtime binary.
    type: path
    default: /usr/bin/nvidia-container-runtime
  cni_distro_dir:
    description: Where the distribution installs the CNI plugins (C(cni_distro) lists it).
    type: path
  paths:
    description: Paths whose existence C(paths) reports.
    type: list
    elements: path
    default: []
  kubelet_config_path:
    description: The kubelet's configuration file, when the node has joined a cluster.
    type: path
    default: /var/lib/kubelet/config.yaml
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
author: gpufabric.stack maintainers (@gpufabric)
"""

EXAMPLES = r"""
- name: Read the container runtime of a node
  gpufabric.stack.container_runtime_facts:
    modules: [overlay, br_netfilter]
    sysctls:
      net.ipv4.ip_forward: 1
      net.bridge.bridge-nf-call-iptables: 1
  register: runtime
"""

RETURN = r"""
runtime:
  description: What was read; only the keys of the parts in O(gather_subset).
  returned: always
  type: dict
  contains:
    unit_exists: {description: Whether systemd knows the unit, type: bool}
    unit_file_state: {description: "systemd UnitFileState of the unit (enabled, disabled, masked, ...)", type: str}
    active: {description: "systemd ActiveState (active, failed, inactive, ...)", type: str}
    started_at: {description: "When the unit became active, in seconds since the epoch (0 when unknown)", type: float}
    ctr_rc: {description: "Exit code of C(ctr version); null when the unit, read in the same call, is not active", type: int}
    ctr_output: {description: "Output of C(ctr version), or why it was not run", type: str}
    config_dump: {description: Output of C(containerd config dump) (empty when it failed), type: str}
    config_error: {description: "Last error line of C(containerd config dump), empty when it worked", type: str}
    config_path: {description: The configuration file, type: str}
    config_mtime: {description: Modification time of the configuration file (0 when absent), type: float}
    modules: {description: "Module name: loaded or built in", type: dict, sample: {overlay: true, br_netfilter: false}}
    sysctls: {description: "Sysctl: [live value or null when absent, wanted value]", type: dict}
    swaps: {description: Active swap devices and files, type: list, elements: str}
    kubelet_config: {description: "Text of the kubelet's configuration file, empty without one", type: str}
    cni_plugins: {description: Names in the CNI plugin directory, type: list, elements: str}
    nvidia_binary: {description: Whether the NVIDIA container runtime binary exists, type: bool}
    sysctls_to_set: {description: "C(key=value) of each sysctl whose live value differs", type: list, elements: str}
    version_output: {description: "Output of C(containerd --version), empty when it failed", type: str}
    fstab_exists: {description: Whether /etc/fstab exists, type: bool}
    fstab_swaps: {description: The swap lines of /etc/fstab that are not commented out, type: list, elements: str}
    swap_target: {description: "systemd UnitFileState of swap.target (masked when the role has run)", type: str}
    cni_distro_plugins: {description: Names in I(cni_distro_dir), type: list, elements: str}
    paths_exist: {description: "Path of I(paths): whether it exists", type: dict}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.stack.plugins.module_utils.container_runtime import runtime_facts


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gather_subset=dict(type="list", elements="str", default=["all"],
                               choices=["all"] + list(runtime_facts.SUBSETS) + list(runtime_facts.CONVERGE_SUBSETS)),
            sysfs_root=dict(type="path", default="/sys"),
            cni_distro_dir=dict(type="path"),
            paths=dict(type="list", elements="path", default=[]),
            **runtime_facts.OPTIONS
        ),
        supports_check_mode=True,
    )
    p = module.params
    subset = runtime_facts.SUBSETS if "all" in p["gather_subset"] else p["gather_subset"]
    facts = runtime_facts.gather(runtime_facts.module_runner(module), sysfs_root=p["sysfs_root"], subset=subset,
                                 cni_distro_dir=p["cni_distro_dir"], paths=p["paths"],
                                 **dict((k, p[k]) for k in runtime_facts.OPTIONS))
    module.exit_json(changed=False, runtime=facts)


if __name__ == "__main__":
    main()
