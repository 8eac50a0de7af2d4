# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 5, the drivers: every selected PF bound to a driver, the RDMA
modules loaded, every selected ConnectX PF with an RDMA device. Reads the
node's nic_facts (nics, modules)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.module_utils import sriov
from ansible_collections.gpufabric.stack.plugins.module_utils.doctor import result


LAYER = 5
INTENT = ("rdma_drivers_nics", "rdma_drivers_modules", "rdma_drivers_sysfs_root", "rdma_drivers_vendor")


def reads(intent, host):
    return {"nic_facts": {"sysfs_root": intent["rdma_drivers_sysfs_root"]}}


def check(reading, intent, host):
    facts = reading.get("nic_facts") or {}
    nics = facts.get("nics") or []
    return check_rdma_drivers(sriov.selected_pfs(nics, intent.get("rdma_drivers_nics") or []), nics,
                              list(facts.get("modules") or []), list(intent.get("rdma_drivers_modules") or []),
                              intent["rdma_drivers_sysfs_root"], str(intent.get("rdma_drivers_vendor") or ""))


def check_rdma_drivers(pfs, nics, loaded, modules, sysfs_root="/sys", vendor=sriov.CONNECTX_VENDOR):
    """Layer 5: every selected PF (``pfs``, the nics gpufabric_nics selects)
    bound to a driver, the ``modules`` loaded (``loaded``: nic_facts'
    modules) and every selected PF of ``vendor`` (ConnectX, whose RDMA
    driver mlx5_ib this layer loads) with an RDMA device. A selected PF of
    another vendor (an igb has no RDMA engine) needs its driver only; the
    evidence names it."""
    kept, others = sriov.split_vendor(pfs, vendor)
    missing = [m for m in modules or [] if m not in (loaded or [])]
    unbound = [p["pci_address"] for p in pfs if p.get("driver") is None]
    no_rdma = [p["pci_address"] for p in kept if p.get("driver") is not None and not p.get("rdma_device")]
    fix = "Run the rdma_drivers role (tag layer05); it loads the modules and binds the PFs."
    if not pfs:
        return result(5, "fail", "no PF matches gpufabric_nics", [n["pci_address"] for n in nics or []],
                      "Fix the match entries of gpufabric_nics.")
    if unbound:
        return result(5, "fail", "PF %s has no driver bound" % unbound[0], ["%s: no driver" % a for a in unbound], fix)
    if missing:
        return result(5, "fail", "module %s not loaded" % missing[0],
                      ["%s/module/%s absent" % (sysfs_root, m) for m in missing], fix)
    if no_rdma:
        return result(5, "fail", "PF %s has no RDMA device" % no_rdma[0],
                      ["%s: driver bound, no infiniband/ entry" % a for a in no_rdma],
                      "Load mlx5_ib (rdma_drivers role); with DOCA-OFED check that its modules match the kernel.")
    evidence = ["%s %s" % (p["pci_address"], p.get("rdma_device")) for p in kept]
    evidence += ["%s (%s): driver %s bound, %s" % (p["pci_address"], p.get("vendor_device"), p.get("driver"),
                                                   "RDMA device %s" % p["rdma_device"] if p.get("rdma_device")
                                                   else "no RDMA device needed (not %s)" % vendor)
                 for p in others]
    reason = "modules loaded, every PF bound with an RDMA device"
    if others:
        reason = "modules loaded, every PF bound, every ConnectX with an RDMA device (%s)" % sriov.not_connectx(
            [sriov.left_out_entry(p) for p in others], vendor)
    return result(5, "pass", reason, evidence)
