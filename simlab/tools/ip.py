"""Twin of iproute2's ``ip`` for the twin's NIC netdevs.

On a real host VF settings go through netlink to the PF driver; in the twin
the PF and VF netdevs exist only in the FUSE sysfs, so ``ip link set`` and
``ip [-j [-p]] link show`` on those names act on the node agent's kernel
model. They read the command line as iproute2 6.1 does (ip/iplink.c,
ip/ipaddress.c, lib/utils.c: its messages and exit statuses for what it
cannot read) and print its formats (``vf N     link/ether ... spoof checking
..., trust ...``, its JSON writer); the VM tier holds them to the real ``ip``
on an igb PF (tests/vm/test_vm_twin_faithful.py). Every other invocation is
handed to the real ``ip`` unchanged.
"""

from __future__ import annotations

import os
import re
import sys

from simlab.tools import cargs, formats
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


class _Stop(Exception):
    """iproute2 giving up on the command line: a message and its exit status."""

    def __init__(self, rc: int, msg: str):
        super().__init__(msg)
        self.rc, self.msg = rc, msg


def _matches(word: str, keyword: str) -> bool:
    """iproute2's ``matches(word, keyword) == 0``: a non-empty prefix."""
    return bool(word) and keyword.startswith(word)


def _incomplete() -> _Stop:
    return _Stop(255, 'Command line is not complete. Try option "help"')


def _invarg(msg: str, arg: str) -> _Stop:
    # lib/utils.c invarg(): the callers' messages end in "\n", so a blank line follows
    return _Stop(255, f'Error: argument "{arg}" is wrong: {msg}')


def _on_off(what: str, arg: str) -> bool:
    """lib/utils.c parse_on_off(): the first of "off", "on" that the word is a
    prefix of; otherwise the message, and the command fails with status 1."""
    for i, value in enumerate(("off", "on")):
        if _matches(arg, value):
            return bool(i)
    raise _Stop(1, f'Error: argument of "{what}" must be one of "off", "on", not "{arg}"')


def _lladdr(arg: str) -> str:
    """lib/ll_addr.c ll_addr_a2n() for an Ethernet device: ``:``-separated
    groups read by sscanf("%x"), each 0-255, six of them (iplink_parse_vf's
    length check); a word with a dot is an IPv4 address, four bytes."""
    if "." in arg:
        import ipaddress
        try:
            ipaddress.IPv4Address(arg)
        except ValueError:
            raise _Stop(1, f'"{arg}" is invalid lladdr.') from None
        octets = []
    else:
        octets = []
        for group in arg.split(":"):
            value = cargs.scan_hex(group)
            if value is None or not 0 <= value <= 255:
                raise _Stop(1, f'"{group}" is invalid lladdr.')
            octets.append(value)
    if len(octets) != 6:
        raise _Stop(1, f"Invalid address length {len(octets) or 4} - must be 6 bytes")
    return ":".join("%02x" % o for o in octets)


# lib/ll_proto.c's names (compared ignoring case); a number is read as get_be16() reads it
_LL_PROTO_NAMES = frozenset((
    "loop pup pupat ip x25 arp bpq ieeepup ieeepupat dec dna_dl dna_rc dna_rt lat diag cust sca rarp atalk aarp "
    "ipx ipv6 ppp_disc ppp_ses atmmpoa atmfate 802_3 ax25 all 802_2 snap ddcmp wan_ppp ppp_mp localtalk can "
    "ppptalk tr_802_2 mobitex control irda econet tipc profinet aoe ethercat 802.1q 802.1ad mpls_uc mpls_mc teb "
    "lldp ipv4").split())


def _vlan_proto(arg: str) -> str:
    """iplink_parse_vf_vlan_info()'s ``proto``: ll_proto_a2n(), then only
    802.1Q (0x8100) or 802.1ad (0x88a8)."""
    number = cargs.whole_unsigned(arg)
    if arg.lower() in _LL_PROTO_NAMES:
        proto = {"802.1q": 0x8100, "802.1ad": 0x88A8}.get(arg.lower(), -1)
    elif number is not None and number <= 0xFFFF:
        proto = number
    else:
        raise _invarg("protocol is invalid\n", arg)
    if proto not in (0x8100, 0x88A8):
        raise _invarg('Invalid "vlan protocol" value - supported 802.1Q, 802.1ad\n', arg)
    return "802.1Q" if proto == 0x8100 else "802.1ad"


def _parse_vf(args: list[str], i: int) -> tuple[dict, int]:
    """ip/iplink.c iplink_parse_vf() (iproute2 6.1) from ``args[i]``, the word
    after ``vf N``: the settings (keys of the kernel model's VF) and the
    index of the first word it did not take. A word that is no VF keyword
    ends it; none at all is an incomplete command."""
    settings: dict = {}
    start = i

    def value(k):
        if k + 1 >= len(args):
            raise _incomplete()
        return args[k + 1]

    rate_words = [w for w in args[i:] if _matches(w, "max_tx_rate") or _matches(w, "min_tx_rate")]
    new_rate_api = bool(rate_words)
    override_legacy = any(_matches(w, "max_tx_rate") for w in rate_words)
    while i < len(args):
        word = args[i]
        if _matches(word, "mac"):
            settings["mac"] = _lladdr(value(i))
            i += 2
        elif _matches(word, "vlan"):
            vlan = cargs.whole_unsigned(value(i))
            if vlan is None or vlan > 4095:
                raise _invarg('Invalid "vlan" value\n', args[i + 1])
            settings.update(vlan=vlan, qos=0, vlan_proto="802.1Q")
            i += 2
            if i < len(args) and _matches(args[i], "qos"):
                qos = cargs.whole_unsigned(value(i))
                if qos is None:
                    raise _invarg('Invalid "qos" value\n', args[i + 1])
                settings["qos"] = qos
                i += 2
            if i < len(args) and _matches(args[i], "proto"):
                settings["vlan_proto"] = _vlan_proto(value(i))
                i += 2
        elif _matches(word, "rate"):
            rate = cargs.whole_unsigned(value(i))
            if rate is None:
                raise _invarg('Invalid "rate" value\n', args[i + 1])
            if not new_rate_api or not override_legacy:
                settings["max_tx_rate"] = rate
            i += 2
        elif _matches(word, "max_tx_rate") or _matches(word, "min_tx_rate"):
            key = "max_tx_rate" if _matches(word, "max_tx_rate") else "min_tx_rate"
            rate = cargs.whole_unsigned(value(i))
            if rate is None:
                raise _invarg('Invalid "%s" value\n' % key.replace("_", " "), args[i + 1])
            settings[key] = rate
            i += 2
        elif _matches(word, "spoofchk") or _matches(word, "query_rss") or _matches(word, "trust"):
            key = next(k for k in ("spoofchk", "query_rss", "trust") if _matches(word, k))
            settings[key] = _on_off(key, value(i))
            i += 2
        elif _matches(word, "state"):
            state = next((st for st in ("auto", "enable", "disable") if _matches(value(i), st)), None)
            if state is None:
                raise _invarg('Invalid "state" value\n', args[i + 1])
            settings["link_state"] = state
            i += 2
        elif _matches(word, "node_guid") or _matches(word, "port_guid"):
            key = "node_guid" if _matches(word, "node_guid") else "port_guid"
            guid = value(i)
            if not re.fullmatch(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){7}", guid):
                raise _invarg("Invalid GUID format\n", guid)
            settings[key] = guid.lower()
            i += 2
        else:
            break
    if i == start:
        raise _incomplete()
    return settings, i


def _check_rates(s: dict, dev: str, index: int, settings: dict) -> None:
    """iplink_parse_vf()'s last check: a rate it was not given is the VF's
    current one (ipaddr_get_vf_rate), and min_tx_rate may not exceed a
    max_tx_rate that is set."""
    if "min_tx_rate" not in settings and "max_tx_rate" not in settings:
        return
    pf, _vf = _netdevs(s).get(dev, (None, None))
    current = next((v for v in (pf or {}).get("vfs", []) if v["vf"] == index), {})
    tmin = settings.get("min_tx_rate", current.get("min_tx_rate", 0))
    tmax = settings.get("max_tx_rate", current.get("max_tx_rate", 0))
    if tmax and tmin > tmax:
        raise _Stop(1, f"Invalid min_tx_rate {tmin} - must be <= max_tx_rate {tmax}")


def _link_set(s: dict, args: list[str]) -> int:
    """``ip link set`` on a twin netdev, read as ip/iplink.c iplink_parse()
    (iproute2 6.1) reads it: the device (``dev X`` or the bare name), ``up``,
    ``down``, ``mtu N`` and any number of ``vf N ...``. The first word that
    is none of them gets iproute2's answer to a second device name. Then,
    as the kernel's do_setlink() does, the MTU, the flags and the VF
    settings in that order; the first refusal ends it (RTNETLINK answers,
    status 2)."""
    dev, mtu, up, vfs = None, None, None, []
    i = 0
    try:
        while i < len(args):
            word = args[i]
            if word in ("up", "down"):
                up = word == "up"
                i += 1
            elif word == "mtu":
                if i + 1 >= len(args):
                    raise _incomplete()
                if mtu is not None:
                    raise _Stop(255, f'Error: duplicate "mtu": "{args[i + 1]}" is the second value.')
                mtu = cargs.whole_int(args[i + 1])
                if mtu is None:
                    raise _invarg('Invalid "mtu" value\n', args[i + 1])
                i += 2
            elif word == "vf":
                if i + 1 >= len(args):
                    raise _incomplete()
                index = cargs.whole_int(args[i + 1])
                if index is None:
                    raise _invarg('Invalid "vf" value\n', args[i + 1])
                if dev is None:
                    raise _Stop(255, 'Error: argument "dev" is required')
                settings, i = _parse_vf(args, i + 2)
                vfs.append((index, settings))
            else:
                if word == "dev":
                    if i + 1 >= len(args):
                        raise _incomplete()
                    i += 1
                if dev is not None:
                    raise _Stop(255, f'Error: either "dev" is duplicate, or "{args[i]}" is a garbage.')
                dev = args[i]
                i += 1
        if dev is None:
            raise _Stop(255, 'Not enough information: "dev" argument is required.')
        for index, settings in vfs:
            _check_rates(s, dev, index, settings)
    except _Stop as stop:
        print(stop.msg, file=sys.stderr)
        return stop.rc
    if dev not in _netdevs(s):
        print(f'Cannot find device "{dev}"', file=sys.stderr)
        return 1
    link_req = {"op": "set_link", "dev": dev}
    if mtu is not None:
        link_req["mtu"] = mtu
    if up is not None:
        link_req["up"] = up
    if len(link_req) > 2:
        reply = call(link_req, "ip")
        if not reply["ok"]:
            print(f"Error: {reply['error']}." if "mtu" in link_req else f"RTNETLINK answers: {reply['error']}",
                  file=sys.stderr)
            return 2
    for index, settings in vfs:
        reply = call({"op": "set_vf", "dev": dev, "vf": index, "settings": settings}, "ip")
        if not reply["ok"]:
            print(f"RTNETLINK answers: {reply['error']}", file=sys.stderr)
            return 2
    return 0


def _flags(pf: dict, vf: dict | None) -> tuple[list[str], str]:
    admin = pf.get("admin_up", True) if vf is None else vf["admin_up"]
    up = admin and pf["operstate"] == "up"      # a PF's operstate already has its admin state in it
    flags = ["BROADCAST", "MULTICAST"] + (["UP"] if admin else []) + (["LOWER_UP"] if up else [])
    if admin and not up:
        flags.insert(0, "NO-CARRIER")
    return flags, "UP" if up else "DOWN"


def _vf_dicts(pf: dict) -> list[dict]:
    return [{"vf": v["vf"], "mac": v["mac"], "vlan": v["vlan"], "qos": v["qos"], "spoofchk": v["spoofchk"],
             "trust": v["trust"], "link_state": v["link_state"], "max_tx_rate": v["max_tx_rate"],
             "min_tx_rate": v["min_tx_rate"], "query_rss": False,
             "node_guid": v["node_guid"] if pf["link_type"] == "IB" else None,
             "port_guid": v["port_guid"] if pf["link_type"] == "IB" else None,
             "link_type": "ether" if pf["link_type"] == "ETH" else "infiniband"}
            for v in pf["vfs"]]


# the words of ``ip link show`` that filter by something the twin does not model
_SHOW_FILTERS = ("to", "scope", "label", "group", "master", "vrf", "nomaster", "type", "permanent", "dynamic",
                 "secondary", "temporary", "primary", "tentative", "deprecated", "dadfailed", "home",
                 "nodad", "mngtmpaddr", "noprefixroute", "autojoin")


def _link_show(s: dict, name: str, up: bool, as_json: bool, pretty: bool = False) -> int:
    """One twin netdev as ``ip [-j [-p]] link show [dev] NAME [up]`` prints
    it, with the VF lines of a PF; ``up`` leaves out a netdev that is not
    (nothing printed, or an empty JSON array)."""
    pf, vf = _netdevs(s)[name]
    flags, state = _flags(pf, vf)
    if up and "UP" not in flags:
        if as_json:
            print(formats.iproute2_json([], pretty))
        return 0
    mtu = pf["mtu"] if vf is None else vf["mtu"]
    mac = pf["mac"] if vf is None else vf["netdev_mac"]
    ifindex = 100 + pf["index"] * 100 + (vf["vf"] + 1 if vf else 0)
    if as_json:
        entry = {"ifindex": ifindex, "ifname": name, "flags": flags, "mtu": mtu, "qdisc": "mq",
                 "operstate": state, "linkmode": "DEFAULT", "group": "default", "txqlen": 1000,
                 "link_type": "ether", "address": mac, "broadcast": "ff:ff:ff:ff:ff:ff"}
        if vf is None and pf["vfs"]:
            entry["vfinfo_list"] = formats.ip_json_vfinfo(_vf_dicts(pf))
        print(formats.iproute2_json([entry], pretty))
        return 0
    lines = [f"{ifindex}: {name}: <{','.join(flags)}> mtu {mtu} qdisc mq state {state} "
             f"mode DEFAULT group default qlen 1000",
             f"    link/ether {mac} brd ff:ff:ff:ff:ff:ff"]
    if vf is None:
        lines.extend(formats.ip_vf_lines(_vf_dicts(pf)))
    print("\n".join(lines))
    return 0


def _option(opts: list[str], name: str) -> bool:
    """ip/ip.c: ``--x`` is read as ``-x``, and an option is any prefix of its
    name (``-j``, ``-js``, ``-json``)."""
    return any(_matches(o[1:] if o.startswith("--") else o, name) and len(o) > 1 for o in opts)


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
        if dev in twin_names():
            return _link_set(s, args)
        return _real(argv)
    if verb in ("show", "list", "sh", "ls"):
        # ip/ipaddress.c ipaddr_list_flush_or_save(): one device (``dev X`` or
        # the bare name) and the ``up`` filter are what the twin answers; any
        # other filter goes to the real ip with the rest of the command
        filter_dev, up, i = None, False, 0
        while i < len(args):
            if args[i] == "up":
                up = True
            elif args[i] in _SHOW_FILTERS:
                return _real(argv)
            else:
                if args[i] == "dev":
                    if i + 1 >= len(args):
                        print(_incomplete().msg, file=sys.stderr)
                        return 255
                    i += 1
                if filter_dev is not None:
                    print(f'Error: either "dev" is duplicate, or "{args[i]}" is a garbage.', file=sys.stderr)
                    return 255
                filter_dev = args[i]
            i += 1
        if filter_dev is not None and filter_dev in twin_names():
            return _link_show(s, filter_dev, up, as_json=_option(opts, "-json"), pretty=_option(opts, "-pretty"))
        return _real(argv)
    return _real(argv)
