"""Twin of iproute2's ``ip`` for the twin's NIC netdevs.

On a real host VF settings go through netlink to the PF driver; in the twin
the PF and VF netdevs exist only in the FUSE sysfs, so ``ip link set`` and
``ip [-j [-p]] [-br] [-o] link show [[dev] NAME] [up]`` on those names act
on the node agent's kernel model. Without a name the real ``ip``'s list of
the container's own links (lo) and the twin's netdevs come together, in the
order a 6.1 kernel dumps them. They read the command line as iproute2 6.1 does
(ip/iplink.c, ip/ipaddress.c, lib/utils.c: its messages and exit statuses
for what it cannot read) and print its formats (``vf N     link/ether ...
spoof checking ..., trust ...``, the brief line, ``-o``'s one line, its
JSON writer); the VM tier holds them to the real ``ip`` on an igb PF
(tests/vm/test_vm_twin_faithful.py). On a twin netdev, or on the list that
holds them, an option other than ``-j``/``-p``/``-br``/``-o``, or a ``link
set`` word of iproute2's other than ``up``, ``down``, ``mtu`` and ``vf``, is
refused as not modelled. ``ip address`` (``show`` of a twin netdev or of
the list, ``add`` and ``del`` of an IPv4 address) answers from the
kernel model's addresses as iproute2 6.1's print_addrinfo() and the
kernel's devinet.c do; the VM tier holds it to the real ``ip`` and
Soft-RoCE's GIDs on an igb PF. Every other invocation is handed to the
real ``ip`` unchanged.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import sys

from simlab.tools import agentclient, cargs, formats
from simlab.tools.agentclient import call, summary

REAL_IP = ("/usr/sbin/ip", "/usr/bin/ip", "/sbin/ip", "/bin/ip")
SELF_DIR = "/usr/local/sbin"


def _real_path() -> str | None:
    """The real iproute2 ip, not this twin's wrapper."""
    return next((p for p in REAL_IP if os.path.exists(p) and not os.path.realpath(p).startswith(SELF_DIR)), None)


def _real(argv: list[str]) -> int:
    path = _real_path()
    if path:
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


def _device_word(args: list[str], i: int, dev: str | None) -> tuple[str, int]:
    """The device at ``args[i]`` (``dev X`` or the bare name), as iplink_parse()
    and ipaddr_list_flush_or_save() read it: a second one is duparg2()'s
    error. Returns the device and the index after it."""
    if args[i] == "dev":
        if i + 1 >= len(args):
            raise _incomplete()
        i += 1
    if dev is not None:
        raise _Stop(255, f'Error: either "dev" is duplicate, or "{args[i]}" is a garbage.')
    return args[i], i + 1


def _on_off(what: str, arg: str) -> bool:
    """lib/utils.c parse_on_off(): the first of "off", "on" that the word is a
    prefix of; otherwise the message, and the command fails with status 1."""
    for i, value in enumerate(("off", "on")):
        if _matches(arg, value):
            return bool(i)
    raise _Stop(1, f'Error: argument of "{what}" must be one of "off", "on", not "{arg}"')


def _lladdr(arg: str, halen: int) -> str:
    """lib/ll_addr.c ll_addr_a2n(): ``:``-separated groups read by
    sscanf("%x"), each 0-255, or, for a word with a dot, an IPv4 address
    (get_addr_ipv4: four bytes); then iplink_parse_vf()'s check against the
    device's address length (6 on Ethernet, 20 on IPoIB)."""
    if "." in arg:
        if not cargs.ipv4_address(arg):
            raise _Stop(1, f'"{arg}" is invalid lladdr.')
        octets = [0, 0, 0, 0]
    else:
        octets = []
        for group in arg.split(":"):
            value = cargs.scan_hex(group)
            if value is None or not 0 <= value <= 255:
                raise _Stop(1, f'"{group}" is invalid lladdr.')
            octets.append(value)
    if len(octets) != halen:
        raise _Stop(1, f"Invalid address length {len(octets)} - must be {halen} bytes")
    return ":".join("%02x" % o for o in octets)


def _guid(arg: str) -> str | None:
    """lib/utils.c get_guid(): 23 characters, a ``:`` after every two, each
    pair read by strtoul(.., 16), which must end exactly at the next colon
    and give at most 255."""
    if len(arg) != 23 or any(arg[2 + i * 3] != ":" for i in range(7)):
        return None
    groups = []
    for i in range(8):
        value, rest = cargs.strtoul16(arg[i * 3:])
        if len(arg) - len(rest) != i * 3 + 2 or value > 255:
            return None
        groups.append(value)
    return ":".join("%02x" % g for g in groups)


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


def _vlan_info(args: list[str], i: int, value) -> tuple[dict, int]:
    """iplink_parse_vf_vlan_info() from ``args[i]`` (``vlan``): the VLAN, a
    ``qos`` (0 when not given) and a ``proto`` (802.1Q when not given)."""
    vlan = cargs.whole_unsigned(value(i))
    if vlan is None or vlan > 4095:
        raise _invarg('Invalid "vlan" value\n', args[i + 1])
    info = {"vlan": vlan, "qos": 0, "vlan_proto": "802.1Q"}
    i += 2
    if i < len(args) and _matches(args[i], "qos"):
        qos = cargs.whole_unsigned(value(i))
        if qos is None:
            raise _invarg('Invalid "qos" value\n', args[i + 1])
        info["qos"] = qos
        i += 2
    if i < len(args) and _matches(args[i], "proto"):
        info["vlan_proto"] = _vlan_proto(value(i))
        i += 2
    return info, i


def _parse_vf(args: list[str], i: int, halen: int) -> tuple[dict, int]:
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
            settings["mac"] = _lladdr(value(i), halen)
            i += 2
        elif _matches(word, "vlan"):
            info, i = _vlan_info(args, i, value)
            settings.update(info)
            if info["vlan_proto"] != "802.1Q":
                # IFLA_VF_VLAN_LIST: the words ``vlan ...`` that follow join it
                entries = 1
                while i < len(args) and _matches(args[i], "vlan"):
                    _more, i = _vlan_info(args, i, value)
                    entries += 1
                settings["vlan_list_len"] = entries
        elif _matches(word, "rate"):
            rate = cargs.whole_unsigned(value(i))
            if rate is None:
                raise _invarg('Invalid "rate" value\n', args[i + 1])
            if not new_rate_api:
                settings["tx_rate"] = rate          # IFLA_VF_TX_RATE, the legacy call
            elif not override_legacy:
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
            guid = _guid(value(i))
            if guid is None:
                raise _invarg("Invalid GUID format\n", args[i + 1])
            settings[key] = guid
            i += 2
        else:
            break
    if i == start:
        raise _incomplete()
    return settings, i


def _check_rates(s: dict, dev: str, index: int, settings: dict) -> None:
    """iplink_parse_vf()'s last check: a rate it was not given is the VF's
    current one (ipaddr_get_vf_rate, which ends the command with ``Cannot
    find VF N`` for a VF the PF lacks), and min_tx_rate may not exceed a
    max_tx_rate that is set."""
    if "min_tx_rate" not in settings and "max_tx_rate" not in settings:
        return
    if "min_tx_rate" not in settings or "max_tx_rate" not in settings:
        pf, _vf = _netdevs(s).get(dev, (None, None))
        current = next((v for v in (pf or {}).get("vfs", []) if v["vf"] == index), None)
        if current is None:
            raise _Stop(1, f"Cannot find VF {index}")
    else:
        current = {}
    tmin = settings.get("min_tx_rate", current.get("min_tx_rate", 0))
    tmax = settings.get("max_tx_rate", current.get("max_tx_rate", 0))
    if tmax and tmin > tmax:
        raise _Stop(1, f"Invalid min_tx_rate {tmin} - must be <= max_tx_rate {tmax}")


# the words of ip/iplink.c iplink_parse() the twin does not model: (word, a
# prefix is enough) in its order
_SET_UNMODELLED = [("name", False), ("index", False), ("link", True), ("address", True), ("broadcast", True),
                   ("brd", False), ("txqueuelen", True), ("qlen", False), ("txqlen", True), ("xdpgeneric", False),
                   ("xdpdrv", False), ("xdpoffload", False), ("xdp", False), ("netns", False),
                   ("multicast", False), ("allmulticast", False), ("promisc", False), ("trailers", False),
                   ("arp", False), ("carrier", False), ("master", True), ("vrf", False), ("nomaster", True),
                   ("dynamic", True), ("type", True), ("alias", True), ("group", False), ("mode", False),
                   ("state", False), ("numtxqueues", True), ("numrxqueues", True), ("addrgenmode", True),
                   ("link-netns", True), ("link-netnsid", True), ("protodown", False), ("protodown_reason", False),
                   ("gso_max_size", False), ("gso_max_segs", False), ("gro_max_size", False), ("parentdev", False)]


def _unmodelled(word: str) -> bool:
    return any(_matches(word, k) if prefix else word == k for k, prefix in _SET_UNMODELLED)


def _link_set(s: dict, args: list[str], argv: list[str]) -> int:
    """``ip link set`` on a twin netdev, read as ip/iplink.c iplink_parse()
    (iproute2 6.1) reads it: the device (``dev X`` or the bare name), ``up``,
    ``down``, ``mtu N`` and any number of ``vf N ...``; another of
    iproute2's words is refused as one the twin does not model, ``help``
    goes to the real ip, and any other word gets iproute2's answer to a
    second device name. Then,
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
                pf = _netdevs(s).get(dev, ({}, None))[0]
                settings, i = _parse_vf(args, i + 2, 20 if pf.get("link_type") == "IB" else 6)
                _check_rates(s, dev, index, settings)
                vfs.append((index, settings))
            elif _unmodelled(word):
                raise _Stop(2, f'ip: the simlab twin does not model "{word}" on its netdevs')
            elif _matches(word, "help"):
                return _real(argv)
            else:
                dev, i = _device_word(args, i, dev)
        if dev is None:
            raise _Stop(255, 'Not enough information: "dev" argument is required.')
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
    """The netdev's flags as print_link_flags() lists them, and its operstate
    in oper_states' words, from the node's kernel (its admin state, carrier)."""
    fn = pf if vf is None else vf
    admin = fn["admin_up"]
    up = admin and fn["carrier"]
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


def _link_entry(s: dict, name: str, up: bool, brief: bool, oneline: bool = False, do_link: bool = True,
                family: str | None = None) -> tuple[dict, list[str]]:
    """One twin netdev as print_linkinfo() (ip/ipaddress.c) has it: its JSON
    object and its text lines, with the VF lines of a PF (``oneline``: one
    line); ``brief`` as print_linkinfo_brief() has it (name, operstate,
    address, flags; no VFs). A netdev the ``up`` filter leaves out is an
    empty object and no lines (print_linkinfo() returns before it prints,
    inside its JSON object). For ``ip addr`` (not ``do_link``) there is no
    link mode and no VF; an address family (``-4``) leaves out the
    ``link/ether`` line."""
    pf, vf = _netdevs(s)[name]
    flags, state = _flags(pf, vf)
    if up and "UP" not in flags:
        return {}, []
    mac = pf["mac"] if vf is None else vf["netdev_mac"]
    if brief:
        link = {"ifname": name, "operstate": state, "address": mac, "flags": flags}
        return link, [formats.ip_link_brief(link)]
    fn = pf if vf is None else vf
    mtu, ifindex = fn["mtu"], fn["ifindex"]
    qdisc = "mq" if fn["opened"] else "noop"     # a netdev never up keeps noop_qdisc
    mode = "mode DEFAULT " if do_link else ""
    entry = {"ifindex": ifindex, "ifname": name, "flags": flags, "mtu": mtu, "qdisc": qdisc,
             "operstate": state, "linkmode": "DEFAULT", "group": "default", "txqlen": 1000,
             "link_type": "ether", "address": mac, "broadcast": "ff:ff:ff:ff:ff:ff"}
    lines = [f"{ifindex}: {name}: <{','.join(flags)}> mtu {mtu} qdisc {qdisc} state {state} "
             f"{mode}group default qlen 1000"]
    if not do_link:
        del entry["linkmode"]
    if family:
        for key in ("link_type", "address", "broadcast"):
            del entry[key]
    else:
        lines.append(f"    link/ether {mac} brd ff:ff:ff:ff:ff:ff")
    if do_link and vf is None and pf["vfs"]:
        entry["vfinfo_list"] = formats.ip_json_vfinfo(_vf_dicts(pf))
        lines.extend(formats.ip_vf_lines(_vf_dicts(pf)))
    return entry, [formats.ip_oneline(lines)] if oneline else lines


def _addr_entry(s: dict, name: str, up: bool, brief: bool, oneline: bool = False,
                family: str | None = None) -> tuple[dict | None, str]:
    """One twin netdev as ``ip addr show`` prints it (ipaddr_list_flush_or_save():
    print_linkinfo() and print_selected_addrinfo()): its JSON object and its
    text, the link and then its addresses. ``brief``: the name, the
    operstate and ``A/N`` per address. ``oneline``: one line per address,
    no link (a JSON object of ``addr_info`` alone). ``family`` (``-4``,
    ``-6``): a netdev without an address of it is left out (ipaddr_filter()):
    None. The twin's netdevs have IPv4 addresses only."""
    pf, vf = _netdevs(s)[name]
    fn = pf if vf is None else vf
    addrs = [dict(a, label=name) for a in fn.get("addrs", []) if family in (None, a["family"])]
    if family and not addrs:
        return None, ""
    is_up = fn["admin_up"]
    if oneline and not brief:
        # no print_linkinfo(), so no {} for a link that is down: its addresses are left out
        infos = [formats.ip_addr_info(a, oneline=(fn["ifindex"], name)) for a in addrs if is_up or not up]
        return {"addr_info": [obj for obj, _ in infos]}, "".join(text for _, text in infos)
    if up and not is_up:
        return {}, ""
    infos = [formats.ip_addr_info(a, brief=brief) for a in addrs]
    if brief:
        _, state = _flags(pf, vf)
        return ({"ifname": name, "operstate": state, "addr_info": [obj for obj, _ in infos]},
                "%-16s %-14s " % (name, state) + "".join(text for _, text in infos) + "\n")
    entry, lines = _link_entry(s, name, up, False, do_link=False, family=family)
    entry["addr_info"] = [obj for obj, _ in infos]
    return entry, "".join(line + "\n" for line in lines) + "".join(text for _, text in infos)


def _link_show(s: dict, name: str, up: bool, as_json: bool, pretty: bool = False, brief: bool = False,
               oneline: bool = False) -> int:
    """One twin netdev as ``ip [-j [-p]] [-br] [-o] link show [dev] NAME
    [up]`` prints it (iplink_get(): one object in the array, ``[{}]`` when
    ``up`` leaves it out)."""
    entry, lines = _link_entry(s, name, up, brief, oneline)
    if as_json:
        print(formats.iproute2_json([entry], pretty))
    elif lines:
        print("\n".join(lines))
    return 0


def _dump_key(ifindex: int | None) -> tuple[int, int]:
    """Where a link comes in a 6.1 kernel's dump: net/core/rtnetlink.c
    rtnl_dump_ifinfo() walks dev_index_head, 256 hash buckets by ifindex &
    255, each newest first (the higher ifindex first: the node's kernel hands
    them out in the order links register, Kernel.new_ifindex()); the later
    kernels' ifindex order came with for_each_netdev_dump(). The VM tier
    checks the rule on a real 6.1 kernel. A link whose ifindex is not known
    goes first, in the order it came."""
    return (-1, 0) if ifindex is None else (ifindex & 255, -ifindex)


def _real_links(real: str, real_argv: list[str], as_json: bool, brief: bool):
    """The real ip's answer to ``real_argv`` cut into its links, each with
    its ifindex: (exit status, stdout, stderr, [(ifindex, JSON object or
    text)]). A second call, ``ip -j link show``, gives the ifindex of every
    link in the order of the dump; a -j object holds its ifindex (``ip -o
    -j addr``: in its addr_info) or is one per link in that order (``{}``
    where ``up`` left one out), a -br line names its link, a text link (an
    ``ip -o addr`` line) starts with its ifindex. Where the order cannot be
    read, what names no ifindex goes first."""
    import subprocess

    proc = subprocess.run([real, *real_argv], capture_output=True, text=True)
    if proc.returncode != 0:
        return proc.returncode, proc.stdout, proc.stderr, []
    listed = subprocess.run([real, "-j", "link", "show"], capture_output=True, text=True)
    order = [(link["ifindex"], link["ifname"]) for link in json.loads(listed.stdout or "[]", strict=False)] \
        if listed.returncode == 0 else []
    index = {name: i for i, name in order}
    if as_json:
        objects = json.loads(proc.stdout or "[]", strict=False)     # json_writer leaves some control bytes raw
        indexes = [i for i, _ in order] if len(order) == len(objects) else [None] * len(objects)
        # an object that names its link says where it goes (``ip -4 addr`` leaves some links out;
        # ``-o`` names them in addr_info)
        named = [obj.get("ifindex") or index.get(obj.get("ifname"))
                 or next((a.get("index") for a in obj.get("addr_info") or []), None) for obj in objects]
        return 0, "", proc.stderr, [(n or i, obj) for n, i, obj in zip(named, indexes, objects)]
    if brief:
        return 0, "", proc.stderr, [(index.get(line.split()[0].split("@")[0]) if line.strip() else None, line)
                                    for line in proc.stdout.splitlines(keepends=True)]
    links: list[list] = []
    for line in proc.stdout.splitlines(keepends=True):
        start = re.match(r"(\d+): ", line)
        if start or not links:
            links.append([int(start[1]) if start else None, line])
        else:
            links[-1][1] += line
    return 0, "", proc.stderr, [tuple(link) for link in links]


def _link_list(s: dict, real_argv: list[str], up: bool, as_json: bool, pretty: bool, brief: bool,
               oneline: bool) -> int:
    """``ip [-j [-p]] [-br] [-o] link [show] [up]``: the container's own
    links (a node container has lo alone) from the real ip and every twin netdev as
    ``ip link show <netdev>`` prints it, together in the order a 6.1 kernel
    dumps them."""
    def entry(name):
        obj, lines = _link_entry(s, name, up, brief, oneline)
        return obj, "".join(ln + "\n" for ln in lines)
    return _merged_list(s, real_argv, entry, as_json, pretty, brief)


def _addr_list(s: dict, real_argv: list[str], up: bool, as_json: bool, pretty: bool, brief: bool,
               oneline: bool, family: str | None) -> int:
    """``ip [-4] [-j [-p]] [-br] [-o] addr [show] [up]``: as _link_list(),
    each twin netdev as ``ip addr show <netdev>`` prints it."""
    return _merged_list(s, real_argv, lambda name: _addr_entry(s, name, up, brief, oneline, family),
                        as_json, pretty, brief)


def _merged_list(s: dict, real_argv: list[str], entry, as_json: bool, pretty: bool, brief: bool) -> int:
    """The real ip's answer to ``real_argv`` and ``entry(name)`` ((JSON
    object or None for none, text)) of every twin netdev, in the order a
    6.1 kernel dumps their links."""
    real = _real_path()
    if real is None:
        print("ip: iproute2 not installed", file=sys.stderr)
        return 127
    # real_argv asks for compact JSON: its objects are written again with the twin's
    rc, out, err, links = _real_links(real, real_argv, as_json, brief)
    sys.stderr.write(err)
    if rc != 0:
        sys.stdout.write(out)
        return rc
    for name, (pf, vf) in _netdevs(s).items():
        obj, text = entry(name)
        if obj is not None:
            links.append(((pf if vf is None else vf)["ifindex"], obj if as_json else text))
    links.sort(key=lambda link: _dump_key(link[0]))
    if as_json:
        print(formats.iproute2_json([obj for _, obj in links], pretty))
    else:
        sys.stdout.write("".join(text for _, text in links))
    return 0


# ip/ip.c's options the twin prints with: -j, -p, -br, -o; and the ones that
# change nothing in ``link``'s output (ipaddr_list_link() sets the family to
# AF_PACKET; -h and -iec only scale the -s counters)
_MODELLED_OPTIONS = ("-json", "-pretty", "-brief", "-oneline", "-4", "-6", "-0", "-human", "-human-readable", "-iec")

# ip/ip.c's options in the order it tries them: (name, a prefix is enough, takes a value)
_OPTIONS = [("-loops", True, True), ("-family", True, True), ("-4", False, False), ("-6", False, False),
            ("-0", False, False), ("-M", False, False), ("-B", False, False), ("-human", True, False),
            ("-human-readable", True, False), ("-iec", True, False), ("-stats", True, False),
            ("-statistics", True, False), ("-details", True, False), ("-resolve", True, False),
            ("-oneline", True, False), ("-timestamp", True, False), ("-tshort", True, False),
            ("-Version", True, False), ("-force", True, False), ("-batch", True, True), ("-brief", True, False),
            ("-json", True, False), ("-pretty", True, False), ("-rcvbuf", True, True), ("-help", True, False),
            ("-netns", True, True), ("-Numeric", True, False), ("-all", True, False), ("-echo", False, False),
            ("-color", True, False)]


def _ip_option(word: str) -> tuple[str, bool] | None:
    """The option ip/ip.c reads ``word`` as (``--x`` is ``-x``; ``-c`` and
    ``-color=...`` are its colour option), and whether it takes the next
    word; None for an option it does not know."""
    opt = word[1:] if word.startswith("--") else word
    for name, prefix, value in _OPTIONS:
        if (_matches(opt.split("=")[0] if name == "-color" else opt, name) and len(opt) > 1) if prefix \
                else opt == name:
            return name, value
    return None


def main(argv: list[str]) -> int:
    opts, i = [], 0
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] == "--":
            i += 1
            break
        option = _ip_option(argv[i])
        if option is None or option[0] in ("-Version", "-help", "-batch"):
            return _real(argv)        # its message for an unknown option, its version, help or batch
        opts.append(option[0])
        i += 2 if option[1] else 1
    command_at = i
    rest = argv[i:]
    if rest and _matches(rest[0], "address"):
        return _address(opts, argv, command_at)
    if not rest or rest[0] not in ("link", "l", "li", "lin"):
        return _real(argv)
    rest = rest[1:]
    unmodelled = [o for o in opts if o not in _MODELLED_OPTIONS]
    s = None
    twin = None

    def twin_names(quiet=False):
        """The twin's netdevs; none where the node agent does not answer
        (said on stderr unless ``quiet``)."""
        nonlocal s, twin
        if twin is None:
            try:
                s = agentclient.request({"op": "summary"}) if quiet else summary("ip")
                twin = _netdevs(s)
            except (SystemExit, OSError):
                twin = {}
        return twin

    verb = rest[0] if rest else "show"
    args = rest[1:]
    if _matches(verb, "set") or _matches(verb, "change"):
        dev = args[1] if args and args[0] == "dev" and len(args) > 1 else (args[0] if args else "")
        if dev in twin_names():
            return _not_modelled(unmodelled) if unmodelled else _link_set(s, args, argv)
        return _real(argv)
    if _matches(verb, "show") or _matches(verb, "lst") or _matches(verb, "list"):
        # ip/ipaddress.c ipaddr_list_flush_or_save(): one device (``dev X`` or
        # the bare name) or all of them, and the ``up`` filter, are what the
        # twin answers; any other filter goes to the real ip with the rest of
        # the command
        filter_dev, up, i, list_filter = None, False, 0, False
        while i < len(args):
            if args[i] == "up":
                up = True
            elif args[i] == "nomaster" or (args[i] == "group" and args[i + 1:i + 2] in (["default"], ["0"])):
                # filters every twin netdev passes (no master, group 0): a list keeps them
                list_filter, i = True, i + (2 if args[i] == "group" else 1)
                continue
            elif args[i] in _SHOW_FILTERS:
                return _real(argv)
            else:
                try:
                    filter_dev, i = _device_word(args, i, filter_dev)
                except _Stop as stop:
                    print(stop.msg, file=sys.stderr)
                    return stop.rc
                continue
            i += 1
        shown = dict(up=up, as_json="-json" in opts, pretty="-pretty" in opts, brief="-brief" in opts,
                     oneline="-oneline" in opts)
        if filter_dev is not None and list_filter:
            return _real(argv)    # a dump of one device (not iplink_get()): not modelled
        if filter_dev is not None and filter_dev in twin_names():
            if unmodelled:
                return _not_modelled(unmodelled)
            return _link_show(s, filter_dev, **shown)
        if filter_dev is None and twin_names(quiet=True):
            if unmodelled:
                return _not_modelled(unmodelled)
            real_opts = [w for w in argv[:command_at] if _ip_option(w) != ("-pretty", False)]
            return _link_list(s, real_opts + argv[command_at:], **shown)
        return _real(argv)
    return _real(argv)


def _not_modelled(opts: list[str]) -> int:
    print(f"ip: the simlab twin does not model {opts[0]} for its netdevs (it prints -j, -p, -br and -o)", file=sys.stderr)
    return 2


# ip/ip.c's options ``ip addr`` prints with for the twin's netdevs
_ADDR_OPTIONS = ("-json", "-pretty", "-brief", "-oneline", "-4", "-6", "-human", "-human-readable", "-iec")
# ipaddr_modify()'s words the twin does not model on its netdevs (its flag names among them)
# (ifa_flag_data's names among them, which are also filters of ``show``)
_ADDR_FLAGS = ("secondary", "temporary", "nodad", "optimistic", "dadfailed", "home", "deprecated", "tentative",
               "permanent", "mngtmpaddr", "noprefixroute", "autojoin", "stable-privacy")
_ADDR_UNMODELLED = ("peer", "remote", "anycast", "scope", "label", "valid_lft", "preferred_lft") + _ADDR_FLAGS
_IPV4 = re.compile(r"(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})(?:/(0|[1-9]\d?))?")


def _twin_or_none(quiet: bool = True):
    """The node agent's summary and the twin's netdevs; ({}, {}) where the
    agent does not answer."""
    try:
        s = agentclient.request({"op": "summary"}) if quiet else summary("ip")
        return s, _netdevs(s)
    except (SystemExit, OSError):
        return {}, {}


_FAMILIES = {"-4": "inet", "-6": "inet6", "-0": "link", "-M": "mpls", "-B": "bridge"}


def _family(options: list[str]) -> str | None:
    """The address family ip/ip.c's options set: the last of ``-4``,
    ``-6``, ``-0``, ``-M``, ``-B`` and ``-f``/``-family NAME``."""
    family, i = None, 0
    while i < len(options):
        option = _ip_option(options[i])
        if option and option[0] == "-family" and i + 1 < len(options):
            family, i = options[i + 1], i + 2
            continue
        family = _FAMILIES.get(option[0], family) if option else family
        i += 2 if option and option[1] else 1
    return family


def _address(opts: list[str], argv: list[str], command_at: int) -> int:
    """``ip address`` (ip/ipaddress.c do_ipaddr(), iproute2 6.1): ``show``
    of one twin netdev or of the list that holds them, ``add`` and ``del``
    of an IPv4 address on a twin netdev. Anything else goes to the real ip,
    or is refused as not modelled where it names a twin netdev."""
    rest = argv[command_at + 1:]
    verb, args = (rest[0], rest[1:]) if rest else ("show", [])
    if _matches(verb, "add") or _matches(verb, "delete"):
        return _addr_modify(opts, argv, args, add=_matches(verb, "add"))
    if _matches(verb, "change") or verb == "chg" or _matches(verb, "replace") or _matches(verb, "flush"):
        s, twin = _twin_or_none()
        named = [w for w in args if w in twin]
        if named:
            print(f'ip: the simlab twin does not model "ip address {verb}" on its netdevs ({named[0]})',
                  file=sys.stderr)
            return 2
        return _real(argv)
    if not (_matches(verb, "list") or _matches(verb, "show") or _matches(verb, "lst")):
        return _real(argv)
    filter_dev, unmodelled_filter, i = None, None, 0
    while i < len(args):
        if args[i] == "up":
            i += 1
            continue
        if args[i] in ("to", "scope", "label", "group", "master", "vrf", "type"):
            unmodelled_filter = unmodelled_filter or args[i]
            i += 2
            continue
        if args[i] == "nomaster" or args[i].lstrip("-") in _ADDR_FLAGS + ("dynamic", "primary"):
            unmodelled_filter = unmodelled_filter or args[i]
            i += 1
            continue
        try:
            filter_dev, i = _device_word(args, i, filter_dev)
        except _Stop as stop:
            print(stop.msg, file=sys.stderr)
            return stop.rc
    up = "up" in args
    family = _family(argv[:command_at])
    s, twin = _twin_or_none(quiet=filter_dev is None)
    if (filter_dev is not None and filter_dev not in twin) or not twin:
        return _real(argv)         # a link of the container's own (lo), or no twin netdev
    if unmodelled_filter:
        print(f'ip: the simlab twin does not model the "{unmodelled_filter}" filter of "ip address show" '
              "for its netdevs", file=sys.stderr)
        return 2
    if family not in (None, "inet", "inet6"):
        return _not_modelled([f"the {family} family"])
    shown = dict(up=up, as_json="-json" in opts, pretty="-pretty" in opts, brief="-brief" in opts,
                 oneline="-oneline" in opts)
    unmodelled = [o for o in opts if o not in _ADDR_OPTIONS + ("-0", "-M", "-B", "-family")]
    if unmodelled:
        return _not_modelled(unmodelled)
    if filter_dev is not None:         # a twin netdev (the container's own went to the real ip above)
        obj, text = _addr_entry(s, filter_dev, shown["up"], shown["brief"], shown["oneline"], family)
        if shown["as_json"]:
            print(formats.iproute2_json([] if obj is None else [obj], shown["pretty"]))
        else:
            sys.stdout.write(text)
        return 0
    real_opts = [w for w in argv[:command_at] if _ip_option(w) != ("-pretty", False)]
    return _addr_list(s, real_opts + argv[command_at:], family=family, **shown)


def _addr_modify(opts: list[str], argv: list[str], args: list[str], add: bool) -> int:
    """``ip addr add|del ADDR[/N] [brd +|-|ADDR] dev NAME`` on a twin netdev,
    read as ipaddr_modify() reads it; the address is a dotted IPv4 address.
    A command that names no twin netdev goes to the real ip, and so does one
    whose address the real ip refuses before it looks up the device (an
    octet above 255, a prefix above 32: its message). Other forms of an
    address, IPv6 and the words of _ADDR_UNMODELLED are refused as not
    modelled. Then the kernel's answer: EEXIST for an address the netdev
    has, EADDRNOTAVAIL for one to delete it has not."""
    # ipaddr_modify() keeps the last ``dev NAME``; a ``dev`` without its name is NEXT_ARG()'s to refuse
    devs = [k for k, word in enumerate(args) if word == "dev"]
    dev = args[devs[-1] + 1] if devs and devs[-1] + 1 < len(args) else None
    s, twin = _twin_or_none()
    if dev is None or dev not in twin:
        return _real(argv)
    unmodelled = [o for o in opts if o not in _ADDR_OPTIONS]
    if unmodelled:
        return _not_modelled(unmodelled)
    local = brd = None
    i = 0
    while i < len(args):
        word = args[i]
        if word == "dev":
            i += 2
            continue
        if word in _ADDR_UNMODELLED or _matches(word, "metric") or _matches(word, "priority") \
                or _matches(word, "preference"):
            print(f'ip: the simlab twin does not model "{word}" of "ip address" on its netdevs', file=sys.stderr)
            return 2
        if _matches(word, "help"):
            return _real(argv)
        if _matches(word, "broadcast") or word == "brd":
            if i + 1 >= len(args) or brd is not None:
                return _real(argv)       # its message for a missing or second value
            brd = args[i + 1]
            i += 2
            continue
        if word == "local":
            i += 1
            if i >= len(args):
                return _real(argv)
            word = args[i]
        if local is not None:
            return _real(argv)           # duparg2()
        local = word
        i += 1
    if local is not None and ":" in local and brd is None:
        try:
            ipaddress.IPv6Interface(local)
        except ValueError:
            return _real(argv)           # its message for what inet_pton() does not read
        if twin[dev][1] is not None:
            print(f'ip: the simlab twin does not model IPv6 addresses on its VF netdevs ("{local}")', file=sys.stderr)
            return 2
        reply = call({"op": "set_addr", "family": "inet6", "add": add, "dev": dev, "local": local}, "ip")
        print(f"RTNETLINK answers: {reply['error']}", file=sys.stderr)
        return 2
    parsed = []
    for value in [local, None if brd in ("+", "-") else brd]:
        if value is None:
            parsed.append(None)
            continue
        m = _IPV4.fullmatch(value)
        if m is None or ":" in value:
            print(f'ip: the simlab twin reads an address of its netdevs as A.B.C.D[/N] (IPv4), not "{value}"',
                  file=sys.stderr)
            return 2
        if any(int(o) > 255 for o in m.groups()[:4]) or (m[5] is not None and int(m[5]) > 32) \
                or (value is brd and m[5] is not None):
            return _real(argv)           # get_prefix()/get_addr() refuse it before the device lookup
        parsed.append(m)
    if local is None:
        # no IFA_LOCAL and no family: rtnetlink has no handler for AF_UNSPEC
        print("RTNETLINK answers: Operation not supported", file=sys.stderr)
        return 2
    m = parsed[0]
    address = ".".join(m.groups()[:4])
    prefixlen = int(m[5]) if m[5] is not None else None
    if not add:
        if prefixlen is None:
            print("Warning: Executing wildcard deletion to stay compatible with old scripts.\n"
                  f"         Explicitly specify the prefix length ({local}/32) to avoid this warning.\n"
                  "         This special behaviour is likely to disappear in further releases,\n"
                  "         fix your scripts!", file=sys.stderr)
        req = {"op": "set_addr", "add": False, "dev": dev, "local": address, "prefixlen": prefixlen}
    else:
        plen = 32 if prefixlen is None else prefixlen
        broadcast = ".".join(parsed[1].groups()[:4]) if parsed[1] else None
        if brd in ("+", "-") and plen <= 30:
            net = ipaddress.ip_network(f"{address}/{plen}", strict=False)
            broadcast = str(net.broadcast_address) if brd == "+" else str(net.network_address)
        req = {"op": "set_addr", "add": True, "dev": dev, "local": address, "prefixlen": plen,
               "broadcast": broadcast, "scope": "host" if address.startswith("127.") else "global"}
    reply = call(req, "ip")
    if not reply["ok"]:
        print(f"RTNETLINK answers: {reply['error']}", file=sys.stderr)
        return 2
    return 0
