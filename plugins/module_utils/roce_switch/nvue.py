# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA Cumulus Linux 5.x with NVUE, netmiko ``cumulus_linux``.

Explicit ``default-global`` profiles: ``qos mapping default-global trust l3``
and ``dscp D switch-priority P``; ``qos pfc default-global switch-priority P``
with tx/rx; ``qos congestion-control default-global traffic-class T`` ecn,
min/max-threshold (bytes) and probability; ``qos egress-scheduler default-global
traffic-class C mode strict``; ``interface swpN link mtu M``.  QoS is
switch-wide on NVUE (a port differs only when bound to another profile).
``nv set`` lines stage a pending revision applied by ``nv config apply -y``;
a failure detaches it.  Read-back: ``nv config show -o commands`` (ranges are
expanded); a ``qos roce`` profile is read with its documented defaults.  RoCE on
or off is ``qos roce enable on|off`` up to Cumulus Linux 5.14 and ``qos roce
state enabled|disabled`` from 5.15 (the ``enable`` row of ``nv show qos roce``
became ``state``); both are read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from . import lldp_text
from .base import Driver, dedupe
from .model import compress_ints, default_dscp_map

TRUST_IN = {"l3": "dscp", "l2": "pcp", "both": "both", "port": "port"}
TRUST_OUT = {"dscp": "l3", "pcp": "l2", "both": "both"}
ROCE_ECN = (150000, 1500000)
SIZE = {"B": 1, "Bytes": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}
G = "default-global"


def _ints(text, lo, hi):
    """'24-31,48' -> [24..31, 48]; [] when a piece is not a number or out of range."""
    out = []
    for piece in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", piece)
        if not m:
            return []
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if not lo <= a <= b <= hi:
            return []
        out += list(range(a, b + 1))
    return out


class NvueDriver(Driver):
    nos = "nvue"
    save_exec = "nv config save"
    label = "Cumulus NVUE"
    device_type = "cumulus_linux"
    min_mtu, max_mtu, default_mtu = 552, 9216, 9216
    error_pattern = r"^Error:.*$"
    show_running = "nv config show -o commands"
    show_verify = "nv show qos roce"
    transaction = "pending"
    per_port = ("mtu",)

    def canon_port(self, text):
        m = re.fullmatch(r"swp(\d+)", text.strip())
        if not m:
            raise ValueError(text)
        return "swp" + m.group(1)

    # -- LLDP: ``nv show interface lldp`` (Interface, Speed, Type, Remote Host, Remote Port) ----
    show_lldp = "nv show interface lldp"

    def parse_lldp(self, text, managed=()):
        _h, rows = lldp_text.table(text, r"^Interface\s+Speed\s+Type\s+Remote Host\s+Remote Port$",
                                   ("Interface", "Speed", "Type", "Remote Host", "Remote Port"), self.label)
        out = []
        for line, f in rows:
            local = lldp_text.local_port(self, f[0])
            # the table lists ports that hear a neighbour only (every published
            # output): a row without its remote port is not understood
            if len(f) != 5 or not f[4]:
                if local in managed:
                    lldp_text.unreadable(self, line, "not Interface, Speed, Type, Remote Host, Remote Port")
                continue
            out.append(lldp_text.neighbor(local, sysname=f[3], port_id=f[4]))
        return out

    def expand(self, text):
        out = []
        for piece in text.split(","):
            m = re.fullmatch(r"(?:swp)?(\d+)(?:-(?:swp)?(\d+))?", piece)
            if not m:
                return []
            out += ["swp%d" % i for i in range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1)]
        return out

    def default_strict(self, tc):
        return False

    # -- reading -------------------------------------------------------------
    # 'nv set' lines under these paths name what the collection manages; each
    # must be one of the forms below or the read fails (values checked too).
    MANAGED = re.compile(r"qos (?:roce|mapping|pfc|pfc-watchdog|congestion-control)\b|interface \S+ qos\b")
    FORMS = [
        r"qos roce(?: enable (?:on|off)| state (?:enabled|disabled))?",
        r"qos roce mode (?:lossless|lossy|lossless-single-ipool|lossy-multi-tc)",
        r"qos mapping \S+ trust (?:l2|l3|both|port)",
        r"qos mapping \S+ dscp [\d,\-]+ switch-priority [0-7]",
        r"qos mapping \S+ pcp [\d,\-]+ switch-priority [0-7]",
        r"qos pfc \S+ switch-priority [0-7](?:,[0-7])*",
        r"qos pfc \S+ (?:tx|rx) (?:enable|disable)",
        r"qos pfc \S+ cable-length \d+",
        r"qos pfc-watchdog (?:polling-interval|robustness) \d+",
        r"qos congestion-control \S+ traffic-class [0-7] (?:ecn|red) (?:enable|disable)",
        r"qos congestion-control \S+ traffic-class [0-7] (?:min-threshold|max-threshold|probability) \d+",
        r"interface \S+ qos (?:pfc|mapping|congestion-control|egress-scheduler) profile \S+",
        r"interface \S+ qos pfc-watchdog(?: state (?:enable|disable))?",
    ]

    def parse_raw(self, text):
        cfg = {}
        for line in text.splitlines():
            s = line.strip()
            m = re.fullmatch(r"nv set (.+)", s)
            if not m:
                if re.match(r"nv (?:set|unset)\b", s):
                    self.unreadable(s)
                continue
            rest = " ".join(m.group(1).split())
            if self.MANAGED.match(rest) and not any(re.fullmatch(f, rest) for f in self.FORMS):
                self.unreadable(s)
            words = rest.split()
            if words[:3] == ["qos", "roce", "state"]:  # 5.15+: state enabled|disabled, enable on|off before
                words = ["qos", "roce", "enable", {"enabled": "on", "disabled": "off"}[words[3]]]
            if words[:2] == ["qos", "roce"]:
                if len(words) == 2 or words[2:] == ["enable", "on"]:
                    cfg["qos roce enable"] = "on"
                elif len(words) == 4:
                    cfg["qos roce " + words[2]] = words[3]
                continue
            if words[0] == "interface" and len(words) >= 3:
                path = words[2:]
                keylen = {"link": 2, "qos": 3, "type": 1}.get(path[0], len(path) - 1)
                val = " ".join(path[keylen:]) or None
                for p in self.expand(words[1]):
                    cfg["interface %s %s" % (p, " ".join(path[:keylen]))] = val
                continue
            r = re.fullmatch(r"qos mapping (\S+) dscp ([\d,\-]+) switch-priority ([0-7])", rest)
            if r:
                for d in _ints(r.group(2), 0, 63) or self.unreadable(s, why="DSCP list"):
                    cfg["qos mapping %s dscp %d switch-priority" % (r.group(1), d)] = r.group(3)
                continue
            if len(words) >= 2:
                cfg[" ".join(words[:-1])] = words[-1]
        return cfg

    def parse_views(self, text):
        cfg = self.parse_raw(text)
        roce_on = cfg.get("qos roce enable") == "on" or (
            "qos roce mode" in cfg and cfg.get("qos roce enable") != "off")  # a mode does not undo 'off'
        lossless = roce_on and cfg.get("qos roce mode", "lossless").startswith("lossless")

        def prof(port, kind):
            return cfg.get("interface %s qos %s profile" % (port, kind), G) if port else G

        def trust(mp):
            t = cfg.get("qos mapping %s trust" % mp)
            return TRUST_IN.get(t, t) if t else ("both" if roce_on else "pcp")

        def dmap(mp):
            m = default_dscp_map()
            for k, v in cfg.items():
                r = re.fullmatch(r"qos mapping %s dscp (\d+) switch-priority" % re.escape(mp), k)
                if r:
                    m[int(r.group(1))] = int(v)
            return m

        def prios(pp):
            sp = cfg.get("qos pfc %s switch-priority" % pp)
            return [int(x) for x in sp.split(",")] if sp else ([3] if lossless else [])

        def ecn(cc):
            tcs = {3: list(ROCE_ECN) + [100]} if lossless else {}
            for tc in range(8):
                pre = "qos congestion-control %s traffic-class %d " % (cc, tc)
                if cfg.get(pre + "ecn") == "enable":
                    tcs.setdefault(tc, list(ROCE_ECN) + [100])
                if cfg.get(pre + "ecn") == "disable":
                    tcs.pop(tc, None)
                if tc in tcs:
                    for i, k in enumerate(("min-threshold", "max-threshold", "probability")):
                        if pre + k in cfg:
                            tcs[tc][i] = int(cfg[pre + k])
            if not tcs:
                return None
            tc = min(tcs)
            return {"tc": tc, "min_bytes": tcs[tc][0], "max_bytes": tcs[tc][1], "probability": tcs[tc][2]}

        def strict(es):
            st = set(tc for tc in range(8)
                     if cfg.get("qos egress-scheduler %s traffic-class %d mode" % (es, tc)) == "strict")
            return st or ({6} if roce_on else set())

        def view(port):
            return {"mtu": int(cfg.get("interface %s link mtu" % port) or self.default_mtu),
                    "trust": trust(prof(port, "mapping")), "pfc_priorities": prios(prof(port, "pfc")),
                    "ecn": ecn(prof(port, "congestion-control")), "strict_tcs": strict(prof(port, "egress-scheduler"))}
        explicit = sorted(int(r.group(1)) for r in (re.fullmatch(r"qos mapping %s dscp (\d+) switch-priority" % G, k)
                                                    for k in cfg) if r)
        gp = prios(G)
        switch = {"pfc_priority": min(gp) if gp else None, "trust": trust(G), "ecn": ecn(G),
                  "strict_tcs": strict(G), "dscp_map": dmap(G), "explicit_dscps": explicit}
        seen = sorted(set(k.split()[1] for k in cfg if k.startswith("interface ")), key=lambda p: int(p[3:]))
        return view, seen, switch, {"cfg": cfg, "roce": roce_on}

    def parse_verify(self, text):
        """PFC priorities from ``nv show qos roce`` (switch-wide: key '*'); {}
        when the output has no pfc section (RoCE off: nothing said)."""
        st = self.parse_status(text)
        return {"*": st["pfc_priorities"]} if st and st["pfc_priorities"] is not None else {}

    def parse_status(self, text):
        """``nv show qos roce``: the operational value of each row (the applied
        one where operational is blank) of the table above the first '===' block:
        enable (the ``enable`` row, on|off, up to 5.14; the ``state`` row,
        enabled|disabled, from 5.15), mode, PFC priorities and rx/tx, trust, ECN
        (traffic classes, thresholds in bytes from NVUE's KB/MB at 1024,
        probability)."""
        lines = text.splitlines()
        dash = next((i for i, x in enumerate(lines) if re.fullmatch(r"-+(?: +-+)+ *", x)), None)
        if dash is None:
            if text.strip():
                self.unreadable(lines[0] if lines else text, "nv show qos roce", "no column rule")
            return None
        cols = [m.start() for m in re.finditer(r"-+", lines[dash])]
        rows, section = {}, None
        for i in range(dash + 1, len(lines)):
            line = lines[i].rstrip()
            if not line.strip() or (i + 1 < len(lines) and lines[i + 1].startswith("===")):
                break
            key = line[:cols[1]].strip()
            op = line[cols[1]:cols[2]].strip() if len(cols) > 2 else line[cols[1]:].strip()
            ap = line[cols[2]:].strip() if len(cols) > 2 else ""
            val = op or ap
            if line.startswith(" "):
                rows[(section, key)] = (val, line)
            else:
                section = key
                rows[(None, key)] = (val, line)

        def get(sec, key, pat, what):
            v = rows.get((sec, key))
            if v is None:
                return None
            m = re.fullmatch(pat, v[0])
            if not m:
                self.unreadable(v[1], "nv show qos roce", what)
            return m

        out = {"enable": None, "mode": None, "pfc_priorities": None, "pfc_rx": None, "pfc_tx": None,
               "trust": None, "ecn": None}
        m = get(None, "enable", r"on|off|", "enable") or get(None, "state", r"enabled|disabled|", "state")
        out["enable"] = {"on": True, "enabled": True, "off": False, "disabled": False}.get(m.group(0)) if m else None
        m = get(None, "mode", r"lossless|lossy|lossless-single-ipool|lossy-multi-tc|none|", "mode")
        out["mode"] = (m.group(0) or None) if m else None
        m = get("pfc", "pfc-priority", r"-|[0-7](?:,[0-7])*", "PFC priority")
        if m:
            out["pfc_priorities"] = [int(x) for x in m.group(0).split(",") if x.isdigit()]
        for k in ("rx", "tx"):
            m = get("pfc", k + "-enabled", r"enabled|disabled|yes|no", "PFC %s" % k)
            out["pfc_" + k] = m.group(0) in ("enabled", "yes") if m else None
        m = get("trust", "trust-mode", r"pcp,dscp|dscp,pcp|dscp|pcp|port", "trust")
        if m:
            out["trust"] = {"pcp,dscp": "both", "dscp,pcp": "both"}.get(m.group(0), m.group(0))
        if ("congestion-control", "congestion-mode") in rows:
            e = {}
            m = get("congestion-control", "enabled-tc", r"-|[0-7](?:,[0-7])*", "ECN traffic classes")
            e["tcs"] = [int(x) for x in m.group(0).split(",") if x.isdigit()] if m else []
            for k in ("min", "max"):
                m = get("congestion-control", k + "-threshold", r"(\d+(?:\.\d+)?) ?(Bytes|B|KB|MB|GB)?",
                        "ECN %s threshold" % k)
                e[k + "_bytes"] = int(round(float(m.group(1)) * SIZE[m.group(2) or "B"])) if m else None
            m = get("congestion-control", "probability", r"\d+", "ECN probability")
            e["probability"] = int(m.group(0)) if m else None
            m = get("congestion-control", "congestion-mode", r"ECN|ecn.*|RED|red.*|-", "congestion mode")
            e["mode"] = m.group(0)
            out["ecn"] = e
        return out

    def status_drift(self, want, st):
        """Lines where ``nv show qos roce`` differs from the intent (NVUE's KB/MB
        are rounded: thresholds within 1% count as equal)."""
        if not st or not want:
            return []
        g, out = want["global"], []
        if g["pfc_priority"] is not None and st["mode"] and not st["mode"].startswith("lossless"):
            out.append("RoCE mode %s (intent lossless PFC on priority %d)" % (st["mode"], g["pfc_priority"]))
        if st["trust"] and g["trust"] and st["trust"] != g["trust"]:
            out.append("operational trust %s (intent %s)" % (st["trust"], g["trust"]))
        e, we = st["ecn"], g["ecn"]
        if we and e is not None:
            if we["tc"] not in e["tcs"]:
                out.append("operational ECN on traffic classes %s (intent %d)" % (e["tcs"], we["tc"]))
            for k in ("min_bytes", "max_bytes"):
                if e[k] is not None and abs(e[k] - we[k]) > we[k] / 100.0:
                    out.append("operational ECN %s %d (intent %d)" % (k, e[k], we[k]))
            if e["probability"] is not None and e["probability"] != we["probability"]:
                out.append("operational ECN probability %d (intent %d)" % (e["probability"], we["probability"]))
        return out

    # -- the PFC watchdog: per interface ------------------------------------------
    watchdog_fix = "nv set interface {port} qos pfc-watchdog"

    def watchdog_ports(self, raw, status=None):
        """Ports with 'nv set interface swpN qos pfc-watchdog' (or its 'state
        enable') and no 'state disable'."""
        cfg = raw.get("cfg", {})
        out = set()
        for k in cfg:
            m = re.fullmatch(r"interface (swp\d+) qos pfc-watchdog", k)
            if m and cfg.get(k + " state", "enable") == "enable":
                out.add(m.group(1))
            m = re.fullmatch(r"interface (swp\d+) qos pfc-watchdog state", k)
            if m and cfg[k] == "enable":
                out.add(m.group(1))
        return out

    # -- writing -------------------------------------------------------------
    def ports_arg(self, ports):
        return "swp" + compress_ints(int(p[3:]) for p in ports)

    def item_commands(self, ch, want, have, raw):
        cfg = raw.get("cfg", {})
        state = ch.get("state")
        out = []
        g = ch["global"]
        if state == "deleted" and raw.get("roce"):
            out.append("nv unset qos roce")
        if "trust" in g:
            w = g["trust"][0]
            out.append("nv unset qos mapping %s trust" % G if state == "deleted"
                       else "nv set qos mapping %s trust %s" % (G, TRUST_OUT[w]))
        if "dscp_map" in g:
            for d, p in sorted(g["dscp_map"][0].items()):
                if state != "deleted":
                    out.append("nv set qos mapping %s dscp %d switch-priority %d" % (G, d, p))
        for d in ch["dscp_unset"]:
            out.append("nv unset qos mapping %s dscp %d" % (G, d))
        if "pfc_priority" in g:
            w = g["pfc_priority"][0]
            if w is None:
                out.append("nv unset qos pfc %s" % G)
            else:
                out += ["nv set qos pfc %s switch-priority %d" % (G, w), "nv set qos pfc %s tx enable" % G,
                        "nv set qos pfc %s rx enable" % G]
        if "ecn" in g:
            w, h = g["ecn"]
            if h and (not w or h["tc"] != w["tc"]):
                out.append("nv unset qos congestion-control %s traffic-class %d" % (G, h["tc"]))
            if w:
                pre = "nv set qos congestion-control %s traffic-class %d " % (G, w["tc"])
                out += [pre + "ecn enable", pre + "min-threshold %d" % w["min_bytes"],
                        pre + "max-threshold %d" % w["max_bytes"], pre + "probability %d" % w["probability"]]
        if "cnp" in g:
            w, h = g["cnp"]
            c = (w or h)["priority"]
            out.append("nv set qos egress-scheduler %s traffic-class %d mode strict" % (G, c) if w and w["strict"]
                       else "nv unset qos egress-scheduler %s traffic-class %d" % (G, c))
        by_line = {}
        order = []
        kinds = {"pfc": "pfc", "trust": "mapping", "ecn": "congestion-control", "cnp_strict": "egress-scheduler"}
        for port, diff in ch["ports"].items():
            lines = []
            if "mtu" in diff:
                w = diff["mtu"][0]
                lines.append("nv unset interface {} link mtu" if state == "deleted" and w == self.default_mtu
                             else "nv set interface {} link mtu %d" % w)
            for key, kind in kinds.items():
                if key in diff and "interface %s qos %s profile" % (port, kind) in cfg:
                    lines.append("nv unset interface {} qos %s profile" % kind)
            if diff.get("watchdog", (False,))[0]:
                if cfg.get("interface %s qos pfc-watchdog state" % port) == "disable":
                    lines.append("nv unset interface {} qos pfc-watchdog state")
                lines.append("nv set interface {} qos pfc-watchdog")
            for line in lines:
                if line not in by_line:
                    order.append(line)
                    by_line[line] = []
                by_line[line].append(port)
        for line in order:
            out.append(line.format(self.ports_arg(by_line[line])))
        return dedupe([((), x) for x in out])

    def commit_commands(self):
        return ["nv config apply -y"]

    def abort_commands(self):
        return ["nv config detach"]
