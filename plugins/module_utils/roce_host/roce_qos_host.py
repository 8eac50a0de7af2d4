# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host side of the roce_qos module: select the PFs, read each one's
QoS through mlnx_qos, cma_roce_mode, cma_roce_tos and sysfs (DOCA-OFED's
tools) or through iproute2's dcb and the RDMA-CM configfs (upstream, where
mlnx-tools are absent), and (merged) set what differs and read again. nic_facts' qos reading runs the same
gathered read, so the doctor asks a node once. ``module`` is the running
AnsibleModule (run_command, get_bin_path, check_mode, warn, _diff)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos as Q
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov
from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic
from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware.mlx_tools import parse_mlxconfig_query

PF_SPEC = dict(
    name=dict(type="str"),
    pci_address=dict(type="str"),
    vendor_device=dict(type="str"),
    rdma_device=dict(type="str"),
)
TOOL_DIRS = ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin"]


class Host(object):
    """Runs the tools and sysfs reads and writes for one host."""

    def __init__(self, module, node, queries=None):
        self.module = module
        self.node = node
        self.bins = {}
        # {pci: output of `mlxconfig -d <pci> -e q`} this module run already has
        self.queries = dict(queries or {})

    def has(self, tool):
        if tool not in self.bins:
            self.bins[tool] = self.module.get_bin_path(tool, opt_dirs=TOOL_DIRS)
        return bool(self.bins[tool])

    def bin(self, tool):
        if not self.has(tool):
            hint = ("install mlnx-tools (DOCA-OFED ships it), or set qos_tool: dcb to use iproute2's dcb"
                    if tool in Q.TOOL_BINS["mlnx_qos"] else
                    "install iproute2 5.11 or later (it ships dcb)" if tool == "dcb" else "install iproute2")
            raise Q.RoceQosError("%s: %s not found on the host: %s" % (self.node, tool, hint))
        return self.bins[tool]

    def qos_tool(self, wanted):
        """``auto``: mlnx_qos where DOCA-OFED's mlnx-tools are installed, else dcb."""
        if wanted in (None, "auto"):
            return "mlnx_qos" if self.has("mlnx_qos") else "dcb"
        return wanted

    def mkdir(self, path, pf):
        try:
            os.mkdir(path)
        except (IOError, OSError) as exc:
            if exc.errno != errno.EEXIST:
                raise Q.RoceQosError("%s: %s: 'mkdir %s' failed: %s" % (self.node, pf, path, exc.strerror))

    def configfs(self, sysfs_root, dev, port, pf):
        """(default_roce_mode, default_roce_tos) of ``dev``'s port from the
        RDMA-CM configfs; the device's directory is made for the read when
        it is not there (as mlnx-tools' cma_roce_mode does) and removed again
        (the values live in the kernel's RDMA-CM device, not in configfs)."""
        d = Q.configfs_dir(sysfs_root, dev)
        parent = os.path.dirname(d)
        if not os.path.isdir(parent):
            raise Q.RoceQosError("%s: %s: %s is missing: load rdma_cm and mount configfs on %s (layer 5)"
                                 % (self.node, pf, parent, os.path.dirname(os.path.dirname(parent))))
        made = not os.path.isdir(d)
        if made:
            self.mkdir(d, pf)
        try:
            values = []
            for name in ("default_roce_mode", "default_roce_tos"):
                path = Q.configfs_port_path(sysfs_root, dev, port, name)
                try:
                    with open(path) as fh:
                        values.append(fh.read())
                except (IOError, OSError) as exc:
                    raise Q.RoceQosError("%s: %s: cannot read %s: %s" % (self.node, pf, path, exc.strerror))
            return tuple(values)
        finally:
            if made:
                try:
                    os.rmdir(d)
                except (IOError, OSError):
                    pass

    def run(self, argv, pf):
        rc, out, err = self.module.run_command([self.bin(argv[0])] + list(argv[1:]))
        if rc != 0:
            raise Q.RoceQosError("%s: %s: '%s' failed (rc %d): %s"
                                 % (self.node, pf, " ".join(argv), rc, (err.strip() or out.strip())[-500:]))
        return out

    def write(self, path, value, pf):
        try:
            sriov.write_sysfs(path, value)
        except (IOError, OSError) as exc:
            raise Q.RoceQosError("%s: %s: 'echo %s > %s' failed: %s" % (self.node, pf, value, path, exc.strerror))

    def firmware(self, pci):
        """Firmware ECN parameters of the inbox driver's PF, or None. A whole
        query of the PF this module run already made answers without a new
        one when it has the parameters."""
        if pci in self.queries:
            try:
                known = Q.firmware_ecn(parse_mlxconfig_query(self.queries[pci]))
            except ValueError:
                known = None
            if known is not None:
                return known
        for tool in ("mstconfig", "mlxconfig"):
            path = self.module.get_bin_path(tool, opt_dirs=TOOL_DIRS)
            if not path:
                continue
            rc, out, err = self.module.run_command([path, "-d", pci, "-e", "q"] + list(Q.FIRMWARE_PARAMS))
            if rc != 0:
                continue
            try:
                return Q.firmware_ecn(parse_mlxconfig_query(out))
            except ValueError:
                continue
        return None


def selection(node, sysfs_root, specs, found=None):
    """``{pfs, left_out, not_applicable, left_out_text}``: the PFs that
    ``specs`` select, those that are ConnectX (15b3) in ``pfs``, each with its
    netdev, Ethernet link and RDMA device or a failure naming the PF, and the
    others in ``left_out`` (sriov.vendor_selection): the host RoCE QoS tools
    (mlnx_qos, cma_roce_*) and the firmware ECN parameters are ConnectX's.
    ``found``: the sysfs_nic.discover answer of ``sysfs_root`` when the
    caller already has it."""
    if found is None:
        try:
            found = sysfs_nic.discover(sysfs_root)
        except sysfs_nic.SysfsError as exc:
            raise Q.RoceQosError("%s: %s" % (node, exc))
    if not specs:
        raise Q.RoceQosError("%s: pfs is empty: nothing selects a PF (the roce_host role takes them from "
                             "gpufabric_nics, the PFs of layers 4-6)" % node)
    hit, seen = [], set()
    for spec in specs:
        try:
            hits = sriov.select(found, spec)
        except sriov.SriovError as exc:
            raise Q.RoceQosError("%s: %s" % (node, exc))
        for pf in hits:
            if pf["pci_address"] not in seen:
                seen.add(pf["pci_address"])
                hit.append(pf)
    out = sriov.vendor_selection(hit)
    pfs = []
    for pf in out["pfs"]:
        label = sriov.pf_label(pf)
        if not pf["name"]:
            raise Q.RoceQosError("%s: %s has no netdev: no driver bound (layer 5)" % (node, label))
        if pf.get("link_type") not in (None, "ETH"):
            raise Q.RoceQosError("%s: %s is %s, not Ethernet: RoCE QoS applies to Ethernet ports "
                                 "(LINK_TYPE_P1, layer 4)" % (node, label, pf["link_type"]))
        if not pf.get("rdma_device"):
            raise Q.RoceQosError("%s: %s has no RDMA device: load mlx5_ib (layer 5)" % (node, label))
        pfs.append(pf)
    return dict(out, pfs=pfs)


def read_state(host, pf, p, tool="mlnx_qos"):
    name = pf["name"]
    dev = pf["rdma_device"]
    port = str(p["rdma_port"])
    if tool == "dcb":
        pfc = host.run(["dcb", "-N", "pfc", "show", "dev", name], name)
        app = host.run(["dcb", "-N", "app", "show", "dev", name], name)
        mode, tos = host.configfs(p["sysfs_root"], dev, port, name)
    else:
        qos = host.run(["mlnx_qos", "-i", name], name)
        mode = host.run(["cma_roce_mode", "-d", dev, "-p", port], name)
        tos = host.run(["cma_roce_tos", "-d", dev, "-p", port], name)
    ecn = Q.read_ecn_sysfs(p["sysfs_root"], name)
    driver = "ofed" if ecn is not None else "inbox"
    if ecn is None and p["firmware_query"]:
        ecn = host.firmware(pf["pci_address"])
    mtu = Q._int_or_none(Q._read(Q.netdev_path(p["sysfs_root"], name, "mtu")))
    try:
        if tool == "dcb":
            return Q.pf_state_dcb(pf, pfc, app, mode, tos, mtu, ecn, driver)
        return Q.pf_state(pf, qos, mode, tos, mtu, ecn, Q.read_trust_sysfs(p["sysfs_root"], name), driver)
    except ValueError as exc:
        raise Q.RoceQosError("%s: %s: %s" % (host.node, name, exc))


def pf_info(pf, state, want, tool="mlnx_qos"):
    ecn = state.get("ecn") or {}
    ofed = state["driver"] == "ofed"
    params = ecn.get("np_params_dir") or ""
    return {"name": pf["name"], "pci_address": pf["pci_address"], "rdma_device": pf["rdma_device"],
            "driver": state["driver"], "qos_tool": tool, "np_params_dir": params,
            "boot_lines": Q.boot_lines(want, ofed, params, tool) if want else []}


def online(module, p, found=None, queries=None):
    """The module's run on the host. ``found`` (the NICs of p's sysfs root)
    and ``queries`` (firmware queries by PCI address) are what a caller that
    read them already hands over, so that they are not read twice."""
    node = p["node"]
    want = Q.intent_of(dict(p, node=node))
    host = Host(module, node, queries)
    chosen = selection(node, p["sysfs_root"], p["pfs"], found)
    pfs = chosen["pfs"]
    scope = {"left_out": chosen["left_out"], "not_applicable": chosen["not_applicable"],
             "left_out_text": chosen["left_out_text"]}
    if not pfs:
        # no ConnectX among the selected PFs: nothing to read or set, no tool needed
        result = dict(scope, changed=False, commands=[], before={}, pfs=[])
        if want is None or p["state"] == "gathered":
            result["gathered"] = {}
        if want is not None:
            result.update(intent=Q.jsonable(want), drift=[], not_settable=[], notes=[])
            if p["state"] == "merged":
                result["after"] = {}
        return result
    # every tool the run needs is found before anything changes
    tool = host.qos_tool(p.get("qos_tool"))
    for name in Q.TOOL_BINS[tool]:
        host.bin(name)
    if p["state"] == "merged" and want["mtu"] is not None:
        host.bin("ip")
    before = dict((pf["name"], read_state(host, pf, p, tool)) for pf in pfs)
    result = dict(scope, changed=False, commands=[], before=_public(before, want), qos_tool=tool,
                  pfs=[pf_info(pf, before[pf["name"]], want, tool) for pf in pfs])
    if want is None:
        result["gathered"] = result["before"]
        return result
    result["intent"] = Q.jsonable(want)
    diffs = dict((name, Q.diff(st, want)) for name, st in before.items())
    result["drift"] = [d["text"] for name in diffs for d in diffs[name] if d["settable"]]
    result["not_settable"] = [d["text"] for name in diffs for d in diffs[name] if not d["settable"]]
    result["notes"] = [n for st in before.values() for n in Q.notes(st, want)]
    for text in result["not_settable"]:
        module.warn(not_settable_warning(node, text))
    if p["state"] == "gathered":
        result["gathered"] = result["before"]
        # what a converge would send, through this host's tool: the doctor's fix
        result["fix_commands"] = [
            c["text"] for pf in pfs
            for c in Q.render(before[pf["name"]], want, [d for d in diffs[pf["name"]] if d["settable"]],
                              p["sysfs_root"], p["rdma_port"], tool)] if result["drift"] else []
        return result
    plan = [(pf, Q.render(before[pf["name"]], want, diffs[pf["name"]], p["sysfs_root"], p["rdma_port"], tool))
            for pf in pfs]
    result["commands"] = [c["text"] for _, cmds in plan for c in cmds]
    result["changed"] = bool(result["commands"])
    if module.check_mode or not result["changed"]:
        after = dict((name, Q.predict(st, want, diffs[name])) for name, st in before.items())
    else:
        after = apply(host, pfs, plan, p, want, result, tool)
    result["after"] = _public(after, want)
    if module._diff and result["changed"]:
        result["diff"] = {"before": _diff_text(before, want), "after": _diff_text(after, want),
                          "before_header": "%s host QoS" % node, "after_header": "%s host QoS" % node}
    return result


def not_settable_warning(node, text):
    return "%s: %s cannot be set at run time by the inbox driver" % (node, text)


def merged_from_gathered(answer, node):
    """What a merged run of the module returns on a host whose gathered
    ``answer`` (the module's result with state gathered and a config, as
    nic_facts' qos option returns it) it was read from: the same PFs, state
    and notes, nothing to send, after as before, and the warnings the module
    gives; None when a merged run would do something or could not tell (the
    answer failed, has no intent, or drifts), so that the module runs."""
    if not isinstance(answer, dict) or answer.get("failed") or "intent" not in answer \
            or not isinstance(answer.get("drift"), list) or answer["drift"]:
        return None
    result = dict((k, v) for k, v in answer.items() if k not in ("gathered", "fix_commands", "changed", "failed",
                                                                 "msg", "invocation", "warnings"))
    result.update(changed=False, commands=[], after=dict(answer.get("before") or {}))
    warnings = [not_settable_warning(node, text) for text in answer.get("not_settable") or []]
    if warnings:
        result["warnings"] = warnings
    return result


def apply(host, pfs, plan, p, want, result, tool="mlnx_qos"):
    """Run the plan, read again; a second pass covers what the first made
    visible (the DSCP map appears once trust is dscp); fail on what is left."""
    for attempt in (1, 2):
        for pf, cmds in plan:
            for c in cmds:
                if "mkdir" in c:
                    host.mkdir(c["mkdir"], pf["name"])
                elif "write" in c:
                    host.write(c["write"], c["value"], pf["name"])
                else:
                    host.run(c["argv"], pf["name"])
        after = dict((pf["name"], read_state(host, pf, p, tool)) for pf in pfs)
        left = dict((name, [d for d in Q.diff(st, want) if d["settable"]]) for name, st in after.items())
        if not any(left.values()):
            return after
        if attempt == 2:
            raise Q.RoceQosError("%s: still different after applying: %s"
                                 % (host.node, "; ".join(d["text"] for ds in left.values() for d in ds)))
        plan = [(pf, Q.render(after[pf["name"]], want, left[pf["name"]], p["sysfs_root"], p["rdma_port"], tool))
                for pf in pfs]
        result["commands"] += [c["text"] for _, cmds in plan for c in cmds]
    return after


def _public(states, want):
    return dict((name, Q.public_state(st, want)) for name, st in states.items())


def _diff_text(states, want):
    return "".join(line + "\n" for name in sorted(states) for line in Q.summary_lines(states[name], want))
