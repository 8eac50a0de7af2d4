# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CNI settings of layer 12 (plugins/module_utils/kube_net.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: cni_settings
short_description: The CNI's derived settings (pod MTU from the underlay MTU) and the errors of its inputs
description:
  - Returns C({errors, plugin, encapsulation, overhead, underlay_mtu, pod_mtu, device_mtu, calico_encapsulation,
    cilium_routing_mode, cilium_tunnel_protocol}). C(errors) lists what is wrong with the inputs, each message naming
    the cni role variable and its value; the other keys are absent when the plugin, the encapsulation or the
    underlay MTU is unusable.
  - The pod MTU is the underlay MTU minus the encapsulation's overhead, or I(mtu) when set and not larger.
positional: _input, encapsulation, underlay_mtu, mtu, pod_cidr, cross_subnet
options:
  _input:
    description: The CNI, C(calico) or C(cilium).
    type: str
    required: true
  encapsulation:
    description: C(vxlan), C(ipip) (Calico), C(geneve) (Cilium) or C(none).
    type: str
    required: true
  underlay_mtu:
    description: The MTU of the node network the pods' traffic crosses.
    type: int
    required: true
  mtu:
    description: The pod MTU to use; 0 derives it from the underlay.
    type: int
    default: 0
  pod_cidr:
    description: The pod network, checked to leave room for per-node /24 blocks.
    type: str
  cross_subnet:
    description: Encapsulate only between subnets (Calico C(VXLANCrossSubnet), C(IPIPCrossSubnet)).
    type: bool
    default: false
"""

EXAMPLES = r"""
cni_settings: "{{ 'calico' | gpufabric.stack.cni_settings('vxlan', 9000, 0, '10.244.0.0/16', false) }}"
# {errors: [], pod_mtu: 8950, device_mtu: 9000, calico_encapsulation: VXLAN, ...}
"""

RETURN = r"""
_value:
  description: The derived settings and C(errors).
  type: dict
"""

from ansible_collections.gpufabric.stack.plugins.module_utils import kube_net


def cni_settings(plugin, encapsulation, underlay_mtu, mtu=0, pod_cidr=None, cross_subnet=False):
    return kube_net.cni_settings(plugin, encapsulation, underlay_mtu, mtu, pod_cidr, cross_subnet)


class FilterModule(object):
    def filters(self):
        return {"cni_settings": cni_settings}
