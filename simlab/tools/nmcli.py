"""Twin of NetworkManager's ``nmcli`` device listing.

``nmcli [-t] [-f DEVICE,TYPE,STATE[,CONNECTION]] device [status]`` lists the
node's own interfaces (from /sys/class/net: ``lo`` unmanaged, the others
connected) and the twin's NIC netdevs.  A VF netdev is ``unmanaged`` when a
udev rule under /etc/udev/rules.d/ sets ``ENV{NM_UNMANAGED}="1"`` for its PCI
address (``KERNELS=="<vf bdf>"``, globs and ``|`` alternatives as udev
matches them); otherwise NetworkManager takes it with an automatic "Wired
connection": ``connected`` while it has a link, ``disconnected`` without.
PFs carry the OS install's RoCE address profile.  Every other nmcli command
goes to the real nmcli when there is one.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from pathlib import Path

from simlab.tools.agentclient import summary
from simlab.tools.twin import netdevs

RULES_DIRS = (Path("/etc/udev/rules.d"), Path("/run/udev/rules.d"))
SYS_NET = Path("/sys/class/net")
REAL = ("/usr/bin/nmcli", "/bin/nmcli")
SELF_DIR = "/usr/local/sbin"
FIELDS = ("DEVICE", "TYPE", "STATE", "CONNECTION")


def _real(argv: list[str]) -> int:
    for path in REAL:
        if os.path.exists(path) and not os.path.realpath(path).startswith(SELF_DIR):
            os.execv(path, ["nmcli", *argv])
    print("Error: NetworkManager is not running.", file=sys.stderr)
    return 8


def _udev_match(pattern: str, value: str) -> bool:
    return any(fnmatch.fnmatchcase(value, alt) for alt in pattern.split("|"))


def unmanaged_bdfs_rules(rules_dirs=RULES_DIRS) -> list[str]:
    """KERNELS patterns of the rules that set NM_UNMANAGED=1."""
    patterns = []
    for d in rules_dirs:
        if not d.is_dir():
            continue
        for f in sorted(d.glob("*.rules")):
            try:
                text = f.read_text()
            except OSError:
                continue
            for line in text.splitlines():
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if not re.search(r'ENV\{NM_UNMANAGED\}\s*=\s*"1"', line):
                    continue
                for m in re.finditer(r'KERNELS\s*==\s*"([^"]*)"', line):
                    patterns.append(m.group(1))
    return patterns


def rows(s: dict, rules_dirs=RULES_DIRS, sys_net=SYS_NET) -> list[dict]:
    out = []
    twin = netdevs(s)
    twin_names = {n for n, _pf, _vf in twin}
    own = sorted(p.name for p in sys_net.iterdir()) if sys_net.is_dir() else []
    for name in own:
        if name in twin_names:
            continue
        if name == "lo":
            out.append({"DEVICE": name, "TYPE": "loopback", "STATE": "unmanaged", "CONNECTION": "--"})
        else:
            out.append({"DEVICE": name, "TYPE": "ethernet", "STATE": "connected", "CONNECTION": name})
    patterns = unmanaged_bdfs_rules(rules_dirs)
    wired = 1
    for name, pf, vf in twin:
        kind = "ethernet" if pf["link_type"] == "ETH" else "infiniband"
        if vf is None:
            up = pf["operstate"] == "up"
            out.append({"DEVICE": name, "TYPE": kind, "STATE": "connected" if up else "unavailable",
                        "CONNECTION": name if up else "--"})
            continue
        if any(_udev_match(p, vf["bdf"]) for p in patterns):
            out.append({"DEVICE": name, "TYPE": kind, "STATE": "unmanaged", "CONNECTION": "--"})
            continue
        up = vf["link"]       # NetworkManager brings up a VF it manages when its vport has a link
        out.append({"DEVICE": name, "TYPE": kind, "STATE": "connected" if up else "disconnected",
                    "CONNECTION": f"Wired connection {wired}" if up else "--"})
        if up:
            wired += 1
    order = {"connected": 0, "disconnected": 1, "unavailable": 2, "unmanaged": 3}
    return sorted(out, key=lambda r: order.get(r["STATE"], 9))


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace(":", "\\:")


def main(argv: list[str]) -> int:
    terse = False
    fields = ["DEVICE", "TYPE", "STATE", "CONNECTION"]
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        a = argv[i]
        if a in ("-t", "--terse"):
            terse = True
        elif a in ("-f", "--fields"):
            if i + 1 >= len(argv):
                print("Error: missing argument for '-f' option.", file=sys.stderr)
                return 2
            wanted = argv[i + 1].split(",")
            if wanted != ["all"] and wanted != ["common"]:
                bad = [f for f in wanted if f.upper() not in FIELDS]
                if bad:
                    print(f"Error: 'device status': invalid field '{bad[0]}'; allowed fields: "
                          "DEVICE,TYPE,STATE,IP4-CONNECTIVITY,IP6-CONNECTIVITY,DBUS-PATH,CONNECTION,"
                          "CON-UUID,CON-PATH.", file=sys.stderr)
                    return 2
                fields = [f.upper() for f in wanted]
            i += 1
        else:
            return _real(argv)
        i += 1
    rest = argv[i:]
    if not rest or rest[0] not in ("d", "de", "dev", "devi", "devic", "device"):
        return _real(argv)
    if len(rest) > 1 and rest[1] not in ("s", "st", "sta", "stat", "statu", "status"):
        return _real(argv)
    s = summary("nmcli")
    table = rows(s)
    if terse:
        for r in table:
            print(":".join(_escape(r[f]) for f in fields))
        return 0
    widths = {f: max(len(f), *(len(r[f]) for r in table)) + 2 for f in fields} if table else \
        {f: len(f) + 2 for f in fields}
    print("".join(f.ljust(widths[f]) for f in fields).rstrip() + "  ")
    for r in table:
        print("".join(r[f].ljust(widths[f]) for f in fields).rstrip() + "  ")
    return 0
