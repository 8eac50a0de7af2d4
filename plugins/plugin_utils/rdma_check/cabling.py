# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 9's cabling check: every gpufabric_cabling entry against what LLDP
shows at both ends of its cable.

What the ends show comes in as *views*, one per host read (a GPU node's
lldpd through nic_facts' ``lldp``, a leaf's LLDP table through roce_switch),
each ``{"neighbors": [neighbor, ...], "error": ""}`` where a neighbor is the
parsers' neutral form (module_utils/rdma_check/lldp.py for lldpd,
``Driver.parse_lldp`` for the NOSes):

    {"local": <the port or PF it was seen on>, "sysname": ..., "chassis_id": ...,
     "port_id": ..., "port_id_type": "ifname" | "mac" | "local" | ..., "port_descr": ...}

:func:`observed` turns the views into links ``(node, pf) -> (switch, port)``
(a node's neighbour names a leaf of the inventory by its system name and a
port of it by its port ID or description; a leaf's neighbour names a GPU node
by its system name and a PF by its name or MAC), and :func:`judge` holds each
entry to them: the cable reaches the planned port, or it is *moved* (it
reaches another port: the fix names both), *swapped* with another entry's
cable (each reaches the other's planned port: named as one swap), reaches
something that is not a leaf of the inventory, or is *unverified* (no LLDP
at either end: the likely cause is named). Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import drivers as roce_drivers

MAC_RE = re.compile(r"^[0-9a-f]{2}([:-]?[0-9a-f]{2}){5}$|^[0-9a-f]{4}(\.[0-9a-f]{4}){2}$")


def short(name):
    """A system name as compared: lower case, without its domain."""
    return str(name or "").strip().lower().split(".")[0]


def mac(text):
    """``text`` as ``aa:bb:cc:dd:ee:ff`` when it is a MAC address (colons,
    dashes, none, or Cisco's dotted ``aabb.ccdd.eeff``), else ''."""
    t = str(text or "").strip().lower()
    if not MAC_RE.match(t):
        return ""
    digits = re.sub(r"[^0-9a-f]", "", t)
    return ":".join(digits[i:i + 2] for i in range(0, 12, 2))


def where(switch, port):
    return "%s %s" % (switch, port)


class Rack(object):
    """The plan and the names that LLDP is matched against.

    ``cabling``: gpufabric_cabling; ``pfs``: ``{node: {pf: {mac, rdma_device}}}``
    from the nodes' readings (the PF MACs a leaf may see as port IDs);
    ``canon``: ``canon(switch, text)`` -> the leaf's spelling of a port, or
    None when ``text`` is no port of that leaf's NOS."""

    def __init__(self, cabling, pfs=None, canon=None):
        self.cabling = [dict(c) for c in cabling or [] if c.get("node") and c.get("pf")]
        self.pfs = pfs or {}
        self._canon = canon or (lambda switch, text: str(text))
        self.switches = dict((short(c["switch"]), c["switch"]) for c in self.cabling if c.get("switch"))
        self.nodes = dict((short(c["node"]), c["node"]) for c in self.cabling)
        self.planned = dict(((c["node"], c["pf"]), (c["switch"], self.canon(c["switch"], c["port"]) or c["port"]))
                            for c in self.cabling)
        self.at = dict((v, k) for k, v in self.planned.items())

    def canon(self, switch, text):
        if text in (None, ""):
            return None
        try:
            return self._canon(switch, str(text))
        except ValueError:
            return None

    def port_of(self, switch, neighbor):
        """The leaf port a node's neighbour names: its port ID, else its
        description, in the leaf's spelling."""
        for text in (neighbor.get("port_id"), neighbor.get("port_descr")):
            if neighbor.get("port_id_type") == "mac" and text == neighbor.get("port_id"):
                continue
            port = self.canon(switch, text)
            if port:
                return port
        return None

    def pf_of(self, node, neighbor):
        """The PF of ``node`` a leaf's neighbour names: by name (port ID or
        description) or by MAC."""
        known = self.pfs.get(node) or {}
        names = set(pf for (n, pf) in self.planned if n == node) | set(known)
        for text in (neighbor.get("port_id"), neighbor.get("port_descr")):
            if text in names:
                return text
            m = mac(text)
            if m:
                for pf, facts in known.items():
                    if mac((facts or {}).get("mac")) == m:
                        return pf
        return None


def observed(rack, host_views, switch_views):
    """``(links, strangers)``: ``links`` maps ``(node, pf)`` to ``{(switch,
    port): [who saw it: "node" | "switch"]}``; ``strangers`` maps ``(node,
    pf)`` to the neighbours a node saw that name no leaf of the inventory
    (``"spine3 Ethernet7"``), or a leaf by a port name its NOS does not have
    (``{switch, port_id, port_descr}``: community SONiC sends the port's
    alias, which only the leaf's own table places)."""
    links, strangers = {}, {}
    for node, view in sorted((host_views or {}).items()):
        for nb in (view or {}).get("neighbors") or []:
            if short(nb.get("sysname")) == short(node):
                # the node's own LLDPDU, looped back to the PF by its NIC's embedded
                # switch (SR-IOV's VEB reflects multicast): it tells nothing of the cable
                continue
            key = (node, nb.get("local"))
            switch = rack.switches.get(short(nb.get("sysname")))
            port = rack.port_of(switch, nb) if switch else None
            if switch and port:
                links.setdefault(key, {}).setdefault((switch, port), []).append("node")
            elif switch:
                # a leaf of the inventory, its port by a name no port of its NOS has (a SONiC alias)
                strangers.setdefault(key, []).append({"switch": switch, "port_id": nb.get("port_id"),
                                                      "port_descr": nb.get("port_descr")})
            else:
                strangers.setdefault(key, []).append("%s %s" % (nb.get("sysname") or nb.get("chassis_id") or "?",
                                                                nb.get("port_id") or nb.get("port_descr") or "?"))
    for switch, view in sorted((switch_views or {}).items()):
        for nb in (view or {}).get("neighbors") or []:
            node = rack.nodes.get(short(nb.get("sysname")))
            pf = rack.pf_of(node, nb) if node else None
            port = rack.canon(switch, nb.get("local")) or nb.get("local")
            if node and pf:
                links.setdefault((node, pf), {}).setdefault((switch, port), []).append("switch")
    return links, strangers


def _label(rack, node, pf):
    dev = ((rack.pfs.get(node) or {}).get(pf) or {}).get("rdma_device")
    return "%s %s%s" % (node, pf, " (%s)" % dev if dev else "")


def firmware_lldp(reading):
    """{PF name: why the host may hear no LLDP on it}, from the firmware
    queries in a node's nic_facts reading (``mlxconfig -e q``, its
    ``firmware`` option): a ConnectX whose own LLDP agent receives the
    frames (``LLDP_NB_RX_MODE_P<n>`` not 0; NVIDIA's text: with it OFF
    "incoming LLDP frames will be routed to the host"). Port n is the PF's
    PCI function + 1. A query the parser cannot read names nothing."""
    from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware import mlx_config
    by_address = dict((n.get("pci_address"), n.get("name")) for n in (reading or {}).get("nics") or [])
    out = {}
    for q in (reading or {}).get("firmware") or []:
        if not isinstance(q, dict) or not q.get("query"):
            continue
        try:
            params = mlx_config.parse_query(q.get("device"), q["query"])["params"]
        except mlx_config.MlxConfigError:
            continue
        port = int(str(q.get("device") or "0.0").rsplit(".", 1)[-1] or 0) + 1
        name = "LLDP_NB_RX_MODE_P%d" % port
        p = params.get(name) or {}
        if p.get("current_int"):
            out[by_address.get(q.get("device")) or q.get("device")] = (
                "the NIC firmware's own LLDP agent takes the frames (%s = %s in mlxconfig -e q; 0 routes them to "
                "the host: layer 4 sets it, LLDP_NB_TX_MODE_P%d and LLDP_NB_DCBX_P%d to 0 where gpufabric_host_lldp "
                "is true, then a reboot)" % (name, p.get("current"), port, port))
    return out


def judge(rack, links, strangers, node, unverified_cause=""):
    """The verdict of every cabling entry of ``node``: ``[{node, pf, switch,
    port, status, found, message, fix, seen_by}]`` with ``status`` ``ok``,
    ``moved``, ``swapped``, ``stranger``, ``disagree`` or ``unverified``;
    ``found`` is ``[{switch, port}]`` as LLDP shows the cable.
    ``unverified_cause``: why a cable may show no LLDP, one text for the
    node or ``{pf: text, "": the node's}``."""
    out = []
    for c in rack.cabling:
        if c["node"] != node:
            continue
        key = (node, c["pf"])
        sw, port = rack.planned[key]
        found = links.get(key) or {}
        seen = sorted(found)
        row = {"node": node, "pf": c["pf"], "switch": sw, "port": port,
               "found": [{"switch": s, "port": p} for s, p in seen],
               "seen_by": sorted(set(x for who in found.values() for x in who))}
        me = _label(rack, node, c["pf"])
        unmapped = [x for x in strangers.get(key) or [] if isinstance(x, dict)]
        others = [x for x in strangers.get(key) or [] if not isinstance(x, dict)]
        if not seen and unmapped and not others:
            x = unmapped[0]
            row.update(status="unverified",
                       message="%s: LLDP at the node shows %s port %r (%s), no port name of its NOS, and %s's own "
                               "LLDP table shows no entry for it; the plan gives %s"
                               % (me, x["switch"], x["port_id"], x["port_descr"] or "no description",
                                  x["switch"], where(sw, port)),
                       fix="read %s's LLDP table (layer 7 reads it in the same run) to place the cable" % x["switch"])
        elif not seen and others:
            row.update(status="stranger",
                       message="%s reaches %s, not a leaf of the inventory; the plan gives %s"
                               % (me, ", ".join(others), where(sw, port)),
                       fix="move the cable of %s to %s" % (me, where(sw, port)))
        elif not seen:
            cause = unverified_cause.get(c["pf"], unverified_cause.get("")) if isinstance(unverified_cause, dict) \
                else unverified_cause
            row.update(status="unverified",
                       message="%s: no LLDP neighbour at either end, so its cable to %s is unverified%s"
                               % (me, where(sw, port), "; %s" % cause if cause else ""),
                       fix="see that lldpd runs on %s and LLDP is on at %s, then check again" % (node, sw))
        elif len(seen) > 1:
            row.update(status="disagree",
                       message="%s: the ends disagree: LLDP shows it at %s; the plan gives %s" % (
                           me, " and ".join("%s (seen by the %s)" % (where(s, p), " and ".join(found[(s, p)]))
                                            for s, p in seen), where(sw, port)),
                       fix="check the cable of %s by hand; a neighbour entry may be stale (its TTL has not "
                           "run out)" % me)
        elif seen[0] == (sw, port):
            row.update(status="ok", message="%s reaches %s as planned" % (me, where(sw, port)), fix="")
        else:
            fsw, fport = seen[0]
            other = rack.at.get((fsw, fport))
            back = links.get(other) or {} if other else {}
            if other and sorted(back) == [(sw, port)]:
                olabel = _label(rack, other[0], other[1])
                if other[0] == node:
                    fix = "swap the cables of %s's %s and %s" % (
                        node, _short_pf(rack, node, c["pf"]), _short_pf(rack, node, other[1]))
                else:
                    fix = "swap the cables of %s and %s (at %s and %s)" % (me, olabel, where(sw, port),
                                                                           where(fsw, fport))
                row.update(status="swapped", swapped_with={"node": other[0], "pf": other[1]},
                           message="%s reaches %s and %s reaches %s: their cables are swapped" % (
                               me, where(fsw, fport), olabel, where(sw, port)),
                           fix=fix)
            else:
                taken = (" (the port the plan gives %s)" % _label(rack, other[0], other[1])) if other else ""
                leaf = "" if fsw == sw else " (another leaf)"
                row.update(status="moved",
                           message="%s reaches %s%s%s; the plan gives %s" % (me, where(fsw, fport), taken, leaf,
                                                                             where(sw, port)),
                           fix="move the cable from %s to %s" % (where(fsw, fport), where(sw, port)))
        out.append(row)
    return out


def _short_pf(rack, node, pf):
    """A PF as a swap names it: its RDMA device when known, else its name."""
    return ((rack.pfs.get(node) or {}).get(pf) or {}).get("rdma_device") or pf


def canon_by_nos(nos_of):
    """``canon(switch, text)`` for :class:`Rack`: the port in the spelling of
    the switch's NOS (``nos_of``: {switch: NOS}, from the roce_switch answer
    it was read with or the inventory's switch_nos); a switch of no known
    NOS keeps the text."""
    drivers_of = {}

    def canon(switch, text):
        if switch not in drivers_of:
            try:
                drivers_of[switch] = roce_drivers.get_driver(nos_of.get(switch), switch=switch) \
                    if nos_of.get(switch) else None
            except roce_drivers.RoceSwitchError:
                drivers_of[switch] = None
        driver = drivers_of[switch]
        return driver.canon_port(text) if driver else str(text)
    return canon


def views(readings, answers):
    """``(host_views, switch_views, pfs, nos_of)`` from each GPU node's
    nic_facts reading (``readings``: {node: reading}) and each leaf's
    roce_switch answer (``answers``: {switch: answer}): the LLDP each read,
    the PFs' MACs and RDMA devices, the NOS each leaf was read with."""
    host_views, pfs, nos_of = {}, {}, {}
    for node, reading in (readings or {}).items():
        reading = reading or {}
        if isinstance(reading.get("lldp"), dict):
            host_views[node] = reading["lldp"]
        pfs[node] = dict((n.get("name"), {"mac": n.get("mac"), "rdma_device": n.get("rdma_device")})
                         for n in reading.get("nics") or [] if n.get("name"))
    switch_views = {}
    for sw, answer in (answers or {}).items():
        answer = answer or {}
        if isinstance(answer.get("lldp"), dict):
            switch_views[sw] = answer["lldp"]
        if answer.get("nos"):
            nos_of[sw] = answer["nos"]
    return host_views, switch_views, pfs, nos_of


def as_found(cabling, readings, answers, nos_of=None):
    """gpufabric_cabling with each entry's switch and port as LLDP shows the
    cable (where both, or the one end read, agree on one place), the planned
    ones kept in ``planned_switch`` and ``planned_port`` where they differ:
    what the layers that compare a PF with its switch port (layer 8's chain)
    take, so that they speak of the port the cable really reaches."""
    host_views, switch_views, pfs, nos = views(readings, answers)
    nos.update(nos_of or {})
    rack = Rack(cabling, pfs, canon_by_nos(nos))
    links, _strangers = observed(rack, host_views, switch_views)
    out = []
    for c in cabling or []:
        found = sorted((links.get((c.get("node"), c.get("pf"))) or {}))
        planned = rack.planned.get((c.get("node"), c.get("pf")))
        if len(found) == 1 and planned and found[0] != planned:
            c = dict(c, switch=found[0][0], port=found[0][1], planned_switch=c.get("switch"),
                     planned_port=c.get("port"))
        out.append(c)
    return out
