"""The twin rack's cables as they are, and what LLDP shows over them.

``lab.json``'s ``cabling`` is the plan (the inventory's gpufabric_cabling).
The cables as found start equal to it and live in ``cables.json`` in the
rack directory once a fault changed them: ``cable-swap`` (a node's first two
PFs swap cables), ``cable-move`` (a node's last PF moves to the first free
port of its leaf), ``cable-unplug`` (a node's first PF loses its cable, and
its link).  The node twin's ``lldpcli`` (simlab/tools/lldpcli.py) and each
switch twin's LLDP table (simlab/switches/models) read both ends from here:
a node sees, on every PF whose link is up, the leaf and port its cable
reaches, as that leaf's NOS advertises the port (``SwitchModel.lldp_port``);
a leaf sees the node and PF on the other end, as lldpd on the node sends
them (system name the node's, port ID the PF's name, as the collection
configures lldpd).  The fabric model (model.py) takes the cables as found
for its paths.

Standard library only: the tool twins import it inside the node containers.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

FOUND = "cables.json"
KINDS = ("cable-swap", "cable-move", "cable-unplug")
TTL = 120


class CableError(ValueError):
    pass


def _read(path: Path):
    return json.loads(path.read_text())


def plan(rack_dir: str | os.PathLike, read=_read) -> list[dict]:
    return read(Path(rack_dir) / "lab.json").get("cabling", [])


def found(rack_dir: str | os.PathLike, read=_read) -> list[dict]:
    """The cables as they are: ``cables.json`` when a fault wrote it, else the
    plan. An unplugged cable keeps its entry with ``"unplugged": true``.
    ``read`` parses a JSON file (the fabric model's keeps what it parsed, and
    its caller leaves the list as it is)."""
    path = Path(rack_dir) / FOUND
    try:
        return read(path)
    except (FileNotFoundError, ValueError):
        return [dict(c) for c in plan(rack_dir, read)]


def save(rack_dir: str | os.PathLike, cables: list[dict]) -> None:
    path = Path(rack_dir) / FOUND
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(cables, indent=1) + "\n")
    os.replace(tmp, path)


def restore(rack_dir: str | os.PathLike) -> None:
    """Every cable back where the plan has it."""
    try:
        (Path(rack_dir) / FOUND).unlink()
    except FileNotFoundError:
        pass


def chassis_mac(name: str) -> str:
    """A system's chassis ID as LLDP sends it: a locally administered MAC
    derived from its name (stable across runs)."""
    h = hashlib.sha256(name.encode()).digest()
    return "02:" + ":".join(f"{b:02x}" for b in h[:5])


def _of_node(cables: list[dict], node: str) -> list[dict]:
    return [c for c in cables if c["node"] == node]


def apply(rack_dir: str | os.PathLike, kind: str, node: str, free_port) -> str:
    """Change the cables of ``node`` as ``kind`` says; ``free_port(switch,
    taken)`` names a port of ``switch`` that no cable in ``taken`` uses.
    Returns what was done, in words."""
    cables = found(rack_dir)
    mine = [c for c in _of_node(cables, node) if not c.get("unplugged")]
    if kind == "cable-swap":
        if len(mine) < 2:
            raise CableError(f"{node}: cable-swap needs two cabled PFs; it has {len(mine)}")
        a, b = mine[0], mine[1]
        a["switch"], a["port"], b["switch"], b["port"] = b["switch"], b["port"], a["switch"], a["port"]
        done = f"{node}: the cables of {a['pf']} and {b['pf']} swapped"
    elif kind == "cable-move":
        if not mine:
            raise CableError(f"{node}: no cabled PF to move")
        c = mine[-1]
        taken = {(x["switch"], x["port"]) for x in cables if not x.get("unplugged")}
        taken |= {(x["switch"], x["port"]) for x in plan(rack_dir)}
        new = free_port(c["switch"], taken)
        done = f"{node}: the cable of {c['pf']} moved from {c['switch']} {c['port']} to {c['switch']} {new}"
        c["port"] = new
    elif kind == "cable-unplug":
        if not mine:
            raise CableError(f"{node}: no cabled PF to unplug")
        c = mine[0]
        c["unplugged"] = True
        done = f"{node}: the cable of {c['pf']} unplugged from {c['switch']} {c['port']}"
    else:
        raise CableError(f"unknown cable fault {kind!r}; known: {', '.join(KINDS)}")
    save(rack_dir, cables)
    return done


def _live(rack_dir: Path, node: str) -> dict:
    try:
        return json.loads((rack_dir / "nodes" / node / "live.json").read_text() or "{}")
    except (FileNotFoundError, ValueError):
        return {}


def _up(live: dict, pf_name: str) -> bool:
    """A PF carries LLDP when its link is up (a node with no published
    state, a VM lab's, counts as up)."""
    pfs = live.get("pfs")
    if not pfs:
        return True
    pf = next((p for p in pfs if p.get("netdev") == pf_name), None)
    return bool(pf) and pf.get("operstate") == "up"


def _model(doc: dict, switch: str):
    from simlab.switches.models import by_nos
    sw = next((s for s in doc.get("switches", []) if s["name"] == switch), None)
    if sw is None:
        return None
    return by_nos()[sw["nos"]](switch, list(sw.get("ports") or []) or None)


def advertised(doc: dict, switch: str, port: str) -> dict:
    """What the switch end of a cable sends over LLDP about itself and
    ``port``: its NOS's port ID subtype, ID and description (a twin leaf's
    model), or for a switch of no NOS (the VM lab's rail hub) the port's
    name."""
    model = _model(doc, switch)
    kind, pid, descr = model.lldp_port(port) if model is not None else ("ifname", port, "")
    return {"sysname": switch, "chassis_id": chassis_mac(switch), "port_id_type": kind, "port_id": pid,
            "port_descr": descr, "ttl": TTL}


def node_neighbors(rack_dir: str | os.PathLike, node: str) -> list[dict]:
    """What lldpd on ``node`` sees: per PF whose cable is in and link up,
    the leaf at the other end (``local`` the PF)."""
    d = Path(rack_dir)
    doc = json.loads((d / "lab.json").read_text())
    live = _live(d, node)
    out = []
    for c in _of_node(found(d), node):
        if c.get("unplugged") or not _up(live, c["pf"]):
            continue
        out.append(dict(advertised(doc, c["switch"], c["port"]), local=c["pf"]))
    return out


def switch_neighbors(rack_dir: str | os.PathLike, switch: str) -> list[dict]:
    """What ``switch`` sees: per port whose cable is in and whose PF's link
    is up, the node and PF at the other end (``local`` the port)."""
    d = Path(rack_dir)
    out = []
    for c in found(d):
        if c["switch"] != switch or c.get("unplugged") or not _up(_live(d, c["node"]), c["pf"]):
            continue
        out.append({"local": c["port"], "sysname": c["node"], "chassis_id": chassis_mac(c["node"]),
                    "port_id_type": "ifname", "port_id": c["pf"], "port_descr": c["pf"], "ttl": TTL})
    return out


def draw(rack_dir: str | os.PathLike) -> str:
    """The cables as found, one line a PF, marked against the plan:
    ``node01 enp59s0f0np0  ->  leaf2 swp1    SWAPPED? plan: leaf1 ethernet 1/1``."""
    planned = {(c["node"], c["pf"]): c for c in plan(rack_dir)}
    rows = []
    for c in found(rack_dir):
        want = planned.get((c["node"], c["pf"])) or {}
        at = "(unplugged)" if c.get("unplugged") else f"{c['switch']} {c['port']}"
        mark = "" if not c.get("unplugged") and (c["switch"], c["port"]) == (want.get("switch"), want.get("port")) \
            else f"differs from the plan: {want.get('switch')} {want.get('port')}"
        rows.append((f"{c['node']} {c['pf']}", at, mark))
    w0 = max([len(r[0]) for r in rows] + [4])
    w1 = max([len(r[1]) for r in rows] + [5])
    lines = [f"{'PF':<{w0}}  {'cable':<{w1}}  against the plan"]
    lines += [f"{a:<{w0}}  {b:<{w1}}  {c or 'as planned'}" for a, b, c in rows]
    return "\n".join(lines)
