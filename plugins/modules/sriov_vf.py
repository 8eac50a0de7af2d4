#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sriov_vf
short_description: Create SR-IOV virtual functions and set their MAC, VLAN, trust, spoof-check, link state, MTU and GUIDs
version_added: "0.1.0"
description:
  - Selects PFs by netdev name, PCI address or vendor:device and brings each to the wanted VF count and per-VF
    settings in one call for all PFs of a host.
  - "Follows the kernel's order of operations: C(sriov_numvfs) is written only when the count changes, 0 first
    and then N; the module waits until every VF has its C(physfn) link and netdev, then sets per-VF settings
    through the PF (C(ip link set dev <pf> vf N ...)) and VF MTUs."
  - Every value is checked before anything changes; a count above C(sriov_totalvfs), SR-IOV off in the NIC
    firmware, a PF without a bound driver and MMIO exhaustion (ENOMEM) are reported as different causes, naming
    the PF and the value.
  - Defaults are the safe ones for NICs shared by tenants, spoof-check on and trust off.
options:
  pfs:
    description: PF selections and the VF layout wanted on each.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Netdev name of the PF. Exactly one of I(name), I(pci_address), I(vendor_device).
        type: str
      pci_address:
        description: PCI address of the PF, for example C(0000:3b:00.0).
        type: str
      vendor_device:
        description: PCI vendor:device in hex, for example C(15b3:1021); selects every matching PF.
        type: str
      num_vfs:
        description: Number of VFs wanted. C(0) removes all VFs.
        type: int
        required: true
      vf_defaults:
        description: Settings applied to every VF unless I(vfs) overrides them.
        type: dict
        suboptions:
          trust: {description: Trust mode (lets the VF set promiscuous mode and change its MAC)., type: bool, default: false}
          spoofchk: {description: MAC spoof checking., type: bool, default: true}
          link_state: {description: VF link state policy., type: str, choices: [auto, enable, disable], default: auto}
          vlan: {description: VLAN tag the PF inserts (0 for none)., type: int}
          qos: {description: 802.1p priority with I(vlan)., type: int}
          max_tx_rate: {description: Maximum transmit rate in Mb/s (0 for unlimited)., type: int}
      vfs:
        description: Per-VF settings, by VF index.
        type: list
        elements: dict
        suboptions:
          index: {description: VF index (0 to num_vfs - 1)., type: int, required: true}
          mac: {description: Administrative MAC address., type: str}
          vlan: {description: VLAN tag., type: int}
          qos: {description: 802.1p priority., type: int}
          trust: {description: Trust mode., type: bool}
          spoofchk: {description: MAC spoof checking., type: bool}
          link_state: {description: Link state policy., type: str, choices: [auto, enable, disable]}
          node_guid: {description: IB node GUID (InfiniBand PFs only)., type: str}
          port_guid: {description: IB port GUID (InfiniBand PFs only)., type: str}
          max_tx_rate: {description: Maximum transmit rate in Mb/s., type: int}
          mtu: {description: MTU of this VF's netdev., type: int}
      vf_mtu:
        description: MTU of every VF netdev (a per-VF I(mtu) overrides it). Unset leaves MTUs alone.
        type: int
      vf_drivers:
        description:
          - The driver of VF ranges. VFs no entry names keep the kernel's VF driver (C(default)).
          - C(vfio-pci) hands the VFs to VMs (VFIO passthrough). Their MAC, VLAN, spoof-check and trust are set on
            the PF first; then C(driver_override) names vfio-pci, the VF leaves its driver and vfio-pci binds it.
            The PF stays on its driver. Before any change the module checks that an IOMMU is active and that
            vfio-pci is loaded or loadable (C(modprobe -D)); before a VF is handed over, that it is alone in its
            IOMMU group and that its netdev carries neither a default route nor a protected address.
        type: list
        elements: dict
        suboptions:
          vfs:
            description: VF indexes, a range like C(4-7) or C(0,2-3), or one index.
            type: raw
            required: true
          driver:
            description: C(default) (the kernel's VF driver) or C(vfio-pci).
            type: str
            required: true
            choices: [default, vfio-pci]
  sysfs_root:
    description: Where sysfs is mounted.
    type: path
    default: /sys
  wait_timeout:
    description: Seconds to wait for new VFs to get their physfn links and netdevs.
    type: int
    default: 120
  ip_command:
    description: The iproute2 C(ip) binary used to set per-VF settings through the PF.
    type: str
    default: ip
  nm_unmanaged_rule:
    description:
      - Path of a udev rule that marks every VF of the selected PFs C(NM_UNMANAGED), one line per VF matched on its
        PCI address (C(KERNELS)). It is written before the VFs are created, for the addresses the kernel will give
        them (the PF's C(sriov_offset) and C(sriov_stride)), and a running udevd reloads it, so NetworkManager never
        sees a VF without it. Written again, with the VFs announced again, if the VFs came up elsewhere.
      - Left alone when not set.
    type: path
  protected_addresses:
    description:
      - Addresses that must stay reachable (the management address the controller connects to). A VF whose netdev
        (or a bond or bridge it is enslaved to) holds one, or carries a default route, is never handed to
        vfio-pci; the module fails naming the VF, the netdev and the address or route. The server address of
        C(SSH_CONNECTION) is always protected when the module runs over SSH.
    type: list
    elements: str
    default: []
  passthrough_dir:
    description:
      - Where to write, for the hypervisor, the VFs handed to vfio-pci (C(vfs.json) with PCI address, IOMMU group, NUMA
        node, PF, VF index, MAC, VLAN and the GPUs nearby) and two snippets rendered from them,
        C(kubevirt-permitted-host-devices.yaml) and C(nova-pci.conf). Nothing is applied to KubeVirt or Nova.
      - Written when some VF is meant for vfio-pci or the directory exists already; left alone when not set.
    type: path
  modprobe_command:
    description: The kmod C(modprobe) binary, to check (C(-D)) and load vfio-pci.
    type: str
    default: modprobe
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpufabric.stack.boot_files
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
author:
  - gpufabric.stack maintainers (@gpufabric)
"""

EXAMPLES = r"""
- name: Eight VFs on every ConnectX-7 PF, tenant-safe defaults, jumbo MTU
  gpufabric.stack.sriov_vf:
    pfs:
      - vendor_device: "15b3:1021"
        num_vfs: 8
        vf_mtu: 9000

- name: A VF with a fixed MAC and VLAN on one PF
  gpufabric.stack.sriov_vf:
    pfs:
      - name: enp59s0f0np0
        num_vfs: 4
        vfs:
          - {index: 0, mac: "02:00:00:00:3b:00", vlan: 100, qos: 3}
"""

RETURN = r"""
passthrough:
  description: Per VF handed to vfio-pci, what a hypervisor needs to place a VM (as written to I(passthrough_dir)/vfs.json).
  returned: always
  type: list
  elements: dict
  sample: [{pci_address: "0000:01:10.4", vendor_device: "8086:10ca", pf: enp1s0, pf_pci_address: "0000:01:00.0",
            vf_index: 2, driver: vfio-pci, iommu_group: "17", iommu_group_devices: ["0000:01:10.4"], numa_node: 0,
            mac: "02:00:00:00:01:02", vlan: 0, gpus: []}]
pfs:
  description:
    - Per PF, the VF count before and after and the VFs with their settings.
    - C(boot_lines), the shell lines of the boot script that recreate this PF's layout (the role's
      C(sriov-vfs.sh) wraps them), built from the same steps as the run.
  returned: always
  type: list
  elements: dict
commands:
  description: The sysfs writes and ip commands run (or, in check mode, that would run).
  returned: always
  type: list
  elements: str
inspected:
  description: The files of I(inspect_files) (null when absent, else sha256, mode, owner, group) and whether each
    unit of I(inspect_units) is enabled, read before any change.
  returned: always
  type: dict
  sample: {files: {/etc/systemd/system/gpufabric-sriov.service: {sha256: "9f2c...", mode: "0644", owner: root,
           group: root}}, units: {gpufabric-sriov.service: true}}
"""

import ipaddress
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.stack.plugins.module_utils.host import host_files, sysfs_nic
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov, vfio_passthrough
from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check.rdma_tools import parse_ip_json_vfinfo

VF_DEFAULTS_SPEC = dict(
    trust=dict(type="bool", default=False),
    spoofchk=dict(type="bool", default=True),
    link_state=dict(type="str", choices=["auto", "enable", "disable"], default="auto"),
    vlan=dict(type="int"),
    qos=dict(type="int"),
    max_tx_rate=dict(type="int"),
)
VF_SPEC = dict(
    index=dict(type="int", required=True),
    mac=dict(type="str"),
    vlan=dict(type="int"),
    qos=dict(type="int"),
    trust=dict(type="bool"),
    spoofchk=dict(type="bool"),
    link_state=dict(type="str", choices=["auto", "enable", "disable"]),
    node_guid=dict(type="str"),
    port_guid=dict(type="str"),
    max_tx_rate=dict(type="int"),
    mtu=dict(type="int"),
)
PF_SPEC = dict(
    name=dict(type="str"),
    pci_address=dict(type="str"),
    vendor_device=dict(type="str"),
    num_vfs=dict(type="int", required=True),
    vf_defaults=dict(type="dict", options=VF_DEFAULTS_SPEC),
    vfs=dict(type="list", elements="dict", options=VF_SPEC),
    vf_mtu=dict(type="int"),
    vf_drivers=dict(type="list", elements="dict", options=dict(
        vfs=dict(type="raw", required=True),
        driver=dict(type="str", required=True, choices=list(sriov.VF_DRIVERS)),
    )),
)


class IpBackend(object):
    """Reads and sets per-VF settings through the PF with iproute2."""

    def __init__(self, module):
        self.module = module
        self.ip = module.get_bin_path(module.params["ip_command"], required=True) \
            if "/" not in module.params["ip_command"] else module.params["ip_command"]

    def get_vfs(self, pf_name):
        rc, out, err = self.module.run_command([self.ip, "-j", "link", "show", "dev", pf_name])
        if rc != 0:
            raise sriov.SriovError("pf %s: ip -j link show failed: %s" % (pf_name, err.strip()))
        return dict((v["vf"], v) for v in parse_ip_json_vfinfo(out))

    def set_vf(self, args):
        rc, out, err = self.module.run_command([self.ip] + args)
        if rc != 0:
            raise sriov.SriovError("%s failed: %s" % (" ".join(["ip"] + args), err.strip() or out.strip()))

    def _json(self, args):
        rc, out, err = self.module.run_command([self.ip, "-j"] + args)
        if rc != 0:
            raise sriov.SriovError("ip -j %s failed: %s" % (" ".join(args), err.strip()))
        try:
            return json.loads(out or "[]")
        except ValueError:
            raise sriov.SriovError("ip -j %s: not JSON: %r" % (" ".join(args), out[:200]))

    def carriers(self, protected):
        """{netdev: why} for the netdevs the host cannot lose (see sriov.carriers)."""
        routes = self._json(["route", "show", "default"]) + self._json(["-6", "route", "show", "default"])
        links = self._json(["addr", "show"])
        addrs = dict((link["ifname"], [a.get("local") for a in link.get("addr_info", []) if a.get("local")])
                     for link in links if link.get("ifname"))
        masters = dict((link["ifname"], link["master"]) for link in links if link.get("ifname") and link.get("master"))
        return sriov.carriers(addrs, [r["dev"] for r in routes if r.get("dev")], masters, protected)


def run(module, backend):
    p = module.params
    fs = sysfs_nic.Sysfs(p["sysfs_root"])
    pfs = sysfs_nic.discover(p["sysfs_root"])
    plan = sriov.build_plan(pfs, p["pfs"])
    commands, results, before, after = [], [], {}, {}
    changed = False
    vfio = Passthrough(module, fs, backend, plan)
    # 0. Before any change: VFs meant for VMs need an active IOMMU and a
    # vfio-pci that is loaded or loadable.
    vfio.check_host()
    rule = UdevRule(module, p["nm_unmanaged_rule"]) if p["nm_unmanaged_rule"] else None
    # 0. The NM_UNMANAGED rule first, for the addresses the VFs will get, so
    # that NetworkManager never sees a VF without it (written again below if
    # the kernel placed them elsewhere).
    if rule:
        changed |= rule.ensure([(pf, want["num_vfs"]) for pf, want in plan], commands, before, after)
    # 1. VF counts on every PF (the kernel's 0-then-N), then wait for the VFs.
    for pf, want in plan:
        label = pf["name"] or pf["pci_address"]
        have = pf["sriov"]["numvfs"] or 0
        if have != want["num_vfs"]:
            changed = True
            if module.check_mode:
                path = fs.pci(pf["pci_address"], "sriov_numvfs")
                commands += ["echo %d > %s" % (v, path) for v in ([0] if have else []) + ([want["num_vfs"]] if want["num_vfs"] else [])]
            else:
                sriov.set_numvfs(fs, pf, want["num_vfs"], commands)
        before[label] = {"num_vfs": have}
        after[label] = {"num_vfs": want["num_vfs"]}
    for pf, want in plan:
        label = pf["name"] or pf["pci_address"]
        num = want["num_vfs"]
        if num and not module.check_mode:
            autoprobe = pf["sriov"].get("drivers_autoprobe", True)
            vfs = sriov.wait_vfs(fs, pf, num, p["wait_timeout"], autoprobe=autoprobe)
        else:
            vfs = sysfs_nic.vf_list(fs, pf["pci_address"]) if pf["sriov"]["capable"] else []
        counts_match = (pf["sriov"]["numvfs"] or 0) == num
        current = backend.get_vfs(pf["name"]) if (num and pf["name"] and (counts_match or not module.check_mode)) else {}
        by_index = dict((v["index"], v) for v in vfs)
        vf_results, vf_before, vf_after = [], {}, {}
        # 2. Per-VF settings through the PF (for a VF handed to a VM too: the
        # PF enforces its MAC, VLAN, spoof-check and trust).
        for idx in range(num):
            desired = want["vfs"][idx]
            driver = want["drivers"][idx]
            cur = current.get(idx) or {}
            delta = sriov.vf_changes(cur, desired)
            if delta:
                changed = True
                args = sriov.ip_args(pf["name"], idx, delta)
                commands.append(" ".join(["ip"] + args))
                if not module.check_mode:
                    backend.set_vf(args)
            # 3. VF MTU on its netdev (a VF handed to a VM has none: the VM sets it).
            mtu = desired.get("mtu", want["vf_mtu"]) if driver != sriov.PASSTHROUGH_DRIVER else None
            info = by_index.get(idx, {})
            if mtu is not None and info.get("netdev") and info.get("mtu") != mtu:
                changed = True
                path = fs.netdev(info["netdev"], "mtu")
                commands.append("echo %d > %s" % (mtu, path))
                if not module.check_mode:
                    try:
                        sriov.write_sysfs(path, mtu)
                    except OSError as exc:
                        raise sriov.SriovError("%s: VF %d (%s): setting MTU %d failed: %s"
                                               % (sriov.pf_label(pf), idx, info["netdev"], mtu, exc.strerror))
            keys = [k for k in sriov.VF_KEYS if k in desired]
            vf_before[idx] = dict((k, cur.get(k)) for k in keys)
            vf_after[idx] = dict((k, desired[k]) for k in keys)
            if mtu is not None:
                vf_before[idx]["mtu"] = info.get("mtu")
                vf_after[idx]["mtu"] = mtu
            if driver != "default" or info.get("driver") == sriov.PASSTHROUGH_DRIVER:
                vf_before[idx]["driver"] = info.get("driver")
                vf_after[idx]["driver"] = driver
            vf_result = dict(index=idx, pci_address=info.get("pci_address"), netdev=info.get("netdev"),
                             rdma_device=info.get("rdma_device"), **vf_after[idx])
            vf_result["driver"] = driver
            vf_results.append(vf_result)
        before[label]["vfs"] = vf_before
        after[label]["vfs"] = vf_after
        # VFs not made yet (check mode) get the addresses the kernel will give them
        addresses = sriov.vf_addresses(pf, num) or []
        for vf_result in vf_results:
            if not vf_result.get("pci_address") and vf_result["index"] < len(addresses):
                vf_result["pci_address"] = addresses[vf_result["index"]]
        pf_result = dict(name=pf["name"], pci_address=pf["pci_address"], vendor_device=pf["vendor_device"],
                         num_vfs_before=pf["sriov"]["numvfs"] or 0, num_vfs=num, vfs=vf_results)
        # the boot script's lines for this PF, from the same steps as above
        pf_result["boot_lines"] = sriov.boot_lines(pf_result)
        results.append(pf_result)
    # 4. VF drivers: every move checked first (isolation, what the host
    # cannot lose), then made, VF by VF, in the kernel's order.
    changed |= vfio.bind(commands)
    if rule and not module.check_mode:
        changed |= rule.ensure([(pf, want["num_vfs"]) for pf, want in plan], commands, before, after,
                               created=dict((r["pci_address"], r["vfs"]) for r in results))
    changed |= vfio.write_inventory(commands)
    return changed, results, commands, before, after, vfio.records


class Passthrough(object):
    """VFs handed to VMs through vfio-pci: the host checks before any
    change, the driver moves, and the read a hypervisor places VMs by."""

    def __init__(self, module, fs, backend, plan):
        self.module = module
        self.fs = fs
        self.backend = backend
        self.plan = plan
        self.records = []
        self.wanted = [(pf, want, sriov.passthrough_indexes(want["drivers"])) for pf, want in plan]
        self.any = any(idx for _pf, _want, idx in self.wanted)

    def _driver_loaded(self):
        return os.path.isdir(self.fs.p("bus", "pci", "drivers", sriov.PASSTHROUGH_DRIVER))

    def check_host(self):
        if not self.any:
            return
        who = "; ".join("%s VF %s" % (sriov.pf_label(pf), sriov.index_ranges(idx)) for pf, _w, idx in self.wanted if idx)
        if not sysfs_nic.iommu_active(self.module.params["sysfs_root"]):
            raise sriov.SriovError(
                "%s: meant for VMs (vfio-pci), but no IOMMU is active (%s is empty): put intel_iommu=on or "
                "amd_iommu=on on the kernel command line and reboot (layer 3; iommu=pt alone does not isolate the "
                "VMs' devices)" % (who, self.fs.p("class", "iommu")))
        if self._driver_loaded():
            return
        rc, out, err = self.module.run_command([self._modprobe(), "-D", sriov.PASSTHROUGH_DRIVER])
        problem = sriov.modprobe_problem(sriov.PASSTHROUGH_DRIVER, rc, out, err)
        if problem:
            raise sriov.SriovError("%s: meant for VMs, but vfio-pci is not loaded and cannot be loaded: %s"
                                   % (who, problem))

    def _modprobe(self):
        cmd = self.module.params["modprobe_command"]
        return cmd if "/" in cmd else self.module.get_bin_path(cmd, required=True)

    def _protected(self):
        out = list(self.module.params["protected_addresses"] or [])
        conn = os.environ.get("SSH_CONNECTION", "").split()
        if len(conn) == 4:
            out.append(conn[2])
        norm = []
        for addr in out:
            try:
                norm.append(str(ipaddress.ip_address(addr.split("%")[0])))
            except ValueError:
                raise sriov.SriovError("protected_addresses: %r is not an IP address" % addr)
        return norm

    def bind(self, commands):
        moves, keep = [], []
        for pf, want, _idx in self.wanted:
            if not want["num_vfs"] or not pf["sriov"]["capable"]:
                continue
            label = sriov.pf_label(pf)
            for vf in sysfs_nic.vf_list(self.fs, pf["pci_address"]):
                driver = want["drivers"].get(vf["index"], "default")
                steps = sriov.bind_steps(self.fs, vf["pci_address"], vf["driver"], driver)
                if driver == sriov.PASSTHROUGH_DRIVER:
                    keep.append((pf, want, vf))
                if steps:
                    moves.append((label, pf, want, vf, driver, steps))
        if not moves and not keep:
            return False
        # Checked for every VF first: one that fails leaves all VFs where they are.
        to_vfio = [m for m in moves if m[4] == sriov.PASSTHROUGH_DRIVER]
        if to_vfio:
            lost = self.backend.carriers(self._protected())
            for label, _pf, _want, vf, _d, _s in to_vfio:
                if vf.get("netdev") in lost:
                    raise sriov.SriovError(
                        "%s: VF %d (%s, netdev %s) is not handed to vfio-pci: %s %s, and the host would lose it; "
                        "move that address or route off the VF first" % (
                            label, vf["index"], vf["pci_address"], vf["netdev"], vf["netdev"], lost[vf["netdev"]]))
        for pf, want, vf in keep:
            problem = vfio_passthrough.isolation_problem(
                vfio_passthrough.vf_record(self.fs, pf, vf, want["vfs"][vf["index"]]))
            if problem:
                raise sriov.SriovError("%s: %s" % (sriov.pf_label(pf), problem))
        if self.module.check_mode:
            if to_vfio and not self._driver_loaded():
                commands.append("modprobe %s" % sriov.PASSTHROUGH_DRIVER)
            for _l, _pf, _w, _vf, _d, steps in moves:
                commands += ["echo %s > %s" % (v, path) if v else "echo > %s" % path for path, v in steps]
            return bool(moves)
        if to_vfio and not self._driver_loaded():
            self.module.run_command([self._modprobe(), sriov.PASSTHROUGH_DRIVER], check_rc=True)
            commands.append("modprobe %s" % sriov.PASSTHROUGH_DRIVER)
        back = {}
        for label, pf, want, vf, driver, steps in moves:
            sriov.bind_vf(label, vf["index"], steps, commands)
            if driver != sriov.PASSTHROUGH_DRIVER:
                back[pf["pci_address"]] = (pf, want)
        for pf, want in back.values():  # VFs back on the kernel's driver: wait for their netdevs
            sriov.wait_vfs(self.fs, pf, want["num_vfs"], self.module.params["wait_timeout"],
                           autoprobe=pf["sriov"].get("drivers_autoprobe", True))
        return bool(moves)

    def write_inventory(self, commands):
        for pf, want, idx in self.wanted:
            if not idx or not pf["sriov"]["capable"]:
                continue
            for vf in sysfs_nic.vf_list(self.fs, pf["pci_address"]):
                if vf["index"] in idx:
                    self.records.append(vfio_passthrough.vf_record(self.fs, pf, vf, want["vfs"][vf["index"]]))
        where = self.module.params["passthrough_dir"]
        if not where or not (self.records or os.path.isdir(where)):
            return False
        host = os.uname()[1]
        files = [("vfs.json", vfio_passthrough.hypervisor_inventory(host, self.records)),
                 ("kubevirt-permitted-host-devices.yaml", vfio_passthrough.kubevirt_permitted_host_devices(self.records)),
                 ("nova-pci.conf", vfio_passthrough.nova_pci_device_spec(self.records))]
        changed = False
        for name, text in files:
            path = os.path.join(where, name)
            try:
                with open(path) as f:
                    same = f.read() == text
            except (IOError, OSError):
                same = False
            if same:
                continue
            changed = True
            commands.append("write %s (%d VF(s))" % (path, len(self.records)))
            if not self.module.check_mode:
                try:
                    sriov.write_file(path, text)
                except (IOError, OSError) as exc:
                    raise sriov.SriovError("%s: writing the passthrough inventory failed: %s" % (path, exc))
        return changed


class UdevRule(object):
    """The udev rule that keeps NetworkManager off the VFs, written by this
    module before it creates them (as the SR-IOV Network Operator does)."""

    def __init__(self, module, path):
        self.module = module
        self.path = path

    def ensure(self, plan, commands, before, after, created=None):
        """Write the rule for ``plan`` ([(pf, num_vfs)]): the addresses of VFs
        that exist (``created``, or sysfs when the count stays), else those the
        kernel will give them. True when the file changed."""
        entries, existing = [], []
        for pf, num in plan:
            if created is not None:
                vfs = created.get(pf["pci_address"], [])
            elif (pf["sriov"]["numvfs"] or 0) == num and num:
                vfs = sysfs_nic.vf_list(sysfs_nic.Sysfs(self.module.params["sysfs_root"]), pf["pci_address"])
            else:
                entries.append((sriov.pf_label(pf), sriov.vf_addresses(pf, num) or []))
                continue
            entries.append((sriov.pf_label(pf), [v["pci_address"] for v in vfs if v["pci_address"]]))
            existing += [v["netdev"] for v in vfs if v.get("netdev")]
        text = sriov.nm_unmanaged_rule(entries)
        try:
            with open(self.path) as f:
                old = f.read()
        except (IOError, OSError):
            old = None
        before.setdefault("udev_rule", (old or "").splitlines())
        after["udev_rule"] = text.splitlines()
        if old == text:
            return False
        commands.append("write %s (%d VF line(s))" % (self.path, sum(len(a) for _l, a in entries)))
        if self.module.check_mode:
            return True
        try:
            sriov.write_file(self.path, text)
        except (IOError, OSError) as exc:
            raise sriov.SriovError("%s: writing the NM_UNMANAGED udev rule failed: %s" % (self.path, exc))
        self.reload(existing)
        return True

    def reload(self, netdevs):
        """Have a running udevd read the rule, and announce the VF netdevs that
        exist already again (a change event), so that it applies to them."""
        if not os.path.exists("/run/udev/control"):
            return
        udevadm = self.module.get_bin_path("udevadm")
        if not udevadm:
            return
        self.module.run_command([udevadm, "control", "--reload"], check_rc=True)
        if netdevs:
            self.module.run_command([udevadm, "trigger", "--action=change"]
                                    + ["/sys/class/net/%s" % n for n in netdevs], check_rc=True)
            self.module.run_command([udevadm, "settle", "--timeout=30"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pfs=dict(type="list", elements="dict", required=True, options=PF_SPEC),
            sysfs_root=dict(type="path", default="/sys"),
            wait_timeout=dict(type="int", default=120),
            ip_command=dict(type="str", default="ip"),
            nm_unmanaged_rule=dict(type="path"),
            protected_addresses=dict(type="list", elements="str", default=[]),
            passthrough_dir=dict(type="path"),
            modprobe_command=dict(type="str", default="modprobe"),
            **host_files.INSPECT_ARGS
        ),
        supports_check_mode=True,
    )
    try:
        inspected = host_files.inspected(module)
        changed, results, commands, before, after, passthrough = run(module, IpBackend(module))
    except (sriov.SriovError, sysfs_nic.SysfsError, host_files.HostFilesError) as exc:
        module.fail_json(msg=str(exc))
    out = dict(changed=changed, pfs=results, commands=commands, inspected=inspected, passthrough=passthrough)
    if module._diff:
        out["diff"] = dict(before=json.dumps(before, indent=2, sort_keys=True) + "\n",
                           after=json.dumps(after, indent=2, sort_keys=True) + "\n")
    module.exit_json(**out)


if __name__ == "__main__":
    main()
