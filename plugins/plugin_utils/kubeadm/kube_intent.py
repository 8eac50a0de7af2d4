# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes intent of the inventory (layers 10-11), checked before any
change: version strings, the version skew policy, and the cluster's address
ranges against each other and against the networks the nodes live on.

Every error names the inventory variable and its value.  Plain Python, no
Ansible imports; the filters in plugins/filter/kube.py call these.

Version skew rules (https://kubernetes.io/releases/version-skew-policy/):
kubelet must not be newer than kube-apiserver and may be up to three minor
versions older; kubeadm is the version it deploys (or one minor newer
during an upgrade); kubectl is within one minor of kube-apiserver.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

# kubeadm.k8s.io/v1beta4 came with kubeadm 1.31.
MIN_MINOR = 31
KUBELET_MAX_SKEW = 3
VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.+-]*)?$")


def parse_version(text):
    """'v1.34.1', '1.34.1', 'v1.34.1+k3s1' -> (1, 34, 1); ValueError otherwise."""
    m = VERSION_RE.match(str(text or "").strip())
    if not m:
        raise ValueError("%r is not a Kubernetes version like 1.34.1" % (text,))
    return tuple(int(x) for x in m.groups())


def version_errors(version, variable="gpufabric_kube_version"):
    """Errors of the wanted Kubernetes version (empty list when it is fine)."""
    try:
        major, minor, patch = parse_version(version)
    except ValueError as exc:
        return ["%s: %s" % (variable, exc)]
    if major != 1:
        return ["%s %s: only Kubernetes 1.x is supported" % (variable, version)]
    if minor < MIN_MINOR:
        return ["%s %s: the kubeadm.k8s.io/v1beta4 configs these roles render need kubeadm 1.%d or newer"
                % (variable, version, MIN_MINOR)]
    return []


def minor(version):
    """'1.34.1' -> '1.34' (the pkgs.k8s.io channel)."""
    major, mnr, _patch = parse_version(version)
    return "%d.%d" % (major, mnr)


def skew_errors(server_version, kubelet_version, node="", kubelet_variable="kubelet"):
    """Version skew of one kubelet against the kube-apiserver."""
    where = (" on %s" % node) if node else ""
    try:
        server = parse_version(server_version)
        kubelet = parse_version(kubelet_version)
    except ValueError as exc:
        return ["%s%s: %s" % (kubelet_variable, where, exc)]
    if kubelet[:2] > server[:2]:
        return ["%s %s%s is newer than kube-apiserver %s: upgrade the control plane first"
                % (kubelet_variable, _v(kubelet), where, _v(server))]
    if server[1] - kubelet[1] > KUBELET_MAX_SKEW:
        return ["%s %s%s is %d minor versions older than kube-apiserver %s (at most %d allowed)"
                % (kubelet_variable, _v(kubelet), where, server[1] - kubelet[1], _v(server), KUBELET_MAX_SKEW)]
    return []


def upgrade_errors(server_version, wanted_version, variable="gpufabric_kube_version"):
    """The wanted version against a running control plane: these roles
    install and join, they do not upgrade; kubeadm upgrades one minor at a
    time and never downgrades."""
    try:
        server = parse_version(server_version)
        wanted = parse_version(wanted_version)
    except ValueError as exc:
        return ["%s: %s" % (variable, exc)]
    if wanted[:2] < server[:2]:
        return ["%s %s is older than the running control plane %s: kubeadm does not downgrade"
                % (variable, _v(wanted), _v(server))]
    if wanted[1] - server[1] > 1:
        return ["%s %s is more than one minor newer than the running control plane %s: "
                "kubeadm upgrades one minor version at a time" % (variable, _v(wanted), _v(server))]
    return []


def _v(t):
    return "v%d.%d.%d" % t


def _network(text, variable, errors):
    try:
        return ipaddress.ip_network(str(text).strip(), strict=True)
    except ValueError as exc:
        errors.append("%s %r is not a network in CIDR notation (%s)" % (variable, text, exc))
        return None


def _address_or_network(text):
    """A node network entry: a CIDR ('10.10.0.0/24'), an address ('10.10.0.11',
    taken as a /32) or anything else (a host name: None)."""
    text = str(text or "").strip()
    if not text:
        return None
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def network_errors(pod_subnet, service_subnet, node_networks=None, node_count=0, node_cidr_mask_size=24,
                   pod_variable="gpufabric_kube_pod_cidr", service_variable="gpufabric_kube_service_cidr"):
    """Errors of the cluster's address plan.

    node_networks: list of {variable, value} entries: the networks and
    addresses the nodes live on (management CIDRs, every host's
    ansible_host, RoCE addresses); entries that are host names are skipped.
    node_count: kube hosts that each need a pod CIDR block of
    /node_cidr_mask_size."""
    errors = []
    pod = _network(pod_subnet, pod_variable, errors)
    svc = _network(service_subnet, service_variable, errors)
    if pod is not None and svc is not None and pod.version == svc.version and pod.overlaps(svc):
        errors.append("%s %s overlaps %s %s" % (pod_variable, pod, service_variable, svc))
    if svc is not None and svc.version == 4 and svc.prefixlen > 28:
        errors.append("%s %s is too small for the cluster's services (at most /28, kubeadm's cluster DNS is the 10th address)"
                      % (service_variable, svc))
    if pod is not None:
        try:
            mask = int(node_cidr_mask_size)
        except (TypeError, ValueError):
            mask = -1
        if pod.version == 4 and not pod.prefixlen <= mask <= 30:
            errors.append("%s %s cannot be cut into per-node /%s blocks (kubeadm_node_cidr_mask_size)"
                          % (pod_variable, pod, node_cidr_mask_size))
        elif pod.version == 4 and node_count and 2 ** (mask - pod.prefixlen) < int(node_count):
            errors.append("%s %s has room for %d per-node /%d blocks, the inventory has %d Kubernetes nodes"
                          % (pod_variable, pod, 2 ** (mask - pod.prefixlen), mask, int(node_count)))
    for entry in node_networks or []:
        net = _address_or_network(entry.get("value"))
        if net is None:
            continue
        what = ("node address %s" % net.network_address) if net.num_addresses == 1 else ("node network %s" % net)
        for name, cluster in ((pod_variable, pod), (service_variable, svc)):
            if cluster is not None and cluster.version == net.version and cluster.overlaps(net):
                errors.append("%s %s overlaps the %s (%s)" % (name, cluster, what, entry.get("variable")))
    return errors


def node_networks(hostvars, hosts, extra_networks=None, extra_variable="gpufabric_node_networks"):
    """The node network entries network_errors() checks: the explicit
    networks, then every host's ansible_host, kubeadm_advertise_address and
    RoCE addresses (when they are addresses)."""
    out = [{"variable": extra_variable, "value": n} for n in extra_networks or []]
    for host in hosts or []:
        hv = hostvars.get(host) or {}
        for key in ("ansible_host", "kubeadm_advertise_address"):
            value = hv.get(key)
            if value:
                out.append({"variable": "%s of %s" % (key, host), "value": value})
        for netdev, addr in sorted((hv.get("roce_addresses") or {}).items()):
            out.append({"variable": "roce_addresses.%s of %s" % (netdev, host), "value": addr})
    return out


def cluster_dns(service_subnet):
    """kubeadm's cluster DNS address: the 10th address of the service subnet."""
    net = ipaddress.ip_network(str(service_subnet).strip(), strict=True)
    return str(net.network_address + 10)


def config_drift(live, wanted, keys):
    """Keys of a KubeletConfiguration whose live value differs from the wanted
    one: [{key, live, wanted}]."""
    live = live or {}
    out = []
    for key in keys or []:
        if live.get(key) != wanted.get(key):
            out.append({"key": key, "live": live.get(key), "wanted": wanted.get(key)})
    return out
