"""BMC-side faults of the twin, injected by ``simlab fault``.

Kinds and their effect:

``bmc-unreachable``
    The node's Redfish endpoint accepts TCP connections and resets them at
    once (no TLS handshake, no HTTP answer).  Clients see "connection reset"
    as from a BMC whose web server hung.  Read by the server on every
    connection, so it takes effect immediately and lasts until cleared.

``bmc-cert-changed``
    The BMC presents another self-signed certificate (a new key) than the
    lab's, as after its certificate was regenerated or with someone else
    answering at its address; made at injection, served from the next
    connection on.  Requests that reach any BMC carrying a credential are
    counted (``credentials_received``), so a test can tell none was sent.

``bios-sriov-off``
    The *current* SR-IOV BIOS attribute (``SriovGlobalEnable``, ``Sriov`` or
    Supermicro's ``SR_IOVSupport_XXXX``) is set to disabled, as if someone
    changed it in BIOS setup, and any pending value for it is dropped.  The
    node only sees it after its next boot (the CLI reboots it).

``bios-vtd-off``
    Same for the IOMMU switch (Dell ``ProcVirtualization`` or
    ``IommuSupport``, HPE ``IntelProcVtd``/``ProcAmdIoVt``, Supermicro
    VT-d / ``IOMMU``).

:func:`clear` lifts ``bmc-unreachable`` and puts back the BIOS values the
BIOS faults overwrote (unless something changed them since, e.g. the bios
role already repaired them); it reports whether the node needs a reboot to
see the restored values.  Fault records live in
``<state_dir>/bmc/faults/<node>.json``, outside the node's bind mount.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from simlab.bmc import state, vendors

KINDS = ("bmc-unreachable", "bmc-cert-changed", "bios-sriov-off", "bios-vtd-off")
_SWITCH = {"bios-sriov-off": "sriov", "bios-vtd-off": "iommu"}


def _path(state_dir, node: str) -> Path:
    return Path(state_dir) / "bmc" / "faults" / f"{node}.json"


def _read(state_dir, node: str) -> dict:
    try:
        with open(_path(state_dir, node), encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def _write(state_dir, node: str, data: dict) -> None:
    p = _path(state_dir, node)
    if not data:
        try:
            p.unlink()
        except FileNotFoundError:
            pass
        return
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, p)


def active(state_dir, node: str) -> list[str]:
    """Fault kinds currently recorded for ``node``."""
    return sorted(_read(state_dir, node).get("kinds", []))


def is_unreachable(state_dir, node: str) -> bool:
    return "bmc-unreachable" in _read(state_dir, node).get("kinds", [])


def cert_changed(state_dir, node: str) -> bool:
    """bmc-cert-changed: the BMC presents another certificate (another key)
    than the one it had, as after a regenerated certificate or with someone
    else answering at its address."""
    return "bmc-cert-changed" in _read(state_dir, node).get("kinds", [])


def _credentials_path(state_dir, node: str) -> Path:
    return Path(state_dir) / "bmc" / "credentials" / f"{node}.count"


def count_credentials(state_dir, node: str) -> None:
    """Count a request that reached the BMC carrying a credential (basic auth
    or a session token), so tests can tell that none was sent."""
    p = _credentials_path(state_dir, node)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "a", encoding="utf-8") as f:
        f.write("1\n")


def credentials_received(state_dir, node: str) -> int:
    """How many requests with a credential the BMC has received."""
    try:
        return len(_credentials_path(state_dir, node).read_text(encoding="utf-8").splitlines())
    except FileNotFoundError:
        return 0


def inject(state_dir, node: str, kind: str) -> dict:
    """Apply fault ``kind`` to ``node``; returns a description of what changed."""
    if kind not in KINDS:
        raise ValueError(f"unknown BMC fault {kind!r} (expected one of {', '.join(KINDS)})")
    bios = state.bios_path(state_dir, node)
    if not bios.exists():
        raise FileNotFoundError(f"no BMC state for node {node!r} at {bios}")
    rec = _read(state_dir, node)
    kinds = set(rec.get("kinds", []))
    result = {"node": node, "kind": kind}
    if kind == "bmc-cert-changed":
        from simlab.bmc.server import ensure_certificate
        cert, _key = ensure_certificate(state_dir, replaced_for=node)
        result.update(certificate=str(cert))
    if kind in _SWITCH:
        with state.update_bios(bios) as data:
            name = vendors.switch_attribute(data["vendor"], data["current"], _SWITCH[kind])
            if name is None:
                raise ValueError(f"node {node!r}: no {_SWITCH[kind]} attribute in its BIOS")
            off = vendors.off_value(data["vendor"], data["current"], name)
            restore = rec.setdefault("restore", {})
            if name not in restore:
                restore[name] = {"value": data["current"][name], "fault": off}
            data["current"][name] = off
            data["pending"].pop(name, None)
        result.update(attribute=name, value=off, reboot_needed=True)
    kinds.add(kind)
    rec["kinds"] = sorted(kinds)
    _write(state_dir, node, rec)
    return result


def clear(state_dir, node: str) -> dict:
    """Lift every fault of ``node``; see the module docstring."""
    rec = _read(state_dir, node)
    restored = {}
    restore = rec.get("restore", {})
    bios = state.bios_path(state_dir, node)
    if restore and bios.exists():
        with state.update_bios(bios) as data:
            for name, r in restore.items():
                if data["current"].get(name) == r["fault"] and name not in data["pending"]:
                    data["current"][name] = r["value"]
                    restored[name] = r["value"]
    _write(state_dir, node, {})
    return {"node": node, "cleared": rec.get("kinds", []), "restored": restored,
            "reboot_needed": bool(restored)}
