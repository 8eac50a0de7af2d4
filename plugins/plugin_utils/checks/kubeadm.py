# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 11, Kubernetes: the node registered and Ready, its kubelet within
the version skew of the API server, and running the kubelet configuration
the role renders for it. Reads the API server's version and the Nodes (the
cluster's one read, on the first kube_control_plane host) and the node's
/var/lib/kubelet/config.yaml (in the doctor's one read of the node)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.plugin_utils import kube_checks
from ansible_collections.gpufabric.stack.plugins.plugin_utils.kube_checks import VERSION, query

LAYER = 11
INTENT = ("kubeadm_kubeconfig", "kubeadm_node_name", "kubeadm_kubernetes_version", "kubeadm_kubelet_effective")
KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"
QUERIES = (query(VERSION), query("Node"))
# what the check reads on the node, in the doctor's one read of it
NODE_READS = {"contents": [KUBELET_CONFIG]}


def reads(intent, host):
    return {"cluster": {"kubeconfig": intent["kubeadm_kubeconfig"], "queries": list(QUERIES)},
            "nic_facts": dict(NODE_READS)}


def kubelet_config(reading):
    """The node's kubelet configuration as a dict; {} when it was not read,
    does not exist or does not parse (the check then judges the Node only)."""
    text = (((reading.get("nic_facts") or {}).get("contents") or {}).get(KUBELET_CONFIG))
    if not isinstance(text, str) or not text.strip():
        return {}
    import yaml
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def check(reading, intent, host):
    node_name = intent.get("kubeadm_node_name") or host
    version = kube_checks.answer(reading, QUERIES[0])[0]
    server = (((version[0] if version else {}).get("server") or {}).get("kubernetes") or {}).get("gitVersion") or ""
    return kube_checks.check_kubeadm(
        node_name, kube_checks.named(kube_checks.answer(reading, QUERIES[1])[0], node_name),
        server_version=server, wanted_version=intent.get("kubeadm_kubernetes_version"),
        kubelet_config=kubelet_config(reading), wanted_kubelet=intent.get("kubeadm_kubelet_effective") or {},
        api_error=kube_checks.first_error(reading, QUERIES) or None)
