"""Twin of iproute2's ``ip`` for the twin's NIC netdevs.

On a real host VF settings go through netlink to the PF driver; in the twin
the PF and VF netdevs exist only in the FUSE sysfs, so ``ip link set`` and
``ip [-j] link show`` on those names act on the node agent's kernel model and
print iproute2's formats (``vf N link/ether ... spoof checking ..., trust ...``).
Every other invocation is handed to the real ``ip`` unchanged.
"""

from __future__ import annotations

import os
import sys

from simlab.tools import formats
from simlab.tools.agentclient import call, summary

REAL_IP = ("/usr/sbin/ip", "/usr/bin/ip", "/sbin/ip", "/bin/ip")
SELF_DIR = "/usr/local/sbin"


def _real(argv: list[str]) -> int:
    for path in REAL_IP:
        if os.path.exists(path) and not os.path.realpath(path).startswith(SELF_DIR):
            os.execv(path, ["ip", *argv])
    print("ip: iproute2 not installed", file=sys.stderr)
    return 127


def _netdevs(s: dict) -> dict:
    out = {}
    for pf in s["pfs"]:
        if pf["bound"]:
            out[pf["netdev"]] = (pf, None)
            for vf in pf["vfs"]:
                if vf["ready"]:
                    out[vf["netdev"]] = (pf, vf)
    return out


def _bool(word: str, value: str) -> bool:
    if value not in ("on", "off"):
        raise SystemExit(_usage(f'Error: argument "{value}" is wrong: "{word}" must be "on" or "off"'))
    return value == "on"


def _usage(msg: str) -> int:
    print(msg, file=sys.stderr)
    return 255


def _link_set(s: dict, dev: str, rest: list[str]) -> int:
    devs = _netdevs(s)
    if dev not in devs:
        print(f'Cannot find device "{dev}"', file=sys.stderr)
        return 1
    i = 0
    link_req = {"op": "set_link", "dev": dev}
    while i < len(rest):
        word = rest[i]
        if word == "vf":
            try:
                index = int(rest[i + 1])
            except (IndexError, ValueError):
                return _usage("Error: vf index is not a number.")
            i += 2
            settings = {}
            while i < len(rest) and rest[i] not in ("vf", "mtu", "up", "down"):
                key = rest[i]
                if i + 1 >= len(rest):
                    return _usage(f'Command line is not complete. Try option "help"')
                val = rest[i + 1]
                if key == "mac":
                    settings["mac"] = val.lower()
                elif key == "vlan":
                    settings["vlan"] = int(val)
                elif key == "qos":
                    settings["qos"] = int(val)
                elif key == "trust":
                    settings["trust"] = _bool(key, val)
                elif key == "spoofchk":
                    settings["spoofchk"] = _bool(key, val)
                elif key == "state":
                    if val not in ("auto", "enable", "disable"):
                        return _usage(f'Error: argument "{val}" is wrong: Invalid "state"')
                    settings["link_state"] = val
                elif key in ("node_guid", "port_guid"):
                    settings[key] = val.lower()
                elif key in ("max_tx_rate", "min_tx_rate", "rate"):
                    settings["max_tx_rate" if key == "rate" else key] = int(val)
                else:
                    return _usage(f'Error: argument "{key}" is wrong: unknown vf option')
                i += 2
            reply = call({"op": "set_vf", "dev": dev, "vf": index, "settings": settings}, "ip")
            if not reply["ok"]:
                print(f"RTNETLINK answers: {reply['error']}", file=sys.stderr)
                return 2
        elif word == "mtu":
            link_req["mtu"] = int(rest[i + 1])
            i += 2
        elif word in ("up", "down"):
            link_req["up"] = word == "up"
            i += 1
        else:
            return _usage(f'Error: either "dev" is duplicate, or "{word}" is a garbage.')
    if len(link_req) > 2:
        reply = call(link_req, "ip")
        if not reply["ok"]:
            print(f"Error: {reply['error']}." if "mtu" in link_req else f"RTNETLINK answers: {reply['error']}",
                  file=sys.stderr)
            return 2
    return 0


def _flags(pf: dict, vf: dict | None) -> tuple[list[str], str]:
    up = pf["operstate"] == "up" if vf is None else (vf["admin_up"] and pf["operstate"] == "up")
    admin = True if vf is None else vf["admin_up"]
    flags = ["BROADCAST", "MULTICAST"] + (["UP"] if admin else []) + (["LOWER_UP"] if up else [])
    if admin and not up:
        flags.insert(0, "NO-CARRIER")
    return flags, "UP" if up else ("DOWN" if not admin or vf is not None else "DOWN")


def _vf_dicts(pf: dict) -> list[dict]:
    return [{"vf": v["vf"], "mac": v["mac"], "vlan": v["vlan"], "qos": v["qos"], "spoofchk": v["spoofchk"],
             "trust": v["trust"], "link_state": v["link_state"], "max_tx_rate": v["max_tx_rate"],
             "min_tx_rate": v["min_tx_rate"], "query_rss": False,
             "node_guid": v["node_guid"] if pf["link_type"] == "IB" else None,
             "port_guid": v["port_guid"] if pf["link_type"] == "IB" else None,
             "link_type": "ether" if pf["link_type"] == "ETH" else "infiniband"}
            for v in pf["vfs"]]


def _link_show(s: dict, names: list[str], as_json: bool) -> int:
    devs = _netdevs(s)
    out_json, out_text = [], []
    for name in names:
        if name not in devs:
            print(f'Device "{name}" does not exist.', file=sys.stderr)
            return 1
        pf, vf = devs[name]
        flags, state = _flags(pf, vf)
        mtu = pf["mtu"] if vf is None else vf["mtu"]
        mac = pf["mac"] if vf is None else vf["netdev_mac"]
        ifindex = 100 + pf["index"] * 100 + (vf["vf"] + 1 if vf else 0)
        if as_json:
            entry = {"ifindex": ifindex, "ifname": name, "flags": flags, "mtu": mtu, "qdisc": "mq",
                     "operstate": state, "linkmode": "DEFAULT", "group": "default", "txqlen": 1000,
                     "link_type": "ether", "address": mac, "broadcast": "ff:ff:ff:ff:ff:ff"}
            if vf is None and pf["vfs"]:
                entry["vfinfo_list"] = formats.ip_json_vfinfo(_vf_dicts(pf))
            out_json.append(entry)
        else:
            out_text.append(f"{ifindex}: {name}: <{','.join(flags)}> mtu {mtu} qdisc mq state {state} "
                            f"mode DEFAULT group default qlen 1000")
            out_text.append(f"    link/ether {mac} brd ff:ff:ff:ff:ff:ff")
            if vf is None:
                out_text.extend(formats.ip_vf_lines(_vf_dicts(pf)))
    if as_json:
        print(formats.iproute2_json(out_json))
    else:
        print("\n".join(out_text))
    return 0


def main(argv: list[str]) -> int:
    opts, i = [], 0
    while i < len(argv) and argv[i].startswith("-"):
        opts.append(argv[i])
        i += 1
    rest = argv[i:]
    if not rest or rest[0] not in ("link", "l", "li", "lin"):
        return _real(argv)
    rest = rest[1:]
    s = None
    twin = None

    def twin_names():
        nonlocal s, twin
        if twin is None:
            try:
                s = summary("ip")
                twin = _netdevs(s)
            except SystemExit:
                twin = {}
        return twin

    verb = rest[0] if rest else "show"
    args = rest[1:]
    if verb in ("set", "s"):
        dev = args[1] if args and args[0] == "dev" and len(args) > 1 else (args[0] if args else "")
        skip = 2 if args and args[0] == "dev" else 1
        if dev in twin_names():
            return _link_set(s, dev, args[skip:])
        return _real(argv)
    if verb in ("show", "list", "sh", "ls"):
        names = [a for a in args if a != "dev"]
        if names and all(n in twin_names() for n in names):
            return _link_show(s, names, as_json="-j" in opts or "-json" in opts)
        return _real(argv)
    return _real(argv)
