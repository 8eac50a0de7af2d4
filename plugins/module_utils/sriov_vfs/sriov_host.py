# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sriov_vf module's run on a host: the VF counts, per-VF settings,
VF MTUs, VF drivers (vfio-pci for VMs), the NM_UNMANAGED udev rule and the
passthrough inventory, each compared and changed in the kernel's order.
The module (plugins/modules/sriov_vf.py) runs it; nic_facts runs it in check
mode (``planned``) so that the play's reading of the node says what the
module would do (its ``vfs`` option), and the sriov_vf action answers a run
that would change nothing from that reading."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import json
import os

from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic
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
# the module's options but its sysfs root and the boot files it inspects
OPTIONS = dict(
    pfs=dict(type="list", elements="dict", required=True, options=PF_SPEC),
    wait_timeout=dict(type="int", default=120),
    ip_command=dict(type="str", default="ip"),
    nm_unmanaged_rule=dict(type="path"),
    protected_addresses=dict(type="list", elements="str", default=[]),
    passthrough_dir=dict(type="path"),
    modprobe_command=dict(type="str", default="modprobe"),
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


class KnownVfs(object):
    """A backend whose per-VF settings of some PFs were read already
    (``known``: {pf: {index: vf}}, as nic_facts' vf_settings has them, the
    same ``ip -j link show`` parse); the rest goes to ``backend``."""

    def __init__(self, backend, known):
        self.backend, self.known = backend, known or {}

    def get_vfs(self, pf_name):
        if pf_name in self.known:
            return dict((int(k), v) for k, v in self.known[pf_name].items())
        return self.backend.get_vfs(pf_name)

    def set_vf(self, args):
        return self.backend.set_vf(args)

    def carriers(self, protected):
        return self.backend.carriers(protected)


def run(module, backend, found=None):
    """The module's run: (changed, pfs, commands, before, after,
    passthrough). ``found``: the NICs of the sysfs root as a caller that
    read them already hands them over (nic_facts), not read again."""
    p = module.params
    fs = sysfs_nic.Sysfs(p["sysfs_root"])
    pfs = sysfs_nic.discover(p["sysfs_root"]) if found is None else found
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
                args = sriov.ip_args(pf["name"], idx, sriov.vf_settings_to_send(desired, delta))
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


class CheckOnly(object):
    """What run() needs of an AnsibleModule, in check mode with ``params``
    (the sriov_vf module's options): the calls go to ``module`` (nic_facts'),
    and a tool that is not found raises SriovError where the module would
    fail, so that the reading goes on and says why."""
    check_mode = True
    _diff = False

    def __init__(self, module, params):
        self._module, self.params = module, params

    def run_command(self, *args, **kwargs):
        return self._module.run_command(*args, **kwargs)

    def get_bin_path(self, tool, required=False, opt_dirs=None):
        found = self._module.get_bin_path(tool, required=False, opt_dirs=opt_dirs)
        if required and not found:
            raise sriov.SriovError("%s not found on the host" % tool)
        return found

    def warn(self, msg):
        self._module.warn(msg)


def planned(module, params, backend=IpBackend, found=None):
    """What a run of the sriov_vf module with ``params`` (its options,
    validated, with the sysfs root) would do on this host, by its own run in
    check mode: {changed, pfs, commands, passthrough} as the module returns
    them, or {failed, msg} when it would fail (it then fails on its own).
    ``backend`` makes the per-VF reader from the module (IpBackend: ip);
    ``found``: the NICs already read (nic_facts'), as run() takes them."""
    check = CheckOnly(module, params)
    try:
        changed, results, commands, _before, _after, passthrough = run(check, backend(check), found)
    except (sriov.SriovError, sysfs_nic.SysfsError, ValueError) as exc:
        return {"failed": True, "msg": str(exc)}
    return {"changed": changed, "pfs": results, "commands": commands, "passthrough": passthrough}
