# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 5, the drivers: every selected PF bound to a driver, the RDMA
modules loaded, every selected ConnectX PF with an RDMA device, and the driver
stack (inbox or DOCA-OFED) the intended one and not a mix, and GPUDirect RDMA
on a node with NVIDIA GPUs (its mode, or why there is none). Reads the
node's nic_facts (nics, modules, stack, gpudirect, pcie: each GPU's rail)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.module_utils.host import pcie
from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_drivers import driver_stack, gpudirect
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov
from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import result


LAYER = 5
INTENT = ("rdma_drivers_nics", "rdma_drivers_modules", "rdma_drivers_sysfs_root", "rdma_drivers_vendor",
          "rdma_drivers_pf_driver", "rdma_drivers_flavor", "rdma_drivers_gpudirect")


def stack_options(intent):
    """nic_facts' ``stack`` option of this intent (the role reads the same)."""
    return {"module": intent["rdma_drivers_pf_driver"], "flavor": intent["rdma_drivers_flavor"]}


def reads(intent, host):
    return {"nic_facts": {"sysfs_root": intent["rdma_drivers_sysfs_root"], "stack": stack_options(intent),
                          "gpudirect": {"mode": intent["rdma_drivers_gpudirect"]}, "pcie": {"topo": True}}}


def check(reading, intent, host):
    facts = reading.get("nic_facts") or {}
    nics = facts.get("nics") or []
    drivers = check_rdma_drivers(sriov.selected_pfs(nics, intent.get("rdma_drivers_nics") or []), nics,
                                 list(facts.get("modules") or []), list(intent.get("rdma_drivers_modules") or []),
                                 intent["rdma_drivers_sysfs_root"], str(intent.get("rdma_drivers_vendor") or ""),
                                 stack=facts.get("stack"))
    if drivers["status"] != "pass" or facts.get("gpudirect") is None:
        return drivers
    return with_gpudirect(drivers, facts["gpudirect"], intent["rdma_drivers_gpudirect"], intent["rdma_drivers_sysfs_root"],
                          facts.get("pcie"))


def with_gpudirect(drivers, reading, want, sysfs_root="/sys", path=None):
    """Layer 5's verdict with the node's GPUDirect RDMA: its mode (or that
    the node has no NVIDIA GPU) and every GPU's rail (``path``: nic_facts'
    pcie reading) join the reason and evidence of a passing layer; no way to
    it, or nvidia_peermem not loaded where it is the way, fails the layer
    naming why; nvidia-smi's matrix disagreeing with the sysfs path, or a
    GPU whose nearest NIC is across the socket, warns."""
    status, reason, evidence, fix = gpudirect.check(reading, want, sysfs_root)
    rails = (path or {}).get("rails") or []
    evidence = ["GPUDirect: %s" % e for e in evidence] + ["rail: %s" % pcie.rail_text(r) for r in rails] \
        + list(drivers.get("evidence") or [])
    if status != "pass":
        return result(5, status, reason, evidence, fix)
    topo = (path or {}).get("topo") or {}
    if topo.get("disagree"):
        d = topo["disagree"][0]
        return result(5, "warn", "nvidia-smi topo -m and sysfs disagree on GPU%d %s to %s: %s by nvidia-smi, %s by "
                      "the PCIe path in sysfs" % (d["index"], d["gpu"], d["rdma"], d["nvidia_smi"], d["sysfs"]),
                      evidence + ["disagree: GPU%d %s: nvidia-smi %s, sysfs %s"
                                  % (x["index"], x["rdma"], x["nvidia_smi"], x["sysfs"]) for x in topo["disagree"]],
                      "Compare %s/bus/pci/devices/<GPU> and <NIC> (their paths) with nvidia-smi topo -m; a "
                      "virtual machine's or a driver's view of the bus may differ from the host's." % sysfs_root)
    if topo.get("error"):
        evidence.append("nvidia-smi topo -m not read: %s" % topo["error"])
    far = [r for r in rails if not r["nic"] and (r.get("nearest") or {}).get("kind") == "SYS"]
    if far and rails and all(not r["nic"] for r in rails):
        return result(5, "warn", "no GPU has a NIC on its own socket: GPU%d %s reaches its nearest NIC %s across "
                      "the socket interconnect (SYS)" % (far[0]["index"], far[0]["gpu"], far[0]["nearest"]["nic"]),
                      evidence, "Put the NICs in the slots of the GPUs' PCIe switches (the server's GPU/NIC "
                                "pairing), or accept traffic through host memory.")
    if rails:
        own = len([r for r in rails if r["nic"]])
        reason += "; %d of %d GPU(s) with a NIC below their PCIe switch" % (own, len(rails))
    return result(5, "pass", "%s; %s" % (drivers["reason"], reason), evidence)


def check_rdma_drivers(pfs, nics, loaded, modules, sysfs_root="/sys", vendor=sriov.CONNECTX_VENDOR, stack=None):
    """Layer 5: every selected PF (``pfs``, the nics gpufabric_nics selects)
    bound to a driver, the ``modules`` loaded (``loaded``: nic_facts'
    modules) and every selected PF of ``vendor`` (ConnectX, whose RDMA
    driver mlx5_ib this layer loads) with an RDMA device. A selected PF of
    another vendor (an igb has no RDMA engine) needs its driver only; the
    evidence names it."""
    kept, others = sriov.split_vendor(pfs, vendor)
    found = []
    if stack and stack.get("failed"):
        return result(5, "fail", "the driver stack cannot be read", [stack.get("msg") or ""],
                      "Fix what the message names (modinfo and ofed_info must print what they print upstream).")
    if stack:
        found = ["stack: %s" % driver_stack.describe(stack)]
    missing = [m for m in modules or [] if m not in (loaded or [])]
    unbound = [p["pci_address"] for p in pfs if p.get("driver") is None]
    no_rdma = [p["pci_address"] for p in kept if p.get("driver") is not None and not p.get("rdma_device")]
    fix = "Run the rdma_drivers role (tag layer05); it loads the modules and binds the PFs."
    if not pfs:
        return result(5, "fail", "no PF matches gpufabric_nics", [n["pci_address"] for n in nics or []],
                      "Fix the match entries of gpufabric_nics.")
    if unbound:
        return result(5, "fail", "PF %s has no driver bound" % unbound[0],
                      ["%s: no driver" % a for a in unbound] + found, fix)
    if missing:
        return result(5, "fail", "module %s not loaded" % missing[0],
                      ["%s/module/%s absent" % (sysfs_root, m) for m in missing] + found, fix)
    if no_rdma:
        return result(5, "fail", "PF %s has no RDMA device" % no_rdma[0],
                      ["%s: driver bound, no infiniband/ entry" % a for a in no_rdma] + found,
                      "Load mlx5_ib (rdma_drivers role); with DOCA-OFED check that its modules match the kernel.")
    problems = (stack or {}).get("problems") or []
    for status in ("fail", "warn"):
        first = [p for p in problems if p["status"] == status]
        if first:
            return result(5, status, first[0]["reason"], found + ["%s: %s" % (p["status"], p["reason"]) for p in problems],
                          " ".join(p["fix"] for p in first))
    evidence = found + ["%s %s" % (p["pci_address"], p.get("rdma_device")) for p in kept]
    evidence += ["%s (%s): driver %s bound, %s" % (p["pci_address"], p.get("vendor_device"), p.get("driver"),
                                                   "RDMA device %s" % p["rdma_device"] if p.get("rdma_device")
                                                   else "no RDMA device needed (not %s)" % vendor)
                 for p in others]
    reason = "modules loaded, every PF bound with an RDMA device"
    if others:
        reason = "modules loaded, every PF bound, every ConnectX with an RDMA device (%s)" % sriov.not_connectx(
            [sriov.left_out_entry(p) for p in others], vendor)
    if stack and stack.get("stack"):
        reason += "; %s stack" % ("DOCA-OFED" if stack["stack"] == "ofed" else "inbox")
    return result(5, "pass", reason, evidence)
