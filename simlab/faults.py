"""Faults a twin rack can be given, by target (the inventory host name of a
node, a switch or a BMC).

Two kinds behave differently under ``clear``:

* *Conditions* of the environment (a link down, an unreachable BMC or node, a
  board short of MMIO, a switch that rejects a command or drops SSH, NCCL
  falling back to sockets, a PF sharing its IOMMU group with its VFs, an
  install rule that keeps vfio-pci from loading, DOCA-OFED's userspace left
  over inbox modules): ``clear`` removes them.
* *Misconfigurations* (SR-IOV or VT-d switched off in BIOS or firmware, a
  pending firmware change, the IOMMU flag gone from GRUB, the VF persistence
  unit disabled, NetworkManager let onto the VFs, PFC changed on a host or a
  switch, a switch's PFC watchdog or global PFC switched off, switch MTU
  lowered, a PF unbound from its driver, a VF meant for VMs given back to
  mlx5_core): the injection
  changes configuration the way an operator would have; ``clear`` forgets the
  fault record but does not undo the change.  Converging with site.yml repairs
  it, which is the point.

Each fault, its layer and what the doctor reports for it are listed in
docs/simlab.md and docs/troubleshooting.md.
"""

from __future__ import annotations

import json
import shlex

from . import podman
from .lab import Lab, container_name
from .fabric import cables
from .switches import faults as switch_faults

NODE_FAULTS = {
    # kind: (layer, takes effect at) -- "boot" faults reboot the node after injection
    "fw-sriov-off": (4, "boot"),
    "fw-pending-reboot": (4, "now"),
    "iommu-off": (3, "boot"),
    # pci=disable_acs_redir= gone from GRUB: with the IOMMU on, the kernel turns
    # ACS redirect on again on the GPU node's PCIe switch ports
    "acs-redirect": (3, "boot"),
    "driver-unbound": (5, "now"),
    "ofed-userspace-over-inbox": (5, "now"),
    "numvfs-enomem": (3, "boot"),
    "vfs-lost-on-reboot": (6, "boot"),
    "networkmanager-grabs-vfs": (6, "now"),
    "vf-wrong-driver": (6, "now"),
    "vfio-unloadable": (6, "now"),
    "iommu-shared-group": (6, "now"),
    "link-down": (9, "now"),
    "host-pfc-mismatch": (8, "now"),
    "node-unreachable": (1, "now"),
    "nccl-socket-fallback": (15, "now"),
    # the NVIDIA driver's closed kernel modules in place of the open ones: no
    # DMA-BUF; on a DOCA-OFED node layer 5 then loads nvidia_peermem
    "gpu-driver-closed": (5, "now"),
    # the rack's cables as they are (simlab/fabric/cables.py): conditions, as a link down is
    "cable-swap": (9, "now"),
    "cable-move": (9, "now"),
    "cable-unplug": (9, "now"),
}
BMC_FAULTS = {"bmc-unreachable": 1, "bmc-cert-changed": 1, "bios-sriov-off": 2, "bios-vtd-off": 2}
SWITCH_FAULTS = dict.fromkeys(switch_faults.KINDS, switch_faults.LAYER)
ALL = sorted([*NODE_FAULTS, *BMC_FAULTS, *SWITCH_FAULTS])
PERSISTENCE_UNIT = "gpufabric-sriov.service"
# the same rule file as on VM nodes (simlab/vm/faults.py)
VFIO_RULE = "/etc/modprobe.d/simlab-vfio-unloadable.conf"
SYS = "/run/simlab/sys"


class FaultError(ValueError):
    pass


def _agent(lab: Lab, node: str, req: dict) -> dict:
    proc = lab.node_exec(node, "env", "PYTHONPATH=/opt/simlab", "python3", "-m", "simlab.node.ctl",
                         json.dumps(req), check=False)
    try:
        reply = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise FaultError(f"{node}: node agent did not answer: {proc.stderr.strip()}") from None
    if not reply.get("ok"):
        raise FaultError(f"{node}: {reply.get('error')}")
    return reply


def _sh(lab: Lab, node: str, script: str) -> None:
    lab.node_exec(node, "/bin/sh", "-c", script)


def _node_faults(lab: Lab, node: str) -> dict:
    path = lab.dir / "nodes" / node / "faults.json"
    return json.loads(path.read_text() or "{}")


def _save_node_faults(lab: Lab, node: str, faults: dict) -> None:
    (lab.dir / "nodes" / node / "faults.json").write_text(json.dumps(faults, indent=2) + "\n")


def resolve(lab: Lab, target: str) -> tuple[str, str]:
    doc = lab.doc
    nodes = {hw["name"] for hw in doc["nodes"]}
    switches = {s["name"] for s in doc["switches"]}
    if target in nodes:
        return "node", target
    if target in switches:
        return "switch", target
    if target.endswith("-bmc") and target[:-4] in nodes:
        return "bmc", target[:-4]
    raise FaultError(f"unknown target {target!r}: not a node, switch or BMC of lab {lab.name}")


def inject(lab: Lab, target: str, kind: str) -> str:
    """``simlab fault``: a switch of any lab takes the switch twins' faults
    (inject_switch); a node or BMC fault is the lab's backend's to make
    (simlab/backend.py)."""
    if target in {s["name"] for s in lab.doc["switches"]}:
        return inject_switch(lab, target, kind)
    return lab.backend.fault(lab, target, kind)


def inject_switch(lab: Lab, name: str, kind: str) -> str:
    """A switch twin's fault (simlab/switches/faults.py), or ``clear``."""
    from .switches.server import inject_fault
    if kind != "clear" and kind not in SWITCH_FAULTS:
        raise FaultError(f"{kind} is not a switch fault; {name} is a switch (its faults: "
                         f"{', '.join(SWITCH_FAULTS)}, clear)")
    try:
        inject_fault(lab.dir / "switches", name, kind)
    except ValueError as exc:
        raise FaultError(f"{name}: {exc}") from None
    return f"{name}: faults cleared" if kind == "clear" else f"{name}: {kind} (layer {switch_faults.LAYER})"


def inject_twin(lab: Lab, target: str, kind: str) -> str:
    """A fault on a twin rack (a node, a switch or a BMC)."""
    what, name = resolve(lab, target)
    if kind == "clear":
        return clear(lab, what, name)
    if kind in BMC_FAULTS:
        # BIOS faults are reported against the node; accept either name.
        from .bmc import faults as bmc_faults
        bmc_faults.inject(lab.dir, name, kind)
        if kind not in ("bmc-unreachable", "bmc-cert-changed"):
            lab.reboot(name)
        return f"{target}: {kind} (layer {BMC_FAULTS[kind]})"
    if kind in SWITCH_FAULTS:
        raise FaultError(f"{kind} is a switch fault; {target} is a {what}")
    if kind not in NODE_FAULTS:
        raise FaultError(f"unknown fault {kind!r}; known: {', '.join(ALL)}, clear")
    if what != "node":
        raise FaultError(f"{kind} is a node fault; {target} is a {what}")
    node = name
    if kind == "vf-wrong-driver":
        _vf_back_to_kernel_driver(lab, node)
    if kind == "ofed-userspace-over-inbox" and _agent(lab, node, {"op": "summary"}).get("ofed"):
        raise FaultError(f"{node}: {kind} needs a node on the inbox driver; this one runs DOCA-OFED")
    faults = _node_faults(lab, node)
    faults[kind] = True
    if kind == "cable-unplug":
        faults["link-down"] = True          # no cable, no carrier on the PF
    _save_node_faults(lab, node, faults)
    if kind in cables.KINDS:
        try:
            done = cables.apply(lab.dir, kind, node, lambda switch, taken: _free_port(lab, switch, taken))
        except cables.CableError as exc:
            raise FaultError(str(exc)) from None
        if kind == "cable-unplug":
            _agent(lab, node, {"op": "reload_faults"})
        return f"{done} (layer {NODE_FAULTS[kind][0]})"
    if kind == "fw-sriov-off":
        fw = lab.dir / "nodes" / node / "firmware.json"
        data = json.loads(fw.read_text())
        for state in data.values():
            state["next"]["SRIOV_EN"] = 0
        fw.write_text(json.dumps(data, indent=2) + "\n")
    elif kind == "fw-pending-reboot":
        summary = _agent(lab, node, {"op": "summary"})
        for pf in summary["pfs"]:
            cur = pf["firmware"]["current"]["NUM_OF_VFS"]
            _agent(lab, node, {"op": "fw_set", "bdf": pf["bdf"], "params": {"NUM_OF_VFS": cur + 8 if cur <= 8 else cur // 2}})
    elif kind == "iommu-off":
        _sh(lab, node, "for f in /etc/default/grub /etc/default/grub.d/*.cfg; do [ -f \"$f\" ] && "
                       "sed -i -E 's/ ?(intel_iommu|amd_iommu)=on//g' \"$f\"; done; update-grub >/dev/null 2>&1")
    elif kind == "acs-redirect":
        _sh(lab, node, "for f in /etc/default/grub /etc/default/grub.d/*.cfg; do [ -f \"$f\" ] && "
                       "sed -i -E \"s/ ?'?pci=disable_acs_redir=[^ '\\\"]*'?//g\" \"$f\"; done; update-grub >/dev/null 2>&1")
    elif kind == "driver-unbound":
        summary = _agent(lab, node, {"op": "summary"})
        bdf = summary["pfs"][0]["bdf"]
        _sh(lab, node, f"echo {shlex.quote(bdf)} > /run/simlab/sys/bus/pci/drivers/mlx5_core/unbind")
    elif kind == "vfs-lost-on-reboot":
        _sh(lab, node, f"systemctl disable {PERSISTENCE_UNIT} >/dev/null 2>&1 || true")
    elif kind == "ofed-userspace-over-inbox":
        # DOCA-OFED's userspace (ofed_info) stays while its kernel modules are
        # gone (a kernel upgrade without them): the inbox mlx5 is what loads
        from .node.agent import OFED_TOOLS, TOOL_DIR, wrapper
        for tool in OFED_TOOLS:
            _sh(lab, node, f"cat > {TOOL_DIR}/{tool} <<'EOF'\n{wrapper(tool)}EOF\nchmod 0755 {TOOL_DIR}/{tool}")
    elif kind == "host-pfc-mismatch":
        summary = _agent(lab, node, {"op": "summary"})
        pf = summary["pfs"][0]
        pfc = [0] * 8
        pfc[4] = 1
        _agent(lab, node, {"op": "set_qos", "dev": pf["netdev"], "pfc": pfc})
    elif kind == "networkmanager-grabs-vfs":
        _sh(lab, node, "rm -f /etc/udev/rules.d/*gpufabric-nm-unmanaged*.rules")
    elif kind == "vfio-unloadable":
        # kmod then runs /bin/false instead of loading vfio-pci; the module
        # goes too when nothing uses it (no device on vfio-pci)
        _sh(lab, node, f"echo 'install vfio-pci /bin/false' > {VFIO_RULE}")
        summary = _agent(lab, node, {"op": "summary"})
        on_vfio = [vf["bdf"] for pf in summary["pfs"] for vf in pf["vfs"] if vf.get("driver") == "vfio-pci"]
        if "vfio_pci" in summary["modules"] and not on_vfio:
            _sh(lab, node, "modprobe -r vfio_pci")
    elif kind == "node-unreachable":
        podman.run("pause", container_name(lab.name, node))
        return f"{target}: {kind} (layer {NODE_FAULTS[kind][0]})"
    if kind in ("link-down", "nccl-socket-fallback", "numvfs-enomem", "networkmanager-grabs-vfs",
                "iommu-shared-group", "gpu-driver-closed"):
        _agent(lab, node, {"op": "reload_faults"})
    if NODE_FAULTS[kind][1] == "boot":
        lab.reboot(node)
    return f"{target}: {kind} (layer {NODE_FAULTS[kind][0]})"


def _free_port(lab: Lab, switch: str, taken: set) -> str:
    """The first port of ``switch`` that no cable uses, in its NOS's spelling."""
    from .nos import port_name
    nos = next(s["nos"] for s in lab.doc["switches"] if s["name"] == switch)
    for n in range(1, 129):
        name = port_name(nos, n)
        if (switch, name) not in taken:
            return name
    raise FaultError(f"{switch}: no free port")


def _vf_back_to_kernel_driver(lab: Lab, node: str) -> str:
    """The first VF on vfio-pci (PF order, then VF index) goes back to
    mlx5_core the way a person would: override cleared, unbind,
    drivers_probe."""
    summary = _agent(lab, node, {"op": "summary"})
    for pf in summary["pfs"]:
        for vf in pf["vfs"]:
            if vf.get("driver") == "vfio-pci":
                d, b = f"{SYS}/bus/pci/devices/{vf['bdf']}", shlex.quote(vf["bdf"])
                _sh(lab, node, f"echo > {d}/driver_override && echo {b} > {d}/driver/unbind && "
                               f"echo {b} > {SYS}/bus/pci/drivers_probe")
                return vf["bdf"]
    raise FaultError(f"{node}: no VF is on vfio-pci (the inventory's vf_drivers, layer 6, bind some)")


def clear(lab: Lab, what: str, name: str) -> str:
    from .bmc import faults as bmc_faults
    bmc_faults.clear(lab.dir, name)
    if what == "bmc":
        return f"{name}-bmc: faults cleared"
    faults = _node_faults(lab, name)
    state = podman.run("inspect", "--format", "{{.State.Status}}", container_name(lab.name, name), check=False)
    if state.stdout.strip() == "paused":
        podman.run("unpause", container_name(lab.name, name))
    _save_node_faults(lab, name, {})
    _agent(lab, name, {"op": "reload_faults"})
    if any(k in faults for k in cables.KINDS):
        # the node's cables back where the plan has them (the others' stay as they are)
        found = cables.found(lab.dir)
        planned = {(c["node"], c["pf"]): c for c in cables.plan(lab.dir)}
        cables.save(lab.dir, [dict(planned[(c["node"], c["pf"])]) if c["node"] == name else c for c in found])
    if faults.get("vfio-unloadable"):  # the collection writes no modprobe.d rule, so it removes none
        _sh(lab, name, f"rm -f {VFIO_RULE}")
    if faults.get("ofed-userspace-over-inbox"):
        from .node.agent import OFED_TOOLS, TOOL_DIR
        _sh(lab, name, "rm -f " + " ".join(f"{TOOL_DIR}/{t}" for t in OFED_TOOLS))
    if faults.get("driver-unbound"):
        summary = _agent(lab, name, {"op": "summary"})
        for pf in summary["pfs"]:
            if not pf["bound"]:
                _sh(lab, name, f"echo {shlex.quote(pf['bdf'])} > /run/simlab/sys/bus/pci/drivers/mlx5_core/bind")
    return f"{name}: faults cleared"
