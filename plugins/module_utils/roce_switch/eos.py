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
``commit``), so a failure leaves the running config untouched (``abort``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from .base import Driver, dedupe
from .model import default_dscp_map, ranges

UNITS = {"bytes": 1, "kbytes": 1000, "mbytes": 1000000, "segments": 208}
TRUST_IN = {"dscp": "dscp", "cos": "pcp", "disabled": "none"}
TRUST_OUT = {"dscp": "dscp", "pcp": "cos"}


def _thr(n):
    return "%d kbytes" % (n // 1000) if n % 1000 == 0 else "%d bytes" % n


class EosDriver(Driver):
    nos = "eos"
    label = "Arista EOS"
    device_type = "arista_eos"
    min_mtu, max_mtu, default_mtu = 68, 9214, 1500
    error_pattern = r"^% .*$"
    show_running = "show running-config"
    show_verify = "show priority-flow-control"
    transaction = "session"

    def canon_port(self, text):
        m = re.fullmatch(r"(?:ethernet|eth|et)\s*(\d+)", text.strip(), re.I)
        if not m:
            raise ValueError(text)
        return "Ethernet" + m.group(1)

    def expand(self, text):
        m = re.fullmatch(r"(?:ethernet|eth|et)\s*([\d,\-]+)", text, re.I)
        if not m:
            return []
        out = []
        for piece in m.group(1).split(","):
            r = re.fullmatch(r"(\d+)(?:-(\d+))?", piece)
            if r:
                out += ["Ethernet%d" % i for i in range(int(r.group(1)), int(r.group(2) or r.group(1)) + 1)]
        return out

    def check(self, want):
        if want["global"]["trust"] == "both":
            return ["EOS trusts either DSCP or CoS on a port, not both"]
        return []

    def default_strict(self, tc):
        return True

    # -- reading -------------------------------------------------------------
    def parse_raw(self, text):
        raw = {"map": {}, "ports": {}}
        cur, q = None, None
        for line in text.splitlines():
            if not line.strip() or line.strip() == "!":
                continue
            ind = len(line) - len(line.lstrip())
            s = line.strip()
            if ind == 0:
                cur, q = None, None
                m = re.fullmatch(r"qos map dscp ([\d ]+) to traffic-class (\d)", s)
                if m:
                    for d in m.group(1).split():
                        raw["map"][int(d)] = int(m.group(2))
                m = re.fullmatch(r"interface (Ethernet\S+)", s)
                if m:
                    cur = self.expand(m.group(1))
                    for p in cur:
                        raw["ports"].setdefault(p, {})
                continue
            if cur is None:
                continue
            m = re.fullmatch(r"uc-tx-queue (\d)", s)
            if m and ind <= 3:
                q = int(m.group(1))
                continue
            for p in cur:
                pc = raw["ports"][p]
                if ind <= 3:
                    q = None
                    r = re.fullmatch(r"mtu (\d+)", s)
                    if r:
                        pc["mtu"] = int(r.group(1))
                    r = re.fullmatch(r"qos trust (\S+)", s)
                    if r:
                        pc["trust"] = r.group(1)
                    if s in ("priority-flow-control on", "priority-flow-control mode on"):
                        pc["pfc_on"] = True
                    r = re.fullmatch(r"priority-flow-control priority (\d) no-drop", s)
                    if r:
                        pc.setdefault("nodrop", set()).add(int(r.group(1)))
                    if s == "shutdown":
                        pc["shutdown"] = True
                elif q is not None:
                    qc = pc.setdefault("txq", {}).setdefault(q, {})
                    r = re.fullmatch(r"random-detect ecn minimum-threshold (\d+) (\S+) maximum-threshold (\d+) (\S+)"
                                     r"(?: max-mark-probability (\d+))?(?: weight (\d+))?", s)
                    if r:
                        qc["ecn"] = {"tc": q, "min_bytes": int(r.group(1)) * UNITS[r.group(2)],
                                     "max_bytes": int(r.group(3)) * UNITS[r.group(4)],
                                     "probability": int(r.group(5) or 100)}
                    if s == "no priority":
                        qc["no_priority"] = True
        return raw

    def parse_views(self, text):
        raw = self.parse_raw(text)

        def view(port):
            pc = raw["ports"].get(port, {})
            txq = pc.get("txq", {})
            ecn = None
            for q in sorted(txq):
                if txq[q].get("ecn"):
                    ecn = dict(txq[q]["ecn"])
                    break
            return {"mtu": pc.get("mtu", self.default_mtu), "trust": TRUST_IN.get(pc.get("trust", "cos"), "none"),
                    "pfc_priorities": sorted(pc.get("nodrop", ())) if pc.get("pfc_on") else [],
                    "ecn": ecn, "strict_tcs": set(q for q in range(8) if not txq.get(q, {}).get("no_priority"))}
        full = default_dscp_map()
        full.update(raw["map"])
        switch = {"dscp_map": full, "explicit_dscps": sorted(raw["map"])}
        return view, [p for p, pc in raw["ports"].items() if pc], switch, raw

    def parse_verify(self, text):
        out = {}
        for line in text.splitlines():
            m = re.match(r"Et(\d+)\s+(E|D)(?: A)?\s+(\S+)", line)
            if m:
                out["Ethernet" + m.group(1)] = [int(x) for x in m.group(3).split(",") if x.isdigit()]
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
            head = "interface Ethernet" + ",".join(
                "%d" % a if a == b else "%d-%d" % (a, b) for a, b in ranges(int(p[8:]) for p in ports))
            for ctx, line in items:
                out.append(((head,) + ctx, line))
        return dedupe(out)
