# -*- coding: utf-8 -*-
"""Parsers for RDMA and SR-IOV inspection commands.

* ``show_gids`` (mlnx-tools), ``ibv_devinfo`` (rdma-core) and
  ``rdma link show`` (iproute2);
* the VF lines of ``ip link show <pf>`` and the ``vfinfo_list`` of
  ``ip -j link show <pf>``, both normalised to one per-VF dict::

      {vf, mac, vlan, qos, vlan_proto, spoofchk, trust, link_state,
       query_rss, max_tx_rate, min_tx_rate, node_guid, port_guid,
       link_type, broadcast}

Plain standard-library Python; results are JSON-serialisable; text that is
not output of the expected command raises ``ValueError``.
"""

from __future__ import annotations

import ipaddress
import json
import re

__all__ = [
    "parse_show_gids",
    "roce_v2_gid_index",
    "parse_ibv_devinfo",
    "parse_rdma_link",
    "parse_ip_link_vfs",
    "parse_ip_json_vfinfo",
]


def _lines(text, tool):
    if not isinstance(text, str):
        raise ValueError("%s: output must be a string" % tool)
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


# --------------------------------------------------------------------------
# show_gids
# --------------------------------------------------------------------------

_IPV4_RE = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_GID_RE = re.compile(r"^[0-9a-fA-F]{4}(:[0-9a-fA-F]{4}){7}$")
# something shaped like (part of) a GID: two colon-joined 4-character groups
_GIDISH_RE = re.compile(r"[0-9a-zA-Z]{4}:[0-9a-zA-Z]{4}")


def _show_gids_row(s, t):
    """One row as mlnx-tools ``show_gids`` echoes it (``$d\t$p\t$g\t$gid``,
    then ``$ipv4  `` for a GID whose first group is 0000, then ``$_type``
    and ``$_ndev``, either of which may be empty); ValueError quoting the
    line when it is not one."""
    if len(t) == 3 and t[1].isdigit() and t[2].isdigit():
        # the script's `cat gids/N` failed (no 2>/dev/null) and it printed
        # the row with empty columns; the footer counts it
        return {"dev": t[0], "port": int(t[1]), "index": int(t[2]), "gid": None,
                "ipv4": None, "version": None, "ndev": None}
    if len(t) < 4 or not t[1].isdigit() or not t[2].isdigit() or not _GID_RE.match(t[3]):
        raise ValueError("show_gids: cannot read GID row %r" % s)
    rest = t[4:]
    ipv4 = None
    if rest and _IPV4_RE.match(rest[0]):
        ipv4 = rest.pop(0)
    version = None
    if rest and re.match(r"^[vV]\d+$", rest[0]):
        version = rest.pop(0).lower()
    if len(rest) > 1:
        raise ValueError("show_gids: cannot read GID row %r" % s)
    ndev = rest[0] if rest else None
    return {"dev": t[0], "port": int(t[1]), "index": int(t[2]), "gid": t[3].lower(),
            "ipv4": ipv4, "version": version, "ndev": ndev}


def parse_show_gids(text):
    """Parse ``show_gids [dev]``.

    Returns ``{gids: [{dev, port, index, gid, ipv4, version, ndev}],
    n_gids_found}``; ``ipv4`` is ``None`` for non-IPv4-mapped GIDs,
    ``version`` is ``'v1'``/``'v2'`` (``None`` if the type file was
    unreadable), ``ndev`` ``None`` when empty.  ``n_gids_found`` is the
    footer count (``None`` if the footer is missing).

    A line that looks like a GID row (a GID-shaped token, or numeric
    PORT and INDEX columns) but cannot be read raises ``ValueError``
    quoting it.  Other lines (``ls`` or ``cat`` complaints on stderr) are
    not rows and are skipped.  The footer's count is kept as printed: an
    output filtered after the script (``| grep v2``) has fewer rows.
    """
    gids = []
    n_found = None
    saw_header = False
    for line in _lines(text, "show_gids"):
        s = line.strip()
        if not s:
            continue
        t = s.split()
        if t[0] == "DEV" and "GID" in t:
            saw_header = True
            continue
        if set(s.replace("\t", "").replace(" ", "")) == {"-"}:
            continue
        m = re.match(r"^n_gids_found=(\d+)$", s)
        if m:
            n_found = int(m.group(1))
            continue
        looks_like_row = _GIDISH_RE.search(s) or (len(t) >= 3 and t[1].isdigit() and t[2].isdigit())
        if not looks_like_row:
            continue
        gids.append(_show_gids_row(s, t))
    if not saw_header and not gids and n_found is None:
        raise ValueError("show_gids: no header, GID rows or n_gids_found line found")
    return {"gids": gids, "n_gids_found": n_found}


def roce_v2_gid_index(parsed, dev=None, ipv4=None, ndev=None):
    """Index of the RoCE v2 GID that carries an IPv4 address (the one NCCL
    and perftest ``-x`` should use), filtered by RDMA device, address or
    netdev.  Returns ``None`` when there is none."""
    for g in parsed["gids"]:
        if g["version"] != "v2" or g["ipv4"] is None:
            continue
        if dev is not None and g["dev"] != dev:
            continue
        if ipv4 is not None and g["ipv4"] != ipv4:
            continue
        if ndev is not None and g["ndev"] != ndev:
            continue
        return g["index"]
    return None


# --------------------------------------------------------------------------
# ibv_devinfo
# --------------------------------------------------------------------------

# "PORT_ACTIVE (4)", "4096 (5)", and devinfo.c's fallbacks such as
# "invalid state (7)" or "invalid MTU (0)"
_NUM_PAREN_RE = re.compile(r"^(?P<text>\S(?:.*?\S)?)\s*\((?P<num>\d+)\)$")
# devinfo.c (-v): "GID[%3d]:\t\t<gid>" and, since rdma-core v29, ", RoCE v1"
# (raw form) or ", RoCE v2" (inet_ntop form) on Ethernet ports
_DEVINFO_GID_RE = re.compile(r"^GID\[\s*(?P<index>\d+)\]:\s*(?P<gid>[0-9A-Fa-f:.]+)(?:,\s*(?P<type>\S.*))?$")


def _int_or(v):
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    if re.fullmatch(r"0x[0-9a-fA-F]+", v):
        return int(v, 16)
    return None


def _devinfo_gid(s):
    """``{index, gid, type}`` from a ``GID[ n]:`` line; ``gid`` in the
    sysfs/show_gids form (eight 4-digit groups), ``type`` ``None`` when
    the line has none (InfiniBand ports, libibverbs before rdma-core v29).

    devinfo.c prints a GID raw, all eight groups of four hex digits (every
    GID before rdma-core v29; since, every one but RoCE v2), and only a
    ``RoCE v2`` one through inet_ntop (``fe80::...``, ``::ffff:a.b.c.d``);
    the type is ``RoCE v1`` or ``RoCE v2``.  So a short GID without a type
    (``::ffff``: a line cut short) is not devinfo.c's and raises."""
    m = _DEVINFO_GID_RE.match(s)
    if m:
        text, gtype = m.group("gid"), m.group("type")
        gid = None
        if gtype == "RoCE v2" or (gtype in (None, "RoCE v1") and _GID_RE.match(text)):
            try:
                gid = ipaddress.IPv6Address(text).exploded
            except ValueError:
                gid = None
        if gid is not None:
            return {"index": int(m.group("index")), "gid": gid, "type": gtype}
    raise ValueError("ibv_devinfo: cannot read GID line %r (devinfo.c prints a GID in full, eight groups of four "
                     "hex digits, or a RoCE v2 one in the inet_ntop form with ', RoCE v2')" % s)


def parse_ibv_devinfo(text):
    """Parse ``ibv_devinfo`` (also ``-v``; extra keys are kept).

    Returns a list of devices ``{hca_id, transport, fw_ver, node_guid,
    sys_image_guid, vendor_id, vendor_part_id, hw_ver, board_id,
    phys_port_cnt, ports: [{port, state, state_num, max_mtu, active_mtu,
    sm_lid, port_lid, port_lmc, link_layer, gids, ...}], fields}``.
    ``vendor_id`` stays a string (``'0x02c9'``, the IEEE OUI);
    ``vendor_part_id`` is the decimal PCI device ID as an int.  ``gids``
    holds the ``-v`` GID lines as ``{index, gid, type}`` (empty without
    ``-v``).  ``fields`` keeps the first value of every ``key: value``
    line (``-v`` prints ``max_sge`` twice: the device's, then the tag
    matching one).  ``No IB devices found`` gives an empty list.

    ``hca_id:``, ``port:`` and ``GID[n]:`` lines that cannot be
    read, or that come outside a device (or port), raise ``ValueError``
    quoting the line; other lines before the first ``hca_id:`` (libibverbs
    warnings, ``Failed to open device``) are skipped.
    """
    lines = _lines(text, "ibv_devinfo")
    devices = []
    dev = None
    port = None
    for line in lines:
        s = line.strip()
        if not s:
            continue
        if s.startswith("No IB devices found"):
            return []
        if s.startswith("hca_id"):
            m = re.match(r"^hca_id:\s*(\S+)$", s)
            if not m:
                raise ValueError("ibv_devinfo: cannot read device line %r" % s)
            dev = {"hca_id": m.group(1), "transport": None, "fw_ver": None, "node_guid": None,
                   "sys_image_guid": None, "vendor_id": None, "vendor_part_id": None,
                   "hw_ver": None, "board_id": None, "phys_port_cnt": None,
                   "ports": [], "fields": {}}
            devices.append(dev)
            port = None
            continue
        is_port, is_gid = s.startswith("port:"), s.startswith("GID[")
        if dev is None:
            if is_port or is_gid:
                raise ValueError("ibv_devinfo: %r comes before any 'hca_id:' line" % s)
            continue
        if is_port:
            m = re.match(r"^port:\s*(\d+)$", s)
            if not m:
                raise ValueError("ibv_devinfo: cannot read port line %r" % s)
            port = {"port": int(m.group(1)), "state": None, "state_num": None, "max_mtu": None,
                    "active_mtu": None, "sm_lid": None, "port_lid": None, "port_lmc": None,
                    "link_layer": None, "gids": [], "fields": {}}
            dev["ports"].append(port)
            continue
        if is_gid:
            if port is None:
                raise ValueError("ibv_devinfo: GID line outside a port of %s: %r" % (dev["hca_id"], s))
            port["gids"].append(_devinfo_gid(s))
            continue
        m = re.match(r"^([A-Za-z_][\w ]*?):\s*(.*)$", s)
        if not m:
            continue
        key, val = m.group(1).strip(), m.group(2).strip()
        target = port if port is not None else dev
        target["fields"].setdefault(key, val)
        if port is None:
            if key == "vendor_part_id":
                dev[key] = _int_or(val)
            elif key == "phys_port_cnt":
                dev[key] = _int_or(val)
            elif key == "transport":
                dev[key] = val
            elif key in dev:
                dev[key] = val
            continue
        if key == "state":
            pm = _NUM_PAREN_RE.match(val)
            # devinfo.c prints "%s (%d)"; a state without its number is
            # still the port's state
            port["state"] = pm.group("text") if pm else val
            port["state_num"] = int(pm.group("num")) if pm else None
        elif key in ("max_mtu", "active_mtu"):
            pm = _NUM_PAREN_RE.match(val)
            port[key] = int(pm.group("text")) if pm and pm.group("text").isdigit() else _int_or(val)
        elif key in ("sm_lid", "port_lid"):
            port[key] = _int_or(val)
        elif key in port and key not in ("gids", "fields"):
            port[key] = val
    if not devices:
        raise ValueError("ibv_devinfo: no 'hca_id:' line found")
    for d in devices:
        if d["fw_ver"] is None and d["node_guid"] is None:
            raise ValueError("ibv_devinfo: device %s has no fw_ver/node_guid lines" % d["hca_id"])
    return devices


# --------------------------------------------------------------------------
# rdma link
# --------------------------------------------------------------------------

_RDMA_INT_KEYS = ("lid", "sm_lid", "lmc", "netdev_index")


def _rdma_link_json(data):
    links = []
    for entry in data:
        if not isinstance(entry, dict) or "ifname" not in entry or "port" not in entry:
            raise ValueError("rdma -j link: entry without ifname/port: %r" % (entry,))
        dev = str(entry["ifname"])
        if dev.endswith("/%s" % entry["port"]):
            # iproute2 4.13-5.4 named the link "<dev>/<port>" in ifname
            dev = dev[:-len("/%s" % entry["port"])]
        item = {"dev": dev, "port": int(entry["port"]), "state": None,
                "physical_state": None, "netdev": None}
        for k, v in entry.items():
            if k not in ("ifname", "port", "ifindex"):
                item[k] = v
        links.append(item)
    return links


# link_print_caps() of iproute2's rdma/link.c: "caps: <FLAG, FLAG, ...>"
_RDMA_CAPS_RE = re.compile(r"^caps:\s*<([A-Z0-9_, ]*)>$")


def parse_rdma_link(text):
    """Parse ``rdma link show`` lines such as
    ``link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1f0np0``
    (IB ports add ``subnet_prefix``, ``lid``, ``sm_lid``, ``lmc``), the
    older iproute2 form ``1/1: mlx5_0/1: state ACTIVE ...`` and the JSON
    of ``rdma -j link show``.

    Returns a list of ``{dev, port, state, physical_state, netdev, ...}``
    with every further ``key value`` pair kept (integers converted); with
    ``-d``, the port's capability flags that link_print_caps() prints on a
    line of their own (``    caps: <CM, IP_BASED_GIDS>``, or after ``\\``
    with ``-o``) as ``caps``, a list, as ``-j`` gives them.  The JSON of
    iproute2 4.13-5.4, whose ``ifname`` is ``<dev>/<port>``, gives the device.
    """
    if isinstance(text, str) and text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except ValueError as e:
            raise ValueError("rdma -j link: not JSON: %s" % e)
        links = _rdma_link_json(data)
        if not links:
            raise ValueError("rdma link: no links")
        return links
    links = []
    lines = []
    for line in _lines(text, "rdma link"):
        # -o prints a link's lines joined by "\\" (_SL_)
        lines.extend(part.strip() for part in line.split("\\"))
    for s in lines:
        if not s:
            continue
        if s.startswith("caps:"):
            caps = _RDMA_CAPS_RE.match(s)
            if not links or not caps:
                raise ValueError("rdma link: unexpected line %r" % s)
            links[-1]["caps"] = [c.strip() for c in caps.group(1).split(",") if c.strip()]
            continue
        t = s.split()
        if re.match(r"^\d+/\d+:$", t[0]) and len(t) > 1 and t[1].endswith(":"):
            # iproute2 before 5.x: "<index>/<port>: <dev>/<port>: state ..."
            t = ["link", t[1][:-1]] + t[2:]
        if t[0] != "link" or len(t) < 2 or "/" not in t[1]:
            raise ValueError("rdma link: unexpected line %r" % s)
        dev, _, port = t[1].rpartition("/")
        if not port.isdigit():
            raise ValueError("rdma link: bad device/port %r" % t[1])
        item = {"dev": dev, "port": int(port), "state": None, "physical_state": None, "netdev": None}
        rest = t[2:]
        i = 0
        while i + 1 < len(rest):
            k, v = rest[i], rest[i + 1]
            item[k] = int(v) if k in _RDMA_INT_KEYS and v.isdigit() else v
            i += 2
        links.append(item)
    if not links:
        raise ValueError("rdma link: no link lines")
    return links


# --------------------------------------------------------------------------
# ip link VF lines and ip -j vfinfo_list
# --------------------------------------------------------------------------

def _empty_vf(vf):
    return {"vf": vf, "mac": None, "vlan": 0, "qos": 0, "vlan_proto": None,
            "spoofchk": None, "trust": None, "link_state": None, "query_rss": None,
            "max_tx_rate": 0, "min_tx_rate": 0, "node_guid": None, "port_guid": None,
            "link_type": None, "broadcast": None}


def _onoff(word, where):
    if word not in ("on", "off"):
        raise ValueError("ip link: expected on/off in %r" % where)
    return word == "on"


# iproute2 ip/ipaddress.c print_vfinfo(): "vf N     link/<type> <addr> brd
# <addr>" (before iproute2 v5.3.0 "vf N MAC <mac>"), then each setting the
# kernel sent as ", <setting>", all on the VF's one line
_VF_HEAD_RE = re.compile(r"^vf\s+(\d+)\s+(.*)$")
_VF_SETTING = r"(?:vlan|qos|tx rate|max_tx_rate|min_tx_rate|spoof checking|NODE_GUID|PORT_GUID|link-state|trust|query_rss)"
# a line that goes on with a VF's settings (the VF line wrapped where it was published)
_VF_REST_RE = re.compile(r"^(?:,|%s\s)" % _VF_SETTING)
# a VF setting on a line that is no VF line (nor the rest of one)
_VF_SETTING_RE = re.compile(r"(?:^|,\s*)(?:(?:vlan|qos|tx rate|max_tx_rate|min_tx_rate) \d|spoof checking|NODE_GUID|"
                            r"PORT_GUID|link-state|trust o|query_rss)")
_LINK_LINE_RE = re.compile(r"^\d+:\s+\S+:")
# print_linkinfo()'s first line: "<ifindex>: <name>[@<link>]: <flags> ..."
_LINK_NAME_RE = re.compile(r"^\d+:\s+([^\s@:]+)(?:@[^\s:]+)?:")
_HWADDR_RE = re.compile(r"^[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2})*$")


def _hwaddr(word, n, where):
    """An ``ll_addr_n2a()`` address of ``n`` bytes, lower-cased."""
    if not _HWADDR_RE.match(word) or len(word.split(":")) != n:
        raise ValueError("ip link: cannot read address %r of VF line %r" % (word, where))
    return word.lower()


def _ip_link_lines(text):
    """The stripped lines of ``ip link show``; ``ip -o``'s one line per link
    is split at iproute2's ``_SL_`` (``\\``) back into its lines."""
    out = []
    for line in _lines(text, "ip link"):
        s = line.strip()
        if "\\" in s and _LINK_LINE_RE.match(s):
            out.extend(part.strip() for part in s.split("\\"))
        else:
            out.append(s)
    return out


def _vf_from_line(s):
    """One VF dict from a whole VF line (``vf N ...``, any wrapped rest
    joined on); ValueError quoting it for any part print_vfinfo() does not
    print."""
    m = _VF_HEAD_RE.match(s)
    vf = _empty_vf(int(m.group(1)))
    parts = [p.strip() for p in m.group(2).split(",")]
    head = parts[0].split()
    if len(head) in (2, 4) and head[0].startswith("link/") and len(head[0]) > len("link/"):
        vf["link_type"] = head[0][len("link/"):]
        # ETH_ALEN for an Ethernet PF, INFINIBAND_ALEN for any other
        n = 6 if vf["link_type"] == "ether" else 20
        vf["mac"] = _hwaddr(head[1], n, s)
        if len(head) == 4:
            if head[2] not in ("brd", "peer"):
                raise ValueError("ip link: cannot read the address of %r" % s)
            vf["broadcast"] = _hwaddr(head[3], n, s)
    elif len(head) == 2 and head[0] == "MAC":
        vf["mac"] = _hwaddr(head[1], 6, s)
    else:
        raise ValueError("ip link: cannot read the address of %r" % s)
    for p in parts[1:]:
        w = p.split()
        n = len(w)
        if n == 2 and w[0] == "vlan" and w[1].isdigit():
            vf["vlan"] = int(w[1])
        elif n == 3 and w[:2] == ["vlan", "protocol"]:
            vf["vlan_proto"] = w[2]
        elif n == 2 and w[0] == "qos" and w[1].isdigit():
            vf["qos"] = int(w[1])
        elif n == 4 and w[:2] == ["tx", "rate"] and w[2].isdigit() and w[3] == "(Mbps)":
            vf["max_tx_rate"] = int(w[2])
        elif n == 2 and w[0] in ("max_tx_rate", "min_tx_rate") and re.match(r"^\d+Mbps$", w[1]):
            vf[w[0]] = int(w[1][:-len("Mbps")])
        elif n == 3 and w[:2] == ["spoof", "checking"]:
            vf["spoofchk"] = _onoff(w[2], s)
        elif n == 2 and w[0] in ("NODE_GUID", "PORT_GUID"):
            vf[w[0].lower()] = _hwaddr(w[1], 8, s)
        elif n == 2 and w[0] == "link-state" and w[1] in ("auto", "enable", "disable"):
            vf["link_state"] = w[1]
        elif n == 2 and w[0] == "trust":
            vf["trust"] = _onoff(w[1], s)
        elif n == 2 and w[0] == "query_rss":
            vf["query_rss"] = _onoff(w[1], s)
        else:
            raise ValueError("ip link: cannot read %r of VF line %r" % (p, s))
    return vf


def parse_ip_link_vfs(text):
    """Per-VF dicts from the ``vf N ...`` lines of ``ip link show <pf>``.

    Understands the current layout (``vf 0     link/ether <mac> brd
    <bcast>, vlan 100, qos 3, spoof checking off, link-state auto, trust
    on, query_rss off``), the older ``vf 0 MAC <mac>, ...`` one and
    ``ip -o``'s (a link's lines joined by ``\\``).  iproute2 prints each VF
    on one line; one that was wrapped where it was published (a long IB VF
    line broken after ``brd <addr>,``) is read whole: a VF line ending in a
    comma goes on on the next line, which must carry its settings, and a
    line right after a VF line that starts with a setting (or a comma) is
    its rest.  A VF line, or a setting on any other line, that cannot be
    read raises ``ValueError`` quoting it.  Other lines are ignored; an
    interface with no VF lines gives an empty list (a PF with no VFs
    enabled).  Each VF carries ``pf``, the name on the interface line it is
    printed under (None for VF lines given without one), so the output of
    ``ip link show`` for every link tells apart the VF 0 of each PF.
    """
    lines = _ip_link_lines(text)
    vfs = []
    pf = None
    i = 0
    while i < len(lines):
        s = lines[i]
        i += 1
        link = _LINK_NAME_RE.match(s)
        if link:
            pf = link.group(1)
            continue
        if not _VF_HEAD_RE.match(s):
            if _VF_SETTING_RE.search(s):
                raise ValueError("ip link: VF settings on a line that is not a VF line: %r" % s)
            continue
        while True:
            j = i
            while j < len(lines) and not lines[j]:
                j += 1
            rest = lines[j] if j < len(lines) else None
            if s.endswith(","):
                if rest is None:
                    raise ValueError("ip link: VF line %r ends with a comma and nothing follows" % s)
                if not _VF_REST_RE.match(rest):
                    raise ValueError("ip link: VF line %r ends with a comma but the next line %r does not go on "
                                     "with its settings" % (s, rest))
                s = s + " " + rest.lstrip(", ")
            elif rest is not None and _VF_REST_RE.match(rest):
                s = s + ", " + rest.lstrip(", ")
            else:
                break
            i = j + 1
        vf = _vf_from_line(s)
        vf["pf"] = pf
        vfs.append(vf)
    if not vfs and not any(_LINK_LINE_RE.match(ln) for ln in lines):
        raise ValueError("ip link: neither an interface line nor VF lines found")
    return vfs


def parse_ip_json_vfinfo(data):
    """Per-VF dicts (the keys of :func:`parse_ip_link_vfs`, ``pf`` the link's ifname)
    from ``ip -j link show <pf>``.  ``data`` is the JSON text or the
    already-decoded list/dict.  Links without ``vfinfo_list`` contribute
    nothing."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as e:
            raise ValueError("ip -j link: not JSON: %s" % e)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ValueError("ip -j link: expected a JSON list of links")
    vfs = []
    for link in data:
        if not isinstance(link, dict):
            raise ValueError("ip -j link: link entry is not an object")
        for info in link.get("vfinfo_list") or []:
            if "vf" not in info:
                raise ValueError("ip -j link: vfinfo entry without 'vf': %r" % (info,))
            vf = _empty_vf(int(info["vf"]))
            vf["pf"] = link.get("ifname")
            vf["link_type"] = info.get("link_type")
            mac = info.get("address", info.get("mac"))
            vf["mac"] = mac.lower() if isinstance(mac, str) else None
            b = info.get("broadcast")
            vf["broadcast"] = b.lower() if isinstance(b, str) else None
            vlans = info.get("vlan_list")
            if vlans:
                first = vlans[0] or {}
                vf["vlan"] = int(first.get("vlan", 0))
                vf["qos"] = int(first.get("qos", 0))
                vf["vlan_proto"] = first.get("protocol")
            else:
                vf["vlan"] = int(info.get("vlan", 0))
                vf["qos"] = int(info.get("qos", 0))
                vf["vlan_proto"] = info.get("protocol")
            rate = info.get("rate") or {}
            vf["max_tx_rate"] = int(rate.get("max_tx", info.get("tx_rate", 0)) or 0)
            vf["min_tx_rate"] = int(rate.get("min_tx", 0) or 0)
            for key, src in (("spoofchk", "spoofchk"), ("trust", "trust"), ("query_rss", "query_rss_en")):
                if src in info:
                    vf[key] = bool(info[src])
            vf["link_state"] = info.get("link_state")
            ng = info.get("node guid", info.get("node_guid"))
            pg = info.get("port guid", info.get("port_guid"))
            vf["node_guid"] = ng.lower() if isinstance(ng, str) else None
            vf["port_guid"] = pg.lower() if isinstance(pg, str) else None
            vfs.append(vf)
    return vfs
