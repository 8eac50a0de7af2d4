"""Thin wrapper around the podman CLI with the twin's containers.conf."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

CONF = Path(__file__).with_name("containers.conf")


def env() -> dict:
    e = dict(os.environ)
    e.setdefault("CONTAINERS_CONF", str(CONF))
    return e


def run(*args: str, check: bool = True, capture: bool = True, input: str | None = None,
        timeout: float | None = 300) -> subprocess.CompletedProcess:
    cmd = ["podman", *args]
    proc = subprocess.run(cmd, env=env(), text=True, input=input, timeout=timeout,
                          stdout=subprocess.PIPE if capture else None,
                          stderr=subprocess.PIPE if capture else None)
    if check and proc.returncode != 0:
        raise PodmanError(f"{' '.join(cmd)} failed ({proc.returncode}): {(proc.stderr or '').strip()}")
    return proc


class PodmanError(RuntimeError):
    pass


def image_exists(ref: str) -> bool:
    return run("image", "exists", ref, check=False).returncode == 0


def containers(label: str) -> list[dict]:
    out = run("ps", "-a", "--filter", f"label={label}", "--format", "json").stdout
    return json.loads(out or "[]")
