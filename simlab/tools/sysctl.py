"""Twin of procps-ng's ``sysctl`` for the kernel settings the twin node
models: ``net.ipv4.ip_forward``, ``net.ipv6.conf.all.forwarding`` and the
bridge-netfilter switches ``net.bridge.bridge-nf-call-{iptables,ip6tables,
arptables}``, which exist only while br_netfilter is loaded (modprobe twin).
A container's /proc/sys is read-only and its modules are the host's, so the
twin kernel holds these; every other key goes to the real ``sysctl`` (where a
write fails as it does in any container).  At the node's boot the agent
applies modules-load.d and sysctl.d to them, as systemd does on a host.

    sysctl [-n] [-b] [-e] KEY...                 read
    sysctl [-n] [-b] [-e] [-q] [-w] KEY=VALUE... write
    sysctl [-e] [-q] -p [FILE...]                load files (default /etc/sysctl.conf)

It reads its command line and does what procps-ng 4.0.2's src/sysctl.c does
(Debian 12's): getopt's options anywhere (``-nw``, ``-pFILE``, ``--load=FILE``),
a key in dots or slashes (slashdot()), the value trimmed and echoed as given
(``KEY = VALUE``, only VALUE with ``-n``, without its newline with ``-b``), a
write without ``=`` refused as ``command line(0): invalid syntax``, a file's
line without ``=`` as ``FILE(N): invalid syntax, continuing...``, ``sysctl:
cannot stat /proc/sys/...: No such file or directory`` for a key the kernel
lacks (silenced by ``-e``), ``sysctl: setting key "...": Invalid argument``
for a value the kernel refuses, and its exit status: each failed read adds
one, a failed write or load makes it 1.  The VM tier compares it with the real
sysctl on a VM node's kernel.
"""

from __future__ import annotations

import errno
import glob as globmod
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
    sys.stdout.flush()      # what the twin printed before comes first
    sys.stderr.flush()
    return subprocess.run([path, *argv], check=False).returncode


def _proc_path(key: str) -> str:
    return "/proc/sys/" + sysctl_key(key).replace(".", "/")


def _twin(req: dict) -> dict:
    return call({"op": "sysctl", **req}, "sysctl")


def _read(key: str, o: dict) -> int:
    """ReadSetting(): 1 for a key the kernel lacks (0 with -e)."""
    reply = _twin({"get": [key]})
    if not reply.get("ok"):
        if reply.get("errno") == errno.ENOENT:
            if not o["ignore"]:
                print(f"sysctl: cannot stat {_proc_path(key)}: No such file or directory", file=sys.stderr)
                return 1
            return 0
        print(f"sysctl: reading key \"{sysctl_key(key)}\": {reply.get('error')}", file=sys.stderr)
        return 1
    value = reply["values"][key]
    if o["names"]:
        print(f"{sysctl_key(key)} = {value}")
    else:
        print(value, end="\n" if o["newline"] else "")
    return 0


def _write(key: str, value: str, o: dict) -> int:
    """WriteSetting(): the value goes to the kernel as ``VALUE\\n`` and is
    echoed as given, not read back."""
    key = sysctl_key(key)
    reply = _twin({"set": {key: value + "\n"}})
    if not reply.get("ok"):
        if reply.get("errno") == errno.ENOENT:
            if not o["ignore"]:
                print(f"sysctl: cannot stat {_proc_path(key)}: No such file or directory", file=sys.stderr)
                return 1
            return 0
        print(f"sysctl: setting key \"{key}\": {os.strerror(reply.get('errno') or errno.EINVAL)}", file=sys.stderr)
        return 1
    if not o["quiet"]:
        if o["names"]:
            print(f"{key} = {value}")
        else:
            print(value, end="\n" if o["newline"] else "")
    return 0


def _setting(line: str, where: str) -> tuple[str, str, bool] | None:
    """parse_setting_line(): (key, value, ignore_failure) of ``[-]key =
    value``, trimmed; a line without ``=`` is a syntax error (None, said),
    or with a leading ``-`` a glob exclusion (None, silent)."""
    key = line.lstrip(" \t")
    if len(key) < 2 or key[0] in "#;":
        return None
    if "=" not in key:
        if key[0] != "-":
            print(f"sysctl: {where}: invalid syntax, continuing...", file=sys.stderr)
        return None
    key, value = key.split("=", 1)
    ignore_failure = key[0] == "-"
    key = key[1:] if ignore_failure else key
    return key.rstrip(" \t\n\r"), value.lstrip(" \t").rstrip(" \t\n\r"), ignore_failure


def _flags(o: dict) -> list[str]:
    """The options the real sysctl is handed for a key the twin does not model."""
    return [f for f, on in (("-b", not o["newline"]), ("-n", not o["names"] and o["newline"]),
                            ("-e", o["ignore"]), ("-q", o["quiet"])) if on]


def _apply(key: str, value: str, ignore_failure: bool, o: dict) -> int:
    """WriteSetting() of one setting: the twin's key, or the real sysctl
    with the line's ``-`` (ignore-failure) kept.  A failure the kernel
    gives the twin's keys (a missing key, a refused value) is not one that
    ``-`` forgives: procps stats the file first and fails the close."""
    if sysctl_modelled(key):
        return _write(key, value, o)
    return _run_real([*_flags(o), "-w", "--", f"{'-' if ignore_failure else ''}{key}={value}"])


def _load(path: str, o: dict) -> int:
    """Preload() of one file (a glob, as glob() with GLOB_NOCHECK; ``-`` is
    standard input; a directory reads as nothing), then its settings
    written; a file that cannot be opened ends this file with 1."""
    rc = 0
    for name in sorted(globmod.glob(path)) or [path]:
        try:
            if name == "-":
                lines = sys.stdin.read().splitlines(keepends=True)
            elif os.path.isdir(name):
                lines = []
            else:
                with open(name, encoding="utf-8", errors="replace") as fh:
                    lines = fh.read().splitlines(keepends=True)
        except OSError as exc:
            print(f"sysctl: cannot open \"{name}\": {exc.strerror}", file=sys.stderr)
            return 1
        for n, line in enumerate(lines, 1):
            if len(line) < 2:
                continue
            setting = _setting(line, f"{name}({n})")
            if setting:
                rc |= _apply(*setting, o)
    return rc


# long options: name -> the short option it stands for
_LONG = {"values": "n", "binary": "b", "ignore": "e", "quiet": "q", "write": "w", "load": "p"}


def main(argv: list[str]) -> int:
    o = {"names": True, "newline": True, "ignore": False, "quiet": False, "write": False, "load": False}
    preload, args = None, []
    for i, a in enumerate(argv):
        if a == "--":
            args += argv[i + 1:]
            break
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            flags = _LONG.get(name)
            if flags is None or (eq and flags != "p"):
                return _exec_real(argv)      # --system, --all, --names, --pattern, ...
            if eq:
                preload = value
        elif a.startswith("-") and len(a) > 1:
            flags = a[1:]
        else:
            args.append(a)
            continue
        for j, f in enumerate(flags):
            if f == "p" or f == "f":
                o["load"] = True
                if f == "p" and a[1:] == flags and flags[j + 1:]:
                    preload = flags[j + 1:]      # -pFILE (getopt's "p::"; -f takes nothing)
                    break
                continue
            if f not in "nbeqw":
                return _exec_real(argv)      # -a, -A, -N, -r, ...
            o.update({"n": {"names": False}, "b": {"names": False, "newline": False}, "e": {"ignore": True},
                      "q": {"quiet": True}, "w": {"write": True}}[f])
    if o["load"]:
        files = ([preload] if preload is not None else ([] if args else ["/etc/sysctl.conf"])) + args
        rc = 0
        for path in files:
            rc |= _load(path, o)
        return rc
    def key_of(a: str) -> str:         # a write's leading '-' is its ignore-failure mark, a read's is part of the key
        key = a.split("=", 1)[0]
        return key[1:] if key.startswith("-") and ("=" in a or o["write"]) else key

    if not args or not any(sysctl_modelled(key_of(a)) for a in args):
        return _exec_real(argv)
    rc = 0
    for a in args:
        if o["write"] or "=" in a:
            setting = _setting(a, "command line(0)")
            rc |= _apply(*setting, o) if setting else 1
        elif sysctl_modelled(a):
            rc += _read(a, o)
        else:
            rc += _run_real([*_flags(o), "--", a])
    return rc & 0xFF


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
