"""The VM lab's fabric: one Ethernet learning switch per rail, on loopback UDP.

Each fabric NIC of a VM is a QEMU ``-netdev dgram`` whose remote end is one
port of this switch (127.0.0.1:PORT): every datagram is one Ethernet frame.
A frame is sent to the port that last sent from its destination MAC, or
flooded to the rail's other ports when that MAC is not known yet (broadcast,
multicast, the first ARP).  Nothing leaves 127.0.0.1.

    python -m simlab.vm.hub serve --state-dir DIR --spec SPEC.json

``SPEC.json``: ``{"rails": [{"name": "rail0", "ports": [{"node": "node01",
"nic": 0, "hub_port": 40001, "vm_port": 40002, "lldp": {...}}, ...]}]}``.
The server writes ``DIR/fabric-ready`` when it listens, and counts frames
per port in ``DIR/fabric-counters.json`` when it stops.

LLDP: like an 802.1D bridge, the hub never forwards a frame to the
nearest-bridge group address 01:80:c2:00:00:0e; like the switch at the other
end of each cable, it sends every ``LLDP_EVERY`` seconds an IEEE 802.1AB
LLDPDU to each port whose spec has ``lldp`` (chassis ID, port ID, TTL, port
description, system name, system description, capabilities: what
simlab/fabric/cables.py says that switch advertises for that port). So real
lldpd in each VM reads a real LLDP frame over a real link.
"""

from __future__ import annotations

import argparse
import json
import selectors
import signal
import socket
import sys
import time
from pathlib import Path

LOOPBACK = "127.0.0.1"
MAX_FRAME = 65536
LLDP_GROUP = bytes.fromhex("0180c200000e")
LLDP_ETHERTYPE = b"\x88\xcc"
LLDP_EVERY = 5.0
# 802.1AB port ID subtypes, by the names lldpd prints
PORT_ID_SUBTYPE = {"ifalias": 1, "mac": 3, "ip": 4, "ifname": 5, "local": 7}


def _tlv(kind: int, value: bytes) -> bytes:
    return (((kind & 0x7f) << 9) | (len(value) & 0x1ff)).to_bytes(2, "big") + value


def lldpdu(adv: dict) -> bytes:
    """The Ethernet frame of one LLDPDU advertising ``adv`` ({sysname,
    chassis_id, port_id_type, port_id, port_descr, ttl})."""
    mac = bytes.fromhex(adv["chassis_id"].replace(":", ""))
    if adv["port_id_type"] == "mac":
        port_id = bytes.fromhex(adv["port_id"].replace(":", ""))
    else:
        port_id = adv["port_id"].encode()
    body = (_tlv(1, b"\x04" + mac)                                        # chassis ID: MAC address
            + _tlv(2, bytes([PORT_ID_SUBTYPE[adv["port_id_type"]]]) + port_id)
            + _tlv(3, int(adv.get("ttl") or 120).to_bytes(2, "big"))
            + (_tlv(4, adv["port_descr"].encode()) if adv.get("port_descr") else b"")
            + _tlv(5, adv["sysname"].encode())
            + _tlv(6, b"simlab rail hub, the switch end of the cable")
            + _tlv(7, (0x0014).to_bytes(2, "big") + (0x0010).to_bytes(2, "big"))   # bridge, router; router on
            + _tlv(0, b""))
    # the port's own MAC: the chassis MAC with its last byte set apart
    src = mac[:5] + bytes([(mac[5] + 1) & 0xff])
    return LLDP_GROUP + src + LLDP_ETHERTYPE + body


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
            p["lldp_frame"] = lldpdu(p["lldp"]) if p.get("lldp") else None

    def advertise(self) -> None:
        """Each port's LLDPDU, as the switch end of its cable sends it."""
        for j, p in enumerate(self.ports):
            if p["lldp_frame"]:
                try:
                    self.socks[j].sendto(p["lldp_frame"], (LOOPBACK, int(p["vm_port"])))
                except OSError:
                    pass

    def forward(self, i: int, frame: bytes) -> None:
        if len(frame) < 14:
            return
        self.ports[i]["rx"] += 1
        dst, src = frame[0:6], frame[6:12]
        if dst == LLDP_GROUP:
            return  # a bridge does not forward LLDP: each end hears only the switch port it is cabled to
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
    next_lldp = 0.0
    while not stop:
        now = time.monotonic()
        if now >= next_lldp:
            for rail in rails:
                rail.advertise()
            next_lldp = now + LLDP_EVERY
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
