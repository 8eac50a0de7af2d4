"""Twin of kmod's ``modprobe`` for the NIC and RDMA modules the twin kernel
models, and overlay and br_netfilter (with bridge, stp, llc) that containerd
and Kubernetes networking need; any other module goes to the real
``/sbin/modprobe`` unchanged.  Loading br_netfilter adds the
net.bridge.bridge-nf-call-* sysctls of the twin kernel (see the sysctl twin).

``modprobe [-q] [-v] <mod> [param=value ...]`` loads the module and what it
depends on; ``modprobe -r [-q] <mod>...`` removes it and then its
dependencies that nothing else uses, as kmod does.  A module still used by
another gives kmod's "Module X is in use" and exit 1; removing a module that
is not loaded gives "Module X is not in kernel".  Unloading mlx5_core unbinds
every PF; without mlx5_ib the RDMA devices vanish; ``/sys/module/<name>``
follows.
"""

from __future__ import annotations

import os
import sys

from simlab.tools.agentclient import call, summary

# module -> modules it depends on (modules.dep of a 6.1 kernel, within the set)
DEPS = {
    "mlx5_core": [],
    "ib_core": [],
    "ib_uverbs": ["ib_core"],
    "ib_cm": ["ib_core"],
    "rdma_cm": ["ib_cm", "ib_core"],
    "rdma_ucm": ["rdma_cm", "ib_uverbs", "ib_core"],
    "mlx5_ib": ["mlx5_core", "ib_uverbs", "ib_core"],
    # what containerd and Kubernetes networking need (layer 10)
    "overlay": [],
    "llc": [],
    "stp": ["llc"],
    "bridge": ["stp", "llc"],
    "br_netfilter": ["bridge"],
}
KO_DIR = {"mlx5_core": "drivers/net/ethernet/mellanox/mlx5/core", "overlay": "fs/overlayfs", "llc": "net/llc",
          "stp": "net/802", "bridge": "net/bridge", "br_netfilter": "net/bridge"}
REAL = ("/usr/sbin/modprobe", "/sbin/modprobe", "/usr/bin/modprobe", "/bin/modprobe")
SELF_DIR = "/usr/local/sbin"


def _real(argv: list[str]) -> int:
    for path in REAL:
        if os.path.exists(path) and not os.path.realpath(path).startswith(SELF_DIR):
            os.execv(path, ["modprobe", *argv])
    print("modprobe: kmod not installed", file=sys.stderr)
    return 127


def _norm(name: str) -> str:
    return name.replace("-", "_")


def _load_order(mod: str, out: list[str]) -> list[str]:
    for dep in DEPS[mod]:
        _load_order(dep, out)
    if mod not in out:
        out.append(mod)
    return out


def _holders(mod: str, loaded: set[str]) -> list[str]:
    return [m for m in loaded if mod in DEPS.get(m, [])]


def main(argv: list[str]) -> int:
    remove = quiet = verbose = all_mods = dry = False
    names: list[str] = []
    for a in argv:
        if a in ("-r", "--remove"):
            remove = True
        elif a in ("-q", "--quiet"):
            quiet = True
        elif a in ("-v", "--verbose"):
            verbose = True
        elif a in ("-a", "--all"):
            all_mods = True
        elif a in ("-n", "--dry-run", "--show"):
            dry = True
        elif a.startswith("-"):
            return _real(argv)
        else:
            names.append(a)
    if not names:
        return _real(argv)
    if remove or all_mods:
        mods = [_norm(n) for n in names]
    else:
        mods = [_norm(names[0])]     # the rest are module parameters
    if not all(m in DEPS for m in mods):
        return _real(argv)
    s = summary("modprobe")
    loaded = set(s.get("modules", []))
    if not remove:
        order: list[str] = []
        for m in mods:
            _load_order(m, order)
        todo = [m for m in order if m not in loaded]
        for m in todo:
            if verbose:
                print(f"insmod /lib/modules/6.1.0-28-amd64/kernel/{KO_DIR.get(m, 'drivers/infiniband')}/{m}.ko ")
        if todo and not dry:
            call({"op": "driver_modules", "load": todo}, "modprobe")
        return 0
    removed: list[str] = []
    for m in mods:
        if m not in loaded:
            if not quiet:
                print(f"modprobe: FATAL: Module {m} is not in kernel.", file=sys.stderr)
            return 1
        holders = _holders(m, loaded)
        if holders:
            if not quiet:
                print(f"modprobe: FATAL: Module {m} is in use.", file=sys.stderr)
            return 1
        loaded.discard(m)
        removed.append(m)
        # then its dependencies, while nothing else holds them
        stack = list(DEPS[m])
        while stack:
            dep = stack.pop(0)
            if dep in loaded and not _holders(dep, loaded):
                loaded.discard(dep)
                removed.append(dep)
                stack.extend(DEPS[dep])
    if verbose:
        for m in removed:
            print(f"rmmod {m}")
    if removed and not dry:
        call({"op": "driver_modules", "unload": removed}, "modprobe")
    return 0
