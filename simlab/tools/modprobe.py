"""Twin of kmod's ``modprobe`` for the NIC and RDMA modules the twin kernel
models, and overlay and br_netfilter (with bridge, stp, llc) that containerd
and Kubernetes networking need; any other module goes to the real
``/sbin/modprobe`` unchanged.  Loading br_netfilter adds the
net.bridge.bridge-nf-call-* sysctls of the twin kernel (see the sysctl twin).

``modprobe [-q] [-v] <mod> [param=value ...]`` loads the module and what it
depends on (an ``install`` rule of /etc/modprobe.d for it runs instead of
loading it, as kmod does); ``modprobe -r [-q] <mod>...`` removes it and then its
dependencies that nothing else uses, as kmod does.  A module still used by
another gives kmod's "Module X is in use" and exit 1; removing a module that
is not loaded gives "Module X is not in kernel".  Unloading mlx5_core unbinds
every PF; without mlx5_ib the RDMA devices vanish; ``/sys/module/<name>``
follows.

The VFIO modules (vfio-pci and its chain) are modelled from Debian 12's 6.1
kernel as kmod 30 sees them there (tests/unit/fixtures/kmod_vfio_pci.json
records the real outputs): ``modprobe -D/--show-depends vfio-pci`` prints
what kmod prints, the chain from modules.dep with vfio's post softdep on
vfio_iommu_type1, and ``install <command>`` in place of the module's insmod
line when an install rule replaces it.  Loading vfio_pci registers the
vfio-pci PCI driver in the twin kernel.
"""

from __future__ import annotations

import os
import subprocess
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
    # VFIO, for VFs handed to VMs (layer 6): modinfo -F depends on 6.1
    "irqbypass": [],
    "vfio": [],
    "vfio_virqfd": [],
    "vfio_iommu_type1": ["vfio"],
    "vfio_pci_core": ["vfio", "vfio_virqfd", "irqbypass"],
    "vfio_pci": ["vfio_pci_core", "vfio"],
    # the NVIDIA driver (a GPU node loads nvidia at boot) and its GPUDirect
    # RDMA module, which needs the peer-memory API of DOCA-OFED's ib_core
    "nvidia": [],
    "nvidia_peermem": ["nvidia", "ib_core"],
}
RELEASE = "6.1.0-28-amd64"   # the twin node's kernel (simlab/node/boot.py KERNEL)
# modules.dep of Debian 12's 6.1 for the VFIO chain: module -> (its file,
# every module it needs, nearest first, as modules.dep lists them)
MODULES_DEP = {
    "irqbypass": ("kernel/virt/lib/irqbypass.ko", []),
    "vfio": ("kernel/drivers/vfio/vfio.ko", []),
    "vfio_virqfd": ("kernel/drivers/vfio/vfio_virqfd.ko", []),
    "vfio_iommu_type1": ("kernel/drivers/vfio/vfio_iommu_type1.ko", ["vfio"]),
    "vfio_pci_core": ("kernel/drivers/vfio/pci/vfio-pci-core.ko", ["vfio_virqfd", "vfio", "irqbypass"]),
    "vfio_pci": ("kernel/drivers/vfio/pci/vfio-pci.ko", ["vfio_pci_core", "vfio_virqfd", "vfio", "irqbypass"]),
}
# modinfo -F softdep: vfio loads an IOMMU backend after itself (spapr_tce is
# not built for x86: kmod skips a softdep it cannot find)
SOFTDEP_POST = {"vfio": ["vfio_iommu_type1", "vfio_iommu_spapr_tce"]}
CONF_DIRS = ("/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/lib/modprobe.d")
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


def install_rules(dirs=None) -> dict[str, str]:
    """``install <module> <command>`` of the modprobe.d files, as kmod reads
    them: files by name across the directories (the first directory's file
    wins over a same-named one), the last rule for a module wins."""
    chosen: dict[str, str] = {}
    for d in dirs or CONF_DIRS:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            if name.endswith(".conf"):
                chosen.setdefault(name, os.path.join(d, name))
    rules = {}
    for name in sorted(chosen):
        try:
            text = open(chosen[name], encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        for line in text.replace("\\\n", " ").splitlines():
            words = line.split()
            if len(words) >= 3 and words[0] == "install":
                rules[_norm(words[1])] = line.split(None, 2)[2].strip()
    return rules


def show_depends(mod: str, rules: dict[str, str]) -> list[str]:
    """kmod's --show-depends: per module of the chain (modules.dep order,
    deepest first) its ``insmod <file> `` line, or ``install <command> ``
    when a rule replaces it; a module's softdeps around it, each with its
    own chain (a module met again prints again, its softdeps once)."""
    out: list[str] = []
    expanded: set[str] = set()

    def emit(m: str) -> None:
        first = m not in expanded
        expanded.add(m)
        if m in rules:
            out.append(f"install {rules[m]} ")
        else:
            out.append(f"insmod /lib/modules/{RELEASE}/{MODULES_DEP[m][0]} ")
        if first:
            for soft in SOFTDEP_POST.get(m, []):
                if soft in MODULES_DEP:
                    chain(soft)

    def chain(m: str) -> None:
        for dep in reversed(MODULES_DEP[m][1]):
            emit(dep)
        emit(m)

    chain(mod)
    return out


def _load_order(mod: str, out: list[str]) -> list[str]:
    if mod in MODULES_DEP:
        for line in show_depends(mod, {}):
            name = _norm(os.path.basename(line.split()[1])[:-3])
            if name not in out:
                out.append(name)
        return out
    for dep in DEPS[mod]:
        _load_order(dep, out)
    if mod not in out:
        out.append(mod)
    return out


def _holders(mod: str, loaded: set[str]) -> list[str]:
    return [m for m in loaded if mod in DEPS.get(m, [])]


def _insmod_line(m: str) -> str:
    if m in MODULES_DEP:
        return f"insmod /lib/modules/{RELEASE}/{MODULES_DEP[m][0]} "
    if m.startswith("nvidia"):
        # the NVIDIA driver's modules, built by DKMS
        return f"insmod /lib/modules/{RELEASE}/updates/dkms/{m.replace('_', '-')}.ko "
    return f"insmod /lib/modules/{RELEASE}/kernel/{KO_DIR.get(m, 'drivers/infiniband')}/{m}.ko "


def _run_install(mod: str, command: str, verbose: bool, quiet: bool) -> int:
    """An install rule in place of loading the module: kmod runs it with
    system(); a failure is two errors and exit 1."""
    if verbose:
        print(f"install {command} ")
        sys.stdout.flush()
    rc = subprocess.run(["/bin/sh", "-c", command]).returncode
    if rc == 0:
        return 0
    if not quiet:
        print(f"modprobe: ERROR: ../libkmod/libkmod-module.c:1047 command_do() Error running install command "
              f"'{command}' for module {mod}: retcode {rc}", file=sys.stderr)
        print(f"modprobe: ERROR: could not insert '{mod}': Invalid argument", file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    remove = quiet = verbose = all_mods = dry = show = False
    names: list[str] = []
    args: list[str] = []
    for a in argv:
        # short options run together, as getopt takes them (-rv, -qD)
        if len(a) > 2 and a[0] == "-" and a[1] != "-" and set(a[1:]) <= set("rqvanD"):
            args.extend(f"-{c}" for c in a[1:])
        else:
            args.append(a)
    for a in args:
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
        elif a in ("-D", "--show-depends"):
            show = True
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
    if show:
        # a dry run that ignores what is loaded: the twin's own chains only
        if remove or not all(m in MODULES_DEP for m in mods):
            return _real(argv)
        rules = install_rules()
        for m in mods:
            print("\n".join(show_depends(m, rules)))
        return 0
    if not all(m in DEPS for m in mods):
        return _real(argv)
    s = summary("modprobe")
    loaded = set(s.get("modules", []))
    if not remove:
        rules = install_rules()
        order: list[str] = []
        for m in mods:
            _load_order(m, order)
        todo = [m for m in order if m not in loaded and m not in rules]
        if "nvidia" in todo and not s.get("gpu_driver"):
            print("modprobe: FATAL: Module nvidia not found in directory /lib/modules/%s" % RELEASE, file=sys.stderr)
            return 1
        if "nvidia_peermem" in todo and not s.get("ofed"):
            # the inbox ib_core exports no ib_register_peer_memory_client: init_module
            # fails with ENOENT, which kmod words so
            print("modprobe: ERROR: could not insert 'nvidia_peermem': Unknown symbol in module, or unknown parameter "
                  "(see dmesg)", file=sys.stderr)
            return 1
        for m in todo:
            if verbose:
                print(_insmod_line(m))
        if todo and not dry:
            call({"op": "driver_modules", "load": todo}, "modprobe")
        for m in order:
            if m in rules and m not in loaded and not dry:
                rc = _run_install(m, rules[m], verbose, quiet)
                if rc:
                    return rc
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
        if m in MODULES_DEP:
            # kmod: one pass over modules.dep's list, last first; a module
            # still held at its turn stays (vfio_pci takes vfio_pci_core
            # with it, not vfio_virqfd, which only vfio_pci_core held)
            for dep in reversed(MODULES_DEP[m][1]):
                if dep in loaded and not _holders(dep, loaded):
                    loaded.discard(dep)
                    removed.append(dep)
            continue
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
