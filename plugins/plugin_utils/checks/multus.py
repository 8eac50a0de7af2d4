# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 13, Multus: the NetworkAttachmentDefinition CRD established, the
thick Multus DaemonSet present and its pod on the node ready. Reads the
Nodes, the CRD, the DaemonSet and the Multus pods in the cluster's one read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.plugin_utils import kube_checks
from ansible_collections.gpufabric.stack.plugins.plugin_utils.kube_checks import query

LAYER = 13
INTENT = ("multus_kubeconfig", "multus_namespace")
CRD = "network-attachment-definitions.k8s.cni.cncf.io"


def queries(intent):
    """The Nodes, the CRD, the DaemonSet and the pods, in that order."""
    ns = intent["multus_namespace"]
    return [query("Node"), query("CustomResourceDefinition", "apiextensions.k8s.io/v1", name=CRD),
            query("DaemonSet", "apps/v1", namespace=ns, name="kube-multus-ds"),
            query("Pod", namespace=ns, label_selectors=["name=multus"])]


def reads(intent, host):
    return {"cluster": {"kubeconfig": intent["multus_kubeconfig"], "queries": queries(intent)}}


def check(reading, intent, host):
    qs = queries(intent)
    got = [kube_checks.answer(reading, q)[0] for q in qs]
    return kube_checks.check_multus(host, kube_checks.named(got[0], host), (got[1] or [None])[0],
                                    (got[2] or [None])[0], got[3], kube_checks.first_error(reading, qs) or None)
