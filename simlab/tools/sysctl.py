"""Twin of procps-ng's ``sysctl`` for the kernel settings the twin node
models: ``net.ipv4.ip_forward``, ``net.ipv6.conf.all.forwarding`` and the
bridge-netfilter switches ``net.bridge.bridge-nf-call-{iptables,ip6tables,
arptables}``, which exist only while br_netfilter is loaded (modprobe twin).
A container's /proc/sys is read-only and its modules are the host's, so the
twin kernel holds these; every other key goes to the real ``sysctl`` (where a
write fails as it does in any container).  At the node's boot the agent
applies modules-load.d and sysctl.d to them, as systemd does on a host.

    sysctl [-n] [-e] [-q] KEY...          read
    sysctl [-e] [-q] [-w] KEY=VALUE...    write
    sysctl [-e] [-q] -p [FILE...]         load files (default /etc/sysctl.conf)

Messages and exit codes as procps-ng 4.0: ``sysctl: cannot stat
/proc/sys/net/bridge/bridge-nf-call-iptables: No such file or directory``
(exit 1; -e silences it), ``sysctl: setting key "...": Invalid argument``.
"""

from __future__ import annotations

import errno
import os
import sys

from simlab.node.sysctls import sysctl_key, sysctl_modelled
from simlab.tools.agentclient import call

REAL = ("/usr/sbin/sysctl", "/sbin/sysctl", "/usr/bin/sysctl", "/bin/sysctl")
SELF_DIR = "/usr/local/sbin"


def _real_path() -> str | None:
    for path in REAL:
        if os.path.exists(path) and not os.path.realpath(path).startswith(SELF_DIR):
            return path
    return None


def _exec_real(argv: list[str]) -> int:
    path = _real_path()
    if path is None:
        print("sysctl: procps not installed", file=sys.stderr)
        return 127
    os.execv(path, ["sysctl", *argv])
    return 127  # not reached


def _run_real(argv: list[str]) -> int:
    path = _real_path()
    if path is None:
        print("sysctl: procps not installed", file=sys.stderr)
        return 127
    import subprocess  # only for the keys the twin does not model
    return subprocess.run([path, *argv], check=False).returncode


def _proc_path(key: str) -> str:
    return "/proc/sys/" + sysctl_key(key).replace(".", "/")


def _twin(req: dict) -> dict:
    return call({"op": "sysctl", **req}, "sysctl")


def _read(key: str, names: bool, ignore: bool) -> int:
    reply = _twin({"get": [key]})
    if not reply.get("ok"):
        if reply.get("errno") == errno.ENOENT:
            if not ignore:
                print(f"sysctl: cannot stat {_proc_path(key)}: No such file or directory", file=sys.stderr)
                return 1
            return 0
        print(f"sysctl: reading key \"{sysctl_key(key)}\": {reply.get('error')}", file=sys.stderr)
        return 1
    value = reply["values"][key]
    print(value if names else f"{sysctl_key(key)} = {value}")
    return 0


def _write(key: str, value: str, quiet: bool, ignore: bool) -> int:
    key, value = sysctl_key(key), value.strip()
    reply = _twin({"set": {key: value}, "get": [key]})
    if not reply.get("ok"):
        if reply.get("errno") == errno.ENOENT:
            if not ignore:
                print(f"sysctl: cannot stat {_proc_path(key)}: No such file or directory", file=sys.stderr)
                return 1
            return 0
        print(f"sysctl: setting key \"{key}\": Invalid argument", file=sys.stderr)
        return 1
    if not quiet:
        print(f"{key} = {reply['values'][key]}")
    return 0


def _load(path: str, quiet: bool, ignore: bool) -> int:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        print(f"sysctl: cannot open \"{path}\": {exc.strerror}", file=sys.stderr)
        return 1
    rc = 0
    for line in lines:
        line = line.strip()
        if not line or line.startswith(("#", ";")) or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        optional = key.startswith("-")
        key = key.lstrip("-")
        if sysctl_modelled(key):
            rc |= _write(key, value, quiet, ignore or optional)
        else:
            rc |= _run_real([*(["-e"] if ignore or optional else []), *(["-q"] if quiet else []), "-w", f"{key}={value}"])
    return 1 if rc else 0


def main(argv: list[str]) -> int:
    names = ignore = quiet = write = load = False
    files: list[str] = []
    args: list[str] = []
    for a in argv:
        if a.startswith("--"):
            if a in ("--values",):
                names = True
            elif a in ("--ignore",):
                ignore = True
            elif a in ("--quiet",):
                quiet = True
            elif a in ("--write",):
                write = True
            elif a == "--load" or a.startswith("--load="):
                load = True
                if "=" in a:
                    files.append(a.split("=", 1)[1])
            else:
                return _exec_real(argv)      # --system, --all, ...
        elif a.startswith("-") and len(a) > 1:
            for flag in a[1:]:
                if flag == "n":
                    names = True
                elif flag == "e":
                    ignore = True
                elif flag == "q":
                    quiet = True
                elif flag == "w":
                    write = True
                elif flag == "p":
                    load = True
                else:
                    return _exec_real(argv)  # -a, -A, -N, -r, ...
        elif load:
            files.append(a)
        else:
            args.append(a)
    if load:
        rc = 0
        for path in files or ["/etc/sysctl.conf"]:
            rc |= _load(path, quiet, ignore)
        return rc
    if not args:
        return _exec_real(argv)
    if not any(sysctl_modelled(a.split("=", 1)[0]) for a in args):
        return _exec_real(argv)
    rc = 0
    for a in args:
        if "=" in a or write:
            key, _, value = a.partition("=")
            if sysctl_modelled(key):
                rc |= _write(key, value, quiet, ignore)
            else:
                rc |= _run_real([*(["-e"] if ignore else []), *(["-q"] if quiet else []), "-w", a])
        elif sysctl_modelled(a):
            rc |= _read(a, names, ignore)
        else:
            rc |= _run_real([*(["-n"] if names else []), *(["-e"] if ignore else []), a])
    return 1 if rc else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
