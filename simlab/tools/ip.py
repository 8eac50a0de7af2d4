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
refused as not modelled; every other invocation is handed to the real
``ip`` unchanged.
"""

from __future__ import annotations

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


def _link_entry(s: dict, name: str, up: bool, brief: bool, oneline: bool = False) -> tuple[dict, list[str]]:
    """One twin netdev as print_linkinfo() (ip/ipaddress.c) has it: its JSON
    object and its text lines, with the VF lines of a PF (``oneline``: one
    line); ``brief`` as print_linkinfo_brief() has it (name, operstate,
    address, flags; no VFs). A netdev the ``up`` filter leaves out is an
    empty object and no lines (print_linkinfo() returns before it prints,
    inside its JSON object)."""
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
    entry = {"ifindex": ifindex, "ifname": name, "flags": flags, "mtu": mtu, "qdisc": qdisc,
             "operstate": state, "linkmode": "DEFAULT", "group": "default", "txqlen": 1000,
             "link_type": "ether", "address": mac, "broadcast": "ff:ff:ff:ff:ff:ff"}
    lines = [f"{ifindex}: {name}: <{','.join(flags)}> mtu {mtu} qdisc {qdisc} state {state} "
             f"mode DEFAULT group default qlen 1000",
             f"    link/ether {mac} brd ff:ff:ff:ff:ff:ff"]
    if vf is None and pf["vfs"]:
        entry["vfinfo_list"] = formats.ip_json_vfinfo(_vf_dicts(pf))
        lines.extend(formats.ip_vf_lines(_vf_dicts(pf)))
    return entry, [formats.ip_oneline(lines)] if oneline else lines


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
    link in the order of the dump; a -j answer holds one object per link
    (``{}`` where ``up`` left one out) in that order, a -br line names its
    link, a text link starts with its ifindex."""
    import subprocess

    proc = subprocess.run([real, *real_argv], capture_output=True, text=True)
    if proc.returncode != 0:
        return proc.returncode, proc.stdout, proc.stderr, []
    listed = subprocess.run([real, "-j", "link", "show"], capture_output=True, text=True)
    order = [(link["ifindex"], link["ifname"]) for link in json.loads(listed.stdout or "[]", strict=False)] \
        if listed.returncode == 0 else []
    if as_json:
        objects = json.loads(proc.stdout or "[]", strict=False)     # json_writer leaves some control bytes raw
        indexes = [i for i, _ in order] if len(order) == len(objects) else [None] * len(objects)
        return 0, "", proc.stderr, list(zip(indexes, objects))
    if brief:
        index = {name: i for i, name in order}
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
        entry, lines = _link_entry(s, name, up, brief, oneline)
        links.append(((pf if vf is None else vf)["ifindex"], entry if as_json else "".join(ln + "\n" for ln in lines)))
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
