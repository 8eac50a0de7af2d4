"""Twin of kmod's ``modprobe`` for the modules the twin kernel models
(simlab.node.kmod: the ConnectX and RDMA modules, overlay and br_netfilter
with bridge, stp and llc for containerd and Kubernetes networking, VFIO, the
NVIDIA driver); any other module goes to the real ``/sbin/modprobe``
unchanged.  Loading br_netfilter adds the net.bridge.bridge-nf-call-*
sysctls of the twin kernel (see the sysctl twin).

``modprobe [-q] [-v] [-n] <mod> [param=value ...]`` loads the module and
what it needs (``-v``: an ``insmod <file> `` line for each module it loads;
an ``install`` rule of /etc/modprobe.d for it runs instead of loading it, as
kmod does); ``modprobe -r [-q] [-v] [-n] [-a] <mod>...`` removes each in turn,
then makes one pass over its modules.dep list, last first, removing each that
nothing loaded needs any more, as kmod 30's rmmod_do_module() does (_remove).
A module still used by another gives kmod's "Module X is in use" and exit 1
after what was already removed; a module that is not loaded is passed over
(with --first-time: "Module X is not in kernel").  Unloading mlx5_core unbinds
every PF; without mlx5_ib the RDMA devices vanish; ``/sys/module/<name>``
follows.

``modprobe -D/--show-depends <mod>`` prints what kmod 30 prints on Debian
12's 6.1 kernel (tests/unit/fixtures/kmod_modules.json and kmod_vfio_pci.json
record the real outputs, the VM tier compares them live): the chain from
modules.dep, with vfio's post softdep on vfio_iommu_type1, and ``install
<command>`` in place of the module's insmod line when an install rule
replaces it.  Loading vfio_pci registers the vfio-pci PCI driver in the twin
kernel.
"""

from __future__ import annotations

import os
import subprocess
import sys

from simlab.node import kmod
from simlab.node.hardware import OFED_MODULES
from simlab.tools.agentclient import call, summary

CONF_DIRS = ("/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/lib/modprobe.d")
REAL = ("/usr/sbin/modprobe", "/sbin/modprobe", "/usr/bin/modprobe", "/bin/modprobe")
SELF_DIR = "/usr/local/sbin"


def _real(argv: list[str]) -> int:
    for path in REAL:
        if os.path.exists(path) and not os.path.realpath(path).startswith(SELF_DIR):
            os.execv(path, ["modprobe", *argv])
    print("modprobe: kmod not installed", file=sys.stderr)
    return 127


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
                rules[kmod.norm(words[1])] = line.split(None, 2)[2].strip()
    return rules


def show_depends(mod: str, rules: dict[str, str]) -> list[str]:
    """kmod's --show-depends: per module of its chain (simlab.node.kmod) the
    ``insmod <file> `` line, or ``install <command> `` when a rule replaces it."""
    return [f"install {rules[m]} " if m in rules else f"insmod {kmod.path(m)} " for m in kmod.chain(mod)]


def _not_installed(mods: list[str], s: dict, quiet: bool) -> bool:
    """Without the NVIDIA driver's package its modules are not on disk: kmod
    names the module asked for as not found."""
    if s.get("gpu_driver"):
        return False
    if not quiet:
        print(f"modprobe: FATAL: Module {mods[0]} not found in directory /lib/modules/{kmod.release()}",
              file=sys.stderr)
    return True


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
    remove = quiet = verbose = all_mods = dry = show = first_time = False
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
        elif a == "--first-time":
            first_time = True
        elif a.startswith("-"):
            return _real(argv)
        else:
            names.append(a)
    if not names:
        return _real(argv)
    params = ""
    if remove or all_mods:
        mods = [kmod.norm(n) for n in names]
    else:
        mods = [kmod.norm(names[0])]     # the rest are the module's parameters
        params = " ".join(names[1:])
    if show:
        # a dry run that ignores what is loaded: the twin's own chains only
        if remove or not all(m in kmod.MODULES_DEP for m in mods):
            return _real(argv)
        chains = {c for m in mods for c in kmod.chain(m)}
        if any(m.startswith("nvidia") for m in mods) or chains & set(OFED_MODULES):
            s = summary("modprobe")
            if any(m.startswith("nvidia") for m in mods) and _not_installed(mods, s, quiet):
                return 1
            if s.get("ofed") and chains & set(OFED_MODULES):
                # DOCA-OFED's modules.dep (mlx_compat, mlxdevm, ...) is not recorded
                print("modprobe: the simlab twin does not model -D of a DOCA-OFED node's RDMA modules", file=sys.stderr)
                return 2
        rules = install_rules()
        for m in mods:
            lines = show_depends(m, rules)
            print("\n".join(lines[:-1] + [lines[-1] + params]))
        return 0
    if not all(m in kmod.MODULES_DEP for m in mods):
        return _real(argv)
    s = summary("modprobe")
    loaded = set(s.get("modules", []))
    if not remove:
        rules = install_rules()
        order: list[str] = []
        for m in mods:
            kmod.load_order(m, order)
        todo = [m for m in order if m not in loaded and m not in rules]
        if "nvidia" in todo and _not_installed(mods, s, quiet):
            return 1
        if "nvidia_peermem" in todo and not s.get("ofed"):
            # the inbox ib_core exports no ib_register_peer_memory_client: init_module
            # fails with ENOENT, which kmod words so
            print("modprobe: ERROR: could not insert 'nvidia_peermem': Unknown symbol in module, or unknown parameter "
                  "(see dmesg)", file=sys.stderr)
            return 1
        for m in todo:
            if verbose:
                print(f"insmod {kmod.path(m, ofed=bool(s.get('ofed')))} {params if m == mods[0] else ''}")
        if todo and not dry:
            call({"op": "driver_modules", "load": todo}, "modprobe")
        for m in order:
            if m in rules and m not in loaded and not dry:
                rc = _run_install(m, rules[m], verbose, quiet)
                if rc:
                    return rc
        return 0
    return _remove(mods, loaded, quiet, verbose, all_mods, dry, first_time)


def _remove(mods: list[str], loaded: set[str], quiet: bool, verbose: bool, all_mods: bool, dry: bool,
            first_time: bool) -> int:
    """kmod 30's rmmod_do_module() for each module named, in turn: one not
    loaded is passed over (named, with --first-time); one in use stops the
    run with FATAL, after what was already removed (with -a it is a
    WARNING and the run goes on; -q says nothing and goes on); otherwise it
    goes, then one pass over its modules.dep list, last first, removing each
    that nothing needs at its turn (kmod_module_get_dependencies() builds
    that list backwards) and not recursing.  A dry run (-n) removes nothing,
    so the modules it would remove still hold theirs."""
    rc = 0
    for m in mods:
        if m not in loaded:
            if first_time and not quiet:
                print(f"modprobe: {'WARNING' if all_mods else 'FATAL'}: Module {m} is not in kernel.", file=sys.stderr)
                if not all_mods:
                    return 1
            rc |= 1 if first_time else 0
            continue
        if kmod.holders(m, loaded):
            if not quiet:
                print(f"modprobe: {'WARNING' if all_mods else 'FATAL'}: Module {m} is in use.", file=sys.stderr)
                if not all_mods:
                    return 1
            rc = 1
            continue
        kept = set(loaded) if dry else set(loaded) - {m}
        gone = [m]
        for dep in reversed(kmod.MODULES_DEP[m][1]):
            if dep in kept and not kmod.holders(dep, kept):
                gone.append(dep)
                if not dry:
                    kept.discard(dep)
        if not dry:
            loaded.intersection_update(kept)
            call({"op": "driver_modules", "unload": gone}, "modprobe")
        if verbose:
            print("".join(f"rmmod {g}\n" for g in gone), end="")
            sys.stdout.flush()
    return rc
