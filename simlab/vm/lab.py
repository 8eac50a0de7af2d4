"""A VM rack: GPU nodes as QEMU machines, their Redfish BMCs, the rail
switches of the fabric (:mod:`simlab.vm.hub`), optional twin leaf switches for
layer 7, and the inventory.

The lab's state lives where a twin rack's does (``$SIMLAB_HOME/<name>``, see
:mod:`simlab.lab`), with ``"kind": "vm"`` in ``lab.json``; per node
``nodes/<node>/`` holds the disk overlay, the console log and the QMP socket.

Bringing a node up the first time also does what a rack's provisioning
system does before the collection runs: the node's fabric addresses become
NetworkManager profiles on its igb PFs, and the node's SSH host key is
recorded in the lab's ``known_hosts``.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path

from . import image, machine

IGB = {"vendor": "8086", "device": "10c9", "vf_device": "10ca", "driver": "igb", "vf_driver": "igbvf",
       "totalvfs": 7}
# What a link through the lab's rail switch carries between two TCG guests with
# Soft-RoCE: the rate layer 9 gates ib_write_bw against (Mb/s).  The igb PF
# reports 1000 Mb/s; emulation in software moves far less (ib_write_bw gave
# 30.5 and 37.4 Mb/s on a 2-core machine running the VM tier: the gate of 9
# leaves room for a busier one, and a stalled run still fails).
LINK_RATE_MBPS = 10
DEFAULT_MEMORY_MB = 1536
BOOT_TIMEOUT = 420


def plan(name: str, nodes: int, nics: int = 1, switches: int = 0, preset: str = "factory",
         nos: list[str] | None = None, memory_mb: int = DEFAULT_MEMORY_MB, smp: int = 1,
         sushy_nodes: list[str] | None = None) -> dict:
    """``sushy_nodes``: the nodes whose BMC is sushy-tools' emulator over a
    libvirt domain (:mod:`simlab.vm.sushy`) instead of the lab's own."""
    from simlab.lab import NOS_KINDS, node_names, switch_port_name
    if nodes < 1:
        raise ValueError("a VM lab needs at least one node")
    unknown = sorted(set(sushy_nodes or []) - set(node_names(nodes)))
    if unknown:
        raise ValueError(f"--sushy-nodes names {', '.join(unknown)}, not a node of this lab "
                         f"({', '.join(node_names(nodes))})")
    if not 1 <= nics <= 2:
        raise ValueError(f"--nics {nics}: a VM node has one or two igb fabric NICs")
    kinds = nos or [NOS_KINDS[i % len(NOS_KINDS)] for i in range(switches)]
    if len(kinds) != switches:
        raise ValueError(f"--nos lists {len(kinds)} kinds for {switches} switches")
    sw = [{"name": f"leaf{i + 1}", "nos": k, "username": "admin", "password": f"twin-{k}-pw"}
          for i, k in enumerate(kinds)]
    docs, cabling = [], []
    used = {s["name"]: 0 for s in sw}
    for idx, node in enumerate(node_names(nodes), start=1):
        hw = {"name": node, "index": idx, "kind": "vm", "preset": preset, "cpu_vendor": "intel",
              "bmc": "sushy" if node in (sushy_nodes or []) else "twin",
              "gpus": 0, "numa_nodes": 1, "memory_mb": memory_mb, "smp": smp,
              "bios_default": {"sriov": preset == "ready", "iommu": preset == "ready", "acs": False},
              "mgmt_mac": f"52:54:00:00:{idx >> 8:02x}:{idx & 0xff:02x}", "nics": []}
        for r in range(nics):
            nic = {"index": r, "mac": f"52:54:00:{r + 1:02x}:{idx >> 8:02x}:{idx & 0xff:02x}",
                   # behind root port r+1, which the firmware numbers bus r+1
                   "bdf": f"0000:{r + 1:02x}:00.0", "netdev": f"enp{r + 1}s0",
                   "ipv4": f"192.168.{100 + r}.{idx}/24", "vendor_device": f"{IGB['vendor']}:{IGB['device']}"}
            hw["nics"].append(nic)
            if sw:
                leaf = sw[r % len(sw)]
                used[leaf["name"]] += 1
                where = {"switch": leaf["name"], "port": switch_port_name(leaf["nos"], used[leaf["name"]])}
            else:
                # the lab's own rail switch (simlab.vm.hub), port = node index
                where = {"switch": f"rail{r}", "port": f"port{idx}"}
            cabling.append({"node": node, "pf": nic["netdev"], "pci_address": nic["bdf"], **where})
        docs.append(hw)
    for leaf in sw:
        leaf["ports"] = [c["port"] for c in cabling if c["switch"] == leaf["name"]]
    return {"name": name, "kind": "vm", "preset": preset, "nodes": docs, "switches": sw, "cabling": cabling,
            "bmc": {"username": "root", "password": "twin-bmc-pw"}, "vendors": ["dell", "hpe", "supermicro"],
            "link_rate_mbps": LINK_RATE_MBPS}


def ssh_argv(lab, hw: dict, *cmd: str, connect_timeout: int = 10) -> list[str]:
    doc = lab.doc
    return ["ssh", "-i", doc["ssh_key"], "-p", str(hw["ssh_port"]), "-o", "BatchMode=yes",
            "-o", f"UserKnownHostsFile={lab.dir / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
            "-o", f"ConnectTimeout={connect_timeout}", "-o", "LogLevel=ERROR",
            "root@127.0.0.1", *([" ".join(shlex.quote(c) for c in cmd)] if cmd else [])]


def ssh(lab, node: str, *cmd: str, check: bool = True, timeout: float = 120,
        input: str | None = None) -> subprocess.CompletedProcess:
    hw = node_doc(lab, node)
    proc = subprocess.run(ssh_argv(lab, hw, *cmd), capture_output=True, text=True, timeout=timeout, input=input)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{node}: {' '.join(cmd)} failed ({proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()[-500:]}")
    return proc


def node_doc(lab, node: str) -> dict:
    for hw in lab.doc["nodes"]:
        if hw["name"] == node:
            return hw
    raise ValueError(f"no node {node!r} in lab {lab.name}")


def _scan_host_key(lab, hw: dict) -> bool:
    """Record the node's host key the first time it answers on its SSH port."""
    proc = subprocess.run(["ssh-keyscan", "-T", "5", "-t", "ed25519", "-p", str(hw["ssh_port"]), "127.0.0.1"],
                          capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln and not ln.startswith("#")]
    if not lines:
        return False
    known = lab.dir / "known_hosts"
    kept = [ln for ln in (known.read_text().splitlines() if known.exists() else [])
            if not ln.startswith(f"[127.0.0.1]:{hw['ssh_port']} ")]
    known.write_text("\n".join(kept + lines) + "\n")
    return True


def wait_ssh(lab, nodes: list[str], timeout: float = BOOT_TIMEOUT) -> None:
    """Until every node's sshd answers a command (a booted multi-user system)."""
    pending = set(nodes)
    deadline = time.monotonic() + timeout
    while pending:
        for node in sorted(pending):
            hw = node_doc(lab, node)
            if not (lab.dir / "known_hosts").exists() or f"[127.0.0.1]:{hw['ssh_port']} " not in \
                    (lab.dir / "known_hosts").read_text():
                if not _scan_host_key(lab, hw):
                    continue
            proc = subprocess.run(ssh_argv(lab, hw, "systemctl", "is-system-running", "--wait",
                                           connect_timeout=5), capture_output=True, text=True, timeout=300)
            if proc.returncode in (0, 1) and proc.stdout.strip() in ("running", "degraded"):
                pending.discard(node)
        if pending:
            if time.monotonic() > deadline:
                tails = "\n".join(f"--- {n} console:\n{machine.console_tail(lab.dir, n)}" for n in sorted(pending))
                raise RuntimeError(f"VM nodes did not boot in {timeout:.0f}s: {', '.join(sorted(pending))}\n{tails}")
            time.sleep(2)


def provision(lab, hw: dict) -> None:
    """The fabric addresses, as the rack's provisioning would leave them.
    NetworkManager runs with Debian's configuration: keeping it off the VFs
    is layer 6's NM_UNMANAGED udev rule, written before the VFs exist. (With
    NetworkManager on a VF, QEMU's igb stops handing frames to the PF's
    queue, so a rule that comes late shows as RoCE between the nodes dropping
    to nothing.)"""
    script = []
    for nic in hw["nics"]:
        con = f"fabric{nic['index']}"
        script.append(f"nmcli -t -f NAME connection show | grep -qx {con} || "
                      f"nmcli connection add type ethernet con-name {con} ifname {nic['netdev']} "
                      f"ipv4.method manual ipv4.addresses {nic['ipv4']} ipv6.method disabled "
                      f"connection.autoconnect yes >/dev/null")
        script.append(f"nmcli connection up {con} >/dev/null")
    ssh(lab, hw["name"], "sh", "-ec", "; ".join(script))


def up(lab, doc: dict, inventory: Path | None, log=print) -> dict:
    from simlab.lab import free_ports
    t0 = time.monotonic()
    paths = image.build(log=log)
    if lab.exists():
        lab.down(log=lambda *_: None)
    for sub in ("nodes", "logs"):
        (lab.dir / sub).mkdir(parents=True, exist_ok=True)
    nports = 2 + 2 * len(doc["nodes"][0]["nics"])
    ports = free_ports(len(doc["nodes"]) * nports + len(doc["switches"]))
    for i, hw in enumerate(doc["nodes"]):
        p = ports[i * nports:(i + 1) * nports]
        hw["bmc_port"], hw["ssh_port"] = p[0], p[1]
        hw["bmc_vendor"] = doc["vendors"][i % len(doc["vendors"])]
        if hw.get("bmc") == "sushy":
            from .sushy import domain_uuid
            hw["sushy_uuid"] = domain_uuid(doc["name"], hw["name"])
        for r, nic in enumerate(hw["nics"]):
            nic["hub_port"], nic["vm_port"] = p[2 + 2 * r], p[3 + 2 * r]
        nd = machine.node_dir(lab.dir, hw["name"])
        nd.mkdir(parents=True, exist_ok=True)
        subprocess.run([*image.qemu_argv("qemu-img"), "create", "-q", "-f", "qcow2", "-F", "qcow2",
                        "-b", paths["disk"], str(nd / "disk.qcow2")], check=True)
        (nd / "hardware.json").write_text(json.dumps(hw, indent=2) + "\n")
    for j, sw in enumerate(doc["switches"]):
        sw["ssh_port"] = ports[len(doc["nodes"]) * nports + j]
    doc["ssh_key"] = paths["key"]
    doc["image"] = {"qemu": Path(paths["qemu"]).name, "guest": Path(paths["guest"]).name}
    (lab.dir / "lab.json").write_text(json.dumps(doc, indent=2) + "\n")
    lab._init_bmc_state(doc)
    rails = {}
    from simlab.fabric import cables
    for hw in doc["nodes"]:
        for nic in hw["nics"]:
            cable = next(c for c in doc["cabling"] if c["node"] == hw["name"] and c["pf"] == nic["netdev"])
            rails.setdefault(nic["index"], []).append({"node": hw["name"], "nic": nic["index"],
                                                       "hub_port": nic["hub_port"], "vm_port": nic["vm_port"],
                                                       # the hub speaks LLDP for the switch end of the cable
                                                       "lldp": cables.advertised(doc, cable["switch"], cable["port"])})
    lab._service("simlab.vm.hub", {"rails": [{"name": f"rail{r}", "ports": p} for r, p in sorted(rails.items())]},
                 "fabric-ready", "fabric", log)
    lab._start_services(doc, log, power_driver="qemu")
    _start_sushy(lab, doc, log)
    log(f"simlab: booting {len(doc['nodes'])} VM nodes ({machine.accel()}) ...")
    _power_on_all(lab, doc)
    wait_ssh(lab, [hw["name"] for hw in doc["nodes"]])
    for hw in doc["nodes"]:
        provision(lab, hw)
    if inventory:
        from simlab.inventory import write_inventory
        write_inventory(doc, lab, Path(inventory))
    log(f"simlab: VM lab {lab.name} up: {len(doc['nodes'])} nodes in {time.monotonic() - t0:.0f}s")
    return doc


def _start_sushy(lab, doc: dict, log) -> None:
    """sushy-tools' emulator for the nodes that have it as their BMC."""
    from . import sushy
    nodes = [hw for hw in doc["nodes"] if hw.get("bmc") == "sushy"]
    if not nodes:
        return
    lacking = sushy.missing()
    if lacking:
        raise RuntimeError(f"VM nodes behind sushy-tools ({', '.join(hw['name'] for hw in nodes)}) need "
                           f"{'; '.join(lacking)}: run 'make setup'")
    accel_name = machine.accel()
    spec = {"lab": doc["name"], "username": doc["bmc"]["username"], "password": doc["bmc"]["password"],
            "nodes": [{"name": hw["name"], "port": hw["bmc_port"], "uuid": hw["sushy_uuid"], "accel": accel_name,
                       "bios": lab.factory_bios(hw)} for hw in nodes]}
    lab._service("simlab.vm.sushy", spec, "sushy-ready", "sushy", log)


def _power_on_all(lab, doc: dict) -> None:
    """Through each node's BMC, as the bmc role would (Redfish ``On``)."""
    from . import sushy
    from .power import QemuPowerDriver
    driver = QemuPowerDriver(lab.dir)
    for hw in doc["nodes"]:
        if hw.get("bmc") == "sushy":
            sushy.power_on(lab.dir, hw, doc["bmc"]["username"], doc["bmc"]["password"])
        else:
            driver.on(hw["name"])


def down(lab) -> None:
    if not (lab.dir / "lab.json").exists():
        return
    for hw in lab.doc["nodes"]:
        machine.stop(lab.dir, hw["name"], force=True)


def status(lab) -> dict:
    doc = lab.doc
    return {hw["name"]: {"power": machine.state(lab.dir, hw["name"]), "ssh": f"127.0.0.1:{hw['ssh_port']}",
                         "bmc": f"127.0.0.1:{hw['bmc_port']}"} for hw in doc["nodes"]}


def reboot(lab, node: str) -> None:
    """A reboot from the node's OS (the same machine, warm)."""
    ssh(lab, node, "systemctl", "reboot", check=False, timeout=30)
    time.sleep(5)
    wait_ssh(lab, [node])
