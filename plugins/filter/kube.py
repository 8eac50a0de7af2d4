# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the Kubernetes node layers 10-11: the inventory's Kubernetes
intent checked before any change (plugins/plugin_utils/kubeadm/kube_intent.py) and
the file names of render mode. Each filter is documented in
plugins/filter/<name>.yml.

Each filter imports its module_utils when it is called: Ansible imports every
filter file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

from ansible.errors import AnsibleFilterError


def kube_network_errors(pod_subnet, service_subnet, node_networks=None, node_count=0, node_cidr_mask_size=24,
                        pod_variable="gpufabric_kube_pod_cidr", service_variable="gpufabric_kube_service_cidr"):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.kubeadm import kube_intent
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data
    return kube_intent.network_errors(pod_subnet, service_subnet, plain_data.plain(node_networks or []), node_count,
                                      node_cidr_mask_size, pod_variable, service_variable)


class _Vars(object):
    """Read only the named keys of a host's variables (hostvars templates a
    variable when it is read; reading them all would template every one)."""

    def __init__(self, hostvars):
        self.hostvars = hostvars

    def get(self, host, default=None):
        try:
            hv = self.hostvars[host]
        except KeyError:
            return default
        return _HostView(hv)


class _HostView(object):
    def __init__(self, hv):
        self.hv = hv

    def get(self, key, default=None):
        try:
            value = self.hv[key]
        except (KeyError, AttributeError):
            return default
        from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data
        return plain_data.plain(value)


def kube_node_networks(hostvars, hosts, extra_networks=None, extra_variable="gpufabric_node_networks"):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.kubeadm import kube_intent
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data
    return kube_intent.node_networks(_Vars(hostvars), list(hosts or []), plain_data.plain(extra_networks or []), extra_variable)


def kube_address(value):
    """The value when it is an IP address, else '' (a host name)."""
    try:
        return str(ipaddress.ip_address(str(value or "").strip()))
    except ValueError:
        return ""


def kube_version_errors(version, variable="gpufabric_kube_version"):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.kubeadm import kube_intent
    return kube_intent.version_errors(version, variable)


def kube_skew_errors(server_version, kubelet_version, node="", kubelet_variable="kubelet"):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.kubeadm import kube_intent
    return kube_intent.skew_errors(server_version, kubelet_version, node, kubelet_variable)


def kube_upgrade_errors(server_version, wanted_version, variable="gpufabric_kube_version"):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.kubeadm import kube_intent
    return kube_intent.upgrade_errors(server_version, wanted_version, variable)


def kube_minor(version):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.kubeadm import kube_intent
    try:
        return kube_intent.minor(version)
    except ValueError as exc:
        raise AnsibleFilterError("kube_minor: %s" % exc)


def kube_cluster_dns(service_subnet):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.kubeadm import kube_intent
    try:
        return kube_intent.cluster_dns(service_subnet)
    except ValueError as exc:
        raise AnsibleFilterError("kube_cluster_dns: %s" % exc)


def kube_config_drift(live, wanted, keys):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.kubeadm import kube_intent
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data
    return kube_intent.config_drift(plain_data.plain(live), plain_data.plain(wanted), plain_data.plain(keys))


JOIN_TOKEN_RE = re.compile(r"--token\s+([a-z0-9]{6}\.[a-z0-9]{16})\b")
JOIN_HASH_RE = re.compile(r"--discovery-token-ca-cert-hash\s+(sha256:[0-9a-f]{64})\b")


def kube_join_parse(text):
    """`kubeadm token create --print-join-command` -> {token, ca_cert_hash}."""
    text = str(text or "")
    token, ca_hash = JOIN_TOKEN_RE.search(text), JOIN_HASH_RE.search(text)
    if not token or not ca_hash:
        raise AnsibleFilterError("kube_join_parse: no --token and --discovery-token-ca-cert-hash in the join command")
    return {"token": token.group(1), "ca_cert_hash": ca_hash.group(1)}


def containerd_config_version(version_output):
    """`containerd --version` -> the config version that containerd reads
    natively: 2 for containerd 1.x, 3 for containerd 2.x."""
    parts = str(version_output or "").split()
    for word in parts[2:3] + parts:
        m = re.match(r"^v?(\d+)\.(\d+)", word)
        if m:
            return 3 if int(m.group(1)) >= 2 else 2
    raise AnsibleFilterError("containerd_config_version: no version in %r" % (version_output,))


def kube_object_file(obj):
    """Render mode: the file one Kubernetes object is written to,
    <kind>-<name>.yaml or <kind>-<namespace>-<name>.yaml (kind lower case)."""
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data
    obj = plain_data.plain(obj) or {}
    meta = obj.get("metadata") or {}
    if not obj.get("kind") or not meta.get("name"):
        raise AnsibleFilterError("kube_object_file: object without kind or metadata.name: %r" % (obj,))
    ns = meta.get("namespace")
    return "%s-%s%s.yaml" % (obj["kind"].lower(), (ns + "-") if ns else "", meta["name"])


def kube_object_files(objects, directory, template, variable, listed=False):
    """Render mode: the gpufabric.stack.host_files entries that write each
    object to its own file in ``directory`` (named by kube_object_file),
    rendered from the role's ``template`` with the object as ``variable``
    (as a one-item list with ``listed``); owner and group as whoever renders."""
    if not isinstance(objects, (list, tuple)):
        raise AnsibleFilterError("kube_object_files: a list of objects is wanted, not %s" % type(objects).__name__)
    return [{"path": "%s/%s" % (str(directory).rstrip("/"), kube_object_file(obj)), "template": template,
             "vars": {variable: [obj] if listed else obj}, "owner": None, "group": None} for obj in objects]


class FilterModule(object):
    def filters(self):
        return {
            "kube_network_errors": kube_network_errors,
            "kube_node_networks": kube_node_networks,
            "kube_address": kube_address,
            "kube_version_errors": kube_version_errors,
            "kube_skew_errors": kube_skew_errors,
            "kube_upgrade_errors": kube_upgrade_errors,
            "kube_minor": kube_minor,
            "kube_cluster_dns": kube_cluster_dns,
            "kube_config_drift": kube_config_drift,
            "kube_join_parse": kube_join_parse,
            "containerd_config_version": containerd_config_version,
            "kube_object_file": kube_object_file,
            "kube_object_files": kube_object_files,
        }
