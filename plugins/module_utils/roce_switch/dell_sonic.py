# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Dell Enterprise SONiC (Klish ``sonic-cli``), netmiko ``dell_sonic``.

The collection's objects: ``qos map dscp-tc GPUFABRIC`` (``dscp D
traffic-class P``), ``qos wred-policy GPUFABRIC`` (``green minimum-threshold KB
maximum-threshold KB drop-probability P`` + ``ecn green``), ``qos
scheduler-policy GPUFABRIC`` (``queue C`` / ``type strict``); per interface
``mtu``, ``qos-map dscp-tc GPUFABRIC`` (DSCP trust), ``priority-flow-control
priority P``, ``queue T wred-policy GPUFABRIC``, ``scheduler-policy GPUFABRIC``.
SONiC has no configuration transaction: a failed push is undone by commands
computed from the running config read before it (every block and line the
push added or changed is put back).  A ``roce``, PFC,
``qos map dscp-tc``/``dscp ... traffic-class``, ``ecn``/``green`` or trust line
of another form fails the read naming switch and line."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from . import lldp_text
from .base import Driver, dedupe
from .model import default_dscp_map

NAME = "GPUFABRIC"


def _ints(text, lo, hi):
    """'0-25,27' -> numbers; [] when a piece is not a number or out of range."""
    out = []
    for piece in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", piece)
        if not m or not lo <= int(m.group(1)) <= int(m.group(2) or m.group(1)) <= hi:
            return []
        out += list(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
    return out


class DellSonicDriver(Driver):
    nos = "sonic-dell"
    label = "Dell SONiC"
    device_type = "dell_sonic"
    min_mtu, max_mtu, default_mtu = 1312, 9216, 9100
    error_pattern = r"^% Error.*$"
    show_running = "show running-configuration"
    show_verify = "show priority-flow-control statistics"
    transaction = "inverse"

    def canon_port(self, text):
        m = re.fullmatch(r"(?:eth(?:ernet)?)?\s*(\d+/\d+)", text.strip(), re.I)
        if not m:
            raise ValueError(text)
        return "Eth" + m.group(1)

    # -- LLDP: ``show lldp neighbor`` (a block per neighbour) ----
    show_lldp = "show lldp neighbor"

    def parse_lldp(self, text, managed=()):
        out = []
        for block in lldp_text.blocks(text, r"^Interface:"):
            head = block[0]
            m = re.match(r"^\s*Interface:\s*([^,\s]+)\s*,\s*via:\s*(\S+)", head[2])
            if not m:
                lldp_text.unreadable(self, head[2], "not 'Interface: <port>,via: <protocol>'")
            local = lldp_text.local_port(self, m.group(1))
            fields = dict((k, v) for k, v, _line in block[1:])
            if not lldp_text.value(fields.get("portid")):
                if local in managed:
                    lldp_text.unreadable(self, head[2], "a neighbour of %s without 'PortID:'" % local)
                continue
            out.append(lldp_text.neighbor(local, sysname=fields.get("sysname"), chassis_id=fields.get("chassisid"),
                                          port_id=fields.get("portid"), port_descr=fields.get("portdescr")))
        return out

    def check(self, want):
        g, out = want["global"], []
        if g["trust"] == "both":
            out.append("Dell SONiC classifies on DSCP through a dscp-tc map or on PCP, not both")
        e = g["ecn"]
        if e:
            for k in ("min_bytes", "max_bytes"):
                if e[k] % 1000 or not 1 <= e[k] // 1000 <= 12288:
                    out.append("Dell SONiC WRED thresholds are whole KB in 1-12288; %s %d bytes is not" % (k, e[k]))
        return out

    def default_map(self):
        return {}

    # -- reading -------------------------------------------------------------
    def blocks(self, text):
        """Running config -> ordered [(header, [lines])], nested queue blocks
        flattened as 'queue N' headers inside their scheduler policy."""
        out, cur = [], None
        for line in text.splitlines():
            if not line.strip() or line.strip() == "!":
                continue
            if not line[0].isspace():
                cur = (line.strip(), [])
                out.append(cur)
            elif cur is not None:
                cur[1].append(line.rstrip())
        return out

    @staticmethod
    def managed(s):
        w = s[3:] if s.startswith("no ") else s
        return bool(re.match(r"priority-flow-control\b|random-detect\b|qos map dscp|dscp \S+ traffic-class|"
                             r"qos-map dscp-tc\b|roce\b|ecn\b|green\b|trust\b|\S+ trust\b", w))

    PORT_PFC = (r"priority-flow-control (?:asymmetric|watchdog(?: on)?|watchdog action (?:drop|forward|alert)"
                r"|watchdog on detect-time \d+|watchdog restore-time \d+)")
    GLOBAL_PFC = r"priority-flow-control watchdog (?:polling-interval \d+|counter-poll(?: enable| disable)?)"

    def parse_raw(self, text):
        raw = {"roce": None, "maps": {}, "wred": {}, "sched": {}, "ports": {}, "other": {}, "pfc_global": [],
               "blocks": self.blocks(text)}
        for head, lines in raw["blocks"]:
            body = [x.strip() for x in lines]
            if head.startswith("roce"):
                m = re.fullmatch(r"roce enable(?: pfc-priority ([0-7](?:,[0-7])*))?", head)
                if not m:
                    self.unreadable(head)
                raw["roce"] = [int(x) for x in (m.group(1) or "3,4").split(",")]
                continue
            if re.fullmatch(self.GLOBAL_PFC, head):
                raw["pfc_global"].append(head)
                continue
            m = re.fullmatch(r"qos map dscp-tc (\S+)", head)
            if m:
                mp = raw["maps"].setdefault(m.group(1), {})
                for x in body:
                    r = re.fullmatch(r"dscp ([\d,\-]+) traffic-class ([0-7])", x)
                    ds = _ints(r.group(1), 0, 63) if r else []
                    if not ds:
                        if self.managed(x) or x.startswith("dscp"):
                            self.unreadable(x, why="in %s" % head)
                        continue
                    for d in ds:
                        mp[d] = int(r.group(2))
                continue
            m = re.fullmatch(r"qos wred-policy (\S+)", head)
            if m:
                w = raw["wred"].setdefault(m.group(1), {})
                for x in body:
                    r = re.fullmatch(r"(green|yellow|red) minimum-threshold (\d+) maximum-threshold (\d+) "
                                     r"drop-probability (\d+)", x)
                    if r:
                        w[r.group(1)] = tuple(int(v) for v in r.groups()[1:])
                        continue
                    r = re.fullmatch(r"ecn (none|green|yellow|red|green-yellow|green-red|yellow-red|all)", x)
                    if r:
                        w["ecn"] = r.group(1)
                        continue
                    if self.managed(x):
                        self.unreadable(x, why="in %s" % head)
                continue
            m = re.fullmatch(r"qos scheduler-policy (\S+)", head)
            if m:
                sp = raw["sched"].setdefault(m.group(1), {})
                q = None
                for x in body:
                    r = re.fullmatch(r"queue (\d)", x)
                    if r:
                        q = int(r.group(1))
                    r = re.fullmatch(r"type (\S+)", x)
                    if r and q is not None:
                        sp[q] = r.group(1)
                continue
            m = re.fullmatch(r"interface (Eth\d+/\d+)", head)
            if m:
                pc = raw["ports"].setdefault(self.canon_port(m.group(1)), {})
            elif head.startswith("interface "):  # port-channels, VLANs: read, kept apart
                pc = raw["other"].setdefault(head.split(None, 1)[1], {})
            else:
                if self.managed(head):
                    self.unreadable(head)
                for x in body:
                    if self.managed(x):
                        self.unreadable(x, why="in %s" % head)
                continue
            for x in body:
                r = re.fullmatch(r"mtu (\d+)", x)
                if r:
                    pc["mtu"] = int(r.group(1))
                    continue
                r = re.fullmatch(r"qos-map dscp-tc (\S+)", x)
                if r:
                    pc["map"] = r.group(1)
                    continue
                r = re.fullmatch(r"priority-flow-control priority ([0-7])", x)
                if r:
                    pc.setdefault("pfc", []).append(int(r.group(1)))
                    continue
                if re.fullmatch(self.PORT_PFC, x):
                    pc.setdefault("pfc_other", []).append(x)
                    continue
                r = re.fullmatch(r"queue (\d) wred-policy (\S+)", x)
                if r:
                    pc.setdefault("wred", {})[int(r.group(1))] = r.group(2)
                    continue
                r = re.fullmatch(r"scheduler-policy (\S+)", x)
                if r:
                    pc["sched"] = r.group(1)
                    continue
                if self.managed(x):
                    self.unreadable(x, why="in %s" % head)
        return raw

    def parse_views(self, text):
        raw = self.parse_raw(text)
        roce = raw["roce"]

        def view(port):
            pc = raw["ports"].get(port, {})
            ecn = None
            for q in sorted(pc.get("wred", {})):
                w = raw["wred"].get(pc["wred"][q], {})
                if w.get("ecn", "none") != "none" and w.get("green"):
                    ecn = {"tc": q, "min_bytes": w["green"][0] * 1000, "max_bytes": w["green"][1] * 1000,
                           "probability": w["green"][2]}
                    break
            if pc.get("sched") in raw["sched"]:
                strict = set(q for q, t in raw["sched"][pc["sched"]].items() if t == "strict")
            else:
                strict = {6} if roce else set()
            trust = "dscp" if pc.get("map") in raw["maps"] or roce else "pcp"
            return {"mtu": pc.get("mtu", self.default_mtu), "trust": trust,
                    "pfc_priorities": sorted(pc.get("pfc") or roce or []), "ecn": ecn, "strict_tcs": strict}
        if NAME in raw["maps"]:
            dmap = dict(raw["maps"][NAME])
        else:
            bound = [pc["map"] for pc in raw["ports"].values() if pc.get("map") in raw["maps"]]
            dmap = dict(raw["maps"][bound[0]]) if bound else (default_dscp_map() if roce else {})
        switch = {"dscp_map": dmap, "explicit_dscps": sorted(raw["maps"].get(NAME, {}))}
        seen = [p for p, pc in raw["ports"].items()
                if set(pc) - {"mtu"} or pc.get("mtu", self.default_mtu) != self.default_mtu]
        return view, seen, switch, raw

    def parse_verify(self, text):
        out = {}
        for line in text.splitlines():
            m = re.match(r"(Eth\d+/\d+)\s+PFC(\d)", line)
            if m:
                out.setdefault(m.group(1), []).append(int(m.group(2)))
        return out

    # -- the PFC watchdog: per interface ('priority-flow-control watchdog on
    # detect-time MS', as the dellemc.enterprise_sonic documentation shows it) --
    WD_DETECT = 200
    watchdog_fix = "priority-flow-control watchdog on detect-time %d under interface {port}" % WD_DETECT

    def watchdog_ports(self, raw, status=None):
        return set(p for p, pc in raw.get("ports", {}).items()
                   if any(re.fullmatch(r"priority-flow-control watchdog on(?: detect-time \d+)?", x)
                          for x in pc.get("pfc_other", [])))

    # -- writing -------------------------------------------------------------
    def item_commands(self, ch, want, have, raw):
        state = ch.get("state")
        g = ch["global"]
        wg, hg = want["global"], have["global"]
        out = []
        mp = ("qos map dscp-tc %s" % NAME,)
        if "dscp_map" in g and state != "deleted":
            for d, p in sorted(g["dscp_map"][0].items()):
                out.append((mp, "dscp %d traffic-class %d" % (d, p)))
        for d in ch["dscp_unset"]:
            if d in raw.get("maps", {}).get(NAME, {}):
                out.append((mp, "no dscp %d" % d))
        e = wg["ecn"]
        wred_ok = NAME in raw.get("wred", {}) and raw["wred"][NAME].get("green") == (
            (e["min_bytes"] // 1000, e["max_bytes"] // 1000, e["probability"]) if e else None) \
            and raw["wred"][NAME].get("ecn") == "green"
        if e and not wred_ok:
            out += [(("qos wred-policy %s" % NAME,), "green minimum-threshold %d maximum-threshold %d drop-probability %d"
                     % (e["min_bytes"] // 1000, e["max_bytes"] // 1000, e["probability"])),
                    (("qos wred-policy %s" % NAME,), "ecn green")]
        c = wg["cnp"]
        cprio = (c or hg["cnp"] or {}).get("priority", 6)
        if c and c["strict"] and raw.get("sched", {}).get(NAME, {}).get(cprio) != "strict":
            out.append((("qos scheduler-policy %s" % NAME, "queue %d" % cprio), "type strict"))
        wprio, hprio = wg["pfc_priority"], hg["pfc_priority"]
        per = {}
        ports = list(ch["ports"]) + [p for p in want["ports"] if p not in ch["ports"] and
                                     ("pfc_priority" in g or ("ecn" in g) or ("cnp" in g))]
        for port in ports:
            diff = dict(ch["ports"].get(port, {}))
            wp = want["ports"].get(port, {})
            if "ecn" in g and wp.get("ecn"):
                diff.setdefault("ecn", (wp["ecn"], None))
            if "cnp" in g and wp.get("cnp_strict"):
                diff.setdefault("cnp_strict", (True, False))
            pc = raw.get("ports", {}).get(port, {})
            items = []
            if "mtu" in diff:
                w = diff["mtu"][0]
                items.append("no mtu" if w == self.default_mtu and state == "deleted" else "mtu %d" % w)
            if "trust" in diff:
                items.append("qos-map dscp-tc %s" % NAME if diff["trust"][0] == "dscp" else "no qos-map dscp-tc")
            if "pfc" in diff or "pfc_priority" in g:
                on = diff["pfc"][0] if "pfc" in diff else wp.get("pfc")
                if on and wprio is not None:
                    items.append("priority-flow-control priority %d" % wprio)
                    if hprio is not None and hprio != wprio and hprio in pc.get("pfc", []):
                        items.append("no priority-flow-control priority %d" % hprio)
                else:
                    for pr in pc.get("pfc", []):
                        items.append("no priority-flow-control priority %d" % pr)
            if diff.get("watchdog", (False,))[0]:
                items.append("priority-flow-control watchdog on detect-time %d" % self.WD_DETECT)
            if "ecn" in diff:
                w, h = diff["ecn"]
                for q in pc.get("wred", {}):
                    if not w or q != w["tc"]:
                        items.append("no queue %d wred-policy" % q)
                if w:
                    items.append("queue %d wred-policy %s" % (w["tc"], NAME))
            if "cnp_strict" in diff:
                items.append("scheduler-policy %s" % NAME if diff["cnp_strict"][0] else "no scheduler-policy")
            if items:
                per.setdefault(tuple(items), []).append(port)
        for items, plist in per.items():
            for port in plist:
                out += [(("interface %s" % port,), x) for x in items]
        if state == "deleted":
            for table, word in (("maps", "qos map dscp-tc"), ("wred", "qos wred-policy"),
                                ("sched", "qos scheduler-policy")):
                if NAME in raw.get(table, {}):
                    out.append(((), "no %s %s" % (word, NAME)))
        return dedupe(out)

    # A block command typed in a sub-mode leaves the sub-mode on Klish, so the
    # lines go without 'exit' (the push ends with 'end').
    exit_word = None

    # -- undo ----------------------------------------------------------------
    def undo_commands(self, before_text, now_text):
        """Commands that turn the running config ``now_text`` back into ``before_text``."""
        before = dict(self.blocks(before_text))
        now = self.blocks(now_text)
        neg = []
        add = []
        for head, lines in now:
            if head not in before:
                if head.startswith("interface "):
                    continue
                neg.append(((), "no " + head))
                continue
            old = before[head]
            if head.startswith("qos scheduler-policy"):
                if lines != old:
                    neg.append(((), "no " + head))
                    add += self._block(head, old)
                continue
            restored = set(self._negate(x.strip()) for x in old if x not in lines)
            for x in lines:
                # a line the undo sets again (e.g. another mtu) needs no negation first
                if x not in old and self._negate(x.strip()) not in restored:
                    neg.append(((head,), self._negate(x.strip())))
            for x in old:
                if x not in lines:
                    add.append(((head,), x.strip()))
        for head, old in before.items():
            if head not in dict(now):
                add += self._block(head, old)
        # unbind from ports before deleting objects; re-create objects before binding
        ports_neg = [c for c in neg if c[0] and c[0][0].startswith("interface ")]
        other_neg = [c for c in neg if c not in ports_neg]
        obj_add = [c for c in add if not (c[0] and c[0][0].startswith("interface "))]
        port_add = [c for c in add if c not in obj_add]
        return ports_neg + other_neg + obj_add + port_add

    def _block(self, head, lines):
        if head.startswith("roce ") or head.startswith("hostname"):
            return [((), head)]
        out, q = [], None
        for x in lines:
            s = x.strip()
            if s.startswith("!"):
                continue
            if head.startswith("qos scheduler-policy") and re.fullmatch(r"queue \d", s):
                q = s
                continue
            out.append((((head, q) if q else (head,)), s))
        return out or [((head,), "exit")]

    @staticmethod
    def _negate(line):
        for pat, neg in ((r"dscp (\S+) traffic-class \d", "no dscp {0}"), (r"green .*", "no green"),
                         (r"ecn .*", "no ecn"), (r"mtu \d+", "no mtu"), (r"qos-map dscp-tc \S+", "no qos-map dscp-tc"),
                         (r"queue (\d) wred-policy \S+", "no queue {0} wred-policy"),
                         (r"scheduler-policy \S+", "no scheduler-policy"),
                         (r"priority-flow-control priority (\d)", "no priority-flow-control priority {0}"),
                         (r"priority-flow-control watchdog .*", "no priority-flow-control watchdog"),
                         (r"no shutdown", "shutdown"), (r"shutdown", "no shutdown")):
            m = re.fullmatch(pat, line)
            if m:
                return neg.format(*m.groups())
        return "no " + line
