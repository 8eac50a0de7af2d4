# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPUDirect RDMA on a node (layer 5): the way its NICs read and write GPU
memory, and why there is none.

Two ways, as NVIDIA's GPU Operator documentation ("GPUDirect RDMA and
GPUDirect Storage", its prerequisites table) and NCCL's IB transport
(``src/transport/net_ib/gdr.cc``) tell them apart:

- **DMA-BUF**: the NVIDIA driver's *open* kernel modules, Linux 5.12 or
  later (the kernel's RDMA DMA-BUF import); nothing more to load. NCCL
  probes it with a dummy ``ibv_reg_dmabuf_mr``.
- **nvidia-peermem**: the driver's ``nvidia_peermem`` module over an RDMA
  core that has the peer-memory API, which NVIDIA's MLNX_OFED / DOCA-OFED
  ``ib_core`` provides (and publishes as ``/sys/kernel/mm/memory_peers``,
  where NCCL looks for ``nv_mem``); the inbox ``ib_core`` has no such API.
  NCCL takes it as loaded when ``/sys/module/nvidia_peermem/version``
  exists.

How sysfs tells the rest, without a vendor tool:

- the GPUs: PCI functions of vendor ``0x10de`` in class ``0x03`` (display
  and 3D controllers);
- the driver: ``module/nvidia/version``; open or closed from
  ``module/nvidia/taint``: the kernel taints a module whose licence is not
  GPL-compatible with ``P`` (``kernel/module/main.c``,
  ``module_license_taint_check``); the closed driver declares
  ``MODULE_LICENSE("NVIDIA")``, the open one ``"Dual MIT/GPL"``;
- the kernel release: ``/proc/sys/kernel/osrelease``.

Plain standard-library Python; the PCI walk and the module list are
sysfs_nic's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic
from ansible_collections.gpufabric.stack.plugins.module_utils.host.sysfs_nic import _listdir, _read

MODES = ("auto", "dmabuf", "peermem", "off")
NVIDIA = "0x10de"
# the kernel's DMA-BUF import for RDMA memory regions
DMABUF_KERNEL = (5, 12)
PEERMEM = "nvidia_peermem"


def release_tuple(release):
    """``(major, minor)`` of a kernel release (``6.1.0-50-amd64``), or None."""
    m = re.match(r"^(\d+)\.(\d+)", release or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def gpus(sysfs_root="/sys"):
    """The node's NVIDIA GPUs: ``[{pci_address, device, numa_node}]`` in PCI order."""
    pci = "%s/bus/pci/devices" % sysfs_root
    return [{"pci_address": bdf, "device": (_read("%s/%s/device" % (pci, bdf)) or "").lower(),
             "numa_node": _read("%s/%s/numa_node" % (pci, bdf))}
            for bdf, vendor in sysfs_nic.pci_functions(sysfs_root, ("0x03",)) if vendor == NVIDIA]


def read(sysfs_root="/sys", proc_root="/proc"):
    """What GPUDirect RDMA depends on, as the node shows it."""
    loaded = sysfs_nic.modules(sysfs_root)
    module = "%s/module/nvidia" % sysfs_root
    taint = _read("%s/taint" % module) if "nvidia" in loaded else None
    return {
        "gpus": gpus(sysfs_root),
        "driver": {"loaded": "nvidia" in loaded, "version": _read("%s/version" % module) if "nvidia" in loaded else None,
                   "taint": taint, "open": None if taint is None else "P" not in taint},
        "peermem": {"loaded": PEERMEM in loaded, "version": _read("%s/module/%s/version" % (sysfs_root, PEERMEM))},
        # the peer-memory clients (nv_mem, ...); None where the directory is not there
        "memory_peers": _listdir("%s/kernel/mm/memory_peers" % sysfs_root)
        if "memory_peers" in _listdir("%s/kernel/mm" % sysfs_root) else None,
        "release": _read("%s/sys/kernel/osrelease" % proc_root),
    }


def plan(reading, want="auto", sysfs_root="/sys"):
    """The GPUDirect mode of a node from its ``read``: ``{applicable, mode,
    load, problems, evidence, reason}``. ``want`` is the intent (``auto``:
    DMA-BUF where the node has it, else nvidia-peermem); ``mode`` is
    ``dmabuf``, ``peermem``, ``off`` or None (none is possible, or the node
    has no NVIDIA GPU); ``modules`` the modules it needs at every boot,
    ``load`` those of them not loaded; ``problems``
    ``[{status, reason, fix}]``."""
    if want not in MODES:
        raise ValueError("gpufabric_gpudirect is %r: not one of %s" % (want, ", ".join(MODES)))
    gpus = reading.get("gpus") or []
    drv = reading.get("driver") or {}
    peer = reading.get("peermem") or {}
    release = reading.get("release")
    evidence = ["%d NVIDIA GPU(s): %s" % (len(gpus), ", ".join(g["pci_address"] for g in gpus))] if gpus else []
    out = {"applicable": bool(gpus), "mode": None, "modules": [], "load": [], "problems": [], "evidence": evidence,
           "reason": ""}
    if not gpus:
        out["reason"] = "no NVIDIA GPU on the node: GPUDirect RDMA not applicable"
        return out
    if want == "off":
        out.update(mode="off", reason="GPUDirect RDMA off by intent (gpufabric_gpudirect: off)")
        return out
    if not drv.get("loaded"):
        # the GPU Operator's driver container loads it only once the cluster
        # runs (layer 14 on): a warning here, layer 15's gate holds each rank
        out["problems"].append({
            "status": "warn", "reason": "the NVIDIA GPU driver is not loaded (no %s/module/nvidia): the GPUDirect RDMA "
                                        "mode is not known until it is" % sysfs_root,
            "fix": "Load the NVIDIA driver (installed on the host, or by the GPU Operator's driver container) and check "
                   "again; its open kernel modules give DMA-BUF."})
        out["reason"] = out["problems"][0]["reason"]
        return out
    kind = "open" if drv.get("open") else "closed"
    evidence.append("NVIDIA driver %s, %s kernel module (%s/module/nvidia/taint: %r)" % (
        drv.get("version") or "(no version)", kind, sysfs_root, drv.get("taint") or ""))
    evidence.append("kernel %s" % (release or "(release not read)"))
    mp = reading.get("memory_peers")
    if mp is not None:
        api = "%s/kernel/mm/memory_peers (%s)" % (sysfs_root, ", ".join(mp) or "no client")
    else:
        api = "none (no %s/kernel/mm/memory_peers)" % sysfs_root
    evidence.append("peer-memory API: %s" % api)
    evidence.append("%s: %s" % (PEERMEM, "loaded" if peer.get("loaded") else "not loaded"))
    rel = release_tuple(release)
    no_dmabuf = []
    if not drv.get("open"):
        no_dmabuf.append("the closed GPU kernel module (taint %r) has no DMA-BUF export" % (drv.get("taint") or ""))
    # a release that cannot be read is said in the evidence, not held against DMA-BUF
    if rel is not None and rel < DMABUF_KERNEL:
        no_dmabuf.append("kernel %s is older than %d.%d" % (release, DMABUF_KERNEL[0], DMABUF_KERNEL[1]))
    no_peermem = [] if mp is not None else [
        "the RDMA core has no peer-memory API (the inbox ib_core; nvidia-peermem needs DOCA-OFED or MLNX_OFED)"]
    mode = want
    if want == "auto":
        mode = "dmabuf" if not no_dmabuf else ("peermem" if not no_peermem else None)
    why = {"dmabuf": no_dmabuf, "peermem": no_peermem}
    if mode is None or why[mode]:
        reasons = why[mode] if mode else no_dmabuf + no_peermem
        out["problems"].append({
            "status": "fail",
            "reason": "no GPUDirect RDMA%s: %s" % ((" by %s" % name(mode)) if mode else "", "; ".join(reasons)),
            "fix": ("Install the NVIDIA driver's open kernel modules on a kernel of 5.12 or later (DMA-BUF), or "
                    "DOCA-OFED (rdma_drivers_flavor: doca) for nvidia-peermem; or set gpufabric_gpudirect: off "
                    "where the node needs none.")})
        out["reason"] = out["problems"][0]["reason"]
        return out
    out["mode"] = mode
    if mode == "peermem":
        out["modules"] = [PEERMEM]
        out["load"] = [] if peer.get("loaded") else [PEERMEM]
    out["reason"] = "GPUDirect RDMA by %s" % name(mode)
    return out


def name(mode):
    return {"dmabuf": "DMA-BUF", "peermem": "nvidia-peermem", "off": "nothing (off)"}.get(mode, str(mode))


def check(reading, want="auto", sysfs_root="/sys"):
    """``(status, reason, evidence, fix)`` of the node's GPUDirect RDMA as
    read: ``plan``'s problem, a module it needs that is not loaded, or the
    mode."""
    p = plan(reading, want, sysfs_root)
    if not p["applicable"]:
        return "pass", p["reason"], [], ""
    if p["problems"]:
        first = p["problems"][0]
        return first["status"], first["reason"], p["evidence"], first["fix"]
    if p["load"]:
        return ("fail", "GPUDirect RDMA by nvidia-peermem, and %s is not loaded" % PEERMEM, p["evidence"],
                "Run the rdma_drivers role (tag layer05); it loads %s and at every boot." % PEERMEM)
    return "pass", p["reason"], p["evidence"], ""
