"""Faults of VM nodes, made the real way: on the guest's own files, services
and sysfs over SSH, on the machine through QMP (a cable pulled, the machine
paused), on the BIOS through the BMC and a power cycle.

``python -m simlab fault TARGET KIND --name LAB`` dispatches here for a lab
of ``--kind vm``.  As for the twin, *conditions* (a link down, a paused
machine) are undone by ``clear``; *misconfigurations* are changes an operator
could have made, which ``clear`` leaves for site.yml to repair (the install
rule of ``vfio-unloadable`` is cleared: no layer owns /etc/modprobe.d).
"""

from __future__ import annotations

import json
import shlex

from . import lab as vm_lab
from . import machine

# kind: (layer, what it does)
NODE_FAULTS = {
    "node-unreachable": (1, "the machine is paused (QMP stop): SSH and Redfish power state disagree"),
    "iommu-off": (3, "intel_iommu=on removed from GRUB's files, update-grub, reboot"),
    "driver-unbound": (5, "the first fabric PF unbound from igb"),
    "module-unloaded": (5, "the Soft-RoCE devices deleted and rdma_rxe unloaded"),
    "vfs-removed": (6, "0 written to sriov_numvfs of every fabric PF"),
    "vfs-lost-on-reboot": (6, "the VF persistence unit disabled, reboot"),
    "networkmanager-grabs-vfs": (6, "the NM_UNMANAGED udev rule removed and udev re-run on the VFs"),
    "vf-wrong-driver": (6, "the first VF on vfio-pci given back to igbvf (override cleared, unbind, drivers_probe)"),
    "vfio-unloadable": (6, "an install rule in /etc/modprobe.d replaces loading vfio-pci with /bin/false "
                           "(kmod then refuses it; clear removes the rule), and vfio_pci is unloaded when "
                           "nothing uses it (no device on vfio-pci, use count 0)"),
    "link-down": (9, "the first fabric PF's cable pulled (QMP set_link off)"),
}
BMC_FAULTS = {"bios-vtd-off": (2, "VT-d off in the BIOS, then a power cycle through the BMC: no IOMMU")}
PERSISTENCE_UNIT = "gpufabric-sriov.service"
VFIO_RULE = "/etc/modprobe.d/simlab-vfio-unloadable.conf"


class FaultError(ValueError):
    pass


def _faults_path(lab, node: str):
    return lab.dir / "nodes" / node / "faults.json"


def _record(lab, node: str, kind: str | None) -> dict:
    path = _faults_path(lab, node)
    faults = json.loads(path.read_text()) if path.exists() else {}
    if kind is None:
        faults = {}
    else:
        faults[kind] = True
    path.write_text(json.dumps(faults, indent=2) + "\n")
    return faults


def _sh(lab, node: str, script: str) -> str:
    return vm_lab.ssh(lab, node, "sh", "-ec", script).stdout


def _power_cycle(lab, node: str) -> None:
    """Off and on through the node's power driver, after the BMC's POST (as a
    Redfish ForceRestart does)."""
    from simlab.bmc import state

    from .power import QemuPowerDriver
    with state.update_bios(state.bios_path(lab.dir, node)) as d:
        state.apply_pending(d)
    QemuPowerDriver(lab.dir).restart(node, force=True)
    vm_lab.wait_ssh(lab, [node])


def inject(lab, target: str, kind: str) -> str:
    nodes = [hw["name"] for hw in lab.doc["nodes"]]
    node = target[:-4] if target.endswith("-bmc") else target
    if node not in nodes:
        raise FaultError(f"unknown target {target!r}: not a VM node or BMC of lab {lab.name} ({', '.join(nodes)})")
    if kind == "clear":
        return clear(lab, node)
    hw = vm_lab.node_doc(lab, node)
    pf = hw["nics"][0]
    if kind in BMC_FAULTS:
        if hw.get("bmc") == "sushy":
            raise FaultError(f"{target}: {kind} is a fault of the lab's own BMCs; {node}'s BMC is "
                             f"sushy-tools' emulator (set its BIOS through Redfish instead)")
        from simlab.bmc import faults as bmc_faults
        bmc_faults.inject(lab.dir, node, kind)
        _record(lab, node, kind)
        _power_cycle(lab, node)
        return f"{target}: {kind} (layer {BMC_FAULTS[kind][0]})"
    if kind not in NODE_FAULTS:
        known = ", ".join(sorted([*NODE_FAULTS, *BMC_FAULTS]))
        raise FaultError(f"{kind!r} is not a fault of VM nodes; they have: {known}, clear "
                         "(firmware, host QoS and NCCL faults are the twin's: ConnectX only; so is "
                         "iommu-shared-group: the emulated PCIe topology gives each VF its own group)")
    _record(lab, node, kind)
    if kind == "node-unreachable":
        with machine.qmp(lab.dir, node) as q:
            q.execute("stop")
    elif kind == "iommu-off":
        _sh(lab, node, "for f in /etc/default/grub /etc/default/grub.d/*.cfg; do [ -f \"$f\" ] && "
                       "sed -i -E 's/ ?(intel_iommu|amd_iommu)=on//g' \"$f\"; done; update-grub >/dev/null 2>&1")
        vm_lab.reboot(lab, node)
    elif kind == "driver-unbound":
        _sh(lab, node, f"echo {shlex.quote(pf['bdf'])} > /sys/bus/pci/drivers/igb/unbind")
    elif kind == "module-unloaded":
        _sh(lab, node, "for d in $(ls /sys/class/infiniband 2>/dev/null); do "
                       "case $d in rxe_*) rdma link delete \"$d\";; esac; done; modprobe -r rdma_rxe")
    elif kind == "vfs-removed":
        _sh(lab, node, "; ".join(f"echo 0 > /sys/bus/pci/devices/{n['bdf']}/sriov_numvfs" for n in hw["nics"]))
    elif kind == "vfs-lost-on-reboot":
        _sh(lab, node, f"systemctl disable -q {PERSISTENCE_UNIT} || true")
        vm_lab.reboot(lab, node)
    elif kind == "networkmanager-grabs-vfs":
        _sh(lab, node, "rm -f /etc/udev/rules.d/*gpufabric-nm-unmanaged*.rules; udevadm control --reload; "
                       "udevadm trigger --subsystem-match=net --action=change; udevadm settle")
    elif kind == "vf-wrong-driver":
        vfs = " ".join(f"/sys/bus/pci/devices/{n['bdf']}/virtfn*" for n in hw["nics"])
        out = _sh(lab, node, f"for v in {vfs}; do d=$(readlink -f $v); "
                             "[ \"$(basename $(readlink $d/driver 2>/dev/null) 2>/dev/null)\" = vfio-pci ] || continue; "
                             "b=$(basename $d); echo > $d/driver_override; echo $b > $d/driver/unbind; "
                             "echo $b > /sys/bus/pci/drivers_probe; echo $b; break; done")
        if not out.strip():
            raise FaultError(f"{node}: no VF is on vfio-pci (the inventory's vf_drivers, layer 6, bind some)")
    elif kind == "vfio-unloadable":
        _sh(lab, node, f"echo 'install vfio-pci /bin/false' > {VFIO_RULE}; "
                       "if [ -d /sys/module/vfio_pci ] && [ \"$(cat /sys/module/vfio_pci/refcnt)\" = 0 ] && "
                       "! ls /sys/bus/pci/drivers/vfio-pci | grep -q '^0000:'; then modprobe -r vfio_pci; fi")
    elif kind == "link-down":
        machine.set_link(lab.dir, node, pf["index"], up=False)
    return f"{target}: {kind} (layer {NODE_FAULTS[kind][0]})"


def clear(lab, node: str) -> str:
    """Undo the conditions (cable, pause, BMC reachability); configuration
    changes stay for site.yml to repair."""
    from simlab.bmc import faults as bmc_faults
    path = _faults_path(lab, node)
    faults = json.loads(path.read_text()) if path.exists() else {}
    bmc_faults.clear(lab.dir, node)
    if faults.get("node-unreachable"):
        with machine.qmp(lab.dir, node) as q:
            q.execute("cont")
    if faults.get("link-down"):
        for nic in vm_lab.node_doc(lab, node)["nics"]:
            machine.set_link(lab.dir, node, nic["index"], up=True)
    if faults.get("vfio-unloadable"):  # the collection writes no modprobe.d rule, so it removes none
        _sh(lab, node, f"rm -f {VFIO_RULE}")
    _record(lab, node, None)
    return f"{node}: faults cleared"
