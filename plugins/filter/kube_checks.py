# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind the doctor's Kubernetes layer checks
(plugins/module_utils/kube_checks.py) and the CNI settings of layer 12."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: kube_check_cni
short_description: The doctor's layer 12 verdict (primary CNI) for one node from API objects
description:
  - Takes the node name, the Node object (or null) and the CNI agent pods, and returns
    {layer, name, status, reason, evidence, remediation}.
  - The same plugin file provides C(kube_check_multus) (layer 13), C(kube_check_sriov_operator) (layer 14)
    and C(cni_settings) (the pod MTU derived from the underlay MTU, with input errors).
positional: _input, node, pods
options:
  _input:
    description: Node name.
    type: str
    required: true
  node:
    description: The Node object, or null when the API has none.
    type: dict
    required: true
  pods:
    description: CNI agent pods (calico-node or cilium).
    type: list
    required: true
  plugin:
    description: calico or cilium.
    type: str
    default: calico
  expected_mtu:
    description: The intended MTU (Calico pod MTU, Cilium device MTU).
    type: int
  installation:
    description: The Calico Installation object.
    type: dict
  cilium_config:
    description: The cilium-config ConfigMap.
    type: dict
  api_error:
    description: Error message of a failed API read.
    type: str
"""

EXAMPLES = r"""
result: "{{ inventory_hostname | gpufabric.stack.kube_check_cni(node, pods, plugin='calico', expected_mtu=8950) }}"
"""

RETURN = r"""
_value:
  description: The layer result.
  type: dict
"""

from ansible_collections.gpufabric.stack.plugins.module_utils.deferred import deferred

kube_checks = deferred("kube_checks")
kube_net = deferred("kube_net")
plain_data = deferred("plain_data")


def kube_check_cni(node_name, node, pods, plugin="calico", expected_mtu=None, installation=None,
                   cilium_config=None, api_error=None):
    return kube_checks.check_cni(node_name, plain_data.first(node), plain_data.plain(pods), plugin, expected_mtu,
                                 plain_data.first(installation), plain_data.first(cilium_config), api_error or None)


def kube_check_multus(node_name, node, crd, daemonset, pods, api_error=None):
    return kube_checks.check_multus(node_name, plain_data.first(node), plain_data.first(crd), plain_data.first(daemonset), plain_data.plain(pods),
                                    api_error or None)


def kube_check_sriov_operator(node_name, node, operator_pods, resources, expected_nads, nads,
                              provider="sriov-network-operator", node_state=None, nic_cluster_policy=None,
                              api_error=None):
    return kube_checks.check_sriov_operator(node_name, plain_data.first(node), plain_data.plain(operator_pods), plain_data.plain(resources),
                                            plain_data.plain(expected_nads), plain_data.plain(nads), provider, plain_data.first(node_state),
                                            plain_data.first(nic_cluster_policy), api_error or None)


def cni_settings(plugin, encapsulation, underlay_mtu, mtu=0, pod_cidr=None, cross_subnet=False):
    return kube_net.cni_settings(plugin, encapsulation, underlay_mtu, mtu, pod_cidr, cross_subnet)


class FilterModule(object):
    def filters(self):
        return {
            "kube_check_cni": kube_check_cni,
            "kube_check_multus": kube_check_multus,
            "kube_check_sriov_operator": kube_check_sriov_operator,
            "cni_settings": cni_settings,
        }
