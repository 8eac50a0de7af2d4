"""``python -m simlab.bmc serve --state-dir DIR --spec SPEC.json [--power-driver podman|qemu|fake]``

SPEC.json is a list (or ``{"bmcs": [...]}``) of entries::

    {"name": "gpu-a1", "port": 8443, "vendor": "dell", "username": "root",
     "password": "...", "container": "simlab-gpu-a1",
     "cpu_vendor": "intel"}          # optional: cpu_vendor, model, serial, bios_version

Writes ``<state_dir>/bmc-ready`` (JSON: name -> port, address, url, vendor)
once every endpoint listens, and removes it on SIGTERM/SIGINT.  The fake
power driver keeps power state in memory (``--fake-power-initial On|Off``).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from simlab.bmc import power
from simlab.bmc.server import BmcLab, load_spec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simlab.bmc", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="serve every BMC of a spec until SIGTERM")
    s.add_argument("--state-dir", required=True)
    s.add_argument("--spec", required=True)
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--power-driver", choices=sorted([*power.DRIVERS, "qemu"]), default="podman")
    s.add_argument("--fake-power-initial", choices=("On", "Off"), default="On")
    s.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        entries = load_spec(args.spec)
    except (OSError, ValueError) as e:
        print(f"simlab.bmc: {e}", file=sys.stderr)
        return 2
    if args.power_driver == "fake":
        driver = power.FakePowerDriver(initial=args.fake_power_initial)
    elif args.power_driver == "qemu":
        from simlab.vm.power import QemuPowerDriver  # VM nodes: resets reach QEMU
        driver = QemuPowerDriver(args.state_dir)
    else:
        driver = power.PodmanPowerDriver()
    lab = BmcLab(args.state_dir, entries, driver, host=args.host)
    try:
        info = lab.start()
    except OSError as e:
        print(f"simlab.bmc: cannot listen: {e}", file=sys.stderr)
        return 1
    for name, ep in sorted(info.items()):
        logging.getLogger("simlab.bmc").info("%s (%s) on %s", name, ep["vendor"], ep["url"])
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    lab.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
