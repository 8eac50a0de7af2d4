"""``python -m simlab``: stand up, inspect, break and remove twin racks.

    python -m simlab up --nodes 4 --switches 2 --name lab --inventory inventories/twin
    python -m simlab up --kind vm --nodes 2 --name vmlab --inventory out/inventories/vmlab
    python -m simlab status --name lab
    python -m simlab fault node02 fw-sriov-off --name lab
    python -m simlab fault node02 clear --name lab
    python -m simlab cabling --name lab
    python -m simlab down --name lab
    python -m simlab inventory --nodes 4 --switches 2 --name render --inventory out/inventories/render
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .nos import DESCRIPTIONS, NOS
from . import faults, lab


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simlab", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    up = sub.add_parser("up", help="build the node image if missing, start a twin rack, write its inventory")
    inv = sub.add_parser("inventory", help="write the inventory of a twin rack without starting anything "
                                           "(render mode: no host of it is reachable)")
    for p in (up, inv):
        p.add_argument("--kind", default="twin", choices=["twin", "vm"],
                       help="twin: podman nodes with the twin kernel (default); vm: QEMU nodes with a real "
                            "Debian 12 kernel and igb SR-IOV NICs")
        p.add_argument("--name", default="lab", help="lab name (default: lab)")
        p.add_argument("--nodes", type=int, help="nodes (default: 4 twin, 2 vm)")
        p.add_argument("--switches", type=int, help="leaf switches (default: 2 twin, 0 vm)")
        p.add_argument("--inventory", type=Path, help="directory to write the Ansible inventory to",
                       required=p is inv)
        p.add_argument("--nics", type=int, help="fabric PFs per node (default: 2 ConnectX twin, 1 igb vm)")
        p.add_argument("--memory", type=int, default=1536, help="vm: MiB of memory per node (default 1536)")
        p.add_argument("--sushy-nodes", help="vm: comma-separated nodes whose BMC is sushy-tools' emulator over a "
                                             "libvirt domain instead of the lab's own (docs/simlab.md)")
        p.add_argument("--model", default="cx7", choices=sorted(__import__("simlab.node.hardware").node.hardware.MODELS))
        p.add_argument("--totalvfs", type=int, default=16, help="NUM_OF_VFS the firmware is set to (default 16)")
        p.add_argument("--link-type", default="ETH", choices=["ETH", "IB"])
        p.add_argument("--driver", default="inbox",
                       help="driver stack per node, comma-separated, taken in turn: ofed (DOCA-OFED modules, sysfs "
                            "and mlnx-tools), inbox (inbox mlx5 with mlnx-tools installed), upstream (inbox mlx5 "
                            "with upstream rdma-core and iproute2's dcb only); default inbox")
        p.add_argument("--preset", choices=["ready", "factory"],
                       help="ready: BIOS, firmware and GRUB already set up for SR-IOV; factory: all off "
                            "(default: ready twin, factory vm)")
        p.add_argument("--nos", help="comma-separated NOS per switch: " + ", ".join(
            f"{n} ({DESCRIPTIONS[n]})" for n in NOS) + "; default cycles through them")

    for name, helptext in (("down", "remove a twin rack"), ("status", "show a twin rack"),
                           ("cabling", "draw a twin rack's cabling as found, marked against the plan")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--name", default="lab")

    f = sub.add_parser("fault", help="inject a fault (or 'clear') on a node, switch or BMC")
    f.add_argument("target", help="inventory host name: nodeNN, leafN or nodeNN-bmc")
    f.add_argument("kind", help=f"one of: {', '.join(faults.ALL)}, clear; on VM nodes: "
                                f"{', '.join(sorted(__import__('simlab.vm.faults').vm.faults.NODE_FAULTS))}, bios-vtd-off")
    f.add_argument("--name", default="lab")

    b = sub.add_parser("image", help="build the node images: twin (debootstrap + podman import), "
                                     "vm (QEMU tree and guest disk under out/vm)")
    b.add_argument("--kind", default="twin", choices=["twin", "vm", "all"],
                   help="which image (default twin; prints the twin image's name, as Molecule needs it)")
    b.add_argument("--force", action="store_true")

    args = ap.parse_args(argv)
    try:
        if args.cmd == "image":
            from .backend import KINDS, of
            for kind in (KINDS[::-1] if args.kind == "all" else (args.kind,)):
                made = of(kind).build_image(force=args.force, log=lambda m: print(m, file=sys.stderr))
                if made:
                    print(made)
        elif args.cmd in ("up", "inventory"):
            from .backend import of
            backend = of(args.kind)
            doc = backend.plan(args.name, args)
            if args.cmd == "up":
                lab.Lab(args.name).up(doc, args.inventory)
            else:
                print(backend.offline_inventory(lab.Lab(args.name), doc, args.inventory))
        elif args.cmd == "down":
            lab.Lab(args.name).down()
        elif args.cmd == "status":
            the_lab = lab.Lab(args.name)
            if not the_lab.exists():
                print(f"simlab: no lab named {args.name!r}", file=sys.stderr)
                return 1
            print(json.dumps(the_lab.status(), indent=2))
        elif args.cmd == "cabling":
            the_lab = lab.Lab(args.name)
            if not the_lab.exists():
                print(f"simlab: no lab named {args.name!r}", file=sys.stderr)
                return 1
            from .fabric import cables
            print(cables.draw(the_lab.dir))
        elif args.cmd == "fault":
            print(faults.inject(lab.Lab(args.name), args.target, args.kind))
    except (ValueError, RuntimeError) as exc:
        print(f"simlab: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
