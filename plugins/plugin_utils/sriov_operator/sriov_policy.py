# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 14 from the same data as layer 6: SriovNetworkNodePolicy objects
(externallyManaged, so the operator allocates the VFs layer 6 created and
never writes ``sriov_numvfs``), per-tenant SriovNetwork / SriovIBNetwork
objects, the NVIDIA Network Operator alternative (RDMA shared device plugin
plus macvlan NetworkAttachmentDefinitions), the checks of the inventory
before anything is rendered or applied, and the comparison of a rendered
policy with what ``nic_facts`` reads on a node.

Rails: the fabric PFs of a node are the PFs its ``gpufabric_nics`` entries
select, in rail order (module_utils/host/pcie.py ``rail_order``): the NIC of
GPU 0's rail first, each NIC that is a GPU's rail by that GPU's index, then
the others by PCI address; rail r is the r-th of them (NIC r of every node
is cabled to the leaf of rail r).  Rendering takes the PFs of a node, and
the GPU each is the rail of (``gpu``), from ``gpufabric_cabling``; checking
takes them from ``nic_facts`` and the GPU of each from the node's PCIe path
(its ``pcie`` rails).  An entry with ``resource_prefix: gpu_rail`` turns
rail r into the extended resource ``gpu_rail<r>``: rail r is the NIC of the
r-th GPU that has one, so the rail a pod asks for is the NIC beside that GPU.

Plain Python, no Ansible imports: the filters wrap it, unit tests call it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import ipaddress
import json
import re

from ansible_collections.gpufabric.stack.plugins.module_utils.host import pcie

API_VERSION = "sriovnetwork.openshift.io/v1"
NAD_API_VERSION = "k8s.cni.cncf.io/v1"
NCP_API_VERSION = "mellanox.com/v1alpha1"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpufabric.stack"}

# sriov-network-operator pkg/webhook/validate.go: validateResourceName.
RESOURCE_RE = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9_-]*[a-zA-Z0-9])?$")
RESOURCE_MAX = 63
# ... and MlxMaxVFs; a policy with numVfs 0 is refused.
MLX_MAX_VFS = 128
# RFC 1123 label (namespaces) and subdomain (object names, resource prefixes).
DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
PCI_RE = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
VD_RE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{4}$")
IPAM_TYPES = ("whereabouts", "host-local")
PROVIDERS = ("sriov-network-operator", "nvidia-network-operator")


class PolicyError(Exception):
    """Bad inventory data; the message names the variable and the value."""


def _pci(value):
    value = str(value).lower()
    return "0000:" + value if len(value) == 7 else value


def dns_name(text):
    """A resource name as an object name: lowercase, '_' -> '-'."""
    return re.sub(r"[^a-z0-9.-]", "-", str(text).lower()).strip("-.")


def resource_name_errors(name, where):
    out = []
    if not isinstance(name, str) or not name:
        return ["%s: the resource name is empty" % where]
    if len(name) > RESOURCE_MAX:
        out.append("%s: resource name %r is longer than %d characters" % (where, name, RESOURCE_MAX))
    if not RESOURCE_RE.match(name):
        out.append("%s: resource name %r is not a valid extended resource name (letters, digits, '_' and '-', "
                   "starting and ending with a letter or digit)" % (where, name))
    return out


def resource_prefix_errors(prefix, where):
    """The domain part of <prefix>/<name>: a DNS subdomain outside kubernetes.io and k8s.io."""
    prefix = str(prefix or "")
    if not prefix or len(prefix) > 253 or not DNS_SUBDOMAIN_RE.match(prefix):
        return ["%s: %r is not a DNS subdomain, so <prefix>/<name> is not a valid extended resource" % (where, prefix)]
    for reserved in ("kubernetes.io", "k8s.io"):
        if prefix == reserved or prefix.endswith("." + reserved):
            return ["%s: %r is reserved for Kubernetes; extended resources must use another domain" % (where, prefix)]
    if prefix.startswith("requests."):
        return ["%s: %r: the 'requests.' prefix is reserved for quotas" % (where, prefix)]
    return []


# ------------------------------------------------------------------ rails


def _claims(nics, pfs, host, strict_vendor):
    """For each gpufabric_nics entry, the PFs (of ``pfs``) it selects.

    ``pfs`` entries: {name, pci_address, vendor_device?}.  A cabling entry
    has no vendor_device: a vendor_device match then takes the node's cabled
    PFs that no name or pci_address entry took, which is only unambiguous
    with one vendor_device entry."""
    errors = []
    bad = set()
    taken = set()
    claims = [[] for _ in nics]
    order = sorted(range(len(nics)), key=lambda i: 1 if (nics[i].get("match") or {}).get("vendor_device") else 0)
    vd_entries = [i for i in range(len(nics)) if (nics[i].get("match") or {}).get("vendor_device")]
    for i in order:
        match = nics[i].get("match") or {}
        keys = [k for k in ("name", "pci_address", "vendor_device") if match.get(k)]
        where = "%s: gpufabric_nics[%d].match" % (host, i)
        if len(keys) != 1:
            errors.append("%s must have exactly one of name, pci_address, vendor_device; got %r" % (where, match))
            bad.add(i)
            continue
        key = keys[0]
        value = str(match[key]).lower()
        if key == "name":
            hits = [p for p in pfs if p.get("name") == match[key]]
        elif key == "pci_address":
            if not PCI_RE.match(value):
                errors.append("%s.pci_address %r is not a PCI address like 0000:3b:00.0" % (where, match[key]))
                bad.add(i)
                continue
            hits = [p for p in pfs if _pci(p.get("pci_address", "")) == _pci(value)]
        else:
            if not VD_RE.match(value):
                errors.append("%s.vendor_device %r is not vendor:device in hex like 15b3:1021" % (where, match[key]))
                bad.add(i)
                continue
            known = [p for p in pfs if p.get("vendor_device")]
            if strict_vendor or known:
                hits = [p for p in pfs if str(p.get("vendor_device", "")).lower() == value]
            elif len(vd_entries) == 1:
                hits = [p for p in pfs if _pci(p["pci_address"]) not in taken]
            else:
                errors.append("%s.vendor_device: several vendor_device entries, but gpufabric_cabling gives no "
                              "vendor_device for the PFs of %s; add vendor_device to its cabling entries" % (where, host))
                bad.add(i)
                continue
        hits = [p for p in hits if _pci(p["pci_address"]) not in taken]
        for p in hits:
            taken.add(_pci(p["pci_address"]))
        claims[i] = hits
    return claims, errors, bad


def gpu_pairing(pfs, rails=None, among=None):
    """``{pci_address: {index}}``: the GPU each PF is the rail of, from the
    node's PCIe path (``rails``: nic_facts' pcie rails, counting the NICs
    ``among``) when read, else from the PFs' own ``gpu``
    (gpufabric_cabling's)."""
    if rails:
        return pcie.gpu_of_nic(rails, among=among)
    return dict((_pci(p["pci_address"]), {"index": int(p["gpu"])}) for p in pfs if p.get("gpu") is not None)


def node_rails(host, nics, pfs, strict_vendor=False, rails=None):
    """The rails of one node: list of dicts {rail, gpu, name, pci_address,
    vendor, device, num_vfs, mtu, resource, entry}, and a list of errors.

    ``pfs``: the node's PFs, from gpufabric_cabling (render) or nic_facts
    (check; then strict_vendor=True); ``rails``: the node's pcie rails
    (nic_facts), which say the GPU of each PF where read (else a PF's
    ``gpu``); ``gpu`` is None on a PF that is no GPU's rail."""
    claims, errors, bad = _claims(nics, pfs, host, strict_vendor)
    claimed = {_pci(p["pci_address"]) for c in claims for p in c}
    gpu_of = gpu_pairing(pfs, rails, among=claimed)
    fabric = pcie.rail_order(claimed, gpu_of)
    out = []
    for i, (entry, hits) in enumerate(zip(nics, claims)):
        match = entry.get("match") or {}
        if i in bad:
            continue
        if not hits:
            errors.append("%s: gpufabric_nics[%d].match %s selects no PF of this node (PFs: %s)"
                          % (host, i, _fmt_match(match),
                             ", ".join("%s %s" % (p.get("name"), p["pci_address"]) for p in pfs) or "none"))
            continue
        vd = str(match.get("vendor_device") or "").lower()
        for p in hits:
            pvd = str(p.get("vendor_device") or vd or "").lower()
            vendor, _, device = pvd.partition(":")
            rail = fabric.index(_pci(p["pci_address"]))
            prefix = entry.get("resource_prefix")
            out.append({
                "rail": rail,
                "gpu": (gpu_of.get(_pci(p["pci_address"])) or {}).get("index"),
                "name": p.get("name"),
                "pci_address": _pci(p["pci_address"]),
                "vendor": vendor or None,
                "device": device or None,
                "num_vfs": int(entry.get("num_vfs") or 0),
                "mtu": int(entry["vf_mtu"]) if entry.get("vf_mtu") is not None else None,
                "resource": "%s%d" % (prefix, rail) if prefix else None,
                "entry": i,
            })
    out.sort(key=lambda r: r["rail"])
    return out, errors


def _fmt_match(match):
    return ", ".join("%s=%s" % kv for kv in sorted(match.items()) if kv[1]) or "{}"


def cabled_pfs(cabling, host):
    """The PFs of a node as the cabling plan names them, each with the GPU
    whose rail it is (``gpu``, the GPU's index as nvidia-smi numbers them)
    where the plan says."""
    out = []
    for c in cabling or []:
        if c.get("node") == host and c.get("pci_address"):
            pf = {"name": c.get("pf"), "pci_address": _pci(c["pci_address"])}
            if c.get("vendor_device"):
                pf["vendor_device"] = str(c["vendor_device"]).lower()
            gpu = pcie.gpu_index(c.get("gpu"))
            if gpu is not None:
                pf["gpu"] = gpu
            out.append(pf)
    return sorted(out, key=lambda p: p["pci_address"])


def cabling_gpu_errors(cabling, hosts):
    """gpufabric_cabling's ``gpu`` on the entries of ``hosts``: a GPU index
    (0, 1, ...) where given."""
    out = []
    for i, c in enumerate(cabling or []):
        if c.get("node") in hosts and c.get("gpu") is not None and pcie.gpu_index(c["gpu"]) is None:
            out.append("%s: gpufabric_cabling[%d].gpu %r (PF %s) is not a GPU index (0, 1, ... as nvidia-smi "
                       "numbers the node's GPUs)" % (c.get("node"), i, c["gpu"], c.get("pf") or c.get("pci_address")))
    return out


# ------------------------------------------------------------------ policies


def _profile_key(rails):
    return [(r["resource"], r["vendor"], r["device"], r["num_vfs"], r["mtu"], r["name"],
             r["pci_address"] if not r["name"] else None) for r in rails if r["resource"]]


def profile_id(rails):
    blob = json.dumps(_profile_key(rails), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:10]


def generate(nodes, cabling=None, node_pfs=None, namespace="sriov-network-operator",
             profile_label="gpufabric.io/nic-profile", link_type="eth", underlay_mtu=None,
             operator_prefix="openshift.io", selector="pfNames"):
    """SriovNetworkNodePolicy objects for the cluster.

    nodes: {host: gpufabric_nics}; cabling: gpufabric_cabling; node_pfs:
    {host: [pf facts]} to use instead of the cabling (for checks against
    nic_facts).  Returns {policies, node_labels, node_resources, rails,
    resources, errors}: one policy per (profile, rail), where a profile is a
    set of nodes with the same rails, PF names and VF layout; every node of
    a profile gets the label ``profile_label: <profile>``."""
    errors = []
    errors += resource_prefix_errors(operator_prefix, "sriov_operator_resource_prefix")
    if node_pfs is None:
        errors += cabling_gpu_errors(cabling, set(nodes))
    per_node = {}
    for host in sorted(nodes):
        nics = nodes[host] or []
        wanted = [e for e in nics if e.get("resource_prefix")]
        if not wanted:
            continue
        if node_pfs is not None:
            pfs = node_pfs.get(host) or []
            rails, errs = node_rails(host, nics, pfs, strict_vendor=True)
        else:
            pfs = cabled_pfs(cabling, host)
            if not pfs:
                errors.append("%s: gpufabric_cabling lists no PF of this node, so its rails (and the resource names "
                              "of gpufabric_nics resource_prefix) are unknown; add its PFs to gpufabric_cabling" % host)
                continue
            rails, errs = node_rails(host, nics, pfs)
        errors += errs
        for r in rails:
            entry = nics[r["entry"]]
            where = "%s: gpufabric_nics[%d]" % (host, r["entry"])
            if r["resource"] is None:
                continue
            errors += resource_name_errors(r["resource"], where + ".resource_prefix")
            if not 1 <= r["num_vfs"] <= MLX_MAX_VFS:
                errors.append("%s.num_vfs %s: a policy needs 1-%d VFs (the operator refuses numVfs 0)"
                              % (where, entry.get("num_vfs"), MLX_MAX_VFS))
            if r["mtu"] is not None and underlay_mtu and r["mtu"] > int(underlay_mtu):
                errors.append("%s.vf_mtu %d is larger than the underlay MTU gpufabric_roce.host_mtu %d"
                              % (where, r["mtu"], int(underlay_mtu)))
            if selector == "pfNames" and not r["name"]:
                errors.append("%s: PF %s has no name in gpufabric_cabling (pf), needed for nicSelector.pfNames"
                              % (where, r["pci_address"]))
        per_node[host] = [r for r in rails if r["resource"]]
    profiles = {}
    for host, rails in per_node.items():
        profiles.setdefault(profile_id(rails), {"hosts": [], "rails": rails})["hosts"].append(host)
    policies, labels, node_resources, resources = [], {}, {}, {}
    for pid in sorted(profiles):
        prof = profiles[pid]
        for host in prof["hosts"]:
            labels[host] = {profile_label: pid}
            node_resources[host] = sorted({r["resource"] for r in prof["rails"]})
        by_res = {}
        for r in prof["rails"]:
            by_res.setdefault(r["resource"], []).append(r)
        for res in sorted(by_res):
            rs = by_res[res]
            first = rs[0]
            if len({(r["num_vfs"], r["mtu"], r["vendor"], r["device"]) for r in rs}) > 1:
                errors.append("%s: the PFs of resource %s differ in num_vfs, vf_mtu or device; one resource needs one "
                              "VF layout" % (prof["hosts"][0], res))
            nic = {}
            if first["vendor"]:
                nic["vendor"] = first["vendor"]
            if first["device"] and len({r["device"] for r in rs}) == 1:
                nic["deviceID"] = first["device"]
            if selector == "rootDevices" or not all(r["name"] for r in rs):
                nic["rootDevices"] = sorted({r["pci_address"] for r in rs})
            else:
                nic["pfNames"] = sorted({r["name"] for r in rs})
            spec = {
                "resourceName": res,
                "nodeSelector": {profile_label: pid},
                "numVfs": first["num_vfs"],
                "nicSelector": nic,
                "deviceType": "netdevice",
                "isRdma": True,
                "externallyManaged": True,
                "linkType": link_type,
            }
            if first["mtu"] is not None:
                spec["mtu"] = first["mtu"]
            policies.append({
                "apiVersion": API_VERSION,
                "kind": "SriovNetworkNodePolicy",
                "metadata": {"name": "%s-%s" % (dns_name(res), pid), "namespace": namespace,
                             "labels": dict(MANAGED_BY)},
                "spec": spec,
            })
            info = resources.setdefault(res, {"rails": set(), "mtu": first["mtu"], "names": set(), "hosts": [],
                                              "vendor": first["vendor"], "device": first["device"], "gpus": set()})
            info["rails"].add(first["rail"])
            info["gpus"].update(r["gpu"] for r in rs if r.get("gpu") is not None)
            info["names"].update(r["name"] for r in rs if r["name"])
            info["hosts"].extend(prof["hosts"])
            if first["mtu"] is not None:
                info["mtu"] = min(info["mtu"] or first["mtu"], first["mtu"])
    for info in resources.values():
        info["rails"] = sorted(info["rails"])
        info["gpus"] = sorted(info["gpus"])
        info["names"] = sorted(info["names"])
        info["hosts"] = sorted(set(info["hosts"]))
    return {"policies": policies, "node_labels": labels, "node_resources": node_resources,
            "rails": per_node, "resources": resources, "errors": errors}


def node_label_objects(node_labels):
    """Merge-patch bodies for the Node objects (only metadata.labels)."""
    return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": host, "labels": dict(labels)}}
            for host, labels in sorted(node_labels.items())]


# ------------------------------------------------------------------ tenants


def _tenant_resources(tenant, resources):
    if tenant.get("resources"):
        return list(tenant["resources"])
    if tenant.get("rails") is not None:
        rails = set(int(r) for r in tenant["rails"])
        return [name for name, info in sorted(resources.items(), key=lambda kv: (kv[1]["rails"], kv[0]))
                if rails & set(info["rails"])]
    return [name for name, info in sorted(resources.items(), key=lambda kv: (kv[1]["rails"], kv[0]))]


def validate_tenants(tenants, resources, provider="sriov-network-operator", link_type="eth", underlay_mtu=None):
    """Errors in gpufabric_tenants, each naming the variable and the value."""
    errors = []
    if tenants is None:
        return errors
    if not isinstance(tenants, list):
        return ["gpufabric_tenants must be a list, got %r" % (tenants,)]
    seen = {}
    pools = []
    for i, t in enumerate(tenants):
        where = "gpufabric_tenants[%d]" % i
        before = len(errors)
        if not isinstance(t, dict):
            errors.append("%s must be a mapping, got %r" % (where, t))
            continue
        ns = t.get("namespace")
        if not isinstance(ns, str) or len(ns) > 63 or not DNS_LABEL_RE.match(ns):
            errors.append("%s.namespace %r is not a DNS label (lowercase letters, digits and '-', at most 63, "
                          "starting and ending with a letter or digit)" % (where, ns))
        elif ns in seen:
            errors.append("%s.namespace %r is already gpufabric_tenants[%d]" % (where, ns, seen[ns]))
        else:
            seen[ns] = i
        if t.get("resources") is not None and t.get("rails") is not None:
            errors.append("%s: give either rails or resources, not both" % where)
        for j, res in enumerate(t.get("resources") or []):
            errs = resource_name_errors(res, "%s.resources[%d]" % (where, j))
            if errs:
                errors += errs
            elif res not in resources:
                errors.append("%s.resources[%d] %r is no resource of gpufabric_nics; known: %s"
                              % (where, j, res, ", ".join(sorted(resources)) or "none"))
        for j, rail in enumerate(t.get("rails") or []):
            if not isinstance(rail, int) or isinstance(rail, bool) or not any(rail in r["rails"] for r in resources.values()):
                errors.append("%s.rails[%d] %r is no rail of gpufabric_nics; known: %s"
                              % (where, j, rail, ", ".join(str(x) for x in sorted({x for r in resources.values()
                                                                                   for x in r["rails"]})) or "none"))
        nets = [r for r in _tenant_resources(t, resources) if r in resources]
        if not nets and len(errors) == before:
            errors.append("%s: selects no resource (gpufabric_nics has none with resource_prefix)" % where)
        vlan = t.get("vlan")
        if vlan is not None:
            if not isinstance(vlan, int) or isinstance(vlan, bool) or not 1 <= vlan <= 4094:
                errors.append("%s.vlan %r is outside 1-4094" % (where, vlan))
            elif provider != "sriov-network-operator" or link_type.lower() == "ib":
                errors.append("%s.vlan %r: VLANs need the sriov-network-operator provider on Ethernet "
                              "(macvlan and InfiniBand networks carry no VLAN tag)" % (where, vlan))
        mtu = t.get("mtu")
        if mtu is not None:
            limits = [resources[r]["mtu"] for r in nets if resources[r].get("mtu")]
            if underlay_mtu:
                limits.append(int(underlay_mtu))
            if not isinstance(mtu, int) or isinstance(mtu, bool) or mtu < 576:
                errors.append("%s.mtu %r is not an MTU (>= 576)" % (where, mtu))
            elif limits and mtu > min(limits):
                errors.append("%s.mtu %d is larger than the underlay MTU %d (gpufabric_roce.host_mtu and the VF MTU "
                              "of its resources)" % (where, mtu, min(limits)))
        ipam = t.get("ipam")
        if not isinstance(ipam, dict):
            errors.append("%s.ipam must be a mapping {type: whereabouts|host-local, ranges: [CIDR per network]}" % where)
            continue
        if ipam.get("type") not in IPAM_TYPES:
            errors.append("%s.ipam.type %r is not one of %s" % (where, ipam.get("type"), ", ".join(IPAM_TYPES)))
        ranges = ipam.get("ranges")
        if not isinstance(ranges, list) or len(ranges) != len(nets):
            errors.append("%s.ipam.ranges needs one CIDR per network, in rail order (%d: %s), got %r"
                          % (where, len(nets), ", ".join(nets), ranges))
            continue
        for j, (cidr, res) in enumerate(zip(ranges, nets)):
            try:
                net = ipaddress.ip_network(str(cidr), strict=False)
            except ValueError:
                errors.append("%s.ipam.ranges[%d] %r is not a CIDR" % (where, j, cidr))
                continue
            for other in pools:
                if other["res"] == res and other["vlan"] == vlan and other["net"].overlaps(net) \
                        and other["ns"] != ns:
                    errors.append("%s.ipam.ranges[%d] %s overlaps %s of tenant %s on %s (same VLAN)"
                                  % (where, j, net, other["net"], other["ns"], res))
            pools.append({"res": res, "vlan": vlan, "net": net, "ns": ns})
        for j, cidr in enumerate(ipam.get("exclude") or []):
            try:
                ipaddress.ip_network(str(cidr), strict=False)
            except ValueError:
                errors.append("%s.ipam.exclude[%d] %r is not a CIDR" % (where, j, cidr))
    return errors


def ipam_config(ipam, index):
    """The CNI ipam section of network ``index`` of a tenant."""
    cidr = str(ipam["ranges"][index])
    if ipam["type"] == "whereabouts":
        out = {"type": "whereabouts", "range": cidr}
        if ipam.get("exclude"):
            out["exclude"] = [str(x) for x in ipam["exclude"]]
        return out
    return {"type": "host-local", "ranges": [[{"subnet": cidr}]]}


def network_name(namespace, resource):
    return "%s-%s" % (namespace, dns_name(resource))


def tenant_networks(tenants, resources, namespace="sriov-network-operator", link_type="eth",
                    roce_priority=None, rdma_cni=False):
    """One SriovNetwork (SriovIBNetwork on InfiniBand) per tenant and
    resource; the operator renders a NetworkAttachmentDefinition of the same
    name in the tenant's namespace."""
    out = []
    for t in tenants or []:
        nets = _tenant_resources(t, resources)
        for idx, res in enumerate(nets):
            ib = str(link_type).lower() == "ib"
            spec = {"resourceName": res, "networkNamespace": t["namespace"],
                    "ipam": json.dumps(ipam_config(t["ipam"], idx), sort_keys=True)}
            if not ib:
                spec["spoofChk"] = "on"
                spec["trust"] = "off"
                if t.get("vlan"):
                    spec["vlan"] = int(t["vlan"])
                    if roce_priority is not None:
                        spec["vlanQoS"] = int(roce_priority)
            if rdma_cni:
                spec["metaPlugins"] = json.dumps({"type": "rdma"})
            out.append({
                "apiVersion": API_VERSION,
                "kind": "SriovIBNetwork" if ib else "SriovNetwork",
                "metadata": {"name": network_name(t["namespace"], res), "namespace": namespace,
                             "labels": dict(MANAGED_BY, **{"gpufabric.io/tenant": t["namespace"]})},
                "spec": spec,
            })
    return out


def expected_nads(tenants, resources):
    """[{namespace, name, resource}] of the NetworkAttachmentDefinitions the tenants get."""
    return [{"namespace": t["namespace"], "name": network_name(t["namespace"], res), "resource": res}
            for t in tenants or [] for res in _tenant_resources(t, resources)]


def tenant_namespaces(tenants, labels=None):
    return [{"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": t["namespace"],
                          "labels": dict(MANAGED_BY, **dict(labels or {}, **{"gpufabric.io/tenant": "true"}))}}
            for t in tenants or []]


# ------------------------------------------------- NVIDIA Network Operator


def rdma_shared_config(resources, rdma_hca_max=63):
    """k8s-rdma-shared-dev-plugin configList: one resource per rail, selecting
    the rail's PFs by vendor, device and netdev name."""
    config = []
    for res, info in sorted(resources.items(), key=lambda kv: (kv[1]["rails"], kv[0])):
        sel = {}
        if info.get("vendor"):
            sel["vendors"] = [info["vendor"]]
        if info.get("device"):
            sel["deviceIDs"] = [info["device"]]
        sel["ifNames"] = list(info["names"])
        config.append({"resourceName": res, "rdmaHcaMax": int(rdma_hca_max), "selectors": sel})
    return {"configList": config}


def macvlan_nads(tenants, resources, resource_prefix="rdma", mtu_default=None):
    """NVIDIA provider: per tenant and resource a macvlan NAD on the rail's PF
    (same netdev name on every node) with the RDMA shared device resource."""
    out, errors = [], []
    for t in tenants or []:
        for idx, res in enumerate(_tenant_resources(t, resources)):
            names = resources[res]["names"]
            if len(names) != 1:
                errors.append("resource %s: macvlan needs the same PF name on every node, gpufabric_cabling has %s"
                              % (res, ", ".join(names) or "none"))
                continue
            config = {"cniVersion": "1.0.0", "name": network_name(t["namespace"], res), "type": "macvlan",
                      "master": names[0], "mode": "bridge", "ipam": ipam_config(t["ipam"], idx)}
            mtu = t.get("mtu") or resources[res].get("mtu") or mtu_default
            if mtu:
                config["mtu"] = int(mtu)
            out.append({
                "apiVersion": NAD_API_VERSION,
                "kind": "NetworkAttachmentDefinition",
                "metadata": {"name": network_name(t["namespace"], res), "namespace": t["namespace"],
                             "labels": dict(MANAGED_BY),
                             "annotations": {"k8s.v1.cni.cncf.io/resourceName": "%s/%s" % (resource_prefix, res)}},
                "spec": {"config": json.dumps(config, sort_keys=True)},
            })
    return out, errors


# ------------------------------------------------------- policy vs nic_facts


def _selects(nic_selector, pf):
    if nic_selector.get("vendor") and str(pf.get("vendor") or "").lower() != nic_selector["vendor"].lower():
        return False
    if nic_selector.get("deviceID") and str(pf.get("device") or "").lower() != nic_selector["deviceID"].lower():
        return False
    if nic_selector.get("pfNames") and pf.get("name") not in [n.split("#")[0] for n in nic_selector["pfNames"]]:
        return False
    if nic_selector.get("rootDevices") and _pci(pf.get("pci_address", "")) not in [_pci(d) for d in nic_selector["rootDevices"]]:
        return False
    return True


def _mismatch(node, pf, field, policy, want, have, text):
    return {"node": node, "pf": pf, "field": field, "policy": policy, "want": want, "have": have,
            "message": "%s pf %s: %s: %s" % (node, pf, field, text)}


def check_policies(policies, node, node_labels, nic_facts, nics=None, rails=None):
    """Mismatches between the policies that select a node (by its labels)
    and the node's PFs as nic_facts reads them.  Each mismatch names the
    node, the PF, the policy field, what the policy wants and what the node
    has.  With ``nics`` (the node's gpufabric_nics), PFs layer 6 gave VFs
    but no policy covers, and resource names that differ from the rails
    nic_facts shows (in the GPU order of the node's PCIe path, ``rails``:
    nic_facts' pcie rails), are reported too."""
    out = []
    labels = node_labels or {}
    mine = [p for p in policies
            if all(labels.get(k) == v for k, v in (p["spec"].get("nodeSelector") or {}).items())]
    covered = {}
    expected = {}
    if nics is not None:
        found, errs = node_rails(node, nics, nic_facts, strict_vendor=True, rails=rails)
        expected = {r["pci_address"]: r for r in found}
        for e in errs:
            out.append(_mismatch(node, "-", "nicSelector", None, None, None, e.split(": ", 1)[-1]))
    for pol in mine:
        spec, name = pol["spec"], pol["metadata"]["name"]
        sel = spec.get("nicSelector") or {}
        hits = [pf for pf in nic_facts if _selects(sel, pf)]
        if not hits:
            loose = [pf for pf in nic_facts
                     if _selects({k: v for k, v in sel.items() if k in ("pfNames", "rootDevices")}, pf)]
            for pf in loose:
                for key, fact in (("vendor", "vendor"), ("deviceID", "device")):
                    if sel.get(key) and str(pf.get(fact) or "").lower() != sel[key].lower():
                        out.append(_mismatch(node, pf.get("name") or pf["pci_address"], "nicSelector." + key, name,
                                             sel[key], pf.get(fact),
                                             "policy %s wants %s %s, the PF is %s" % (name, key, sel[key], pf.get("vendor_device"))))
            if not loose:
                out.append(_mismatch(node, "-", "nicSelector", name, sel,
                                     [pf.get("name") or pf["pci_address"] for pf in nic_facts],
                                     "policy %s selects no PF on this node (PFs: %s)"
                                     % (name, ", ".join("%s %s %s" % (pf.get("name"), pf["pci_address"], pf.get("vendor_device"))
                                                        for pf in nic_facts) or "none")))
            continue
        for pf in hits:
            label = pf.get("name") or pf["pci_address"]
            if _pci(pf["pci_address"]) in covered:
                out.append(_mismatch(node, label, "nicSelector", name, None, covered[_pci(pf["pci_address"])],
                                     "selected by policy %s and by policy %s" % (name, covered[_pci(pf["pci_address"])])))
            covered[_pci(pf["pci_address"])] = name
            sriov = pf.get("sriov") or {}
            want = int(spec.get("numVfs") or 0)
            if not sriov.get("capable"):
                out.append(_mismatch(node, label, "numVfs", name, want, None,
                                     "policy %s wants %d VFs, SR-IOV is off in the firmware (layer 4)" % (name, want)))
            else:
                if want > (sriov.get("totalvfs") or 0):
                    out.append(_mismatch(node, label, "numVfs", name, want, sriov.get("totalvfs"),
                                         "policy %s wants %d VFs, sriov_totalvfs is %s" % (name, want, sriov.get("totalvfs"))))
                if want != (sriov.get("numvfs") or 0):
                    out.append(_mismatch(node, label, "numVfs", name, want, sriov.get("numvfs") or 0,
                                         "policy %s wants %d VFs, layer 6 configured %d (sriov_numvfs)"
                                         % (name, want, sriov.get("numvfs") or 0)))
            if spec.get("isRdma") and not pf.get("rdma_device"):
                out.append(_mismatch(node, label, "isRdma", name, True, None,
                                     "policy %s wants RDMA, the PF has no RDMA device (layer 5)" % name))
            lt = spec.get("linkType")
            if lt and pf.get("link_type") and lt.upper() != pf["link_type"].upper():
                out.append(_mismatch(node, label, "linkType", name, lt, pf["link_type"],
                                     "policy %s wants link type %s, the PF is %s" % (name, lt, pf["link_type"])))
            mtu = spec.get("mtu")
            if mtu and pf.get("mtu") and int(mtu) > int(pf["mtu"]):
                out.append(_mismatch(node, label, "mtu", name, mtu, pf["mtu"],
                                     "policy %s wants VF MTU %s, above the PF MTU %s (the operator refuses it)"
                                     % (name, mtu, pf["mtu"])))
            exp = expected.get(_pci(pf["pci_address"]))
            if nics is not None:
                if exp is None or not exp["resource"]:
                    out.append(_mismatch(node, label, "resourceName", name, spec.get("resourceName"), None,
                                         "policy %s selects a PF gpufabric_nics gives no resource" % name))
                elif exp["resource"] != spec.get("resourceName"):
                    out.append(_mismatch(node, label, "resourceName", name, spec.get("resourceName"), exp["resource"],
                                         "policy %s names the resource %s, the PF is rail %d%s: %s"
                                         % (name, spec.get("resourceName"), exp["rail"],
                                            "" if exp["gpu"] is None else " (GPU%d's NIC by the PCIe path)" % exp["gpu"],
                                            exp["resource"])))
    for pci, exp in sorted(expected.items()):
        if exp["resource"] and exp["num_vfs"] and pci not in covered:
            out.append(_mismatch(node, exp["name"] or pci, "policy", None, exp["resource"], None,
                                 "layer 6 gives it %d VFs as %s, but no policy selects it"
                                 % (exp["num_vfs"], exp["resource"])))
    return out


def rail_pairing_errors(host, planned, nics, nic_facts, reading):
    """Where the rails the policies give a node (``planned``: generate()'s
    rails of the host, from gpufabric_cabling) pair a PF with a GPU that
    reaches it only above a PCIe switch, by the node's PCIe path
    (``nic_facts`` nics and its ``pcie`` ``reading``): one text per such PF,
    naming the resource, the GPU and how it reaches the NIC. The GPU of a
    rail is the plan's ``gpu`` where it names one, else the GPU whose rail
    that number is on the node (the r-th GPU with a NIC of its own, which a
    plan in PCI order gives the r-th PF). Only PFs both the plan and the
    node have are compared; empty where the node's GPUs were not read."""
    rails = (reading or {}).get("rails") or []
    if not any(r.get("nic") for r in rails):
        return []
    found, _ = node_rails(host, nics, nic_facts, strict_vendor=True, rails=rails)
    have = set(r["pci_address"] for r in found if r["resource"])
    plan = [r for r in planned or [] if r["resource"] and r["pci_address"] in have]
    both = set(r["pci_address"] for r in plan)
    node_order = [r for r in found if r["pci_address"] in both]
    out = []
    for i, r in enumerate(plan):
        if r.get("gpu") is not None:
            gpu, said = r["gpu"], "gpufabric_cabling gives it GPU%d" % r["gpu"]
        else:
            gpu = node_order[i]["gpu"] if i < len(node_order) else None
            said = "gpufabric_cabling names no GPU for it, so PCI order makes it the rail of GPU%s" % gpu
        if gpu is None:
            continue
        problem = pcie.planned_gpu_problem(reading, r["pci_address"], gpu)
        if problem:
            name = r["name"] or r["pci_address"]
            out.append("%s: PF %s (%s) is %s (%s), but %s" % (host, name, r["pci_address"], r["resource"], said, problem))
    return out


def check_rdma_shared_config(config, node, nic_facts):
    """NVIDIA provider: every configList entry must select at least one PF
    of the node (vendor, device, netdev name)."""
    out = []
    for entry in (config or {}).get("configList", []):
        sel = entry.get("selectors") or {}
        hits = [pf for pf in nic_facts
                if (not sel.get("vendors") or pf.get("vendor") in sel["vendors"])
                and (not sel.get("deviceIDs") or pf.get("device") in sel["deviceIDs"])
                and (not sel.get("ifNames") or pf.get("name") in sel["ifNames"])]
        if not hits:
            out.append(_mismatch(node, "-", "selectors", entry.get("resourceName"), sel,
                                 [pf.get("name") for pf in nic_facts],
                                 "resource %s selects no PF on this node" % entry.get("resourceName")))
        for pf in hits:
            if not pf.get("rdma_device"):
                out.append(_mismatch(node, pf.get("name"), "selectors", entry.get("resourceName"), True, None,
                                     "resource %s: the PF has no RDMA device (layer 5)" % entry.get("resourceName")))
    return out
