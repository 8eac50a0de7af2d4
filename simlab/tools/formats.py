"""Byte-exact renderers of the vendor tool outputs the tool twins print.

Each function takes plain Python data and returns the text the real tool
prints (or, for ``ip_vf_lines``/``ip_json_vfinfo``, the lines / JSON
objects iproute2 prints), following the printf formats of the tools'
sources:

* mlxconfig/mstconfig (mstflint ``mlxconfig/mlxcfg_ui.cpp``): opening
  labels ``%-20s%-20s``, name column ``"%s%s     %-48s" % (diff,
  readOnly, name)`` (56 wide), value columns ``%-19s`` separated by one
  space;
* mstflint query (``flint/subcommands.cpp``): labels padded to 23;
* mlnx_qos (mlnx-tools ``python/mlnx_qos`` ``pretty_print``);
* show_gids (mlnx-tools ``sbin/show_gids``), ibv_devinfo (rdma-core
  ``libibverbs/examples/devinfo.c``), ``rdma link`` and ``ip link`` VF
  info (iproute2);
* perftest ``ib_write_bw`` report and nccl-tests ``all_reduce_perf`` in
  the current release layout (``#wrong``, ``redop``, ``root``).

Standard library only; nothing here imports the collection.
"""

from __future__ import annotations

__all__ = [
    "MLXCFG_LAYOUTS",
    "mlxconfig_query",
    "mlxconfig_set",
    "mstflint_query",
    "mlnx_qos",
    "default_dscp2prio",
    "show_gids",
    "ibv_devinfo",
    "rdma_link",
    "ip_vf_lines",
    "ip_json_vfinfo",
    "ib_write_bw",
    "PERFTEST_DASHES",
    "nccl_rows",
    "nccl_avg_busbw",
    "nccl_net_info_lines",
    "all_reduce_perf",
]

# --------------------------------------------------------------------------
# mlxconfig / mstconfig
# --------------------------------------------------------------------------

MLXCFG_NAME_WIDTH = 56
MLXCFG_VALUE_WIDTH = 19


def _mlxcfg_opening(device_type, name, description, device, index=1):
    out = "\nDevice #%d:\n" % index
    out += "----------\n\n"
    out += "%-20s%-20s\n" % ("Device type:", device_type)
    out += "%-20s%-20s\n" % ("Name:", name if name else "N/A")
    out += "%-20s%-20s\n" % ("Description:", description if description else "N/A")
    out += "%-20s%-20s\n" % ("Device:", device)
    out += "\n"
    return out


def _mlxcfg_values(values):
    # printParam pads to the value width; PRINT_SPACE_IF_NEEDED adds one
    # space before the next column when the previous one filled it.
    return " ".join("%-*s" % (MLXCFG_VALUE_WIDTH, v) for v in values)


#: Table layouts.  ``doc``: the layout of host-interfaces.md section 3.1
#: (name ``%-48s``, 19-wide values one space apart).  ``classic``: what
#: MFT/mstflint up to 4.35 print (mlxcfg_ui.cpp before the 4.36 layout
#: change): name ``%-44s``, values ``%-20s`` each followed by the space
#: of PRINT_SPACE_IF_NEEDED (printf's count is never below 20), header
#: ``"%-20s%46s"`` (Next Boot
#: only) or ``"%-20s%44s%20s%18s"`` (-e), ``"       New"`` for set; the
#: published MFT 4.30 ConnectX-7 query has exactly this layout.
MLXCFG_LAYOUTS = ("doc", "classic")


def _classic_values(values):
    # printParam returns printf's count, which is >= 20 for "%-20s", so
    # PRINT_SPACE_IF_NEEDED always separates the columns: 21 apart.
    return " ".join("%-20s" % v for v in values)


def _mlxcfg_header(layout, extended, new=False):
    if layout == "classic":
        if extended:
            out = "%-20s%44s%20s%18s" % ("Configurations:", "Default", "Current", "Next Boot")
        else:
            out = "%-20s%46s" % ("Configurations:", "Next Boot")
        if new:
            out += "       %s" % "New"
        return out + "\n"
    out = "%-*s" % (MLXCFG_NAME_WIDTH, "Configurations:")
    if extended:
        out += "%-*s " % (MLXCFG_VALUE_WIDTH, "Default")
        out += "%-*s " % (MLXCFG_VALUE_WIDTH, "Current")
    out += "%-*s" % (MLXCFG_VALUE_WIDTH, "Next Boot")
    if new:
        out += " %-*s" % (MLXCFG_VALUE_WIDTH, "New")
    return out + "\n"


def _mlxcfg_row(layout, name, values, diff, ro):
    marks = "%s%s     " % ("*" if diff else " ", "RO" if ro else "  ")
    if layout == "classic":
        return marks + "%-44s" % name + _classic_values(values) + "\n"
    return marks + "%-48s" % name + _mlxcfg_values(values) + "\n"


def _check_layout(layout):
    if layout not in MLXCFG_LAYOUTS:
        raise ValueError("mlxconfig layout must be one of %s, not %r" % (MLXCFG_LAYOUTS, layout))


def mlxconfig_query(device_type, name, description, device, params, extended=False, index=1,
                    layout="doc"):
    """``mlxconfig -d <dev> q`` (``extended=False``: Next Boot column only)
    or ``mlxconfig -d <dev> -e q`` (Default, Current, Next Boot).

    ``params`` is an ordered list of ``{name, default, current, next,
    read_only}`` with display strings (``'True(1)'``, ``'ETH(2)'``,
    ``'16'``, ``'Array[0..7]'``).  The ``*`` marker is set, as the tool
    does, only in extended mode when Next Boot differs from Default or
    Current.  ``layout``: ``'doc'`` or ``'classic'`` (MFT <= 4.35), see
    ``MLXCFG_LAYOUTS``.
    """
    _check_layout(layout)
    out = _mlxcfg_opening(device_type, name, description, device, index)
    out += _mlxcfg_header(layout, extended)
    any_diff = False
    any_ro = False
    for p in params:
        nxt = str(p["next"])
        if extended:
            dflt, cur = str(p["default"]), str(p["current"])
            diff = nxt != dflt or nxt != cur
            values = [dflt, cur, nxt]
        else:
            diff = False
            values = [nxt]
        ro = bool(p.get("read_only"))
        any_diff |= diff
        any_ro |= ro
        out += _mlxcfg_row(layout, p["name"], values, diff, ro)
    if any_diff:
        out += "The '*' shows parameters with next value different from default/current value.\n"
    if any_ro:
        out += "\nThe 'RO' shows parameters which are for read only and cannot be changed\n"
    return out


_RESET_LINES = {
    "reboot": "-I- Please reboot machine to load new configurations.\n",
    "power cycle": "-I- Please power cycle machine to load new configurations.\n",
}


def mlxconfig_set(changes, reboot_kind="reboot", device_type="ConnectX7", name=None,
                  description=None, device="0000:3b:00.0", layout="doc"):
    """``mlxconfig -d <dev> -y set NAME=VAL ...`` output.

    ``changes`` is a list of ``(name, next_boot_str, new_str)``;
    ``reboot_kind`` is ``'reboot'`` or ``'power cycle'`` (the ``-I-``
    line printed after ``Applying... Done!``); ``layout`` as for
    :func:`mlxconfig_query`.
    """
    _check_layout(layout)
    if reboot_kind not in _RESET_LINES:
        raise ValueError("reboot_kind must be 'reboot' or 'power cycle'")
    out = _mlxcfg_opening(device_type, name, description, device)
    out += _mlxcfg_header(layout, False, new=True)
    for pname, nxt, new in changes:
        out += _mlxcfg_row(layout, pname, [str(nxt), str(new)], False, False)
    out += "\n Apply new Configuration? (y/n) [n] : y\n"
    out += "Applying... Done!\n"
    out += _RESET_LINES[reboot_kind]
    return out


# --------------------------------------------------------------------------
# mstflint / flint query
# --------------------------------------------------------------------------

def _flint_line(label, value):
    return "%-23s%s\n" % (label + ":", value)


def _rom_text(entry):
    if isinstance(entry, str):
        return entry
    parts = []
    for key in ("type", "version", "cpu"):
        if entry.get(key):
            parts.append("%s=%s" % (key, entry[key]))
    return " ".join(parts)


def mstflint_query(fields):
    """``mstflint -d <dev> q`` output.

    ``fields``: ``image_type``, ``fw_version``, optional
    ``fw_version_running`` (printed only when it differs from
    ``fw_version``), ``fw_release_date``, ``product_version``,
    ``rom_info`` (list of ``{type, version, cpu}`` or strings),
    ``base_guid``/``base_mac`` (``(value, count)`` or ``{value, count}``),
    ``image_vsd``, ``device_vsd``, ``psid``, ``security_attributes`` (list
    or string).
    """
    def pair(v):
        if isinstance(v, dict):
            return v["value"], v["count"]
        return v[0], v[1]

    out = _flint_line("Image type", fields.get("image_type", "FS4"))
    out += _flint_line("FW Version", fields["fw_version"])
    running = fields.get("fw_version_running")
    if running and running != fields["fw_version"]:
        out += _flint_line("FW Version(Running)", running)
    out += _flint_line("FW Release Date", fields.get("fw_release_date", "N/A"))
    out += _flint_line("Product Version", fields.get("product_version", fields["fw_version"]))
    roms = fields.get("rom_info") or []
    if roms:
        out += _flint_line("Rom Info", _rom_text(roms[0]))
        for r in roms[1:]:
            out += " " * 23 + _rom_text(r) + "\n"
    out += _flint_line("Description", "UID                GuidsNumber")
    if fields.get("base_guid") is not None:
        v, c = pair(fields["base_guid"])
        out += _flint_line("Base GUID", "%-24s%d" % (v, c))
    if fields.get("base_mac") is not None:
        v, c = pair(fields["base_mac"])
        out += _flint_line("Base MAC", "%-24s%d" % (v, c))
    out += _flint_line("Image VSD", fields.get("image_vsd", "N/A"))
    out += _flint_line("Device VSD", fields.get("device_vsd", "N/A"))
    out += _flint_line("PSID", fields["psid"])
    sec = fields.get("security_attributes")
    if sec:
        out += _flint_line("Security Attributes", sec if isinstance(sec, str) else ", ".join(sec))
    return out


# --------------------------------------------------------------------------
# mlnx_qos
# --------------------------------------------------------------------------

def default_dscp2prio():
    """The firmware default map (prio = dscp >> 3) in the order the OFED
    sysfs lists it, highest DSCP first within each priority."""
    return {p: [d for d in range(p * 8 + 7, p * 8 - 1, -1)] for p in range(8)}


def mlnx_qos(state):
    """``mlnx_qos -i <if>`` output.

    ``state`` keys: ``dcbx`` (``'os'``/``'fw'``, default ``'os'``),
    ``trust`` (``'pcp'``/``'dscp'``/``'none'``), ``dscp2prio`` ({prio:
    [dscp, ...]}, default map when trust is dscp and none given),
    ``buffer_sizes`` (8 ints) and ``buffer_total_size`` (optional, printed
    as ``max_buffer_size=N``),
    ``cable_len``, ``pfc`` (8 ints 0/1), ``buffer`` (prio2buffer, 8 ints,
    or ``None`` when there is no buffer support: no ``buffer`` row, and
    with ``buffers_supported=False`` the tool's notice is printed first, as
    current releases do), ``tcs`` (list of ``{tc, tsa, bw, ratelimit (Gbps
    or None), priorities}``).
    """
    out = ""
    prio2buffer = state.get("buffer")
    if prio2buffer is None and state.get("buffers_supported") is False:
        out += "Buffers commands are not supported on your system\n"
    dcbx = state.get("dcbx", "os")
    out += "DCBX mode: OS controlled\n" if dcbx == "os" else "DCBX mode: Firmware controlled\n"
    trust = state.get("trust", "pcp")
    out += "Priority trust state: " + trust + "\n"
    if trust == "dscp":
        out += "dscp2prio mapping:\n"
        mapping = state.get("dscp2prio") or default_dscp2prio()
        for prio in range(8):
            s = "".join("%02d," % d for d in mapping.get(prio, mapping.get(str(prio), [])))
            pad = "\tprio:%d dscp:" % prio
            temp = ""
            while len(s) > 24:
                temp += pad + s[:24] + "\n"
                s = s[24:]
            if s:
                temp += pad + s
            if temp:
                out += temp + "\n"
    if prio2buffer is not None and state.get("buffer_sizes") is not None:
        msg = "Receive buffer size (bytes): "
        msg += "".join("%1d," % b for b in state["buffer_sizes"])
        if state.get("buffer_total_size") is not None:
            msg += "max_buffer_size=%d" % state["buffer_total_size"]
        out += msg + "\n"
    out += "Cable len: %d\n" % state.get("cable_len", 7)
    out += "PFC configuration:\n"
    out += "\tpriority    0   1   2   3   4   5   6   7\n"
    pfc = state.get("pfc", [0] * 8)
    if len(pfc) != 8:
        raise ValueError("pfc needs 8 values")
    msg = "\tenabled     " + "".join("%1d   " % v for v in pfc)
    if prio2buffer is not None:
        msg += "\n\tbuffer      " + "".join("%1d   " % v for v in prio2buffer)
    out += msg + "\n"
    for tc in state.get("tcs", []):
        rl = tc.get("ratelimit")
        r = "unlimited" if not rl else "%.1f Gbps" % float(rl)
        msg = "tc: %d ratelimit: %s, tsa: " % (tc["tc"], r)
        tsa = tc.get("tsa", "vendor")
        if tsa == "ets":
            msg += "ets, bw: %s%%" % tc.get("bw", 0)
        elif tsa in ("strict", "vendor"):
            msg += tsa
        else:
            msg += "unknown"
        out += msg + "\n"
        for up in tc.get("priorities", []):
            out += "\t priority:  %s\n" % up
    return out


# --------------------------------------------------------------------------
# show_gids, ibv_devinfo, rdma link
# --------------------------------------------------------------------------

_ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
_LL_ZERO_GID = "fe80:0000:0000:0000:0000:0000:0000:0000"


def _gid_ipv4(gid):
    g = gid.replace(":", "")
    return "%d.%d.%d.%d" % (int(g[24:26], 16), int(g[26:28], 16), int(g[28:30], 16), int(g[30:32], 16))


def show_gids(rows):
    """``show_gids`` output.  ``rows``: ``{dev, port, index, gid, ver,
    ndev}`` (``ver`` ``'v1'``/``'v2'``); all-zero and bare ``fe80::``
    GIDs are skipped as the script does, and the IPv4 column is derived
    from GIDs whose first group is ``0000``."""
    out = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
    out += "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"
    count = 0
    for r in rows:
        gid = r["gid"]
        if gid in (_ZERO_GID, _LL_ZERO_GID):
            continue
        ver = r.get("ver") or ""
        ndev = r.get("ndev") or ""
        if gid.split(":")[0] == "0000":
            out += "%s\t%s\t%s\t%s\t%s  \t%s\t%s\n" % (r["dev"], r["port"], r["index"], gid,
                                                     _gid_ipv4(gid), ver, ndev)
        else:
            out += "%s\t%s\t%s\t%s\t\t\t%s\t%s\n" % (r["dev"], r["port"], r["index"], gid, ver, ndev)
        count += 1
    out += "n_gids_found=%d\n" % count
    return out


_PORT_STATES = {"PORT_NOP": 0, "PORT_DOWN": 1, "PORT_INIT": 2, "PORT_ARMED": 3,
                "PORT_ACTIVE": 4, "PORT_ACTIVE_DEFER": 5}
_MTU_ENUM = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}


def ibv_devinfo(devices):
    """``ibv_devinfo`` output.  ``devices``: ``{hca_id, fw_ver, node_guid,
    sys_image_guid, vendor_id (int, default 0x02c9), vendor_part_id (int),
    hw_ver (int), board_id, ports: [{port, state ('PORT_ACTIVE'), max_mtu,
    active_mtu, sm_lid, port_lid, port_lmc, link_layer}]}``."""
    out = ""
    for d in devices:
        ports = d.get("ports", [])
        out += "hca_id:\t%s\n" % d["hca_id"]
        out += "\ttransport:\t\t\t%s (%d)\n" % ("InfiniBand", 0)
        out += "\tfw_ver:\t\t\t\t%s\n" % d["fw_ver"]
        out += "\tnode_guid:\t\t\t%s\n" % d["node_guid"]
        out += "\tsys_image_guid:\t\t\t%s\n" % d.get("sys_image_guid", d["node_guid"])
        out += "\tvendor_id:\t\t\t0x%04x\n" % d.get("vendor_id", 0x02C9)
        out += "\tvendor_part_id:\t\t\t%d\n" % d["vendor_part_id"]
        out += "\thw_ver:\t\t\t\t0x%X\n" % d.get("hw_ver", 0)
        if d.get("board_id"):
            out += "\tboard_id:\t\t\t%s\n" % d["board_id"]
        out += "\tphys_port_cnt:\t\t\t%d\n" % len(ports)
        for p in ports:
            state = p.get("state", "PORT_ACTIVE")
            out += "\t\tport:\t%d\n" % p["port"]
            out += "\t\t\tstate:\t\t\t%s (%d)\n" % (state, _PORT_STATES[state])
            out += "\t\t\tmax_mtu:\t\t%d (%d)\n" % (p.get("max_mtu", 4096), _MTU_ENUM[p.get("max_mtu", 4096)])
            out += "\t\t\tactive_mtu:\t\t%d (%d)\n" % (p.get("active_mtu", 4096),
                                                       _MTU_ENUM[p.get("active_mtu", 4096)])
            out += "\t\t\tsm_lid:\t\t\t%d\n" % p.get("sm_lid", 0)
            out += "\t\t\tport_lid:\t\t%d\n" % p.get("port_lid", 0)
            out += "\t\t\tport_lmc:\t\t0x%02x\n" % p.get("port_lmc", 0)
            out += "\t\t\tlink_layer:\t\t%s\n" % p.get("link_layer", "Ethernet")
        out += "\n"
    if not devices:
        out = "No IB devices found\n"
    return out


def rdma_link(rows):
    """``rdma link show`` output.  ``rows``: ``{dev, port, state,
    physical_state, netdev}``; InfiniBand ports may add ``subnet_prefix``,
    ``lid``, ``sm_lid``, ``lmc`` (printed before the state).  Like
    iproute2, each line ends with a space before the newline."""
    out = ""
    for r in rows:
        parts = ["link %s/%d" % (r["dev"], r["port"])]
        if r.get("subnet_prefix") is not None:
            parts.append("subnet_prefix %s lid %d sm_lid %d lmc %d" % (
                r["subnet_prefix"], r.get("lid", 0), r.get("sm_lid", 0), r.get("lmc", 0)))
        parts.append("state %s physical_state %s" % (r.get("state", "ACTIVE"),
                                                     r.get("physical_state", "LINK_UP")))
        if r.get("netdev"):
            parts.append("netdev %s" % r["netdev"])
            if r.get("netdev_index") is not None:    # -d (details) only
                parts.append("netdev_index %d" % r["netdev_index"])
        out += " ".join(parts) + " \n"
    return out


_JSONW_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f", "\b": "\\b",
                  "\\": "\\\\", '"': '\\"'}


def iproute2_json(value, pretty=False):
    """``value`` (a list of objects, as ``ip -j`` and ``rdma -j`` print)
    written as iproute2's json_writer (lib/json_writer.c) writes it.
    Compact, there is no blank after ``,`` or ``:``. With ``-p`` every
    member starts a line indented four spaces per level, a name is followed
    by ``: ``, an array opens ``[ `` and closes `` ]`` (``[ ]`` when empty)
    and keeps its plain values on one line (``[ "a","b" ]``), an object
    without members is ``{}``, and ``},{`` joins the objects of an array.
    Strings are escaped as 6.1's jsonw_puts does (``'`` is not, non-ASCII
    is left as it is). No newline at the end: the caller prints it, as jsonw_destroy."""
    out = []
    state = {"depth": 0, "sep": ""}

    def eor():                         # a comma before all but the first
        out.append(state["sep"])
        state["sep"] = ","

    def eol():
        if pretty:
            out.append("\n" + "    " * state["depth"])

    def begin(c):
        eor()
        out.append(c)
        state["depth"] += 1
        state["sep"] = ""

    def end(c):
        state["depth"] -= 1
        if state["sep"]:
            eol()
        out.append(c)
        state["sep"] = ","

    def write(v):
        if isinstance(v, dict):
            begin("{")
            for k, member in v.items():
                eor()
                eol()
                state["sep"] = ""
                out.append(scalar(str(k)) + (": " if pretty else ":"))
                write(member)
            end("}")
        elif isinstance(v, (list, tuple)):
            begin("[")
            if pretty:
                out.append(" ")
            for item in v:
                write(item)
            if pretty and state["sep"]:
                out.append(" ")
            state["sep"] = ""
            end("]")
        else:
            eor()
            out.append(scalar(v))

    def scalar(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if v is None:
            return "null"
        if isinstance(v, (int, float)):
            return str(v)
        return '"' + "".join(_JSONW_ESCAPES.get(c, c) for c in v) + '"'

    write(value)
    return "".join(out)


# --------------------------------------------------------------------------
# ip link VF info
# --------------------------------------------------------------------------

def ip_link_brief(link):
    """A link's line of ``ip -br link show`` (ip/ipaddress.c
    print_linkinfo_brief(), iproute2 6.1): the name padded to 16, the
    operstate to 14, the address, the flags in ``<>``, each followed by a
    blank. ``link``: the object ``ip -j -br link show`` prints for it
    (``ifname``, ``operstate``, ``address``, ``flags``)."""
    return "%-16s %-14s %s <%s> " % (link["ifname"], link["operstate"], link["address"], ",".join(link["flags"]))


# an address's lifetimes when they are infinite (INFINITY_LIFE_TIME): every
# address the twin holds is permanent, as a static one is
_FOREVER = 0xFFFFFFFF


def ip_addr_info(addr, brief=False, oneline=None):
    """One IPv4 address of ``ip addr show`` as ip/ipaddress.c
    print_addrinfo() (iproute2 6.1) writes it: its JSON object and its text.
    ``addr``: ``{local, prefixlen, broadcast, scope, secondary,
    noprefixroute, label}``. The text is ``    inet A/N [brd B ]scope S
    [secondary ][noprefixroute ]LABEL`` and the lifetimes on a line of their
    own (``oneline``, ``(ifindex, dev)``: ``N: dev`` first and a backslash
    for the newline, as ``ip -o`` has it). ``brief``: ``A/N `` alone."""
    if brief:
        return {"local": addr["local"], "prefixlen": addr["prefixlen"]}, "%s/%d " % (addr["local"], addr["prefixlen"])
    obj = {}
    text = ""
    if oneline:
        obj.update(index=oneline[0], dev=oneline[1])
        text += "%u: %s" % oneline
    obj.update(family="inet", local=addr["local"], prefixlen=addr["prefixlen"])
    text += "    inet %s/%d " % (addr["local"], addr["prefixlen"])
    if addr.get("broadcast"):
        obj["broadcast"] = addr["broadcast"]
        text += "brd %s " % addr["broadcast"]
    obj["scope"] = addr["scope"]
    text += "scope %s " % addr["scope"]
    for flag in ("secondary", "noprefixroute"):        # ifa_flag_data's order
        if addr.get(flag):
            obj[flag] = True
            text += flag + " "
    obj.update(label=addr["label"], valid_life_time=_FOREVER, preferred_life_time=_FOREVER)
    text += addr["label"] + ("\\" if oneline else "\n") + "       valid_lft forever preferred_lft forever\n"
    return obj, text


def ip_oneline(lines):
    """One link's lines of ``ip link show`` as ``ip -o`` prints them on one
    line: iproute2's print_nl() writes ``_SL_`` (a backslash) for each
    newline inside the link, and the next line keeps its indent."""
    return "\\".join(lines)


def _vf_defaults(vf):
    d = {"link_type": "ether", "broadcast": "ff:ff:ff:ff:ff:ff", "vlan": 0, "qos": 0,
         "vlan_proto": None, "max_tx_rate": 0, "min_tx_rate": 0, "spoofchk": True,
         "node_guid": None, "port_guid": None, "link_state": "auto", "trust": False,
         "query_rss": False}
    d.update(vf)
    return d


def ip_vf_lines(vfs):
    """The ``vf N ...`` lines of ``ip link show <pf>``, in iproute2's field
    order.  ``vfs``: ``{vf, mac, vlan, qos, vlan_proto, max_tx_rate,
    min_tx_rate, spoofchk, node_guid, port_guid, link_state, trust,
    query_rss, link_type, broadcast}`` (defaults: ether, no VLAN, spoof
    checking on, link-state auto, trust off, query_rss off)."""
    lines = []
    for raw in vfs:
        v = _vf_defaults(raw)
        s = "    vf %d " % v["vf"]
        s += "    link/%s %s" % (v["link_type"], v["mac"])
        s += " brd %s" % v["broadcast"]
        if v["vlan"]:
            s += ", vlan %d" % v["vlan"]
        if v["qos"]:
            s += ", qos %d" % v["qos"]
        if v["vlan_proto"] and v["vlan_proto"] != "802.1Q":
            s += ", vlan protocol %s" % v["vlan_proto"]
        if v["max_tx_rate"]:
            # the kernel copies max_tx_rate into the legacy IFLA_VF_TX_RATE
            s += ", tx rate %d (Mbps)" % v["max_tx_rate"]
            s += ", max_tx_rate %dMbps" % v["max_tx_rate"]
        if v["min_tx_rate"]:
            s += ", min_tx_rate %dMbps" % v["min_tx_rate"]
        if v["spoofchk"] is not None:
            s += ", spoof checking on" if v["spoofchk"] else ", spoof checking off"
        if v["node_guid"]:
            s += ", NODE_GUID %s" % v["node_guid"]
        if v["port_guid"]:
            s += ", PORT_GUID %s" % v["port_guid"]
        if v["link_state"]:
            s += ", link-state %s" % v["link_state"]
        if v["trust"] is not None:
            s += ", trust on" if v["trust"] else ", trust off"
        if v["query_rss"] is not None:
            s += ", query_rss on" if v["query_rss"] else ", query_rss off"
        lines.append(s)
    return lines


def ip_json_vfinfo(vfs):
    """The ``vfinfo_list`` entries of ``ip -j link show <pf>`` for the same
    VF dicts as :func:`ip_vf_lines`."""
    out = []
    for raw in vfs:
        v = _vf_defaults(raw)
        vlan = {}
        if v["vlan"]:
            vlan["vlan"] = v["vlan"]
        if v["qos"]:
            vlan["qos"] = v["qos"]
        if v["vlan_proto"] and v["vlan_proto"] != "802.1Q":
            vlan["protocol"] = v["vlan_proto"]
        item = {"vf": v["vf"], "link_type": v["link_type"], "address": v["mac"],
                "broadcast": v["broadcast"], "vlan_list": [vlan]}
        if v["max_tx_rate"]:
            item["tx_rate"] = v["max_tx_rate"]
        item["rate"] = {"max_tx": v["max_tx_rate"], "min_tx": v["min_tx_rate"]}
        if v["spoofchk"] is not None:
            item["spoofchk"] = bool(v["spoofchk"])
        if v["node_guid"]:
            item["node guid"] = v["node_guid"]
        if v["port_guid"]:
            item["port guid"] = v["port_guid"]
        if v["link_state"]:
            item["link_state"] = v["link_state"]
        if v["trust"] is not None:
            item["trust"] = bool(v["trust"])
        if v["query_rss"] is not None:
            item["query_rss_en"] = bool(v["query_rss"])
        out.append(item)
    return out


# --------------------------------------------------------------------------
# perftest ib_write_bw
# --------------------------------------------------------------------------

PERFTEST_DASHES = "-" * 87


def _onoff(v):
    return "ON" if v else "OFF"


def _c_alt_hex(value, width):
    """C ``%#0<width>x``: ``0x`` plus zero padding, but no prefix for 0
    (perftest prints LID 0 as ``0000``, LID 5 as ``0x05``)."""
    if value == 0:
        return "%0*x" % (width, 0)
    return "%#0*x" % (width, value)


def ib_write_bw(header, rows, gbits=True, closed=True):
    """``ib_write_bw`` report (client or server).

    ``header`` keys: ``device``, ``num_qps`` (1), ``transport`` ('IB'),
    ``connection`` ('RC'), ``tx_depth`` (128), ``cq_moderation`` (1),
    ``cqe_poll_batch`` (16), ``mtu`` (4096), ``link_type`` ('Ethernet'),
    ``gid_index`` (omitted when None), ``rdma_cm`` (False), ``local`` and
    ``remote`` (lists of ``{lid, qpn, psn, rkey, vaddr, gid}``), ``warnings``
    (lines printed before the report), ``title`` ('RDMA_Write BW Test'),
    ``machine`` ('client' or 'server': the server prints no TX depth and,
    with rdma_cm, waits for the client), ``tos`` (``-T``, shown with
    rdma_cm).
    ``rows``: ``{bytes, iterations, bw_peak, bw_average, msg_rate}``.
    ``gbits`` selects ``--report_gbits`` (Gb/sec) or MiB/sec;
    ``closed=False`` leaves out the closing line, as an interrupted
    ``--run_infinitely`` run does.
    """
    h = header
    rdma_cm = bool(h.get("rdma_cm", False))
    out = ""
    for w in h.get("warnings", []):
        out += " %s\n" % w
    out += PERFTEST_DASHES + "\n"
    out += "                    %s\n" % h.get("title", "RDMA_Write BW Test")
    out += " Dual-port       : %s\t\tDevice         : %s\n" % (_onoff(h.get("dual_port")), h["device"])
    out += " Number of qps   : %d\t\tTransport type : %s\n" % (h.get("num_qps", 1), h.get("transport", "IB"))
    out += " Connection type : %s\t\tUsing SRQ      : %s\n" % (h.get("connection", "RC"), _onoff(h.get("srq")))
    out += " PCIe relax order: %s\t\tLock-free      : %s\n" % (_onoff(h.get("pcie_relax", True)),
                                                              _onoff(h.get("lock_free")))
    out += " ibv_wr* API     : %s\t\tUsing Enhanced Reorder      : %s\n" % (
        _onoff(h.get("ibv_wr_api", True)), _onoff(h.get("enhanced_reorder")))
    server = h.get("machine", "client") == "server"
    if not server:
        out += " TX depth        : %d\n" % h.get("tx_depth", 128)
    out += " CQ Moderation   : %d\n" % h.get("cq_moderation", 1)
    out += " CQE Poll Batch  : %d\n" % h.get("cqe_poll_batch", 16)
    out += " Mtu             : %d[B]\n" % h.get("mtu", 4096)
    out += " Link type       : %s\n" % h.get("link_type", "Ethernet")
    if h.get("gid_index") is not None:
        out += " GID index       : %d\n" % h["gid_index"]
    out += " Max inline data : %d[B]\n" % h.get("max_inline", 0)
    out += " rdma_cm QPs\t : %s\n" % _onoff(rdma_cm)
    out += " Data ex. method : %s" % ("rdma_cm" if rdma_cm else "Ethernet")
    if rdma_cm:
        if h.get("tos") is not None:
            out += " \tTOS    : %d" % h["tos"]
        if server:
            out += "\n" + PERFTEST_DASHES + "\n"
            out += " Waiting for client rdma_cm QP to connect\n"
            out += " Please run the same command with the IB/RoCE interface IP"
    out += "\n"
    out += PERFTEST_DASHES + "\n"
    for side, key in (("local", "local"), ("remote", "remote")):
        for a in h.get(key, []):
            # BASIC_ADDR_FMT " %s address: LID %#04x QPN %#06x PSN %#06x" + RDMA_FMT
            out += " %s address: LID %s QPN %s PSN %s RKey %s VAddr %s\n" % (
                side, _c_alt_hex(a.get("lid", 0), 4), _c_alt_hex(a["qpn"], 6), _c_alt_hex(a["psn"], 6),
                _c_alt_hex(a.get("rkey", 0), 8), _c_alt_hex(a.get("vaddr", 0), 16))
            out += " GID: %s\n" % a["gid"]
    out += PERFTEST_DASHES + "\n"
    unit = "Gb/sec" if gbits else "MiB/sec"
    out += " #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n" % (unit, unit)
    for r in rows:
        out += " %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t     %-7.6lf\n" % (
            r["bytes"], r["iterations"], r["bw_peak"], r["bw_average"], r["msg_rate"])
    if closed:
        out += PERFTEST_DASHES + "\n"
    return out


# --------------------------------------------------------------------------
# nccl-tests all_reduce_perf
# --------------------------------------------------------------------------

_DTYPE_SIZE = {"int8": 1, "uint8": 1, "half": 2, "bfloat16": 2, "float": 4, "int32": 4,
               "uint32": 4, "double": 8, "int64": 8, "uint64": 8}


def nccl_rows(sizes, busbw_gbs, nranks, dtype="float", redop="sum", root=-1,
              latency_us=0.0, ip_busbw_gbs=None, wrong=0):
    """Result rows for ``all_reduce_perf`` at an achieved bus bandwidth.

    For each message size the time is ``latency_us + size / (algbw_peak *
    1e3)`` with ``algbw_peak = busbw_gbs / (2(n-1)/n)``; algbw and busbw
    are then recomputed from that time, so every row is self-consistent
    (``busbw = algbw * 2(n-1)/n``) and the largest sizes approach
    ``busbw_gbs``.  ``ip_busbw_gbs`` sets a different in-place figure.
    ``wrong`` is the ``#wrong`` value (an int, or ``None`` for ``N/A``).
    Rows are ``{size, count, type, redop, root, oop: {time_us, algbw,
    busbw, wrong}, ip: {...}}``.
    """
    if nranks < 2:
        raise ValueError("nranks must be at least 2 for a bus bandwidth figure")
    factor = 2.0 * (nranks - 1) / nranks
    rows = []
    for size in sizes:
        halves = []
        for bw in (busbw_gbs, busbw_gbs if ip_busbw_gbs is None else ip_busbw_gbs):
            algbw_peak = bw / factor
            time_us = latency_us + size / (algbw_peak * 1e3)
            algbw = size / (time_us * 1e3)
            halves.append({"time_us": time_us, "algbw": algbw, "busbw": algbw * factor, "wrong": wrong})
        rows.append({"size": int(size), "count": int(size) // _DTYPE_SIZE.get(dtype, 4), "type": dtype,
                     "redop": redop, "root": root, "oop": halves[0], "ip": halves[1]})
    return rows


def nccl_avg_busbw(rows):
    """Mean busbw over every row, out-of-place and in-place, as
    nccl-tests computes its ``# Avg bus bandwidth`` footer."""
    vals = [r[h]["busbw"] for r in rows for h in ("oop", "ip")]
    return sum(vals) / len(vals) if vals else 0.0


def nccl_net_info_lines(host, pid, transport="IB", devices=("mlx5_0",), oob="eth0:10.0.0.1<0>",
                        link="RoCE", ib_disabled=False):
    """NCCL_DEBUG=INFO lines that name the network transport, as NCCL
    prints them during communicator set-up, with the process's
    ``<host>:<pid>:<tid> [0]`` prefix.  A process on sockets first reports
    that the IB network found no device, unless ``NCCL_IB_DISABLE=1``
    (``ib_disabled``) kept it from looking."""
    prefix = "%s:%d:%d [0] NCCL INFO " % (host, pid, pid)
    if transport == "IB":
        devs = " ".join("[%d]%s:1/%s" % (i, d, link) for i, d in enumerate(devices))
        return [prefix + "NET/IB : Using %s [RO]; OOB %s" % (devs, oob),
                prefix + "Using network IB"]
    return ([] if ib_disabled else [prefix + "NET/IB : No device found."]) + [
        prefix + "NET/Socket : Using [0]%s" % oob,
        prefix + "Using network Socket"]


def nccl_channel_line(host, pid, dev, channel, rank, peer, via, peer_dev=0):
    """A ``[send]`` channel line of a rank on the network, as NCCL 2.18 and
    later print it (src/transport/net.cc: "Channel %02d/%d : %d[%d] ->
    %d[%d] [send] via NET/%s/%d%s%s%s", each GPU by its NVML index), with
    the process's prefix; ``via`` is the NET part (``NET/IB/0/GDRDMA``)."""
    return "%s:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] [send] via %s" % (
        host, pid, pid, dev, channel, rank, dev, peer, peer_dev, via)


def _fit(value, width):
    """nccl-tests ``getFloatStr``: ``%.2f``, ``%.1f``, ``%.0f`` while the
    text fits ``width``, else ``%.1e`` (width >= 7) or ``%.0e``, cut to
    ``width`` as its ``snprintf(str, width+1, ...)`` does."""
    for prec in (2, 1, 0):
        s = "%*.*f" % (width, prec, value)
        if len(s) <= width:
            return s
    return (("%*.1e" if width >= 7 else "%*.0e") % (width, value))[:width]


def _check(wrong):
    # "  %6g" for a count, the literal "    N/A" when run with -c 0
    return "  N/A" if wrong is None else "%6g" % wrong


def _nccl_row(r):
    s = "%12li  %12li  %8s  %6s  %6s" % (r["size"], r["count"], r["type"], r["redop"], r["root"])
    for h in ("oop", "ip"):
        x = r[h]
        s += "  %7s  %6s  %6s  %s" % (_fit(x["time_us"], 7), _fit(x["algbw"], 6), _fit(x["busbw"], 6),
                                      _check(x.get("wrong", 0)))
    return s


def all_reduce_perf(header, rows, avg_busbw=None, transport_lines=(), nranks=None,
                    oob_errors=0, min_bw=None):
    """``all_reduce_perf`` output in the current nccl-tests layout.

    ``header`` keys: ``version`` ('2.19.6'), ``nccl_headers``/
    ``nccl_library`` (22807), ``nthread``, ``ngpus``, ``min_bytes``,
    ``max_bytes``, ``step`` ('2(factor)'), ``warmup_iters``, ``iters``,
    ``agg_iters``, ``validation``, ``graph``, ``unalign``, ``devices``
    (``[{rank, group, pid, host, device, bus_id, gpu}]``; generated for
    ``nranks`` when absent) and ``nccl_version`` ('2.27.3+cuda12.9').
    ``transport_lines`` (NCCL INFO lines) are printed after the device
    list.  ``avg_busbw`` defaults to :func:`nccl_avg_busbw`; ``min_bw``
    mimics ``NCCL_TESTS_MIN_BW`` (footer ``OK``/``FAILED``).
    """
    h = header
    devices = h.get("devices")
    if devices is None:
        n = nranks or 2
        devices = [{"rank": i, "group": 0, "pid": 1000 + i, "host": "node-%d" % (i // 8),
                    "device": i % 8, "bus_id": "0000:%02x:00" % (0x18 + (i % 8) * 0x10),
                    "gpu": h.get("gpu", "NVIDIA H100 80GB HBM3")} for i in range(n)]
    sizes = [r["size"] for r in rows] or [8]
    out = "# nccl-tests version %s nccl-headers=%d nccl-library=%d\n" % (
        h.get("version", "2.19.6"), h.get("nccl_headers", 22807), h.get("nccl_library", 22807))
    out += "# Collective test starting: all_reduce_perf\n"
    out += ("# nThread %d nGpus %d minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d "
            "agg iters: %d validation: %d graph: %d unalign: %d\n") % (
        h.get("nthread", 1), h.get("ngpus", 1), h.get("min_bytes", min(sizes)),
        h.get("max_bytes", max(sizes)), h.get("step", "2(factor)"), h.get("warmup_iters", 1),
        h.get("iters", 20), h.get("agg_iters", 1), h.get("validation", 1), h.get("graph", 0),
        h.get("unalign", 0))
    out += "#\n# Using devices\n"
    for d in devices:
        out += "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n" % (
            d["rank"], d["group"], d["pid"], d["host"], d["device"], d["bus_id"], d["gpu"])
    for line in transport_lines:
        out += line + "\n"
    if h.get("nccl_version"):
        out += "NCCL version %s\n" % h["nccl_version"]
    out += "#\n"
    out += ("#                                                              out-of-place"
            "                       in-place          \n")
    out += ("#       size         count      type   redop    root     time   algbw   busbw"
            "  #wrong     time   algbw   busbw  #wrong \n")
    out += ("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
            "            (us)  (GB/s)  (GB/s)         \n")
    for r in rows:
        out += _nccl_row(r) + "\n"
    if avg_busbw is None:
        avg_busbw = nccl_avg_busbw(rows)
    out += "# %-20s : %d %s\n" % ("Out of bounds values", oob_errors, "OK" if oob_errors == 0 else "FAILED")
    check = ""
    if min_bw is not None:
        check = "OK" if avg_busbw >= 0.9 * min_bw else "FAILED"
    out += "# %-20s : %g %s\n" % ("Avg bus bandwidth", avg_busbw, check)
    out += "#\n"
    out += "# Collective test concluded: all_reduce_perf\n"
    return out
