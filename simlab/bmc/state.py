"""Persistent BMC/BIOS state of one twin node: ``<state_dir>/nodes/<name>/bios.json``.

Layout of the file::

    {
      "vendor": "dell" | "hpe" | "supermicro",
      "cpu_vendor": "intel" | "amd",
      "current": {<attribute>: <value>, ...},   # what the firmware runs with
      "pending": {<attribute>: <value>, ...},   # staged via Bios/Settings
      "boot_order": ["Boot0001", ...],
      "boot_override": {"enabled": "Disabled", "target": "None", "mode": "UEFI"},
      "system": {"manufacturer", "model", "serial", "bios_version", "uuid"}
    }

The BMC server writes it (atomically: temp file + rename, under an flock on
``bios.lock`` beside it); the node reads it at boot through :func:`load_bios`
from its read-only bind mount (``/var/lib/simlab/bmc/bios.json``) and hands
``current`` to :func:`simlab.bmc.vendors.effective`.

Standard library only: this module runs inside the node containers too.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

BIOS_FILE = "bios.json"
LOCK_FILE = "bios.lock"


def node_dir(state_dir, name: str) -> Path:
    return Path(state_dir) / "nodes" / name


def bios_path(state_dir, name: str) -> Path:
    return node_dir(state_dir, name) / BIOS_FILE


def load_bios(path) -> dict:
    """Read a bios.json (a file path, or a directory holding bios.json)."""
    p = Path(path)
    if p.is_dir():
        p = p / BIOS_FILE
    with open(p, encoding="utf-8") as f:
        data = json.load(f)
    data.setdefault("current", {})
    data.setdefault("pending", {})
    return data


def save_bios(path, data: dict) -> None:
    """Write atomically: a reader sees the old or the new file, never a torn one."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".bios.", suffix=".tmp", dir=str(p.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def locked(path):
    """Exclusive lock for a read-modify-write of the bios.json at ``path``
    (shared between the BMC server and the fault CLI)."""
    import fcntl

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p.with_name(LOCK_FILE), "a") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lk, fcntl.LOCK_UN)


@contextlib.contextmanager
def update_bios(path):
    """``with update_bios(p) as data: data[...] = ...`` -- saved on exit."""
    with locked(path):
        data = load_bios(path)
        yield data
        save_bios(path, data)


def apply_pending(data: dict) -> dict:
    """What POST does: pending settings become current; a one-time boot
    override is consumed.  Returns the attributes that changed value."""
    changed = {k: v for k, v in data.get("pending", {}).items()
               if data["current"].get(k) != v}
    data["current"].update(data.get("pending", {}))
    data["pending"] = {}
    ov = data.get("boot_override")
    if ov and ov.get("enabled") == "Once":
        ov["enabled"] = "Disabled"
        ov["target"] = "None"
    return changed
