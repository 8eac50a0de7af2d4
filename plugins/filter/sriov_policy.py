# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind layer 14 (roles/sriov_operator): the SR-IOV Network
Operator objects generated from the same inventory data as layer 6."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: sriov_policy_plan
short_description: SriovNetworkNodePolicy objects and node labels from gpufabric_nics and gpufabric_cabling
description:
  - Takes a mapping of node name to that node's gpufabric_nics and returns C(policies) (one
    externallyManaged SriovNetworkNodePolicy per rail and node profile), C(node_labels),
    C(node_label_objects), C(node_resources), C(resources) and C(errors).
  - The same plugin file provides C(sriov_tenant_errors), C(sriov_tenant_networks),
    C(sriov_tenant_namespaces), C(sriov_rdma_shared_config), C(sriov_macvlan_nads) and
    C(sriov_policy_check) (a rendered policy against nic_facts of a node).
positional: _input, cabling
options:
  _input:
    description: Node name to gpufabric_nics.
    type: dict
    required: true
  cabling:
    description: gpufabric_cabling (node, pf, pci_address per PF).
    type: list
    required: true
  namespace:
    description: Namespace of the operator and its policies.
    type: str
    default: sriov-network-operator
  profile_label:
    description: Node label that selects the nodes of a profile.
    type: str
    default: gpufabric.io/nic-profile
  link_type:
    description: eth or ib.
    type: str
    default: eth
  underlay_mtu:
    description: gpufabric_roce.host_mtu; a larger vf_mtu is an error.
    type: int
  operator_prefix:
    description: Domain of the extended resources (the operator's resourcePrefix).
    type: str
    default: openshift.io
"""

EXAMPLES = r"""
plan: "{{ {'gpu-a01': gpufabric_nics} | gpufabric.stack.sriov_policy_plan(gpufabric_cabling, underlay_mtu=9000) }}"
"""

RETURN = r"""
_value:
  description: The plan.
  type: dict
"""

from ansible_collections.gpufabric.stack.plugins.module_utils.deferred import deferred

plain_data = deferred("plain_data")
sp = deferred("sriov_policy")


def sriov_policy_plan(nodes, cabling, namespace="sriov-network-operator", profile_label="gpufabric.io/nic-profile",
                      link_type="eth", underlay_mtu=None, operator_prefix="openshift.io"):
    plan = sp.generate(plain_data.plain(nodes), plain_data.plain(cabling), namespace=namespace, profile_label=profile_label,
                       link_type=link_type, underlay_mtu=underlay_mtu, operator_prefix=operator_prefix)
    plan["node_label_objects"] = sp.node_label_objects(plan["node_labels"])
    return plan


def sriov_tenant_errors(tenants, resources, provider="sriov-network-operator", link_type="eth", underlay_mtu=None):
    errors = []
    if provider not in sp.PROVIDERS:
        errors.append("sriov_operator_provider %r is not one of %s" % (provider, ", ".join(sp.PROVIDERS)))
    if str(link_type).lower() not in ("eth", "ib"):
        errors.append("sriov_operator_link_type %r is not eth or ib" % (link_type,))
    return errors + sp.validate_tenants(plain_data.plain(tenants), plain_data.plain(resources), provider, str(link_type), underlay_mtu)


def sriov_tenant_networks(tenants, resources, namespace="sriov-network-operator", link_type="eth",
                          roce_priority=None, rdma_cni=False):
    return sp.tenant_networks(plain_data.plain(tenants), plain_data.plain(resources), namespace, link_type, roce_priority, rdma_cni)


def sriov_tenant_namespaces(tenants, labels=None):
    return sp.tenant_namespaces(plain_data.plain(tenants), plain_data.plain(labels))


def sriov_rdma_shared_config(resources, rdma_hca_max=63):
    return sp.rdma_shared_config(plain_data.plain(resources), rdma_hca_max)


def sriov_macvlan_nads(tenants, resources, resource_prefix="rdma"):
    objects, errors = sp.macvlan_nads(plain_data.plain(tenants), plain_data.plain(resources), resource_prefix)
    return {"objects": objects, "errors": errors}


def sriov_policy_check(policies, node, node_labels, nic_facts, nics=None):
    return sp.check_policies(plain_data.plain(policies), node, plain_data.plain(node_labels), plain_data.plain(nic_facts),
                             plain_data.plain(nics) if nics is not None else None)


class FilterModule(object):
    def filters(self):
        return {
            "sriov_policy_plan": sriov_policy_plan,
            "sriov_tenant_errors": sriov_tenant_errors,
            "sriov_tenant_networks": sriov_tenant_networks,
            "sriov_tenant_namespaces": sriov_tenant_namespaces,
            "sriov_rdma_shared_config": sriov_rdma_shared_config,
            "sriov_macvlan_nads": sriov_macvlan_nads,
            "sriov_policy_check": sriov_policy_check,
        }
