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
      - The parts to read; C(all) reads every one. The converge path of the role reads only C(modules).
    type: list
    elements: str
    choices: [all, unit, ctr, config, modules, sysctls, swaps, kubelet, cni, nvidia]
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
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.stack.plugins.module_utils.container_runtime import runtime_facts


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gather_subset=dict(type="list", elements="str", default=["all"],
                               choices=["all"] + list(runtime_facts.SUBSETS)),
            sysfs_root=dict(type="path", default="/sys"),
            **runtime_facts.OPTIONS
        ),
        supports_check_mode=True,
    )
    p = module.params
    subset = runtime_facts.SUBSETS if "all" in p["gather_subset"] else p["gather_subset"]
    facts = runtime_facts.gather(runtime_facts.module_runner(module), sysfs_root=p["sysfs_root"], subset=subset,
                                 **dict((k, p[k]) for k in runtime_facts.OPTIONS))
    module.exit_json(changed=False, runtime=facts)


if __name__ == "__main__":
    main()
