"""The VM lab's fabric: one Ethernet learning switch per rail, on loopback UDP.

Each fabric NIC of a VM is a QEMU ``-netdev dgram`` whose remote end is one
port of this switch (127.0.0.1:PORT): every datagram is one Ethernet frame.
A frame is sent to the port that last sent from its destination MAC, or
flooded to the rail's other ports when that MAC is not known yet (broadcast,
multicast, the first ARP).  Nothing leaves 127.0.0.1.

    python -m simlab.vm.hub serve --state-dir DIR --spec SPEC.json

``SPEC.json``: ``{"rails": [{"name": "rail0", "ports": [{"node": "node01",
"nic": 0, "hub_port": 40001, "vm_port": 40002}, ...]}]}``.  The server
writes ``DIR/fabric-ready`` when it listens, and counts frames per port in
``DIR/fabric-counters.json`` when it stops.
"""

from __future__ import annotations

import argparse
import json
import selectors
import signal
import socket
import sys
from pathlib import Path

LOOPBACK = "127.0.0.1"
MAX_FRAME = 65536


class Rail:
    def __init__(self, name: str, ports: list[dict]):
        self.name = name
        self.ports = ports
        self.macs: dict[bytes, int] = {}
        self.socks: list[socket.socket] = []
        for p in ports:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((LOOPBACK, int(p["hub_port"])))
            s.setblocking(False)
            self.socks.append(s)
            p["rx"] = p["tx"] = 0

    def forward(self, i: int, frame: bytes) -> None:
        if len(frame) < 14:
            return
        self.ports[i]["rx"] += 1
        dst, src = frame[0:6], frame[6:12]
        if not src[0] & 1:
            self.macs[src] = i
        out = self.macs.get(dst) if not dst[0] & 1 else None
        targets = [out] if out is not None else range(len(self.ports))
        for j in targets:
            if j == i:
                continue
            try:
                self.socks[j].sendto(frame, (LOOPBACK, int(self.ports[j]["vm_port"])))
                self.ports[j]["tx"] += 1
            except OSError:
                pass  # that VM is off: a cable to a powered-off NIC drops frames too


def serve(state_dir: Path, spec: dict) -> int:
    rails = [Rail(r["name"], r["ports"]) for r in spec["rails"]]
    sel = selectors.DefaultSelector()
    for rail in rails:
        for i, s in enumerate(rail.socks):
            sel.register(s, selectors.EVENT_READ, (rail, i))
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(1))
    (state_dir / "fabric-ready").write_text("ok\n")
    while not stop:
        for key, _ in sel.select(timeout=0.5):
            rail, i = key.data
            while True:
                try:
                    frame = key.fileobj.recv(MAX_FRAME)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    break
                rail.forward(i, frame)
    counters = {r.name: [{k: p[k] for k in ("node", "nic", "rx", "tx")} for p in r.ports] for r in rails}
    (state_dir / "fabric-counters.json").write_text(json.dumps(counters, indent=2) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simlab.vm.hub", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--state-dir", required=True, type=Path)
    s.add_argument("--spec", required=True, type=Path)
    args = ap.parse_args(argv)
    return serve(args.state_dir, json.loads(args.spec.read_text()))


if __name__ == "__main__":
    sys.exit(main())
