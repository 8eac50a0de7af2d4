"""RDMA fabric model of the twin rack.

Inputs are what the rack publishes: ``lab.json`` (its ``cabling``: which PF
of which node is cabled to which switch port), each node's ``live.json``
(the node agent's summary: PFs, VFs, link state, MTU, host QoS, RoCE mode,
GID tables, faults) and each switch's applied state (``port_view``).  The
model answers, for a pair of RDMA devices (PF or VF) on two nodes, whether
RDMA traffic flows and at what bandwidth, and for an NCCL job over several
nodes which transport it uses and what bus bandwidth it reaches.

Rules, in the order they are checked (``rdma_path``):

1. *Link.*  Each end's RDMA port must be up (``Endpoint.port_up``: the node
   kernel's carrier of its netdev, where a VF's follows its ``link_state``;
   a VF also needs its driver probed), its PF operationally up, and the switch
   port it is cabled to up.  An end's own port down: perftest stops before
   connecting (``Port number 1 state is Down``).  Its PF down under a VF that
   ``enable`` holds up, the remote end down, its
   switch port down, or the two PFs cabled to different leaves (the twin rack
   has no spine): the connection cannot be made (``Couldn't connect to
   <ip>:<port>``).
2. *GID.*  The GID index used (``-x``, ``NCCL_IB_GID_INDEX``; default: the
   best RoCE v2 GID, IPv4 first, as perftest and NCCL pick it) must exist in
   the device's GID table, else the device cannot be used.
3. *Path MTU.*  Each end's RDMA active MTU follows its netdev MTU as mlx5
   derives it (``iboe_get_mtu``: the largest IB MTU of 256..4096 not above
   netdev MTU - 96 bytes of RoCE headers), so MTU 9000 gives 4096 and 1500
   gives 1024; the path uses the smaller of the two.  Every switch port on
   the path must carry ``active MTU + 96`` bytes; a port below that drops
   every full-size RoCE packet and the sender ends with ``transport retry
   counter exceeded`` (work completion status 12).  A switch MTU below the
   host MTU but above the RoCE packet size does not hurt RDMA.  An active MTU
   below 4096 costs header overhead (bandwidth x (m/(m+96)) / (4096/4192)).
4. *Lossless chain.*  RoCE traffic must ride the intent priority 3 with PFC
   end to end: on both PFs ``trust dscp`` and PFC enabled on priority 3,
   on both switch ports DSCP trust (``dscp`` or ``both``) and PFC on 3, and
   the traffic's DSCP mapped to priority 3 by the hosts and the switches.
   The traffic DSCP is ``TOS >> 2`` of ``-T`` / ``NCCL_IB_TC`` / the PF's
   ``cma_roce_tos`` (with rdma_cm); when none of them is given the model
   takes the intent DSCP 26 (TOS 106, what the collection's layer 8 sets as
   the default traffic class).  RoCE v1 (``cma_roce_mode`` of an end with
   rdma_cm, or a RoCE v1 GID selected) has no IP header, so DSCP trust puts
   it on priority 0, which has no PFC.  Any break makes the path lossy: under
   load, drops and go-back-N retransmissions collapse the bandwidth to
   ``LOSSY_RANGE`` (30-45 %) of line rate.
5. *Healthy.*  Otherwise the pair reaches ``HEALTHY_RANGE`` (97.5-98.5 %) of
   the slower end's line rate (a VF's ``max_tx_rate`` caps it).

Where a rule picks a figure inside a range, the position comes from a hash of
the two endpoint names, so results are deterministic per pair and differ a
little between pairs.

NCCL (``nccl_busbw``): all ranks on one node measure NVLink
(``NVLINK_BUSBW_GBS``, fixed).  Across nodes NCCL uses the RDMA devices of
each node that match ``NCCL_IB_HCA`` (prefix match, ``=`` exact, ``^``
exclude) and whose port is active, pairing the nodes' NICs rail by rail.
``busbw = min over rails (per-rail pair bandwidth in GB/s) x k x 0.92``
with ``k`` the NICs in use per node (at most the ranks per node: each GPU
drives its nearest NIC).  NCCL picks its network in each process: a node
falls back to sockets (``NET/IB : No device found``, ``NET/Socket``) with
the ``nccl-socket-fallback`` fault or no usable RDMA device there, every
node with ``NCCL_IB_DISABLE=1``.  When every node is on sockets the job runs
at ``SOCKET_BUSBW_GBS`` (a few GB/s).  When only some are, the job fails
while its ranks connect: a connection between a node on NET/IB and one on
NET/Socket is refused by the accepting side, which checks the socket type
(``socketFinalizeAccept: wrong type 4 != 3``; NCCL releases before the check
hung there instead, NVIDIA/nccl#234).  A rail whose path fails (rules 1-3)
fails the job, as NCCL aborts on a completion error.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

INTENT_PRIORITY = 3
INTENT_DSCP = 26
ROCE_HEADROOM = 96          # GRH/IP + UDP + BTH + ext headers + ICRC (iboe_get_mtu)
IB_MTUS = (4096, 2048, 1024, 512, 256)
HEALTHY_RANGE = (0.975, 0.985)
LOSSY_RANGE = (0.30, 0.45)
NCCL_EFFICIENCY = 0.92
SOCKET_BUSBW_GBS = (2.4, 3.0)
#: single-node all-reduce bus bandwidth over NVLink/NVSwitch by GPU family, GB/s
NVLINK_BUSBW_GBS = {"H100": 360.0, "H200": 360.0, "B200": 680.0, "A100": 230.0, "default": 20.0}
DEFAULT_GPU = "NVIDIA H100 80GB HBM3"


class FabricError(Exception):
    """A device, node or address the rack does not have."""


def pair_fraction(key: str, lo: float, hi: float) -> float:
    """A deterministic position in [lo, hi) from ``key``."""
    h = int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") / 2 ** 32
    return lo + (hi - lo) * h


def active_mtu(netdev_mtu: int) -> int:
    """The RoCE active MTU mlx5 reports for a netdev MTU."""
    for m in IB_MTUS:
        if netdev_mtu - ROCE_HEADROOM >= m:
            return m
    return 256


def _mtu_efficiency(mtu: int) -> float:
    return (mtu / (mtu + ROCE_HEADROOM)) / (4096 / (4096 + ROCE_HEADROOM))


# --------------------------------------------------------------------------
# switch state, read without the SSH server's dependencies
# --------------------------------------------------------------------------

_PKG = "_simlab_fabric_switch_models"


def _switch_class(nos: str):
    """The NOS model class, loaded from simlab/switches/models as a package of
    its own so that the SSH server (paramiko) is not imported."""
    if _PKG not in sys.modules:
        d = Path(__file__).resolve().parents[1] / "switches" / "models"
        spec = importlib.util.spec_from_file_location(_PKG, d / "__init__.py", submodule_search_locations=[str(d)])
        mod = importlib.util.module_from_spec(spec)
        sys.modules[_PKG] = mod
        spec.loader.exec_module(mod)
    return sys.modules[_PKG].by_nos()[nos]


# What this process parsed of the rack directory, by path: ((inode, size,
# modification time), what was made of it). A tool twin forked by the node's
# fork server inherits the server's (simlab.tools.forkserver.warm), so a
# call parses only the files that changed since the server's last call. A
# file is parsed again once any of the three differs: the writers replace a
# file or rewrite it in place, which moves its size or its modification
# time; the one change this cannot see is a rewrite to the same size within
# one tick of the file system's clock.
_PARSED: dict[tuple, tuple[tuple, object]] = {}


def _parsed(path: Path, make, kind: str = "json"):
    """``make(text)`` of the file at ``path``, kept per version of the file
    (_PARSED); FileNotFoundError and make's errors as without it. What it
    returns is shared by every call: callers must not change it."""
    p = str(path)
    st = os.stat(p)
    version = (st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _PARSED.get((kind, p))
    if hit is not None and hit[0] == version:
        return hit[1]
    with open(p, encoding="utf-8") as f:
        value = make(f.read())
    _PARSED[(kind, p)] = (version, value)
    return value


def read_json(path: Path, empty=None):
    """The JSON document in ``path`` (``empty`` for an empty file, when
    given), parsed once per version of the file; shared, not to be changed."""
    return _parsed(path, lambda text: empty if empty is not None and not text else json.loads(text),
                   "json" if empty is None else "json-or-empty")


class _SwitchPorts:
    """A switch's state file made into its NOS model, with the view of each
    port asked for kept."""

    def __init__(self, text: str):
        st = json.loads(text)
        self.model = _switch_class(st["nos"])(st["name"], st["ports"])
        self.model.load_state(st)
        self.views: dict[str, dict] = {}

    def view(self, port: str) -> dict:
        if port not in self.views:
            self.views[port] = self.model.port_view(port)
        return self.views[port]


def load_port_views(switch_dir: Path, ports_by_switch: dict[str, list[str]]) -> dict:
    """``{(switch, port): port_view}`` from the switches' state files; a
    switch without a state file has no entry (its ports count as down). The
    views are shared (_PARSED): not to be changed."""
    views = {}
    for name, ports in ports_by_switch.items():
        try:
            switch = _parsed(Path(switch_dir) / f"{name}.json", _SwitchPorts, "switch")
        except (FileNotFoundError, ValueError):
            continue
        for p in ports:
            views[(name, p)] = switch.view(p)
    return views


# --------------------------------------------------------------------------
# the rack
# --------------------------------------------------------------------------

@dataclass
class Endpoint:
    node: str
    dev: str                    # RDMA device name
    pf: dict                    # the PF's live summary
    vf: dict | None             # the VF's, when dev is a VF
    cable: dict | None          # the lab.json cabling entry of the PF
    port: dict | None           # the switch port_view, None when unknown

    @property
    def name(self) -> str:
        return f"{self.node}/{self.dev}"

    @property
    def netdev(self) -> str:
        return self.vf["netdev"] if self.vf else self.pf["netdev"]

    @property
    def netdev_mtu(self) -> int:
        return int(self.vf["mtu"] if self.vf else self.pf["mtu"])

    @property
    def port_up(self) -> bool:
        """The RDMA port's state on its node: ACTIVE when the function's
        netdev has its link (the node kernel's carrier(): a VF's follows its
        link_state, ``enable`` keeps it up with the PF down) and, for a VF,
        its driver has probed it."""
        up = self.pf.get("bound", True) and (self.vf if self.vf is not None else self.pf)["carrier"]
        return bool(up and (self.vf is None or self.vf.get("ready", True)))

    @property
    def link_up(self) -> bool:
        """Frames from the port reach the cable: the port is up and its PF's
        own link is (a VF held up by ``enable`` reaches only its PF's other
        functions when the PF's link is down)."""
        return self.port_up and self.pf.get("operstate") == "up"

    @property
    def switch_port_up(self) -> bool:
        return bool(self.port and self.port.get("up"))

    @property
    def line_gbps(self) -> float:
        rate = self.pf.get("speed_mbps", 0) / 1000.0
        if self.vf and self.vf.get("max_tx_rate"):
            rate = min(rate, self.vf["max_tx_rate"] / 1000.0)
        return rate

    @property
    def gids(self) -> list:
        return (self.vf or self.pf).get("gids", [])

    @property
    def ipv4(self) -> str | None:
        return None if self.vf else self.pf.get("ipv4")

    def best_gid_index(self) -> int | None:
        """perftest/NCCL auto selection: a RoCE v2 GID, IPv4-mapped first."""
        v2 = [i for i, g in enumerate(self.gids) if g and g[1] == "RoCE v2"]
        v4 = [i for i in v2 if self.gids[i][0].startswith("0000:0000:0000:0000:0000:ffff:")]
        return (v4 or v2 or [None])[0]


class Rack:
    """The published state of a twin rack.  ``doc`` is lab.json, ``live``
    ``{node: live summary}``, ``ports`` ``{(switch, port): port_view}``,
    ``faults`` ``{node: {kind: True}}`` (merged with each summary's
    ``faults``)."""

    def __init__(self, doc: dict, live: dict, ports: dict, faults: dict | None = None):
        self.doc = doc
        self.live = live
        self.ports = ports
        self.faults = {n: dict(s.get("faults") or {}) for n, s in live.items()}
        for n, f in (faults or {}).items():
            self.faults.setdefault(n, {}).update(f or {})

    @classmethod
    def load(cls, rack_dir: str | os.PathLike) -> "Rack":
        d = Path(rack_dir)
        # a copy of the parsed document, which is shared (read_json)
        doc = dict(read_json(d / "lab.json"))
        # the cables as they are (a cable fault moves them; an unplugged one reaches no port)
        from .cables import found
        doc["cabling"] = [c for c in found(d, read=read_json) if not c.get("unplugged")]
        live, faults = {}, {}
        for node in [n["name"] for n in doc.get("nodes", [])]:
            for fname, into in (("live.json", live), ("faults.json", faults)):
                try:
                    into[node] = read_json(d / "nodes" / node / fname, empty={})
                except (FileNotFoundError, ValueError):
                    pass
        by_sw: dict[str, list[str]] = {}
        for c in doc.get("cabling", []):
            by_sw.setdefault(c["switch"], []).append(c["port"])
        return cls(doc, live, load_port_views(d / "switches", by_sw), faults)

    @property
    def nodes(self) -> list[str]:
        return [n["name"] for n in self.doc.get("nodes", [])]

    def cable(self, node: str, pf: dict) -> dict | None:
        for c in self.doc.get("cabling", []):
            if c["node"] == node and (c.get("pci_address") == pf.get("bdf") or c.get("pf") == pf.get("netdev")):
                return c
        return None

    def devices(self, node: str) -> list[str]:
        """RDMA devices of a node: PFs then their ready VFs."""
        s = self.live.get(node)
        if not s:
            return []
        out = [pf["rdma"] for pf in s["pfs"] if pf.get("bound", True)]
        out += [vf["rdma"] for pf in s["pfs"] for vf in pf.get("vfs", []) if vf.get("ready", True)]
        return out

    def endpoint(self, node: str, dev: str) -> Endpoint:
        s = self.live.get(node)
        if s is None:
            raise FabricError(f"node {node} has published no state")
        for pf in s["pfs"]:
            vf = None
            if pf.get("rdma") != dev:
                vf = next((v for v in pf.get("vfs", []) if v.get("rdma") == dev), None)
                if vf is None:
                    continue
            c = self.cable(node, pf)
            port = self.ports.get((c["switch"], c["port"])) if c else None
            return Endpoint(node, dev, pf, vf, c, port)
        raise FabricError(f"no RDMA device {dev} on {node}")

    def by_ipv4(self, ip: str) -> Endpoint:
        for node, s in self.live.items():
            for pf in s.get("pfs", []):
                # a server listens on every address: any of the netdev's reaches it
                if pf.get("ipv4") == ip or any(a["local"] == ip for a in pf.get("addrs", [])):
                    return self.endpoint(node, pf["rdma"])
                for vf in pf.get("vfs", []):
                    if any(a["local"] == ip for a in vf.get("addrs", [])):
                        return self.endpoint(node, vf["rdma"])
        raise FabricError(f"no PF has address {ip}")

    def node_fault(self, node: str, kind: str) -> bool:
        return bool(self.faults.get(node, {}).get(kind))


# --------------------------------------------------------------------------
# a pair of RDMA devices
# --------------------------------------------------------------------------

@dataclass
class PathResult:
    ok: bool
    error: str | None = None      # local-port-down | unreachable | gid | mtu
    detail: str = ""
    bw_gbps: float = 0.0          # achievable at large messages, Gb/s (10^9)
    line_gbps: float = 0.0
    mtu: int = 4096
    lossless: bool = True
    reasons: list[str] = field(default_factory=list)
    gid_index: tuple[int | None, int | None] = (None, None)

    @property
    def fraction(self) -> float:
        return self.bw_gbps / self.line_gbps if self.line_gbps else 0.0


def _gid(ep: Endpoint, index: int | None) -> tuple[int | None, str | None]:
    """(index, type) of the GID used, type None when the index is empty."""
    if index is None:
        index = ep.best_gid_index()
        if index is None:
            return None, None
    if index < 0 or index >= len(ep.gids) or not ep.gids[index]:
        return index, None
    return index, ep.gids[index][1]


def _lossless_breaks(ep: Endpoint, dscp: int, v1: bool) -> list[str]:
    out = []
    pf = ep.pf
    if pf.get("trust") != "dscp":
        out.append(f"{ep.name}: host trust {pf.get('trust')}, not dscp")
    pfc = pf.get("pfc") or [0] * 8
    if not pfc[INTENT_PRIORITY]:
        on = [i for i, v in enumerate(pfc) if v]
        out.append(f"{ep.name}: host PFC on priorities {on or 'none'}, not {INTENT_PRIORITY}")
    host_prio = int((pf.get("dscp2prio") or {}).get(str(dscp), dscp >> 3))
    if not v1 and host_prio != INTENT_PRIORITY:
        out.append(f"{ep.name}: host maps DSCP {dscp} to priority {host_prio}")
    p = ep.port or {}
    where = f"{ep.cable['switch']} {ep.cable['port']}" if ep.cable else "switch port"
    if p.get("trust") not in ("dscp", "both"):
        out.append(f"{where}: trust {p.get('trust')}, not dscp")
    if INTENT_PRIORITY not in (p.get("pfc_priorities") or []):
        out.append(f"{where}: PFC on priorities {p.get('pfc_priorities') or 'none'}, not {INTENT_PRIORITY}")
    dmap = p.get("dscp_map") or {}
    sw_prio = dmap.get(dscp, dmap.get(str(dscp)))
    if not v1 and p.get("trust") in ("dscp", "both") and sw_prio is not None and int(sw_prio) != INTENT_PRIORITY:
        out.append(f"{where}: maps DSCP {dscp} to priority {sw_prio}")
    return out


def rdma_path(rack: Rack, a: Endpoint, b: Endpoint, *, gid_index: int | None = None,
              remote_gid_index: int | None = None, tos: int | None = None, rdma_cm: bool = False) -> PathResult:
    """Apply the module's rules to the pair ``a`` (the initiator) -> ``b``."""
    line = min(a.line_gbps, b.line_gbps)
    if not a.port_up:
        return PathResult(False, "local-port-down", f"{a.name}: port state Down", line_gbps=line)
    for ep in (a, b):
        if not ep.link_up:
            return PathResult(False, "unreachable", f"{ep.name}: port down", line_gbps=line)
    for ep in (a, b):
        if not ep.switch_port_up:
            where = f"{ep.cable['switch']} {ep.cable['port']}" if ep.cable else "no cabled switch port"
            return PathResult(False, "unreachable", f"{ep.name}: switch port down ({where})", line_gbps=line)
    if not (a.cable and b.cable) or a.cable["switch"] != b.cable["switch"]:
        return PathResult(False, "unreachable", f"{a.name} and {b.name} are on different leaves "
                          f"({a.cable and a.cable['switch']}, {b.cable and b.cable['switch']})", line_gbps=line)
    ga, ta = _gid(a, gid_index)
    gb, tb = _gid(b, remote_gid_index if remote_gid_index is not None else gid_index)
    for ep, (gi, gt) in ((a, (ga, ta)), (b, (gb, tb))):
        if gt is None:
            return PathResult(False, "gid", f"{ep.name}: no GID at index {gi}", line_gbps=line)
    mtu = min(active_mtu(a.netdev_mtu), active_mtu(b.netdev_mtu))
    for ep in (a, b):
        sw_mtu = int(ep.port.get("mtu") or 0)
        if sw_mtu < mtu + ROCE_HEADROOM:
            return PathResult(False, "mtu", f"{ep.cable['switch']} {ep.cable['port']}: MTU {sw_mtu} below "
                              f"{mtu + ROCE_HEADROOM} needed by RoCE at active MTU {mtu}",
                              line_gbps=line, mtu=mtu)
    v1 = "v2" not in ta or "v2" not in tb
    if rdma_cm:
        v1 = v1 or any(ep.pf.get("roce_mode", "RoCE v2") != "RoCE v2" for ep in (a, b))
    if tos is None and rdma_cm and a.pf.get("roce_tos"):
        tos = int(a.pf["roce_tos"])
    dscp = INTENT_DSCP if tos is None else (int(tos) >> 2) & 0x3f
    reasons = []
    if v1:
        reasons.append("RoCE v1 traffic carries no DSCP: the switch classifies it to priority 0, without PFC")
    reasons += _lossless_breaks(a, dscp, v1) + _lossless_breaks(b, dscp, v1)
    key = "|".join(sorted((a.name, b.name)))
    lossless = not reasons
    frac = pair_fraction(key, *(HEALTHY_RANGE if lossless else LOSSY_RANGE))
    bw = line * frac * _mtu_efficiency(mtu)
    return PathResult(True, None, "", round(bw, 2), line, mtu, lossless, reasons, (ga, gb))


# --------------------------------------------------------------------------
# NCCL
# --------------------------------------------------------------------------

#: NCCL's socket types (misc/socket.h ncclSocketType) of the two networks'
#: connections, which the accepting side checks (socketFinalizeAccept)
NCCL_SOCKET_TYPE = {"Socket": 3, "IB": 4}


@dataclass
class NcclResult:
    ok: bool
    transport: str                # "IB", "Socket", "mixed" or "NVLink"
    busbw_gbs: float = 0.0
    devices: dict = field(default_factory=dict)   # node -> [rdma devs used]
    reasons: list[str] = field(default_factory=list)
    error: str | None = None
    rails: list[PathResult] = field(default_factory=list)
    transports: dict = field(default_factory=dict)   # node -> "IB" | "Socket", the network its ranks picked


def hca_filter(spec: str | None, devices: list[str]) -> list[str]:
    """NCCL_IB_HCA: comma list of device prefixes (``:port`` ignored), ``=``
    for exact names, ``^`` to exclude."""
    if not spec:
        return list(devices)
    exclude = spec.startswith("^")
    spec = spec[1:] if exclude else spec
    exact = spec.startswith("=")
    spec = spec[1:] if exact else spec
    names = [s.split(":")[0].strip() for s in spec.split(",") if s.strip()]

    def hit(d):
        return any(d == n if exact else d.startswith(n) for n in names)

    return [d for d in devices if hit(d) != exclude]


def nvlink_busbw(gpu_name: str) -> float:
    for fam, bw in NVLINK_BUSBW_GBS.items():
        if fam in gpu_name:
            return bw
    return NVLINK_BUSBW_GBS["default"]


def nccl_busbw(rack: Rack, nodes: list[str], ranks_per_node: int, env: dict,
               gpu_name: str = DEFAULT_GPU) -> NcclResult:
    """Transport and bus bandwidth of an all-reduce over ``nodes`` (in ring
    order) with ``ranks_per_node`` GPUs each, under NCCL settings ``env``.

    Each node's ranks pick their network on their own (``transports``):
    ``NET/Socket`` with ``NCCL_IB_DISABLE=1``, the ``nccl-socket-fallback``
    fault or no usable RDMA device there, ``NET/IB`` otherwise.  All on
    sockets: the job runs at socket speed.  Some on each (``mixed``): the
    job fails while its ranks connect (``error``; the accepting side of a
    connection between the two networks sees the other's socket type)."""
    if len(nodes) == 1:
        return NcclResult(True, "NVLink", nvlink_busbw(gpu_name) if ranks_per_node > 1 else 0.0)
    key = ",".join(nodes)
    sock = NcclResult(True, "Socket", round(pair_fraction(key, *SOCKET_BUSBW_GBS), 2),
                      devices={n: [] for n in nodes}, transports={n: "Socket" for n in nodes})
    if str(env.get("NCCL_IB_DISABLE", "0")).strip() == "1":
        sock.reasons.append("NCCL_IB_DISABLE=1")
        return sock
    gid = env.get("NCCL_IB_GID_INDEX")
    gid_index = int(gid) if gid not in (None, "", "-1") else None
    tc = env.get("NCCL_IB_TC")
    tos = int(tc) if tc not in (None, "", "-1") else None
    used, transports, reasons = {}, {}, []
    for n in nodes:
        if rack.node_fault(n, "nccl-socket-fallback"):
            transports[n] = "Socket"
            reasons.append(f"{n}: NCCL falls back to sockets (nccl-socket-fallback)")
            continue
        devs = hca_filter(env.get("NCCL_IB_HCA"), rack.devices(n))
        eps = [rack.endpoint(n, d) for d in devs]
        used[n] = [e for e in eps if e.port_up]     # NCCL takes the ports that are ACTIVE
        transports[n] = "IB" if used[n] else "Socket"
        if not used[n]:
            reasons.append(f"{n}: NET/IB : No device found")
    on_socket = [n for n in nodes if transports[n] == "Socket"]
    if len(on_socket) == len(nodes):
        sock.reasons += reasons
        return sock
    devices = {n: [e.dev for e in used.get(n, [])] for n in nodes}
    if on_socket:
        # the first connection from a node on one network to a node on the
        # other fails when it is accepted: NCCL checks the socket type
        for i, n in enumerate(nodes):
            prev = nodes[i - 1]
            if transports[prev] != transports[n]:
                error = "socketFinalizeAccept: wrong type %d != %d" % (
                    NCCL_SOCKET_TYPE[transports[prev]], NCCL_SOCKET_TYPE[transports[n]])
                break
        return NcclResult(False, "mixed", 0.0, devices, reasons + [
            "%s on NET/Socket, %s on NET/IB: the job cannot connect" % (
                ", ".join(on_socket), ", ".join(n for n in nodes if n not in on_socket))],
            error, [], transports)
    k = min(min(len(v) for v in used.values()), max(ranks_per_node, 1))
    rails = []
    for r in range(k):
        worst = None
        for i, n in enumerate(nodes):
            m = nodes[(i + 1) % len(nodes)]
            p = rdma_path(rack, used[n][r], used[m][r], gid_index=gid_index, tos=tos)
            if not p.ok:
                return NcclResult(False, "IB", 0.0, {n: [e.dev for e in v[:k]] for n, v in used.items()},
                                  [p.detail], f"rail {r}: {p.detail}", rails + [p], transports)
            if worst is None or p.bw_gbps < worst.bw_gbps:
                worst = p
        rails.append(worst)
    per_rail_gbs = min(p.bw_gbps for p in rails) / 8.0
    busbw = per_rail_gbs * k * NCCL_EFFICIENCY
    reasons = [x for p in rails for x in p.reasons]
    return NcclResult(True, "IB", round(busbw, 2), {n: [e.dev for e in v[:k]] for n, v in used.items()},
                      reasons, None, rails, transports)
