"""Shared lookups of the tool twins over the node agent's ``summary``.

The summary carries every PF with its VFs; these helpers turn it into the
views the vendor tools have: PCI functions by address, netdevs and RDMA
devices that exist right now (a VF's netdev and RDMA device appear only once
it is probed; RDMA devices need ``mlx5_ib``), port states and GID tables.
"""

from __future__ import annotations

import re

_BDF_RE = re.compile(r"^(?:(?P<dom>[0-9a-fA-F]{1,4}):)?(?P<bus>[0-9a-fA-F]{1,2}):(?P<dev>[0-9a-fA-F]{1,2})\.(?P<fn>[0-7])$")
_MST_RE = re.compile(r"^(?:/dev/mst/)?mt(?P<hca>\d+)_pciconf(?P<n>\d+)$")


def normalize_bdf(text: str) -> str | None:
    """``3b:00.0`` / ``0000:3b:00.0`` -> ``0000:3b:00.0``; None if not a BDF."""
    m = _BDF_RE.match(text.strip())
    if not m:
        return None
    dom = int(m.group("dom") or "0", 16)
    return f"{dom:04x}:{int(m.group('bus'), 16):02x}:{int(m.group('dev'), 16):02x}.{m.group('fn')}"


def pf_by_device(s: dict, device: str, allow_mst: bool = True) -> dict | None:
    """The PF a ``-d`` argument names: a full or short PCI address, or an MST
    device ``/dev/mst/mt<hca>_pciconf<N>`` (the N-th card of that type in
    PCI order, as ``mst start`` numbers them)."""
    bdf = normalize_bdf(device)
    if bdf is not None:
        return next((p for p in s["pfs"] if p["bdf"] == bdf), None)
    m = _MST_RE.match(device.strip())
    if m and allow_mst:
        same = sorted((p for p in s["pfs"] if p["hca"] == f"MT{m.group('hca')}"), key=lambda p: p["bdf"])
        n = int(m.group("n"))
        return same[n] if n < len(same) else None
    return None


def netdevs(s: dict) -> list[tuple[str, dict, dict | None]]:
    """(name, pf, vf or None) for every twin netdev that exists now."""
    out = []
    for pf in s["pfs"]:
        if not pf["bound"]:
            continue
        out.append((pf["netdev"], pf, None))
        for vf in pf["vfs"]:
            if vf["ready"]:
                out.append((vf["netdev"], pf, vf))
    return out


def rdma_devices(s: dict) -> list[tuple[str, dict, dict | None]]:
    """(name, pf, vf or None) for every RDMA device that exists now, PFs
    first (in probe order), then the VFs."""
    if "mlx5_ib" not in s.get("modules", []):
        return []
    pfs, vfs = [], []
    for pf in s["pfs"]:
        if not pf["bound"]:
            continue
        pfs.append((pf["rdma"], pf, None))
        for vf in pf["vfs"]:
            if vf["ready"]:
                vfs.append((vf["rdma"], pf, vf))
    return pfs + vfs


def port_up(pf: dict, vf: dict | None) -> bool:
    """Whether the function's RDMA port is active: its netdev's link (the kernel's carrier())."""
    return (pf if vf is None else vf)["carrier"]


def node_guid(pf: dict, vf: dict | None) -> str:
    if vf is None:
        return pf["node_guid"]
    g = vf["node_guid"].replace(":", "")
    return ":".join(g[i:i + 4] for i in range(0, 16, 4))


def gids(pf: dict, vf: dict | None) -> list[tuple[int, str, str, str]]:
    """(index, gid, type, ndev) of the populated GID table entries."""
    rows = (vf or pf)["gids"]
    return [(i, *row) for i, row in enumerate(rows) if row]
