# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cisco NX-OS (Nexus 9000), netmiko ``cisco_nxos``.

The collection's own objects: class-maps ``GPUFABRIC-P<prio>`` (``match dscp``),
``policy-map type qos GPUFABRIC-QOS-IN`` (``set qos-group``), ``policy-map type
queuing GPUFABRIC-QUEUING-OUT`` (``random-detect ... ecn`` on the RoCE queue,
``priority level 1`` on the CNP queue), ``policy-map type network-qos
GPUFABRIC-NETWORK-QOS`` (``pause pfc-cos``), attached under ``system qos``;
per interface ``mtu``, ``priority-flow-control mode on`` and ``service-policy
type qos input`` (DSCP trust).  Pushes run in a configuration session; the
parser also reads other policies (e.g. a reference config's).  A ``priority-flow-control``,
``random-detect`` or ``match dscp`` line of another form (DSCP names such as
``af31`` are read) fails the read naming switch and line."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from . import lldp_text
from .base import Driver, dedupe
from .model import compress_ints, ranges

UNITS = {"bytes": 1, "kbytes": 1000, "mbytes": 1000000}
QIN, QOUT, NQ = "GPUFABRIC-QOS-IN", "GPUFABRIC-QUEUING-OUT", "GPUFABRIC-NETWORK-QOS"


def _cls_num(cls):
    m = re.search(r"(\d)$", cls)
    return int(m.group(1)) if m and not cls.endswith("default") else 0


def _thr(n):
    return "%d kbytes" % (n // 1000) if n % 1000 == 0 else "%d bytes" % n


def _ints(text):
    out = []
    for piece in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", piece.strip())
        if m:
            out += list(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
    return out


DSCP_NAMES = dict([("default", 0), ("ef", 46)] + [("cs%d" % i, 8 * i) for i in range(8)] +
                  [("af%d%d" % (c, d), 8 * c + 2 * d) for c in range(1, 5) for d in range(1, 4)])


def _dscps(text):
    """'26', '24-31', '26,48', 'af31 ef' -> DSCP numbers; None if a value is neither."""
    out = []
    for piece in re.split(r"[,\s]+", text.strip()):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", piece)
        if m and int(m.group(2) or m.group(1)) <= 63 and int(m.group(1)) <= int(m.group(2) or m.group(1)):
            out += list(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
        elif piece.lower() in DSCP_NAMES:
            out.append(DSCP_NAMES[piece.lower()])
        else:
            return None
    return out


class NxosDriver(Driver):
    nos = "nxos"
    label = "Cisco NX-OS"
    device_type = "cisco_nxos"
    min_mtu, max_mtu, default_mtu = 576, 9216, 1500
    error_pattern = r"^(?:% .*|ERROR:.*)$"
    show_running = "show running-config"
    show_verify = "show interface priority-flow-control"
    transaction = "session"
    per_port = ("mtu", "pfc", "trust")

    def canon_port(self, text):
        m = re.fullmatch(r"(?:ethernet|eth|e)\s*(\d+/\d+)", text.strip(), re.I)
        if not m:
            raise ValueError(text)
        return "Ethernet" + m.group(1)

    # -- LLDP: ``show lldp neighbors detail`` (a block per neighbour) ----
    show_lldp = "show lldp neighbors detail"

    def parse_lldp(self, text, managed=()):
        out = []
        for block in lldp_text.blocks(text, r"^Chassis id:"):
            fields = dict((k, v) for k, v, _line in block)
            if not lldp_text.value(fields.get("local port id")):
                lldp_text.unreadable(self, block[0][2], "a neighbour without 'Local Port id:'")
            local = lldp_text.local_port(self, fields["local port id"])
            if not lldp_text.value(fields.get("port id")):
                if local in managed:
                    lldp_text.unreadable(self, block[0][2], "a neighbour of %s without 'Port id:'" % local)
                continue
            out.append(lldp_text.neighbor(local, sysname=fields.get("system name"),
                                          chassis_id=fields.get("chassis id"), port_id=fields.get("port id"),
                                          port_descr=fields.get("port description")))
        return out

    def expand(self, text):
        m = re.fullmatch(r"(?:ethernet|eth|e)\s*(\d+)/([\d,\-]+)", text, re.I)
        return ["Ethernet%s/%d" % (m.group(1), i) for i in _ints(m.group(2))] if m else []

    def check(self, want):
        g = want["global"]
        out = []
        if g["trust"] == "both":
            out.append("NX-OS classifies on DSCP or CoS, not both (trust 'both')")
        if g["trust"] == "dscp" and not g["dscp_map"]:
            out.append("NX-OS needs dscp_map entries to classify on DSCP")
        return out

    def default_map(self):
        return {}

    # -- reading -------------------------------------------------------------
    @staticmethod
    def managed(s):
        w = s[3:] if s.startswith("no ") else s
        return bool(re.match(r"priority-flow-control\b|random-detect\b|match dscp\b|qos trust\b|trust\b", w))

    def parse_raw(self, text):
        raw = {"cmaps": {}, "pmaps": {"qos": {}, "queuing": {}, "network-qos": {}}, "system": {}, "ports": {},
               "other": {}, "pfc_global": []}
        top, cls = None, None
        for line in text.splitlines():
            if not line.strip() or line.strip().startswith("!"):
                continue
            ind = len(line) - len(line.lstrip())
            s = line.strip()
            if ind == 0:
                top, cls = None, None
                m = re.fullmatch(r"class-map type qos(?: match-all| match-any)? (\S+)", s)
                if m:
                    top = ("cmap", raw["cmaps"].setdefault(m.group(1), []))
                m = re.fullmatch(r"policy-map type (qos|queuing|network-qos) (\S+)", s)
                if m:
                    top = ("pmap", raw["pmaps"][m.group(1)].setdefault(m.group(2), {}))
                if s == "system qos":
                    top = ("sys", raw["system"])
                m = re.fullmatch(r"interface (Ethernet\S+)", s)
                if m:
                    top = ("if", [raw["ports"].setdefault(p, {}) for p in self.expand(m.group(1))])
                elif re.fullmatch(r"interface \S+", s):  # port-channels etc.: read, kept apart
                    top = ("if", [raw["other"].setdefault(s.split()[1], {})])
                if top is None:
                    if re.fullmatch(r"priority-flow-control (?:watch-dog-interval (?:on|off)|watch-dog \S+ \d+"
                                    r"|auto-restore multiplier \d+|fixed-restore multiplier \d+)", s):
                        raw["pfc_global"].append(s)
                    elif self.managed(s):
                        self.unreadable(s)
                continue
            if top is None:
                if self.managed(s):
                    self.unreadable(s, why="outside a block the parser reads")
                continue
            kind, obj = top
            if kind == "cmap":
                m = re.fullmatch(r"match dscp (\S+(?: \S+)*)", s)
                if m:
                    ds = _dscps(m.group(1))
                    if ds is None:
                        self.unreadable(s, why="DSCP values")
                    obj += ds
                elif self.managed(s):
                    self.unreadable(s)
            elif kind == "sys":
                m = re.fullmatch(r"service-policy type (network-qos|queuing output|qos input) (\S+)", s)
                if m:
                    obj[m.group(1).split()[0]] = m.group(2)
            elif kind == "if":
                known = False
                for pc in obj:
                    m = re.fullmatch(r"mtu (\d+)", s)
                    if m:
                        pc["mtu"] = int(m.group(1))
                    m = re.fullmatch(r"priority-flow-control mode (on|off|auto)", s)
                    if m:
                        pc["pfc_mode"], known = m.group(1), True
                    if re.fullmatch(r"no priority-flow-control mode(?: on| off| auto)?", s):
                        pc["pfc_mode"], known = "auto", True
                    m = re.fullmatch(r"priority-flow-control (watch-dog-interval (?:on|off)|send-tlv)", s)
                    if m:
                        pc.setdefault("pfc_other", []).append(m.group(1))
                        known = True
                    m = re.fullmatch(r"service-policy type qos input (\S+)", s)
                    if m:
                        pc["qos_in"] = m.group(1)
                if not known and self.managed(s):
                    self.unreadable(s)
            else:
                m = re.fullmatch(r"class(?: type \S+)? (\S+)", s)
                if m:
                    cls = obj.setdefault(m.group(1), {})
                    continue
                if cls is None:
                    if self.managed(s):
                        self.unreadable(s, why="outside a class")
                    continue
                m = re.fullmatch(r"set qos-group (\d)", s)
                if m:
                    cls["qos_group"] = int(m.group(1))
                if re.fullmatch(r"priority(?: level \d)?", s):
                    cls["priority"] = True
                if s.startswith("random-detect"):
                    m = re.fullmatch(r"random-detect minimum-threshold (\d+) (bytes|kbytes|mbytes) maximum-threshold "
                                     r"(\d+) (bytes|kbytes|mbytes)(?: drop-probability (\d+))?(?: weight (\d+))?( ecn)?",
                                     s)
                    if m:
                        cls["wred"] = {"min_bytes": int(m.group(1)) * UNITS[m.group(2)],
                                       "max_bytes": int(m.group(3)) * UNITS[m.group(4)],
                                       "probability": int(m.group(5) or 100), "ecn": bool(m.group(7))}
                    elif re.fullmatch(r"random-detect threshold (?:burst-optimized|mesh-optimized)(?: ecn)?", s):
                        cls["wred_preset"] = s
                    else:
                        self.unreadable(s)
                    continue
                m = re.fullmatch(r"pause pfc-cos ([\d, ]+)", s)
                if m:
                    cls["pfc_cos"] = _ints(m.group(1).replace(" ", ","))
                if s == "pause no-drop":
                    cls["pfc_cos"] = "no-drop"
                if self.managed(s):
                    self.unreadable(s)
        return raw

    def _dscp_map(self, raw, policy):
        out = {}
        for cls, attrs in raw["pmaps"]["qos"].get(policy, {}).items():
            if "qos_group" in attrs:
                for d in raw["cmaps"].get(cls, []):
                    out.setdefault(d, attrs["qos_group"])
        return out

    def parse_views(self, text):
        raw = self.parse_raw(text)
        sysq = raw["system"]
        nq = raw["pmaps"]["network-qos"].get(sysq.get("network-qos"), {})
        cos = []
        for cls, attrs in nq.items():
            v = attrs.get("pfc_cos")
            cos += v if isinstance(v, list) else ([_cls_num(cls)] if v == "no-drop" else [])
        ecn, strict = None, set()
        for cls, attrs in raw["pmaps"]["queuing"].get(sysq.get("queuing"), {}).items():
            q = _cls_num(cls)
            w = attrs.get("wred")
            if w and w["ecn"] and (ecn is None or q < ecn["tc"]):
                ecn = {"tc": q, "min_bytes": w["min_bytes"], "max_bytes": w["max_bytes"], "probability": w["probability"]}
            if attrs.get("priority"):
                strict.add(q)
        policies = [pc.get("qos_in") for pc in raw["ports"].values() if pc.get("qos_in")]
        main = QIN if QIN in raw["pmaps"]["qos"] else (sysq.get("qos") or (policies[0] if policies else None))
        dmap = self._dscp_map(raw, main)

        def view(port):
            pc = raw["ports"].get(port, {})
            pol = pc.get("qos_in") or sysq.get("qos")
            return {"mtu": pc.get("mtu", self.default_mtu), "trust": "dscp" if self._dscp_map(raw, pol) else "pcp",
                    "pfc_priorities": sorted(set(cos)) if pc.get("pfc_mode") == "on" else [],
                    "ecn": ecn, "strict_tcs": strict}
        switch = {"pfc_priority": min(cos) if cos else None, "ecn": ecn, "strict_tcs": strict,
                  "dscp_map": dmap, "explicit_dscps": sorted(dmap)}
        return view, [p for p, pc in raw["ports"].items() if pc], switch, raw

    def parse_verify(self, text):
        out = {}
        for line in text.splitlines():
            m = re.match(r"(Ethernet\d+/\d+)\s+\S+\s+(On \(([0-9a-f]+)\)|Off|On)", line)
            if m:
                bmap = int(m.group(3), 16) if m.group(3) else 0
                out[m.group(1)] = [i for i in range(8) if bmap >> i & 1]
        return out

    # -- the PFC watchdog ----------------------------------------------------------
    # 'priority-flow-control watch-dog-interval on' on the interface, as the
    # Microsoft reference configuration writes it; a global line counts for the
    # ports that do not say otherwise.
    watchdog_fix = "priority-flow-control watch-dog-interval on under interface {port}"

    def watchdog_ports(self, raw, status=None):
        glob = None
        for line in raw.get("pfc_global", []):
            m = re.fullmatch(r"priority-flow-control watch-dog-interval (on|off)", line)
            if m:
                glob = m.group(1) == "on"
        out = set()
        for p, pc in raw.get("ports", {}).items():
            own = [x for x in pc.get("pfc_other", []) if x.startswith("watch-dog-interval")]
            if (own and own[-1] == "watch-dog-interval on") or (not own and glob):
                out.add(p)
        return out

    # -- writing -------------------------------------------------------------
    def item_commands(self, ch, want, have, raw):
        state = ch.get("state")
        g = ch["global"]
        sysq = raw.get("system", {})
        cmaps = raw.get("cmaps", {})
        out = []
        wg = want["global"]
        if state == "deleted":
            return self._teardown(ch, raw)
        # DSCP classification
        if "dscp_map" in g:
            for d, p in sorted(g["dscp_map"][0].items()):
                for name, ds in cmaps.items():
                    if name.startswith("GPUFABRIC-P") and name != "GPUFABRIC-P%d" % p and d in ds:
                        out.append((("class-map type qos match-any %s" % name,), "no match dscp %d" % d))
                out.append((("class-map type qos match-any GPUFABRIC-P%d" % p,), "match dscp %d" % d))
                out.append((("policy-map type qos %s" % QIN, "class GPUFABRIC-P%d" % p), "set qos-group %d" % p))
        for d in ch["dscp_unset"]:
            for name, ds in cmaps.items():
                if d in ds:
                    out.append((("class-map type qos match-any %s" % name,), "no match dscp %d" % d))
        # lossless priority
        if "pfc_priority" in g or (wg["pfc_priority"] is not None and sysq.get("network-qos") != NQ):
            w, h = wg["pfc_priority"], have["global"]["pfc_priority"]
            if w is None:
                if sysq.get("network-qos"):
                    out.append((("system qos",), "no service-policy type network-qos %s" % sysq["network-qos"]))
            else:
                nq = ("policy-map type network-qos %s" % NQ,)
                if h is not None and h != w and sysq.get("network-qos") == NQ:
                    out.append((nq + ("class type network-qos c-8q-nq%d" % h,), "no pause pfc-cos %d" % h))
                out.append((nq + ("class type network-qos c-8q-nq%d" % w,), "pause pfc-cos %d" % w))
                out.append((("system qos",), "service-policy type network-qos %s" % NQ))
        # ECN and CNP share the system queuing policy
        own = sysq.get("queuing") == QOUT
        if "ecn" in g or "cnp" in g or (not own and (wg["ecn"] or (wg["cnp"] or {}).get("strict"))):
            qp = ("policy-map type queuing %s" % QOUT,)
            hg = have["global"]
            if wg["ecn"] is not None:
                if own and hg["ecn"] and hg["ecn"]["tc"] != wg["ecn"]["tc"]:
                    out.append((qp + ("class type queuing c-out-8q-q%d" % hg["ecn"]["tc"],), "no random-detect"))
                e = wg["ecn"]
                out.append((qp + ("class type queuing c-out-8q-q%d" % e["tc"],),
                            "random-detect minimum-threshold %s maximum-threshold %s drop-probability %d ecn"
                            % (_thr(e["min_bytes"]), _thr(e["max_bytes"]), e["probability"])))
            if wg["cnp"] is not None:
                c = wg["cnp"]["priority"]
                out.append((qp + ("class type queuing c-out-8q-q%d" % c,),
                            "priority level 1" if wg["cnp"]["strict"] else "no priority"))
            out.append((("system qos",), "service-policy type queuing output %s" % QOUT))
        out += self._ports(ch, raw, state)
        return dedupe(out)

    def _ports(self, ch, raw, state):
        per = {}
        for port, diff in ch["ports"].items():
            items = []
            if "mtu" in diff:
                w = diff["mtu"][0]
                items.append("no mtu" if w == self.default_mtu else "mtu %d" % w)
            if "pfc" in diff:
                items.append("priority-flow-control mode on" if diff["pfc"][0] else "no priority-flow-control mode")
            if diff.get("watchdog", (False,))[0]:
                items.append("priority-flow-control watch-dog-interval on")
            if "trust" in diff:
                cur = raw.get("ports", {}).get(port, {}).get("qos_in")
                if diff["trust"][0] == "dscp":
                    items.append("service-policy type qos input %s" % QIN)
                elif cur:
                    items.append("no service-policy type qos input %s" % cur)
            if items:
                per.setdefault(tuple(items), []).append(port)
        out = []
        for items, ports in per.items():
            by_slot = {}
            for p in ports:
                slot, num = p[len("Ethernet"):].split("/")
                by_slot.setdefault(slot, []).append(int(num))
            for slot, nums in by_slot.items():
                for a, b in ranges(nums):
                    head = "interface Ethernet%s/%s" % (slot, a if a == b else "%d-%d" % (a, b))
                    out += [((head,), x) for x in items]
        return out

    def _teardown(self, ch, raw):
        """``deleted``: detach and remove the collection's objects, reset the ports."""
        out = []
        sysq = raw.get("system", {})
        for key, word in (("network-qos", "network-qos"), ("queuing", "queuing output"), ("qos", "qos input")):
            if sysq.get(key) in (NQ, QOUT, QIN):
                out.append((("system qos",), "no service-policy type %s %s" % (word, sysq[key])))
        out += self._ports(ch, raw, "deleted")
        for t, name in (("network-qos", NQ), ("queuing", QOUT), ("qos", QIN)):
            if name in raw.get("pmaps", {}).get(t, {}):
                out.append(((), "no policy-map type %s %s" % (t, name)))
        for name in raw.get("cmaps", {}):
            if name.startswith("GPUFABRIC-P"):
                out.append(((), "no class-map type qos match-any %s" % name))
        return dedupe(out)
