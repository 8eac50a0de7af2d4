# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 14, the SR-IOV Network Operator (or the NVIDIA Network Operator):
its pods ready, the node's sync succeeded, every resource the policies give
the node allocatable, every tenant's NetworkAttachmentDefinition present.
Reads the Nodes, the operator's pods, the NetworkAttachmentDefinitions and
the operator's state of the nodes in the cluster's one read; what the node
must offer comes from the policies the role generates from the layer 6
data (plugin_utils/sriov_operator/sriov_policy.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import result
from ansible_collections.gpufabric.stack.plugins.plugin_utils import kube_checks
from ansible_collections.gpufabric.stack.plugins.plugin_utils.sriov_operator import sriov_policy
from ansible_collections.gpufabric.stack.plugins.plugin_utils.kube_checks import query

LAYER = 14
INTENT = ("sriov_operator_kubeconfig", "sriov_operator_provider", "sriov_operator_namespace",
          "sriov_operator_node_nics", "sriov_operator_cabling", "sriov_operator_profile_label",
          "sriov_operator_link_type", "sriov_operator_resource_prefix", "sriov_operator_tenants")
# what the check reads on the node, in the doctor's one read of it: the GPU
# each NIC is the rail of, which the resource names must follow
NODE_READS = {"pcie": {"topo": True}}


def queries(intent):
    """The Nodes, the operator's pods, the NetworkAttachmentDefinitions and
    the operator's state (SriovNetworkNodeStates or the NicClusterPolicy),
    in that order."""
    ns = intent["sriov_operator_namespace"]
    if intent["sriov_operator_provider"] == "sriov-network-operator":
        state = query("SriovNetworkNodeState", "sriovnetwork.openshift.io/v1", namespace=ns)
    else:
        state = query("NicClusterPolicy", "mellanox.com/v1alpha1", name="nic-cluster-policy")
    return [query("Node"), query("Pod", namespace=ns),
            query("NetworkAttachmentDefinition", "k8s.cni.cncf.io/v1"), state]


def reads(intent, host):
    return {"cluster": {"kubeconfig": intent["sriov_operator_kubeconfig"], "queries": queries(intent)},
            "nic_facts": dict(NODE_READS)}


def check(reading, intent, host):
    qs = queries(intent)
    got = [kube_checks.answer(reading, q)[0] for q in qs]
    prefix = intent["sriov_operator_resource_prefix"]
    plan = sriov_policy.generate(intent.get("sriov_operator_node_nics") or {}, intent.get("sriov_operator_cabling") or [],
                                 namespace=intent["sriov_operator_namespace"],
                                 profile_label=intent["sriov_operator_profile_label"],
                                 link_type=intent["sriov_operator_link_type"], operator_prefix=prefix)
    resources = ["%s/%s" % (prefix, r) for r in (plan.get("node_resources") or {}).get(host) or []]
    expected = sriov_policy.expected_nads(intent.get("sriov_operator_tenants") or [], plan.get("resources") or [])
    provider = intent["sriov_operator_provider"]
    operator = provider == "sriov-network-operator"
    verdict = kube_checks.check_sriov_operator(
        host, kube_checks.named(got[0], host), got[1], resources, expected, got[2], provider,
        kube_checks.named(got[3], host) if operator else None,
        None if operator else (got[3] or [None])[0],
        kube_checks.first_error(reading, qs[:3]) or None)
    if verdict["status"] == "fail":
        return verdict
    # the operator works: are the rails it hands out each GPU's own NIC?
    node = reading.get("nic_facts") or {}
    crossed = sriov_policy.rail_pairing_errors(
        host, (plan.get("rails") or {}).get(host), (intent.get("sriov_operator_node_nics") or {}).get(host) or [],
        node.get("nics") or [], node.get("pcie"))
    if crossed:
        return result(LAYER, "fail", "a pod asking for a GPU's rail gets a NIC that GPU reaches only across the "
                      "socket or the root complex: %s" % crossed[0], crossed + list(verdict.get("evidence") or []),
                      "give each of the node's gpufabric_cabling entries the GPU whose PCIe switch its NIC is below "
                      "(gpu: <index>, as layer 5's evidence lists the rails), then site.yml --tags layer14")
    return verdict
