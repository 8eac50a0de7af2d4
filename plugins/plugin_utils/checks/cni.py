# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 12, the primary CNI: the node's network up, the CNI agent pod on
the node ready, and the pod MTU the CNI uses the one derived from the
underlay. Reads the Nodes, the agent pods and the CNI's MTU setting (Calico's
Installation or Cilium's ConfigMap) in the cluster's one read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.plugin_utils import kube_checks
from ansible_collections.gpufabric.stack.plugins.plugin_utils.cni import kube_net
from ansible_collections.gpufabric.stack.plugins.plugin_utils.kube_checks import query

LAYER = 12
INTENT = ("cni_kubeconfig", "cni_plugin", "cni_encapsulation", "cni_underlay_mtu", "cni_mtu", "cni_pod_cidr",
          "cni_cross_subnet", "cni_agents", "cni_cilium_namespace")


def queries(intent):
    """The Nodes, the CNI agent pods and the MTU object, in that order."""
    plugin = intent["cni_plugin"]
    agent = (intent.get("cni_agents") or {}).get(plugin) or {}
    if plugin == "calico":
        mtu = query("Installation", "operator.tigera.io/v1", name="default")
    else:
        mtu = query("ConfigMap", namespace=intent.get("cni_cilium_namespace"), name="cilium-config")
    return [query("Node"), query("Pod", namespace=agent.get("namespace"), label_selectors=[agent.get("selector")]),
            mtu]


def reads(intent, host):
    return {"cluster": {"kubeconfig": intent["cni_kubeconfig"], "queries": queries(intent)}}


def check(reading, intent, host):
    plugin = intent["cni_plugin"]
    nodes_q, pods_q, mtu_q = queries(intent)
    settings = kube_net.cni_settings(plugin, intent.get("cni_encapsulation"), intent.get("cni_underlay_mtu"),
                                     intent.get("cni_mtu") or 0, intent.get("cni_pod_cidr"),
                                     intent.get("cni_cross_subnet"))
    expected = None
    if not settings["errors"]:
        expected = settings["pod_mtu"] if plugin == "calico" else settings["device_mtu"]
    mtu_objects = kube_checks.answer(reading, mtu_q)[0]
    return kube_checks.check_cni(
        host, kube_checks.named(kube_checks.answer(reading, nodes_q)[0], host), kube_checks.answer(reading, pods_q)[0],
        plugin, expected, (mtu_objects or [None])[0] if plugin == "calico" else None,
        (mtu_objects or [None])[0] if plugin == "cilium" else None,
        kube_checks.first_error(reading, [nodes_q, pods_q]) or None)
