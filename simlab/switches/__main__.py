"""``python -m simlab.switches serve --state-dir DIR --spec SPEC.json`` runs every
switch of SPEC (a JSON list of {name, nos, port, username, password, ports}) until
killed; ``python -m simlab.switches fault --state-dir DIR NAME KIND [--ports ...]``
injects or clears a fault."""

import argparse
import json
import signal
import sys
import threading

from .server import FAULT_KINDS, SwitchFleet, inject_fault


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m simlab.switches")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sv = sub.add_parser("serve")
    sv.add_argument("--state-dir", required=True)
    sv.add_argument("--spec", required=True)
    sv.add_argument("--known-hosts")
    fl = sub.add_parser("fault")
    fl.add_argument("--state-dir", required=True)
    fl.add_argument("name")
    fl.add_argument("kind", choices=FAULT_KINDS)
    fl.add_argument("--ports", nargs="*")
    fl.add_argument("--mtu", type=int)
    fl.add_argument("--after", type=int)
    fl.add_argument("--count", type=int)
    a = ap.parse_args(argv)
    if a.cmd == "fault":
        params = {k: getattr(a, k) for k in ("mtu", "after", "count") if getattr(a, k) is not None}
        print(json.dumps(inject_fault(a.state_dir, a.name, a.kind, a.ports, **params), indent=1))
        return 0
    spec = json.loads(open(a.spec).read())
    specs = spec["switches"] if isinstance(spec, dict) else spec
    fleet = SwitchFleet(a.state_dir, specs).start()
    if a.known_hosts:
        fleet.write_known_hosts(a.known_hosts)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    fleet.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
