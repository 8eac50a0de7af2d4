"""Twins of kmod's ``modinfo`` for the modules the twin kernel models, and of
ofed-scripts' ``ofed_info`` on DOCA-OFED nodes.

``modinfo [-F field] [-n] <module>`` prints what the module file says of
itself, in kmod's layout (``field:`` padded to column 17, repeated fields on
lines of their own); which file depends on the node's driver stack, after
real outputs (tests/unit/fixtures/driver_stack_real): the inbox module under
``kernel/drivers/`` with ``intree: Y`` and no version, DOCA-OFED's under
``updates/dkms/`` with ``version``, ``basedon``, ``srcversion`` and
``depends: ...mlx_compat``.  Other modules go to the real modinfo.

``ofed_info -s`` prints ``OFED-internal-<version>:`` (DOCA-OFED's form);
``ofed_info -n`` the bare version.
"""

from __future__ import annotations

import os
import sys

from simlab.node.hardware import OFED_MODULE
from simlab.tools.agentclient import summary

REAL = ("/usr/sbin/modinfo", "/sbin/modinfo", "/usr/bin/modinfo")
# (directory under the release, description, author, inbox depends, OFED depends)
MODULES = {
    "mlx5_core": ("net/ethernet/mellanox/mlx5/core",
                  "Mellanox 5th generation network adapters (ConnectX series) core driver", "Eli Cohen <eli@mellanox.com>",
                  "psample,pci-hyperv-intf,mlxfw", "mlxdevm,mlx_compat,tls,pci-hyperv-intf,psample,mlxfw"),
    "mlx5_ib": ("infiniband/hw/mlx5", "Mellanox 5th generation network adapters (ConnectX series) IB driver",
                "Eli Cohen <eli@mellanox.com>", "mlx5_core,ib_core,ib_uverbs",
                "mlx5_core,ib_core,mlx_compat,ib_uverbs"),
    "ib_core": ("infiniband/core", "core kernel InfiniBand API", "Roland Dreier", "", "mlx_compat"),
}


def text(module: str, ofed: bool, release: str) -> str:
    where, desc, author, inbox_deps, ofed_deps = MODULES[module]
    rows = []
    if ofed:
        rows += [("filename", f"/lib/modules/{release}/updates/dkms/{module}.ko")]
        if module == "mlx5_core":
            rows += [("alias", "auxiliary:mlx5_core.eth-rep"), ("alias", "auxiliary:mlx5_core.eth")]
        rows += [("basedon", OFED_MODULE["basedon"]), ("version", OFED_MODULE["version"])]
    else:
        rows += [("filename", f"/lib/modules/{release}/kernel/drivers/{where}/{module}.ko")]
    rows += [("license", "Dual BSD/GPL"), ("description", desc), ("author", author)]
    if ofed:
        rows.append(("srcversion", OFED_MODULE["srcversion"]))
    if module == "mlx5_core":
        rows += [("alias", f"pci:v000015B3d0000{d}sv*sd*bc*sc*i*") for d in ("1021", "101D", "101B", "1017")]
    rows.append(("depends", ofed_deps if ofed else inbox_deps))
    rows.append(("retpoline", "Y"))
    if not ofed:
        rows.append(("intree", "Y"))
    rows += [("name", module), ("vermagic", f"{release} SMP preempt mod_unload modversions ")]
    return "".join(f"{(key + ':'):<16}{value}\n" for key, value in rows)


def modinfo(argv: list[str]) -> int:
    field, name_only, args = None, False, []
    it = iter(argv)
    for a in it:
        if a == "-F":
            field = next(it, None)
        elif a.startswith("--field="):
            field = a.split("=", 1)[1]
        elif a in ("-n", "--filename"):
            name_only = True
        else:
            args.append(a)
    module = args[0].replace("-", "_") if args else None
    if module not in MODULES:
        real = next((p for p in REAL if os.path.exists(p)), None)
        if real is None:
            print(f"modinfo: ERROR: Module {args[0] if args else ''} not found.", file=sys.stderr)
            return 1
        os.execv(real, [real] + argv)
    s = summary("modinfo")
    out = text(module, bool(s.get("ofed")), os.uname().release)
    if name_only:
        field = "filename"
    if field:
        values = [line[16:] for line in out.splitlines() if line.startswith(field + ":")]
        print("\n".join(v.rstrip() for v in values))
        return 0
    sys.stdout.write(out)
    return 0


def ofed_info(argv: list[str]) -> int:
    version = OFED_MODULE["ofed_info"].split("OFED-internal-", 1)[1]
    if "-n" in argv:
        print(version)
    elif "-s" in argv:
        print(f"{OFED_MODULE['ofed_info']}:")
    else:
        print(f"{OFED_MODULE['ofed_info']}:\n\n-------------------\n")
    return 0


def main(argv: list[str], prog: str = "modinfo") -> int:
    return ofed_info(argv) if prog == "ofed_info" else modinfo(argv)
