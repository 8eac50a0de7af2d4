"""A twin rack: node containers, their BMCs, leaf switches, the cabling plan,
and the Ansible inventory that points the collection at them.

State of a lab lives in ``$SIMLAB_HOME/<name>`` (default
``~/.local/share/simlab/<name>``)::

    lab.json                  the lab's shape, ports and credentials
    nodes/<node>/             mounted into the node at /var/lib/simlab/lab
        hardware.json         NICs, driver flavour, preset
        firmware.json         mlxconfig default/current/next per NIC
        bios.json             BIOS attributes (current, pending), owned by the BMC
        faults.json           node faults injected with ``simlab fault``
    switches/                 switch state (running/startup config, faults)
    bmc/, logs/               BMC state and host service logs
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from . import podman
from .node import hardware
from .nos import NOS, port_name

REPO = Path(__file__).resolve().parents[1]
HOME = Path(os.environ.get("SIMLAB_HOME", Path.home() / ".local/share/simlab"))
NOS_KINDS = list(NOS)
SWITCH_PORTS = 32


def lab_dir(name: str) -> Path:
    return HOME / name


def container_name(lab: str, node: str) -> str:
    return f"simlab-{lab}-{node}"


def node_names(n: int) -> list[str]:
    width = max(2, len(str(n)))
    return [f"node{i:0{width}d}" for i in range(1, n + 1)]


# A port free_ports handed to a lab stays reserved from other labs this long:
# the lab's servers bind it after the call, within seconds
PORT_HOLD = 600.0
# the lowest port free_ports hands out (below: well-known and common services)
PORT_FLOOR = 10000


def ephemeral_range(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> tuple[int, int]:
    """The kernel's range of local ports for outgoing connections."""
    try:
        lo, hi = (int(x) for x in Path(path).read_text().split())
    except (OSError, ValueError):
        return 32768, 60999     # the kernel's default
    return lo, hi


def _bindable(port: int) -> bool:
    """Whether 127.0.0.1:port can be bound now: TCP with SO_REUSEADDR as the
    BMCs, switches and SSH forwards bind (a connection of an earlier lab in
    TIME_WAIT does not stop them), UDP without it as the VM NICs' hub binds
    (on UDP it would let two sockets share the port)."""
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET, kind) as s:
            if kind == socket.SOCK_STREAM:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def _kernel_ports(count: int) -> list[int]:
    """``count`` ports the kernel picks (bound to port 0, then released)."""
    socks, ports = [], []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def free_ports(count: int, span: tuple[int, int] | None = None, home: Path | None = None,
               now=time.time) -> list[int]:
    """``count`` distinct ports on 127.0.0.1 for a lab's servers, which bind
    them after this returns. Each is bindable now and lies outside the
    kernel's ephemeral range (``span``, default: from PORT_FLOOR up to that
    range or above it, whichever gap is larger), so no outgoing connection
    of any process takes it in between: the kernel picks an outgoing
    connection's local port from that range only, and did take a port of the
    range that a lab had been handed and not bound yet. A port handed to
    another lab in the last PORT_HOLD seconds is not handed again (a record
    under ``home``, default HOME, kept under a lock)."""
    if span is None:
        lo, hi = ephemeral_range()
        # the larger of the gaps below and above the range; where neither has room
        # (a range of nearly every port), the kernel's own pick
        span = max((PORT_FLOOR, lo - 1), (hi + 1, 65535), key=lambda r: r[1] - r[0])
        if span[1] - span[0] + 1 < 4 * count:
            return _kernel_ports(count)
    first, last = span
    home = HOME if home is None else home
    home.mkdir(parents=True, exist_ok=True)
    record = home / ".ports.json"
    with open(home / ".ports.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            held = {int(k): float(v) for k, v in json.loads(record.read_text()).items()}
        except (OSError, ValueError, TypeError, AttributeError):
            held = {}
        t = now()
        held = {k: v for k, v in held.items() if t - v < PORT_HOLD}
        candidates = [p for p in range(first, last + 1) if p not in held]
        random.shuffle(candidates)
        ports = []
        for port in candidates:
            if len(ports) == count:
                break
            if _bindable(port):
                ports.append(port)
        if len(ports) < count:
            raise RuntimeError(f"simlab: only {len(ports)} of {count} free ports between {first} and {last}")
        held.update((p, t) for p in ports)
        tmp = record.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(held))
        os.replace(tmp, record)
    return ports


def switch_port_name(kind: str, i: int) -> str:
    return port_name(kind, i)


def plan(name: str, nodes: int, switches: int, nics: int = 2, model: str = "cx7", driver: str | list[str] = "inbox",
         preset: str = "ready", nos: list[str] | None = None, totalvfs: int = hardware.DEFAULT_TOTALVFS,
         link_type: str = "ETH") -> dict:
    """The lab's shape: nodes, switches, cabling and credentials.  ``driver``
    is each node's driver stack (hardware.STACKS), one for all or a list the
    nodes take in turn (``["ofed", "upstream"]``: node01 DOCA-OFED, node02
    inbox with upstream tools only, node03 DOCA-OFED, ...)."""
    stacks = [driver] if isinstance(driver, str) else list(driver)
    for stack in stacks:
        hardware.stack_fields(stack)
    if nodes < 1 or switches < 1:
        raise ValueError("a lab needs at least one node and one switch")
    names = node_names(nodes)
    kinds = nos or [NOS_KINDS[i % len(NOS_KINDS)] for i in range(switches)]
    if len(kinds) != switches:
        raise ValueError(f"--nos lists {len(kinds)} kinds for {switches} switches")
    sw = []
    for i, kind in enumerate(kinds):
        if kind not in NOS_KINDS:
            raise ValueError(f"unknown NOS {kind!r}; known: {', '.join(NOS_KINDS)}")
        sw.append({"name": f"leaf{i + 1}", "nos": kind, "username": "admin", "password": f"twin-{kind}-pw"})
    # Rail-optimised cabling: NIC r of every node goes to the leaf of rail r.
    # With more leaves than rails the nodes are split into equal scalable
    # units, each with its own set of rail leaves (nodes 1-16 on leaf1/leaf2,
    # 17-32 on leaf3/leaf4, ...); ports fill up in node order.
    used = {s["name"]: 0 for s in sw}
    cabling = []
    node_docs = []
    units = max(1, len(sw) // nics)
    per_unit = -(-len(names) // units)
    for idx, node in enumerate(names, start=1):
        base = nics * ((idx - 1) // per_unit)
        hw = hardware.default_spec(node, idx, nics=nics, model=model, totalvfs=totalvfs,
                                   link_type=link_type, driver=stacks[(idx - 1) % len(stacks)])
        hw["preset"] = preset
        hw["bios_default"] = {"sriov": preset == "ready", "iommu": preset == "ready", "acs": False}
        node_docs.append(hw)
        gpus = hardware.gpu_of_nic(hw)
        for r, nic in enumerate(hardware.nic_specs(hw)):
            leaf = sw[(base + r) % len(sw)]
            used[leaf["name"]] += 1
            if used[leaf["name"]] > SWITCH_PORTS:
                raise ValueError(f"{leaf['name']} has only {SWITCH_PORTS} ports; add switches")
            cable = {"node": node, "pf": nic.netdev, "pci_address": nic.bdf,
                     "switch": leaf["name"], "port": switch_port_name(leaf["nos"], used[leaf["name"]])}
            if r in gpus:
                # the GPU below the NIC's PCIe switch: layer 14 names its rail
                cable["gpu"] = gpus[r]
            cabling.append(cable)
    for leaf in sw:
        leaf["ports"] = [c["port"] for c in cabling if c["switch"] == leaf["name"]]
    return {"name": name, "preset": preset, "nodes": node_docs, "switches": sw, "cabling": cabling,
            "bmc": {"username": "root", "password": "twin-bmc-pw"},
            "vendors": ["dell", "hpe", "supermicro"]}


# Each node's systemd, journald, udevd and logind hold inotify instances, all
# counted against the host's root user; Debian's default of 128 stops systemd
# in the 30-somethingth container ("Failed to allocate manager object").
INOTIFY_PER_NODE = 16
INOTIFY_SYSCTL = Path("/proc/sys/fs/inotify/max_user_instances")


def ensure_inotify(nodes: int, log=print) -> None:
    """Raise fs.inotify.max_user_instances for a rack of this size, or say
    which sysctl to raise when that is not allowed."""
    try:
        current = int(INOTIFY_SYSCTL.read_text())
    except (OSError, ValueError):
        return
    need = 256 + INOTIFY_PER_NODE * nodes
    if current >= need:
        return
    try:
        INOTIFY_SYSCTL.write_text(f"{need}\n")
        log(f"simlab: raised fs.inotify.max_user_instances from {current} to {need} for {nodes} nodes")
    except OSError:
        raise ValueError(f"{nodes} nodes need fs.inotify.max_user_instances >= {need} (it is {current}): "
                         f"run 'sysctl -w fs.inotify.max_user_instances={need}' as root") from None


def wait_ready(proc: subprocess.Popen, ready, what: str, log_path, timeout: float = 30.0,
               interval: float = 0.05) -> None:
    """Wait until ``ready()`` is true for a service ``proc`` started; fail
    naming ``what`` and its log when it exits first or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}); see {log_path}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not become ready in {timeout:.0f}s; see {log_path}")
        time.sleep(interval)


def _stop_groups(pid_texts: list[str], grace: float = 10.0) -> None:
    """SIGTERM the services' process groups, all first, then wait until each
    has gone (SIGKILL after ``grace`` seconds): a service writes into the lab
    directory as it stops (the VM fabric its frame counters), which must not
    race the directory's removal, and they stop side by side."""
    groups = []
    for text in pid_texts:
        try:
            pgid = int(text)
            os.killpg(pgid, signal.SIGTERM)
            groups.append(pgid)
        except (ProcessLookupError, ValueError, PermissionError):
            pass
    deadline = time.monotonic() + grace
    while groups and time.monotonic() < deadline:
        for pgid in list(groups):
            try:
                os.waitpid(pgid, os.WNOHANG)    # reaped, where this process started it
            except ChildProcessError:
                pass
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                groups.remove(pgid)
        if groups:
            time.sleep(0.05)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Lab:
    def __init__(self, name: str):
        self.name = name
        self.dir = lab_dir(name)

    @property
    def doc(self) -> dict:
        return json.loads((self.dir / "lab.json").read_text())

    def exists(self) -> bool:
        return (self.dir / "lab.json").exists()

    # ------------------------------------------------------------ up
    @property
    def kind(self) -> str:
        return self.doc.get("kind", "twin") if self.exists() else "twin"

    @property
    def backend(self):
        """This lab's node backend (simlab/backend.py), by the kind its lab.json names."""
        from .backend import of
        return of(self.kind)

    def up(self, doc: dict, inventory: Path | None, log=print) -> dict:
        from .backend import of
        return of(doc.get("kind", "twin")).up(self, doc, inventory, log)

    @staticmethod
    def factory_bios(hw: dict) -> dict:
        """A node's factory BIOS (its vendor profile's defaults); the 'ready'
        preset has SR-IOV and VT-d on, as if someone had already set them up."""
        from .bmc import server as bmc_server
        from .bmc import vendors
        entry = {"name": hw["name"], "vendor": hw["bmc_vendor"], "cpu_vendor": hw["cpu_vendor"]}
        data = bmc_server.initial_state(entry)
        if hw["preset"] == "ready":
            for switch in ("sriov", "iommu"):
                attr = vendors.switch_attribute(data["vendor"], data["current"], switch)
                if attr:
                    off = vendors.off_value(data["vendor"], data["current"], attr)
                    data["current"][attr] = "Enable" if off == "Disable" else "Enabled"
        return data

    def _init_bmc_state(self, doc: dict) -> None:
        """Factory BIOS of every node behind the lab's own BMCs (a VM node
        behind sushy-tools' emulator keeps its BIOS in its libvirt domain)."""
        from .bmc import state as bmc_state
        for hw in doc["nodes"]:
            if hw.get("bmc", "twin") == "twin":
                bmc_state.save_bios(bmc_state.bios_path(self.dir, hw["name"]), self.factory_bios(hw))

    def _service(self, module: str, spec: dict, ready: str, tag: str, log, state_dir: Path | None = None,
                 extra: tuple = ()) -> None:
        spec_path = self.dir / f"{tag}-spec.json"
        spec_path.write_text(json.dumps(spec, indent=2))
        ready_path = self.dir / ready
        if ready_path.exists():
            ready_path.unlink()
        out = open(self.dir / "logs" / f"{tag}.log", "ab")
        proc = subprocess.Popen([sys.executable, "-m", module, "serve", "--state-dir", str(state_dir or self.dir),
                                 "--spec", str(spec_path), *extra], stdout=out, stderr=subprocess.STDOUT,
                                cwd=str(REPO), env={**os.environ, "PYTHONPATH": str(REPO)},
                                start_new_session=True)
        (self.dir / f"{tag}.pid").write_text(str(proc.pid))
        wait_ready(proc, ready_path.exists, module, self.dir / "logs" / f"{tag}.log")

    def _start_services(self, doc: dict, log, power_driver: str = "podman") -> None:
        own = [hw for hw in doc["nodes"] if hw.get("bmc", "twin") == "twin"]
        if own and (REPO / "simlab/bmc/server.py").exists():
            spec = {"bmcs": [{"name": hw["name"], "port": hw["bmc_port"], "vendor": hw["bmc_vendor"],
                               "username": doc["bmc"]["username"], "password": doc["bmc"]["password"],
                               "container": container_name(self.name, hw["name"]),
                               "cpu_vendor": hw["cpu_vendor"]} for hw in own]}
            self._service("simlab.bmc", spec, "bmc-ready", "bmc", log, extra=("--power-driver", power_driver))
        if doc["switches"] and (REPO / "simlab/switches/server.py").exists():
            spec = {"switches": [{"name": s["name"], "nos": s["nos"], "port": s["ssh_port"],
                                  "username": s["username"], "password": s["password"],
                                  "ports": s["ports"]} for s in doc["switches"]]}
            (self.dir / "switches").mkdir(exist_ok=True)
            self._service("simlab.switches", spec, "switches/ready", "switches", log,
                          state_dir=self.dir / "switches",
                          extra=("--known-hosts", str(self.dir / "switches" / "known_hosts")))

    # ------------------------------------------------------------ down / status
    def down(self, log=print) -> None:
        if self.exists():
            self.backend.stop_nodes(self)
        for c in podman.containers(f"simlab.lab={self.name}"):
            podman.run("rm", "-f", "-t", "0", c["Names"][0], check=False)
        pid_files = [self.dir / f"{tag}.pid" for tag in ("bmc", "sushy", "switches", "fabric")]
        pid_files = [f for f in pid_files if f.exists()]
        _stop_groups([f.read_text() for f in pid_files])
        for pid_file in pid_files:
            pid_file.unlink()
        if self.dir.exists():
            shutil.rmtree(self.dir)
        log(f"simlab: lab {self.name} removed")

    def services(self) -> dict:
        """The state of the lab's host services (BMCs, switches, the VM fabric;
        sushy-tools' BMCs where the lab has them)."""
        services = {}
        for tag in ("bmc", "sushy", "switches", "fabric"):
            pid_file = self.dir / f"{tag}.pid"
            if tag == "sushy" and not pid_file.exists():
                continue
            alive = False
            if pid_file.exists():
                try:
                    os.kill(int(pid_file.read_text()), 0)
                    alive = True
                except (ProcessLookupError, ValueError):
                    pass
            services[tag] = "running" if alive else "stopped"
        return services

    def status(self) -> dict:
        doc = self.doc
        out = {"lab": self.name, "kind": self.kind}
        out.update(self.backend.status(self, doc))
        out["services"] = self.services()
        out["switches"] = {s["name"]: {"nos": s["nos"], "ssh": f"127.0.0.1:{s['ssh_port']}"} for s in doc["switches"]}
        return out

    # ------------------------------------------------------------ node helpers
    def node_exec(self, node: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.backend.node_exec(self, node, *cmd, check=check)

    def reboot(self, node: str) -> None:
        self.backend.reboot(self, node)
