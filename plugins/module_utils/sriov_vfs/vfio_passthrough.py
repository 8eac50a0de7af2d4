# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""VFs handed to tenant VMs through vfio-pci: what a hypervisor needs to
place a VM on them, read from sysfs, and the files rendered from that.

One record per passthrough VF (:func:`vf_record`): its PCI address and IDs,
its PF, its driver, its IOMMU group and the group's members, its NUMA node,
the MAC and VLAN the PF gives it, and the NVIDIA GPUs near it
(:func:`gpus_near`: below the same PCIe switch, or on the same NUMA node).
From the records: the host inventory (``vfs.json``,
:func:`hypervisor_inventory`), the KubeVirt CR fragment that permits the VFs
(:func:`kubevirt_permitted_host_devices`) and Nova's ``[pci]`` section
(:func:`nova_pci_device_spec`). :func:`isolation_problem` says why a VF
cannot be given to a VM on its own (an IOMMU group shared with other
devices, or no IOMMU at all).

Everything is read under a sysfs root (``/sys`` on a host, a tree in a
temporary directory in tests). Plain Python, no Ansible imports, no PyYAML.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic

GENERATED_BY = "gpufabric.stack.sriov_vf"
SCHEMA = 1
NVIDIA_VENDOR = "10de"
# PCI class codes (class/subclass) of a GPU: 0x0302 3D controller (the
# data-centre parts: H100, H200, B200), 0x0300 VGA compatible controller.
GPU_CLASSES = ("0x0302", "0x0300")
PCI_BRIDGE_CLASS = "0x0604"
RECORD_KEYS = ("pci_address", "vendor_device", "pf", "pf_pci_address", "vf_index", "driver", "iommu_group",
               "iommu_group_devices", "numa_node", "mac", "vlan", "gpus")
SHARES_SWITCH = "pcie_switch"
SHARES_NUMA = "numa_node"
ISOLATION_FIX = ("keep ACS redirect on above the NIC (no pci=disable_acs_redir= on the command line: "
                 "gpufabric_pcie_p2p isolate, layer 3), enable ACS on the upstream PCIe ports (BIOS, layer 2) or move "
                 "the NIC to another slot")
# A Kubernetes extended resource name is <DNS subdomain>/<name>, the name
# at most 63 characters of [A-Za-z0-9_.-] starting and ending alphanumeric.
DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
VENDOR_DEVICE_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{4}$")
# sysfs names of a PCI host bridge and of a PCI function (VMD domains have
# five hex digits: pci10000:00, 10000:01:00.0).
HOST_BRIDGE_RE = re.compile(r"^pci[0-9a-f]{4,}:[0-9a-f]{2}$")
PCI_FUNCTION_RE = re.compile(r"^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def _pci_id(value):
    """``0x10DE`` -> ``10de``; None for nothing."""
    if not value:
        return None
    value = value.strip().lower()
    return value[2:] if value.startswith("0x") else value


def vendor_device(fs, bdf):
    """``vvvv:dddd`` of a PCI function from its sysfs ``vendor`` and
    ``device`` files (lower case, as ``lspci -n`` prints it), or None."""
    vendor = _pci_id(sysfs_nic._read(fs.pci(bdf, "vendor")))
    device = _pci_id(sysfs_nic._read(fs.pci(bdf, "device")))
    if not vendor or not device:
        return None
    return "%s:%s" % (vendor, device)


def _numa(fs, bdf):
    return sysfs_nic._int(sysfs_nic._read(fs.pci(bdf, "numa_node")))


def vf_record(fs, pf, vf, settings):
    """The record of one VF handed to VMs.

    ``pf`` as :func:`sysfs_nic.pf_facts` returns it, ``vf`` as
    :func:`sysfs_nic.vf_list` returns it, ``settings`` the VF's wanted
    settings (mac, vlan, ...; any may be missing). The driver and the IOMMU
    group (``driver``, ``iommu_group``, ``iommu_group_devices``) are ``vf``'s,
    which vf_list read from sysfs; a key ``vf`` lacks is read from sysfs here.
    NUMA node and IDs are read from sysfs.

    - ``vendor_device``: the VF's own ``vendor``/``device`` files; when they
      cannot be read, the PF's vendor and its ``sriov_vf_device`` (the VF
      Device ID of the PF's SR-IOV capability, which every VF reports).
    - ``numa_node``: the VF's ``numa_node`` (-1, no node, kept as -1); when
      the VF has none, the PF's (a VF sits on its PF's bus and the kernel
      gives it its parent's node); None when neither can be read.
    - ``mac``: the MAC the inventory gives the VF, else the address of the
      VF's netdev when it has one (a VF on vfio-pci has none), else None.
    - ``vlan``: the VLAN the inventory gives the VF, 0 for none.
    """
    settings = settings or {}
    bdf = vf["pci_address"]
    vd = vendor_device(fs, bdf)
    if vd is None and pf.get("vendor") and (pf.get("sriov") or {}).get("vf_device"):
        vd = "%s:%s" % (_pci_id(pf["vendor"]), _pci_id(pf["sriov"]["vf_device"]))
    if "iommu_group" in vf:
        group = vf["iommu_group"] or None
        members = (vf.get("iommu_group_devices") or []) if group else []
    else:
        group = sysfs_nic._link_base(fs.pci(bdf, "iommu_group"))
        members = sysfs_nic._listdir(fs.p("kernel", "iommu_groups", group, "devices")) if group else []
    driver = vf["driver"] if "driver" in vf else sysfs_nic._link_base(fs.pci(bdf, "driver"))
    numa = _numa(fs, bdf)
    if numa is None:
        numa = pf.get("numa_node")
    mac = settings.get("mac")
    if not mac and vf.get("netdev"):
        mac = sysfs_nic._read(fs.netdev(vf["netdev"], "address"))
    vlan = settings.get("vlan")
    return {
        "pci_address": bdf,
        "vendor_device": vd,
        "pf": pf.get("name"),
        "pf_pci_address": pf["pci_address"],
        "vf_index": vf["index"],
        "driver": driver,
        "iommu_group": group,
        "iommu_group_devices": sorted(members),
        "numa_node": numa,
        "mac": str(mac).lower() if mac else None,
        "vlan": int(vlan) if vlan else 0,
        "gpus": gpus_near(fs, bdf, numa),
    }


def _position(fs, bdf):
    """The chain of devices from the PCI host bridge down to ``bdf``, from
    the real path of ``bus/pci/devices/<bdf>`` under ``devices/``:
    ``['pci0000:00', '0000:00:01.0', '0000:01:00.0', ...]``. A VF answers
    with its PF's chain (the VF is the PF's sibling below the same port)."""
    physfn = fs.pci(bdf, "physfn")
    path = os.path.realpath(physfn if os.path.exists(physfn) else fs.pci(bdf))
    top = os.path.realpath(fs.p("devices"))
    rel = os.path.relpath(path, top)
    if rel.startswith(".."):
        return []
    return rel.split(os.sep)


def _shares_switch(fs, chain_a, chain_b):
    """Whether two devices sit below the same PCIe switch: their chains
    (host bridge, root port, ...) have a common ancestor deeper than the
    root port that is a PCI bridge function (a switch's upstream or
    downstream port). The root port is the function right below the last
    host bridge of the chain (``pci0000:00``, or ``pci10000:00`` behind an
    Intel VMD endpoint)."""
    parents_a, parents_b = chain_a[:-1], chain_b[:-1]
    common = []
    for a, b in zip(parents_a, parents_b):
        if a != b:
            break
        common.append(a)
    hosts = [i for i, name in enumerate(common) if HOST_BRIDGE_RE.match(name)]
    if not hosts:
        return False
    top = fs.p("devices")
    for depth in range(len(common) - 1, hosts[-1] + 1, -1):
        if not PCI_FUNCTION_RE.match(common[depth]):
            continue
        cls = sysfs_nic._read(os.path.join(top, *(common[:depth + 1] + ["class"]))) or ""
        if cls.lower().startswith(PCI_BRIDGE_CLASS):
            return True
    return False


def _is_gpu(fs, bdf):
    vendor = _pci_id(sysfs_nic._read(fs.pci(bdf, "vendor")))
    cls = (sysfs_nic._read(fs.pci(bdf, "class")) or "").lower()
    if vendor != NVIDIA_VENDOR or not cls.startswith(GPU_CLASSES):
        return False
    # A GPU's own SR-IOV VFs (vGPU) are not GPUs of the host.
    return not os.path.exists(fs.pci(bdf, "physfn"))


def gpus_near(fs, bdf, numa_node):
    """The NVIDIA GPUs of the host that a VM given ``bdf`` should get with
    it, as ``[{pci_address, vendor_device, numa_node, shares}]``:

    - ``shares: pcie_switch``: the GPU and the device are below the same
      PCIe switch (peer-to-peer traffic, GPUDirect RDMA, stays in the
      switch);
    - ``shares: numa_node``: not, but the GPU is on the device's NUMA node
      (``numa_node``, when it is >= 0).

    GPUs that share neither are left out. Sorted: pcie_switch first, then
    by PCI address. Empty when the host has no NVIDIA GPU."""
    here = _position(fs, bdf)
    out = []
    for gpu in sysfs_nic._listdir(fs.p("bus", "pci", "devices")):
        if gpu == bdf or not _is_gpu(fs, gpu):
            continue
        gpu_numa = _numa(fs, gpu)
        if here and _shares_switch(fs, here, _position(fs, gpu)):
            shares = SHARES_SWITCH
        elif numa_node is not None and numa_node >= 0 and gpu_numa == numa_node:
            shares = SHARES_NUMA
        else:
            continue
        out.append({"pci_address": gpu, "vendor_device": vendor_device(fs, gpu), "numa_node": gpu_numa,
                    "shares": shares})
    out.sort(key=lambda g: (g["shares"] != SHARES_SWITCH, g["pci_address"]))
    return out


def _vf_label(record):
    return "VF %s (pf %s VF %s)" % (record["pci_address"], record.get("pf") or record.get("pf_pci_address"),
                                    record.get("vf_index"))


def isolation_problem(record):
    """None when the VF of ``record`` is alone in its IOMMU group, so that
    VFIO can hand it to a VM by itself; else why not, and the fix."""
    if not record.get("iommu_group"):
        return ("%s has no IOMMU group: the IOMMU is off, and vfio-pci takes no device without one; put "
                "intel_iommu=on or amd_iommu=on on the kernel command line (layer 3) and reboot (iommu=pt alone "
                "does not turn it on)" % _vf_label(record))
    others = [m for m in record.get("iommu_group_devices") or [] if m != record["pci_address"]]
    if not others:
        return None
    return ("%s shares IOMMU group %s with %s, so a VM given it could reach them: %s"
            % (_vf_label(record), record["iommu_group"], ", ".join(sorted(others)), ISOLATION_FIX))


def hypervisor_inventory(host, records):
    """``vfs.json``: the host's passthrough VFs, for the hypervisor or VMaaS
    that places VMs. JSON, sorted keys, indent 2, a trailing newline."""
    doc = {
        "host": host,
        "generated_by": GENERATED_BY,
        "schema": SCHEMA,
        "vfs": sorted(records, key=lambda r: r["pci_address"]),
    }
    return json.dumps(doc, sort_keys=True, indent=2, separators=(",", ": ")) + "\n"


def resource_name(vd, resource_prefix="gpufabric.io"):
    """The Kubernetes extended resource KubeVirt's device plugin offers the
    VFs of one vendor:device under: ``<prefix>/vfio_<vendor>_<device>``
    (``gpufabric.io/vfio_15b3_101e``). Derived from the IDs only, so every
    host with the same VFs names the same resource; a VM asks for it in
    ``spec.domain.devices.hostDevices[].deviceName``."""
    if not isinstance(resource_prefix, str) or len(resource_prefix) > 253 \
            or not DNS_SUBDOMAIN_RE.match(resource_prefix):
        raise ValueError("resource_prefix %r is not a DNS subdomain like gpufabric.io" % (resource_prefix,))
    if not vd or not VENDOR_DEVICE_RE.match(vd):
        raise ValueError("vendor_device %r is not like 15b3:101e" % (vd,))
    return "%s/vfio_%s" % (resource_prefix, vd.replace(":", "_"))


def _yaml_scalar(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    # A JSON string is a YAML double-quoted scalar: always a string, never
    # read as a number, boolean or null, escapes included.
    return json.dumps(str(value))


def _yaml_lines(value, indent):
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return [pad + "{}"]
        lines = []
        for key in value:
            item = value[key]
            head = "%s%s:" % (pad, _yaml_scalar(key) if not re.match(r"^[A-Za-z][A-Za-z0-9_]*$", key) else key)
            if isinstance(item, (dict, list)) and item:
                lines.append(head)
                lines += _yaml_lines(item, indent + 2)
            else:
                lines.append("%s %s" % (head, _yaml_flow_empty(item)))
        return lines
    if isinstance(value, list):
        if not value:
            return [pad + "[]"]
        lines = []
        for item in value:
            sub = _yaml_lines(item, indent + 2) if isinstance(item, (dict, list)) and item \
                else [pad + "  " + _yaml_flow_empty(item)]
            lines.append(pad + "- " + sub[0][indent + 2:])
            lines += sub[1:]
        return lines
    return [pad + _yaml_scalar(value)]


def _yaml_flow_empty(value):
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _yaml_scalar(value)


def to_yaml(value):
    """Block-style YAML of plain data (dicts in their order, lists, str, int,
    bool, None), strings always double-quoted."""
    return "\n".join(_yaml_lines(value, 0)) + "\n"


def kubevirt_permitted_host_devices(records, resource_prefix="gpufabric.io"):
    """The KubeVirt CR fragment that permits the VFs: one
    ``spec.configuration.permittedHostDevices.pciHostDevices`` entry per
    distinct VF vendor:device, ``pciVendorSelector`` in lower case as the
    kernel's ``PCI_ID`` (which virt-handler matches it against),
    ``resourceName`` from :func:`resource_name`, ``externalResourceProvider:
    false`` (KubeVirt's own device plugin offers the VFs bound to vfio-pci).
    YAML text, sorted by selector."""
    selectors = sorted(set(r["vendor_device"] for r in records if r.get("vendor_device")))
    entries = [{"pciVendorSelector": vd, "resourceName": resource_name(vd, resource_prefix),
                "externalResourceProvider": False} for vd in selectors]
    doc = {"spec": {"configuration": {"permittedHostDevices": {"pciHostDevices": entries}}}}
    head = ("# Generated by %s: merge into the KubeVirt CR (spec.configuration); nothing here is applied.\n"
            "# VMs ask for a resourceName in spec.domain.devices.hostDevices[].deviceName, which needs\n"
            "# the HostDevices feature gate. KubeVirt's device plugin offers only the VFs bound to vfio-pci.\n" % GENERATED_BY)
    return head + to_yaml(doc)


def nova_device_spec(record, physical_network=None, managed=None):
    """One ``[pci]device_spec`` value (a dict) selecting the VF of
    ``record`` by its exact address and its vendor and product IDs."""
    spec = {"address": record["pci_address"]}
    if record.get("vendor_device"):
        vendor, product = record["vendor_device"].split(":", 1)
        spec.update(vendor_id=vendor, product_id=product)
    if physical_network:
        spec["physical_network"] = str(physical_network)
    if managed is not None:
        spec["managed"] = "yes" if managed else "no"
    return spec


def nova_pci_device_spec(records, physical_network=None, managed=None):
    """Nova's ``[pci]`` section for the VFs: one ``device_spec = {...}``
    line (JSON) per VF, sorted by address, with ``physical_network`` when
    given (a Neutron SR-IOV port on that network may then use the VF).
    ``managed`` (True/False) adds the ``managed`` tag (Nova 2025.1 and
    later); ``managed=False`` tells Nova not to have libvirt detach the VF
    from the host and re-attach it after the VM: it is on vfio-pci already,
    and re-attaching would hand it back to the kernel's VF driver."""
    lines = [
        "# Generated by %s: the VFs this host hands to VMs (vfio-pci); nothing here is applied." % GENERATED_BY,
        "# Nova 26.0.0 (Zed) renamed [pci]passthrough_whitelist to [pci]device_spec: use passthrough_whitelist",
        "# before Zed; later releases still read it as a deprecated alias. Merge into this host's nova.conf.",
        "[pci]",
    ]
    for record in sorted(records, key=lambda r: r["pci_address"]):
        spec = nova_device_spec(record, physical_network, managed)
        lines.append("device_spec = %s" % json.dumps(spec, sort_keys=True, separators=(", ", ": ")))
    return "\n".join(lines) + "\n"
