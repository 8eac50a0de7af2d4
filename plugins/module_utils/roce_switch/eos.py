# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Arista EOS, netmiko ``arista_eos``.

``qos map dscp D to traffic-class P`` (switch-wide); per interface ``mtu``
(EOS takes at most 9214), ``qos trust dscp``, ``priority-flow-control on`` with
``priority-flow-control priority P no-drop``, and under ``uc-tx-queue T``
``random-detect ecn minimum-threshold N kbytes maximum-threshold N kbytes
max-mark-probability P``; queues are strict by default (``no priority`` makes
one WRR).  Pushes run in a configuration session (``configure session`` ...
``commit``), so a failure leaves the running config untouched (``abort``).

Reading also takes what others configure: ``drop-precedence`` on DSCP maps,
``qos map cos``, ``priority-flow-control all off`` (PFC off on every port),
the pause watchdog lines, ``qos random-detect ecn allow non-ect``, ``tx-queue``
and ``mc-tx-queue`` blocks, ``priority ... drop``, ``no priority-flow-control``
and ``qos profile`` blocks bound with ``service-profile``.  A DSCP-map, PFC,
random-detect or trust line of another form fails the read, naming switch and
line; so does an ECN threshold in time units on a port that is read.

Ports are ``Ethernet`` and one to three numbers: ``Ethernet1``, ``Ethernet49/1``
(a lane of a multi-lane port), ``Ethernet3/1/1`` (slot/port/lane on a modular
chassis), the running config's spelling, which ``Et49/1`` of the LLDP and PFC
tables and the inventory's names are brought to; an ``interface Ethernet...``
line of another form fails the read, and a subinterface (``Ethernet4.400``)
is kept apart from the ports like a port-channel."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from . import lldp_text
from .base import Driver, dedupe, natural_key
from .model import RoceSwitchError, default_dscp_map, ranges

UNITS = {"bytes": 1, "kbytes": 1000, "mbytes": 1000000, "segments": 208}
TIME_UNITS = ("microseconds", "milliseconds")
TRUST_IN = {"dscp": "dscp", "cos": "pcp", "disabled": "none"}
TRUST_OUT = {"dscp": "dscp", "pcp": "cos"}


def _thr(n):
    return "%d kbytes" % (n // 1000) if n % 1000 == 0 else "%d bytes" % n


class EosDriver(Driver):
    nos = "eos"
    enable = True
    label = "Arista EOS"
    device_type = "arista_eos"
    min_mtu, max_mtu, default_mtu = 68, 9214, 1500
    error_pattern = r"^% .*$"
    show_running = "show running-config"
    show_verify = "show priority-flow-control"
    transaction = "session"

    def canon_port(self, text):
        """A front-panel port in the running config's spelling: ``Ethernet`` and
        one to three numbers, ``Ethernet1``, ``Ethernet49/1`` (a lane of a
        multi-lane port), ``Ethernet3/1/1`` (slot/port/lane on a modular
        switch); from the same names, abbreviated as LLDP and ``show`` tables
        print them (``Et49/1``, ``Et3/1/1``)."""
        m = re.fullmatch(r"(?:ethernet|eth|et)\s*(\d+(?:/\d+){0,2})", text.strip(), re.I)
        if not m:
            raise ValueError(text)
        return "Ethernet" + "/".join(str(int(n)) for n in m.group(1).split("/"))

    def expand(self, text):
        """The ports an ``interface`` line names: one port of canon_port's
        forms, or a comma list whose pieces may give a range of the last number
        (``Ethernet1,3-5``, ``Ethernet1/1-4``, ``Ethernet3/1/1,3/2/1``); []
        where a piece is none of these (parse_raw then fails quoting the line)."""
        m = re.fullmatch(r"(?:ethernet|eth|et)\s*(\S+)", text.strip(), re.I)
        if not m:
            return []
        out = []
        for piece in m.group(1).split(","):
            r = re.fullmatch(r"(?:ethernet|eth|et)?((?:\d+/){0,2})(\d+)(?:-(\d+))?", piece, re.I)
            if not r or int(r.group(3) or r.group(2)) < int(r.group(2)):
                return []
            pre = "".join("%d/" % int(n) for n in r.group(1).split("/")[:-1])
            out += ["Ethernet%s%d" % (pre, i) for i in range(int(r.group(2)), int(r.group(3) or r.group(2)) + 1)]
        return out

    def interface_heads(self, ports):
        """``interface`` lines for ``ports``: the single-number ports on one
        line (``interface Ethernet1,3-5``), each slotted or laned port on a line
        of its own (``interface Ethernet2/5/1``), EOS's range syntax for those
        not being relied on."""
        flat = [int(p[8:]) for p in ports if re.fullmatch(r"Ethernet\d+", p)]
        heads = ["interface Ethernet" + ",".join("%d" % a if a == b else "%d-%d" % (a, b)
                                                 for a, b in ranges(flat))] if flat else []
        return heads + ["interface " + p for p in sorted(set(p for p in ports if "/" in p), key=natural_key)]

    # -- LLDP: ``show lldp neighbors`` (Port, Neighbor Device ID, Neighbor Port ID, TTL) ----
    show_lldp = "show lldp neighbors"

    def parse_lldp(self, text, managed=()):
        _h, rows = lldp_text.table(text, r"^Port\s+Neighbor Device ID\s+Neighbor Port ID\s+TTL$",
                                   ("Port", "Neighbor Device ID", "Neighbor Port ID", "TTL"), self.label)
        out = []
        for line, f in rows:
            local = lldp_text.local_port(self, f[0])
            if len(f) != 4 or not f[3].isdigit() or not f[2]:
                if local in managed:
                    lldp_text.unreadable(self, line, "not Port, Neighbor Device ID, Neighbor Port ID, TTL")
                continue
            out.append(lldp_text.neighbor(local, sysname=f[1], port_id=f[2]))
        return out

    def check(self, want):
        if want["global"]["trust"] == "both":
            return ["EOS trusts either DSCP or CoS on a port, not both"]
        return []

    def default_strict(self, tc):
        return True

    # -- reading -------------------------------------------------------------
    # A line naming a DSCP map, PFC, random-detect or trust must match one of
    # these forms (EOS running-config as AVD renders it, see tests/unit/fixtures/
    # switch_real/eos); anything else with those words fails the read.
    TOP = [
        ("map", r"qos map dscp ([\d ]+) to traffic-class ([0-7])(?: drop-precedence ([0-2]))?"),
        ("cos_map", r"qos map cos ([\d ]+) to traffic-class ([0-7])(?: drop-precedence ([0-2]))?"),
        ("ecn_non_ect", r"qos random-detect ecn allow non-ect( chip-based)?"),
        ("pfc_all_off", r"priority-flow-control all off"),
        ("wd", r"priority-flow-control pause watchdog default (timeout|recovery-time|polling-interval) ([\d.]+)"),
        ("wd", r"priority-flow-control pause watchdog (action) (drop|no-drop|errdisable)"),
        ("wd", r"priority-flow-control pause watchdog (override action) (drop)"),
    ]
    PORT = [
        ("pfc_on", r"priority-flow-control(?: mode)? on"),
        ("pfc_off", r"no priority-flow-control(?: mode on| on)?"),
        ("prio", r"priority-flow-control priority (\d) (no-drop|drop)"),
        ("wd", r"priority-flow-control pause watchdog"),
        ("wd", r"priority-flow-control pause watchdog port action (drop|no-drop|errdisable)"),
        ("wd", r"priority-flow-control pause watchdog port timer timeout ([\d.]+) polling-interval (auto|[\d.]+)"
               r" recovery-time ([\d.]+)( forced)?"),
        ("trust", r"qos trust (dscp|cos|disabled)"),
        ("trust_off", r"no qos trust"),
    ]
    QUEUE = [
        ("ecn", r"random-detect ecn minimum-threshold (\d+) (\S+) maximum-threshold (\d+) (\S+)"
                r"(?: max-mark-probability (\d+))?(?: weight (\d+))?"),
        ("ecn_count", r"random-detect ecn count"),
        ("wred", r"random-detect drop(?: drop-precedence (\d))? minimum-threshold (\d+) (\S+) maximum-threshold"
                 r" (\d+) (\S+) drop-probability (\d+)(?: weight (\d+))?"),
    ]

    @staticmethod
    def managed(s):
        w = s[3:] if s.startswith("no ") else s[8:] if s.startswith("default ") else s
        return (w.startswith("qos map dscp") or w.startswith("priority-flow-control") or "random-detect" in w
                or w.startswith("qos trust"))

    def _match(self, table, s):
        for key, pat in table:
            m = re.fullmatch(pat, s)
            if m:
                return key, m
        if self.managed(s):
            self.unreadable(s)
        return None, None

    def parse_raw(self, text):
        raw = {"map": {}, "map_dp": {}, "cos_map": {}, "ports": {}, "profiles": {}, "other": {},
               "pfc_all_off": False, "ecn_non_ect": None, "watchdog": {}}
        body, q = None, None  # the dict the indented lines go to; its queue
        comment = False  # inside a 'comment' ... 'EOF' block: free text
        for line in text.splitlines():
            if comment:
                comment = line.strip() != "EOF"
                continue
            if line.strip() == "comment":
                comment = True
                continue
            if not line.strip() or line.strip() == "!" or line.strip().startswith("!!"):
                continue
            ind = len(line) - len(line.lstrip())
            s = line.strip()
            if ind == 0:
                body, q = None, None
                m = re.fullmatch(r"interface (Ethernet.*)", s)
                if m and re.fullmatch(r"Ethernet\d+(?:/\d+)*\.\d+", m.group(1)):
                    body = [raw["other"].setdefault(m.group(1), {})]  # a subinterface: no port of its own
                    continue
                if m:  # front-panel ports: one, a list or ranges; a name not read fails, quoting the line
                    ports = self.expand(m.group(1)) or self.unreadable(s, why="Ethernet interface name")
                    body = [raw["ports"].setdefault(p, {}) for p in ports]
                    continue
                m = re.fullmatch(r"interface (\S+)", s)
                if m:  # port-channels, VLANs, management: read, kept apart from the Ethernet ports
                    body = [raw["other"].setdefault(m.group(1), {})]
                    continue
                m = re.fullmatch(r"qos profile (\S+)", s)
                if m:
                    body = [raw["profiles"].setdefault(m.group(1), {})]
                    continue
                key, m = self._match(self.TOP, s)
                if key in ("map", "cos_map"):
                    for d in m.group(1).split():
                        raw[key][int(d)] = int(m.group(2))
                        if key == "map" and m.group(3):
                            raw["map_dp"][int(d)] = int(m.group(3))
                elif key == "ecn_non_ect":
                    raw["ecn_non_ect"] = "chip-based" if m.group(1) else "on"
                elif key == "pfc_all_off":
                    raw["pfc_all_off"] = True
                elif key == "wd":
                    raw["watchdog"][m.group(1)] = m.group(2)
                continue
            if body is None:
                if self.managed(s):
                    self.unreadable(s, why="outside any block")
                continue
            m = re.fullmatch(r"(uc-|mc-)?tx-queue (\d)", s)
            if m and ind <= 3:
                q = (m.group(1) or "", int(m.group(2)))
                continue
            if ind <= 3:
                q = None
                key, m = self._match(self.PORT, s)
                for pc in body:
                    if key == "pfc_on":
                        pc["pfc_on"] = True
                    elif key == "pfc_off":
                        pc["pfc_on"] = False
                    elif key == "prio":
                        (pc.setdefault("nodrop", set()).add if m.group(2) == "no-drop"
                         else pc.setdefault("nodrop", set()).discard)(int(m.group(1)))
                    elif key == "wd":
                        pc.setdefault("watchdog", []).append(s)
                    elif key == "trust":
                        pc["trust"] = m.group(1)
                    elif key == "trust_off":
                        pc["trust"] = "disabled"
                    r = re.fullmatch(r"mtu (\d+)", s)
                    if r:
                        pc["mtu"] = int(r.group(1))
                    r = re.fullmatch(r"service-profile (\S+)", s)
                    if r:
                        pc["profile"] = r.group(1)
                    if s == "shutdown":
                        pc["shutdown"] = True
                continue
            if q is None:
                if self.managed(s):
                    self.unreadable(s, why="not under a tx-queue")
                continue
            key, m = self._match(self.QUEUE, s)
            for pc in body:
                qc = pc.setdefault("txq", {}).setdefault(q, {})
                if key == "ecn":
                    qc["ecn"] = {"tc": q[1], "min": (int(m.group(1)), m.group(2)), "max": (int(m.group(3)), m.group(4)),
                                 "probability": int(m.group(5) or 100), "line": s}
                    for unit in (m.group(2), m.group(4)):
                        if unit not in UNITS and unit not in TIME_UNITS:
                            self.unreadable(s, why="threshold unit %r" % unit)
                elif key == "ecn_count":
                    qc["ecn_count"] = True
                elif key == "wred":
                    qc.setdefault("wred", []).append(s)
                if s == "no priority":
                    qc["no_priority"] = True
                if s == "priority strict":
                    qc.pop("no_priority", None)
        unknown = sorted(set(pc["profile"] for pc in raw["ports"].values() if pc.get("profile"))
                         - set(raw["profiles"]))
        if unknown:
            raise RoceSwitchError("%s: service-profile %s is applied but not defined in the running config"
                                  % (self.switch, unknown[0]))
        return raw

    def effective(self, raw, port):
        """The port's settings: its qos profile's under its own."""
        pc = raw["ports"].get(port, {})
        prof = raw["profiles"].get(pc.get("profile"), {})
        eff = dict(prof)
        eff.update(dict((k, v) for k, v in pc.items() if k != "txq"))
        txq = {}
        for src in (prof.get("txq", {}), pc.get("txq", {})):
            for q, qc in src.items():
                txq.setdefault(q, {}).update(qc)
        eff["txq"] = txq
        return eff

    def _ecn_bytes(self, port, e):
        for which in ("min", "max"):
            if e[which][1] not in UNITS:
                raise RoceSwitchError("%s: %s ECN %s threshold is %d %s, which has no size in bytes: '%s'"
                                      % (self.switch, port, which, e[which][0], e[which][1], e["line"]))
        return {"tc": e["tc"], "min_bytes": e["min"][0] * UNITS[e["min"][1]],
                "max_bytes": e["max"][0] * UNITS[e["max"][1]], "probability": e["probability"]}

    def parse_views(self, text):
        raw = self.parse_raw(text)

        def view(port):
            pc = self.effective(raw, port)
            txq = pc["txq"]
            ecn = None
            for q in sorted(k for k in txq if k[0] != "mc-"):
                if txq[q].get("ecn"):
                    ecn = self._ecn_bytes(port, txq[q]["ecn"])
                    break
            on = pc.get("pfc_on") and not raw["pfc_all_off"]
            return {"mtu": pc.get("mtu", self.default_mtu), "trust": TRUST_IN.get(pc.get("trust", "cos"), "none"),
                    "pfc_priorities": sorted(pc.get("nodrop", ())) if on else [],
                    "ecn": ecn, "strict_tcs": set(t for t in range(8) if not any(
                        qc.get("no_priority") for (kind, n), qc in txq.items() if n == t and kind != "mc-"))}
        full = default_dscp_map()
        full.update(raw["map"])
        switch = {"dscp_map": full, "explicit_dscps": sorted(raw["map"])}
        return view, [p for p, pc in raw["ports"].items() if pc], switch, raw

    def parse_verify(self, text):
        """``show priority-flow-control``: per port the priorities PFC is active on.
        The status column has three flag positions: E or D (enabled), A or -
        (active), W or - (watchdog); 'Global PFC : Disabled' means none anywhere."""
        out = self.parse_pfc_status(text)
        return dict((p, v["priorities"] if v["enabled"] and v["active"] and out["*global"] is not False else [])
                    for p, v in out.items() if p != "*global")

    def parse_status(self, text):
        """``show priority-flow-control`` beyond the per-port priorities: the
        Global PFC line and the ports with the pause watchdog."""
        st = self.parse_pfc_status(text)
        return {"global_pfc": st.pop("*global"),
                "watchdog_ports": sorted((p for p, v in st.items() if v["watchdog"]), key=natural_key)}

    # -- global PFC and the pause watchdog --------------------------------------
    watchdog_fix = "priority-flow-control pause watchdog under interface {port}"
    global_pfc_fix = "no priority-flow-control all off"

    def watchdog_ports(self, raw, status=None):
        """The W flag of 'show priority-flow-control' where it was read, else
        'priority-flow-control pause watchdog' on the port or its qos profile."""
        if status is not None and status.get("watchdog_ports") is not None:
            return set(status["watchdog_ports"])
        return set(p for p in raw.get("ports", {})
                   if "priority-flow-control pause watchdog" in self.effective(raw, p).get("watchdog", []))

    def global_pfc_off(self, raw, status=None):
        if status is not None and status.get("global_pfc") is False:
            return "show priority-flow-control says 'Global PFC : Disabled'"
        if raw.get("pfc_all_off"):
            return "'priority-flow-control all off' is in the running config"
        return None

    def parse_pfc_status(self, text):
        """Per port {enabled, active, watchdog, priorities} and '*global' (the
        'Global PFC' line; None if absent).  Rows are cut by the column titles
        (Status, Priorities, Action): the Priorities cell is empty on a port
        without no-drop priorities."""
        out = {"*global": None}
        cols = None
        for line in text.splitlines():
            s = line.strip()
            m = re.fullmatch(r"Global PFC\s*:\s*(\S+)", s)
            if m:
                if m.group(1) not in ("Enabled", "Disabled"):
                    self.unreadable(s, "show priority-flow-control")
                out["*global"] = m.group(1) == "Enabled"
                continue
            if line.startswith("Port") and "Status" in line and "Priorities" in line:
                nxt = re.search(r"\S", line[line.index("Priorities") + len("Priorities"):])
                cols = (line.index("Status"), line.index("Priorities"),
                        line.index("Priorities") + len("Priorities") + nxt.start() if nxt else None)
                continue
            m = re.match(r"(?:Et|Ethernet)(\d+(?:/\d+)*)(\s|$)", line)
            if not m:
                continue
            if cols:
                flags = line[cols[0]:cols[1]].split()
                prio = line[cols[1]:cols[2]].strip() if cols[2] else (line[cols[1]:].split() or [""])[0]
            else:  # no title row: flags then the priorities
                parts = line.split()
                flags, prio = parts[1:4], (parts[4] if len(parts) > 4 else "")
            if (len(flags) != 3 or flags[0] not in ("E", "D") or flags[1] not in ("A", "-")
                    or flags[2] not in ("W", "-")
                    or not re.fullmatch(r"-?|[0-7](?:,[0-7])*", prio)):
                self.unreadable(s, "show priority-flow-control", "status is not three flag positions "
                                "(E|D, A|-, W|-) with the priorities after them")
            out["Ethernet" + m.group(1)] = {
                "enabled": flags[0] == "E", "active": flags[1] == "A", "watchdog": flags[2] == "W",
                "priorities": [int(x) for x in prio.split(",") if x.isdigit()]}
        return out

    # -- writing -------------------------------------------------------------
    def item_commands(self, ch, want, have, raw):
        state = ch.get("state")
        out = []
        g = ch["global"]
        if "dscp_map" in g and state != "deleted":
            for d, p in sorted(g["dscp_map"][0].items()):
                out.append(((), "qos map dscp %d to traffic-class %d" % (d, p)))
        for d in ch["dscp_unset"]:
            out.append(((), "no qos map dscp %d" % d))
        wprio = want["global"]["pfc_priority"]
        hprio = have["global"]["pfc_priority"]
        pfc_on = any(d.get("pfc", (False,))[0] for d in ch["ports"].values())
        if raw.get("pfc_all_off") and wprio is not None and pfc_on:
            out.append(((), "no priority-flow-control all off"))  # else no port's PFC takes effect
        cprio = (want["global"]["cnp"] or have["global"]["cnp"] or {}).get("priority", 6)
        per_port = {}
        for port in list(ch["ports"]) + [p for p in want["ports"] if "pfc_priority" in g and p not in ch["ports"]]:
            diff = ch["ports"].get(port, {})
            items = []
            if "mtu" in diff:
                w = diff["mtu"][0]
                items.append(((), "no mtu" if w == self.default_mtu else "mtu %d" % w))
            if "trust" in diff:
                w = diff["trust"][0]
                items.append(((), "no qos trust" if state == "deleted" else "qos trust %s" % TRUST_OUT[w]))
            wp = diff["pfc"][0] if "pfc" in diff else want["ports"].get(port, {}).get("pfc")
            if "pfc" in diff or "pfc_priority" in g:
                if wp and wprio is not None:
                    items += [((), "priority-flow-control on"), ((), "priority-flow-control priority %d no-drop" % wprio)]
                    if hprio is not None and hprio != wprio:
                        items.append(((), "no priority-flow-control priority %d" % hprio))
                else:
                    if hprio is not None:
                        items.append(((), "no priority-flow-control priority %d" % hprio))
                    items.append(((), "no priority-flow-control on"))
            if diff.get("watchdog", (False,))[0]:
                items.append(((), "priority-flow-control pause watchdog"))
            if "ecn" in diff:
                w, h = diff["ecn"]
                if h and (not w or h["tc"] != w["tc"]):
                    items.append((("uc-tx-queue %d" % h["tc"],), "no random-detect ecn"))
                if w:
                    items.append((("uc-tx-queue %d" % w["tc"],),
                                  "random-detect ecn minimum-threshold %s maximum-threshold %s max-mark-probability %d"
                                  % (_thr(w["min_bytes"]), _thr(w["max_bytes"]), w["probability"])))
            if "cnp_strict" in diff:
                items.append((("uc-tx-queue %d" % cprio,), "priority strict" if diff["cnp_strict"][0] else "no priority"))
            if items:
                per_port.setdefault(tuple(items), []).append(port)
        for items, ports in per_port.items():
            for head in self.interface_heads(ports):
                for ctx, line in items:
                    out.append(((head,) + ctx, line))
        return dedupe(out)
