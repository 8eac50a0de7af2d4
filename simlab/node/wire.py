"""The agent's wire protocol, client side: one JSON object per line each way.

Kept free of the agent's own imports (the twin kernel, sysfs, FUSE) so that a
tool twin, started once per call like the real binary, loads only this."""

from __future__ import annotations

import json
import os
import socket

# where the agent listens: under its run directory (boot.RUN), unless
# SIMLAB_AGENT_SOCK names another socket
SOCK = (os.environ.get("SIMLAB_AGENT_SOCK")
        or os.path.join(os.environ.get("SIMLAB_RUN_DIR", "/run/simlab"), "agent.sock"))


def request(req: dict, sock_path: str | os.PathLike = SOCK, timeout: float = 30) -> dict:
    """Send one request to the agent and return its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(sock_path))
        s.sendall(json.dumps(req).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    return json.loads(buf)
