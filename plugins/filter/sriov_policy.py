# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind layer 14 (roles/sriov_operator): the SR-IOV Network
Operator objects generated from the same inventory data as layer 6
(plugin_utils/sriov_operator/sriov_policy.py). Each filter is documented in
plugins/filter/<name>.yml.

Each filter imports its module_utils when it is called: Ansible imports every
filter file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def sriov_policy_plan(nodes, cabling, namespace="sriov-network-operator", profile_label="gpufabric.io/nic-profile",
                      link_type="eth", underlay_mtu=None, operator_prefix="openshift.io"):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.sriov_operator import sriov_policy
    plan = sriov_policy.generate(plain_data.plain(nodes), plain_data.plain(cabling), namespace=namespace,
                                 profile_label=profile_label, link_type=link_type, underlay_mtu=underlay_mtu,
                                 operator_prefix=operator_prefix)
    plan["node_label_objects"] = sriov_policy.node_label_objects(plan["node_labels"])
    return plan


def sriov_tenant_errors(tenants, resources, provider="sriov-network-operator", link_type="eth", underlay_mtu=None):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.sriov_operator import sriov_policy
    errors = []
    if provider not in sriov_policy.PROVIDERS:
        errors.append("sriov_operator_provider %r is not one of %s" % (provider, ", ".join(sriov_policy.PROVIDERS)))
    if str(link_type).lower() not in ("eth", "ib"):
        errors.append("sriov_operator_link_type %r is not eth or ib" % (link_type,))
    return errors + sriov_policy.validate_tenants(plain_data.plain(tenants), plain_data.plain(resources), provider,
                                                  str(link_type), underlay_mtu)


def sriov_tenant_networks(tenants, resources, namespace="sriov-network-operator", link_type="eth",
                          roce_priority=None, rdma_cni=False):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.sriov_operator import sriov_policy
    return sriov_policy.tenant_networks(plain_data.plain(tenants), plain_data.plain(resources), namespace, link_type,
                                        roce_priority, rdma_cni)


def sriov_tenant_namespaces(tenants, labels=None):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.sriov_operator import sriov_policy
    return sriov_policy.tenant_namespaces(plain_data.plain(tenants), plain_data.plain(labels))


def sriov_rdma_shared_config(resources, rdma_hca_max=63):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.sriov_operator import sriov_policy
    return sriov_policy.rdma_shared_config(plain_data.plain(resources), rdma_hca_max)


def sriov_macvlan_nads(tenants, resources, resource_prefix="rdma"):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.sriov_operator import sriov_policy
    objects, errors = sriov_policy.macvlan_nads(plain_data.plain(tenants), plain_data.plain(resources), resource_prefix)
    return {"objects": objects, "errors": errors}


class FilterModule(object):
    def filters(self):
        return {
            "sriov_policy_plan": sriov_policy_plan,
            "sriov_tenant_errors": sriov_tenant_errors,
            "sriov_tenant_networks": sriov_tenant_networks,
            "sriov_tenant_namespaces": sriov_tenant_namespaces,
            "sriov_rdma_shared_config": sriov_rdma_shared_config,
            "sriov_macvlan_nads": sriov_macvlan_nads,
        }
