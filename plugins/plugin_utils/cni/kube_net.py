# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 12: the primary CNI's pod MTU from the underlay MTU.

The pod MTU is the underlay MTU minus what the encapsulation adds to every
packet: VXLAN and Geneve 50 bytes (outer IPv4 20 + UDP 8 + VXLAN 8 + inner
Ethernet 14), IP-in-IP 20 (outer IPv4), native routing 0.  Calico takes the
pod MTU (Installation spec.calicoNetwork.mtu); Cilium takes the device MTU
(Helm value ``MTU``) and subtracts the tunnel overhead itself.

Plain Python, no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress

OVERHEAD = {
    "calico": {"vxlan": 50, "ipip": 20, "none": 0},
    "cilium": {"vxlan": 50, "geneve": 50, "none": 0},
}
MIN_MTU = 1280  # IPv6 minimum; the pod network must carry it
MAX_MTU = 9216


def _int(value):
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def cni_settings(plugin, encapsulation, underlay_mtu, mtu=0, pod_cidr=None, cross_subnet=False):
    """Derived settings of the CNI and the errors of its inputs; every error
    names the role variable and its value."""
    errors = []
    plugin = str(plugin or "")
    encap = str(encapsulation or "").lower()
    if plugin not in OVERHEAD:
        errors.append("cni_plugin %r is not one of %s" % (plugin, ", ".join(sorted(OVERHEAD))))
        return {"errors": errors}
    if encap not in OVERHEAD[plugin]:
        errors.append("cni_encapsulation %r is not one of %s for %s"
                      % (encapsulation, ", ".join(sorted(OVERHEAD[plugin])), plugin))
        return {"errors": errors}
    overhead = OVERHEAD[plugin][encap]
    underlay = _int(underlay_mtu)
    if underlay is None or not MIN_MTU <= underlay <= MAX_MTU:
        errors.append("cni_underlay_mtu %r is not an MTU between %d and %d" % (underlay_mtu, MIN_MTU, MAX_MTU))
        return {"errors": errors}
    derived = underlay - overhead
    want = _int(mtu)
    if want is None or want < 0:
        errors.append("cni_mtu %r is not a number (0 derives it from the underlay)" % (mtu,))
        return {"errors": errors}
    if want and want > derived:
        errors.append("cni_mtu %d is larger than the underlay MTU allows: cni_underlay_mtu %d minus the %s overhead %d = %d"
                      % (want, underlay, encap, overhead, derived))
    elif want and want < MIN_MTU:
        errors.append("cni_mtu %d is below %d" % (want, MIN_MTU))
    pod_mtu = want or derived
    if pod_cidr is not None:
        try:
            net = ipaddress.ip_network(str(pod_cidr), strict=True)
            if net.version == 4 and net.prefixlen > 24:
                errors.append("cni_pod_cidr %s is too small for per-node blocks (needs /24 or larger)" % pod_cidr)
        except ValueError as exc:
            errors.append("cni_pod_cidr %r is not a network CIDR: %s" % (pod_cidr, exc))
    if cross_subnet and encap == "none":
        errors.append("cni_cross_subnet is true but cni_encapsulation is none")
    calico_encap = {"vxlan": "VXLAN", "ipip": "IPIP", "none": "None"}.get(encap)
    if plugin == "calico" and cross_subnet and encap != "none":
        calico_encap += "CrossSubnet"
    return {
        "errors": errors,
        "plugin": plugin,
        "encapsulation": encap,
        "overhead": overhead,
        "underlay_mtu": underlay,
        "pod_mtu": pod_mtu,
        # Cilium's MTU value is the device MTU it subtracts the tunnel from.
        "device_mtu": pod_mtu + overhead,
        "calico_encapsulation": calico_encap,
        "cilium_routing_mode": "native" if encap == "none" else "tunnel",
        "cilium_tunnel_protocol": encap if encap in ("vxlan", "geneve") else None,
    }
