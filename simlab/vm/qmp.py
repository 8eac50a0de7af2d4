"""A minimal QMP client: the QEMU Machine Protocol over a unix socket.

One command at a time; asynchronous events that arrive before the answer are
kept in :attr:`Qmp.events` (``SHUTDOWN``, ``RESET``, ``POWERDOWN`` ...).
See QEMU's docs/interop/qmp-spec.rst for the protocol.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path


class QmpError(RuntimeError):
    """QEMU answered a command with an error, or the socket failed."""


class Qmp:
    def __init__(self, path: Path | str, timeout: float = 10.0):
        self.path = str(path)
        self.events: list[dict] = []
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(self.path)
        except OSError as e:
            self._sock.close()
            raise QmpError(f"QMP {self.path}: {e}") from e
        self._buf = b""
        greeting = self._read()
        if "QMP" not in greeting:
            raise QmpError(f"QMP {self.path}: no greeting, got {greeting}")
        self.execute("qmp_capabilities")

    def _read(self) -> dict:
        while b"\n" not in self._buf:
            try:
                chunk = self._sock.recv(65536)
            except OSError as e:
                raise QmpError(f"QMP {self.path}: {e}") from e
            if not chunk:
                raise QmpError(f"QMP {self.path}: QEMU closed the connection")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def execute(self, command: str, **arguments) -> object:
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        try:
            self._sock.sendall(json.dumps(msg).encode() + b"\n")
        except OSError as e:
            raise QmpError(f"QMP {self.path}: {e}") from e
        while True:
            reply = self._read()
            if "event" in reply:
                self.events.append(reply)
                continue
            if "error" in reply:
                err = reply["error"]
                raise QmpError(f"QMP {command}: {err.get('class')}: {err.get('desc')}")
            return reply.get("return")

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> "Qmp":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
