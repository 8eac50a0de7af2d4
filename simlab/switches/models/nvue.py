"""NVIDIA Cumulus Linux 5.x NVUE model: a Linux shell whose `nv set` / `nv unset`
stage a pending revision, `nv config apply [-y]` makes it the applied revision
(the running configuration) and `nv config save` writes the startup file."""

from __future__ import annotations

import copy
import json
import re

from .base import CliError, Session, SwitchModel, MAX_PORT, compress_ints, parse_int_set, default_dscp_map

NAME = r"[A-Za-z0-9_.\-]+"
IF = r"(?P<if>swp[\d,\-swp]+)"
# (key pattern, value pattern or None for presence-only keys, int range or None)
SCHEMA = [
    (r"qos roce mode", r"lossless|lossy|lossless-single-ipool|lossy-multi-tc", None),
    (r"qos roce enable", r"on|off", None),
    (rf"interface {IF} link mtu", r"\d+", (552, 9216)),
    (rf"interface {IF} link state", r"up|down", None),
    (rf"interface {IF} type", r"swp", None),
    (rf"interface {IF} qos (?:pfc|congestion-control|mapping|egress-scheduler) profile", NAME, None),
    (rf"interface {IF} qos pfc-watchdog", None, None),
    (rf"qos mapping {NAME} trust", r"l2|l3|both|port", None),
    (rf"qos mapping {NAME} dscp \d+ switch-priority", r"[0-7]", None),
    (rf"qos mapping {NAME} pcp [0-7] switch-priority", r"[0-7]", None),
    (rf"qos pfc {NAME} switch-priority", r"[0-7](?:,[0-7])*", None),
    (rf"qos pfc {NAME} (?:tx|rx)", r"enable|disable", None),
    (rf"qos pfc {NAME} cable-length", r"\d+", (10, 100000)),
    (rf"qos congestion-control {NAME} traffic-class [0-7] (?:ecn|red)", r"enable|disable", None),
    (rf"qos congestion-control {NAME} traffic-class [0-7] (?:min-threshold|max-threshold)", r"\d+",
     (1, 1000000000)),
    (rf"qos congestion-control {NAME} traffic-class [0-7] probability", r"\d+", (1, 100)),
    (rf"qos egress-queue-mapping {NAME} switch-priority [0-7] traffic-class", r"[0-7]", None),
    (rf"qos egress-scheduler {NAME} traffic-class [0-7] mode", r"strict|dwrr", None),
    (rf"qos egress-scheduler {NAME} traffic-class [0-7] bw-percent", r"\d+", (1, 100)),
    (rf"qos traffic-pool {NAME} memory-percent", r"\d+", (0, 100)),
    (rf"system hostname", NAME, None),
]
ROCE_ECN = (150000, 1500000)
TRUST_VIEW = {"l2": "pcp", "l3": "dscp", "both": "both", "port": "port"}


class NvueModel(SwitchModel):
    uname = "Linux {name} 6.1.0-cl-1-amd64 #1 SMP Debian 6.1.38-4+cl5.9.0u8 x86_64 GNU/Linux"
    nos = "nvue"
    device_type = "cumulus_linux"
    initial_mode = "shell"
    abbreviate = False
    config_modes = frozenset()
    default_mtu = 9216
    user = "cumulus"

    def default_ports(self):
        return [f"swp{i}" for i in range(1, 33)]

    def canon_port(self, text):
        m = re.fullmatch(r"swp(\d+)", text.strip())
        if not m:
            raise ValueError(f"not a Cumulus port: {text}")
        return text.strip()

    def expand_ports(self, text):
        # swp1-2,32 or swp1-swp2,swp32: the swp prefix is optional on each bound
        nums = parse_int_set(re.sub(r"swp(?=\d)", "", text), 1, MAX_PORT)
        return None if nums is None else [f"swp{i}" for i in nums]

    def factory_config(self):
        return {"system hostname": self.name}

    def factory_extra(self):
        return {"pending": None, "rev": 1, "saved_rev": 1, "history": [1]}

    # -- LLDP: ``nv show interface lldp`` as NVIDIA's NVUE reference prints it ----
    lldp_command = "nv show interface lldp"

    def lldp_port(self, port):
        return ("ifname", port, port)

    def render_lldp(self, neighbors):
        rows = [(n["local"], "400G", "swp", n["sysname"] or "", n["port_id"]) for n in neighbors]
        heads = ("Interface", "Speed", "Type", "Remote Host", "Remote Port")
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(heads)]
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))
        out = [line(heads), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]
        return "\n".join(out) + "\n"

    def build_rules(self):
        pass

    def prompt(self, s: Session):
        if s.mode == "root":
            return f"root@{self.name}:mgmt:/home/{self.user}# "
        return f"{self.user}@{self.name}:mgmt:~$ "

    def is_config_line(self, s, line):
        return bool(re.match(r"\s*(sudo\s+)?nv\s+(set|unset)\s", line))

    def reject(self, s, line, e):
        return e.message

    def fault_error(self, s, line):
        return f"Error: Invalid config [rev_id: {self.pending_rev()}]\n  {line.strip()}: rejected by the platform"

    # -- shell ---------------------------------------------------------------
    comment = "#"

    def run_line(self, s: Session, raw: str) -> str:
        cmd, filters = self.split_pipe(raw)
        words = cmd.split()
        if words[0] == "sudo" and len(words) > 1 and words[1] != "-s":
            words = words[1:]
        try:
            out = self.dispatch(s, words)
        except CliError as e:
            return e.message
        if filters:
            out = self.apply_filters(out or "", [f.replace("grep ", "include ", 1) for f in filters])
        return out or ""

    def dispatch(self, s, w):
        out = self.linux_shell(s, w)
        if out is not None:
            return out
        if w[0] != "nv":
            return f"-bash: {w[0]}: command not found"
        if len(w) == 1:
            return "Usage:\n  nv [options] <command> [<args> ...]"
        verb = w[1]
        if verb == "set":
            return self.nv_set(s, " ".join(w[2:]))
        if verb == "unset":
            return self.nv_unset(s, " ".join(w[2:]))
        if verb == "config":
            return self.nv_config(s, w[2:])
        if verb == "show":
            return self.nv_show(s, w[2:])
        if verb == "action" and w[2:4] == ["clear", "interface"] and w[5:] == ["qos", "roce", "counters"]:
            for p in self.expand_ports(w[4]) or []:
                self.counters.pop(p, None)
            return "Action succeeded"
        raise CliError(f"Error: Invalid Command: {' '.join(w)}")

    # -- nv set / unset ---------------------------------------------------------
    def pending_rev(self):
        return self.extra["rev"] + 1

    def _pending(self):
        if self.extra["pending"] is None:
            self.extra["pending"] = copy.deepcopy(self.running)
        return self.extra["pending"]

    def _keys(self, key_match, path):
        if "if" in key_match.groupdict() and key_match.group("if"):
            ports = self.expand_ports(key_match.group("if"))
            if not ports:
                raise CliError(f"Error: Invalid interface range: {key_match.group('if')}")
            bad = [p for p in ports if p not in self.ports]
            if bad:
                raise CliError(f"Error: Interface {bad[0]} does not exist")
            a, b = key_match.span("if")
            return [path[:a] + p + path[b:] for p in ports]
        return [path]

    def nv_set(self, s, arg):
        arg = arg.strip()
        if arg in ("qos roce", "qos roce enable on"):
            cfg = self._pending()
            cfg["qos roce enable"] = "on"
            return ""
        for kpat, vpat, rng in SCHEMA:
            if vpat is None:
                m = re.fullmatch(kpat, arg)
                if m:
                    cfg = self._pending()
                    for k in self._keys(m, arg):
                        cfg[k] = None
                    return ""
                continue
            m = re.fullmatch(rf"({kpat}) (\S+)", arg)
            if not m:
                continue
            path, val = m.group(1), m.group(m.lastindex)
            km = re.fullmatch(kpat, path)
            if not re.fullmatch(vpat, val):
                raise CliError(f"Error: '{val}' is not one of the valid values for "
                               f"{path.split()[-1]}")
            if rng and not rng[0] <= int(val) <= rng[1]:
                raise CliError(f"Error: {val} is not a valid value for {path.split()[-1]}; "
                               f"valid range is {rng[0]}-{rng[1]}")
            cfg = self._pending()
            for k in self._keys(km, path):
                cfg[k] = val
            return ""
        raise CliError(f"Error: Invalid Command: nv set {arg}")

    def nv_unset(self, s, arg):
        arg = arg.strip()
        if not re.match(r"(interface|qos|system)\b", arg):
            raise CliError(f"Error: Invalid Command: nv unset {arg}")
        paths = [arg]
        m = re.match(r"interface (swp\S+)(.*)$", arg)
        if m:
            ports = self.expand_ports(m.group(1))
            if not ports:
                raise CliError(f"Error: Invalid interface range: {m.group(1)}")
            paths = [f"interface {p}{m.group(2)}" for p in ports]
        cfg = self._pending()
        for path in paths:
            for k in [k for k in cfg if k == path or k.startswith(path + " ")]:
                del cfg[k]
            # 'nv unset interface swp1 link mtu 9216' names the value too
            head, _, last = path.rpartition(" ")
            if head in cfg and cfg[head] == last:
                del cfg[head]
        return ""

    # -- nv config ----------------------------------------------------------------
    def nv_config(self, s, w):
        if not w:
            raise CliError("Error: Invalid Command: nv config")
        sub, opts = w[0], w[1:]
        out_fmt = opts[opts.index("-o") + 1] if "-o" in opts and opts.index("-o") + 1 < len(opts) else None
        if sub == "apply":
            yes = "-y" in opts or "--assume-yes" in opts
            pend = self.extra["pending"]
            if pend is None or pend == self.running:
                self.extra["pending"] = None
                return "Warning: Nothing to apply"
            if not yes:
                def answer(a):
                    if a.lower() in ("y", "yes"):
                        return self._apply()
                    return "Aborted: the pending revision was not applied"
                s.pending_prompt = answer
                s.flags["no_newline_prompt"] = True
                return ("Warning: The following services will be restarted: switchd\n"
                        "Are you sure? [y/N] ")
            return self._apply()
        if sub == "save":
            self.startup = copy.deepcopy(self.running)
            self.extra["saved_rev"] = self.extra["rev"]
            return f"saved [rev_id: {self.extra['rev']}]"
        if sub == "detach":
            self.extra["pending"] = None
            return ""
        if sub == "diff":
            new = self.extra["pending"] if self.extra["pending"] is not None else self.running
            return "\n".join(self.diff_commands(self.running, new))
        if sub == "show":
            src = self.running
            if "-r" in opts:
                rev = opts[opts.index("-r") + 1] if opts.index("-r") + 1 < len(opts) else ""
                src = {"pending": self.extra["pending"] or self.running, "applied": self.running,
                       "startup": self.startup}.get(rev)
                if src is None:
                    raise CliError(f"Error: Unknown revision: {rev}")
            if out_fmt == "commands":
                return "\n".join(self.render_commands(src))
            if out_fmt == "json":
                return json.dumps(self.tree(src), indent=2)
            return self.render_yaml(src)
        if sub == "history":
            return "\n".join(f"- rev_id: {r}" for r in self.extra["history"])
        if sub == "revision":
            return f"applied: {self.extra['rev']}\npending: {self.pending_rev() if self.extra['pending'] else '-'}"
        raise CliError(f"Error: Invalid Command: nv config {' '.join(w)}")

    def _apply(self):
        self.running = self.extra["pending"]
        self.extra["pending"] = None
        self.extra["rev"] += 1
        self.extra["history"].append(self.extra["rev"])
        return f"applied [rev_id: {self.extra['rev']}]"

    # -- rendering ------------------------------------------------------------------
    def render_commands(self, cfg):
        groups: dict = {}
        order = {p: i for i, p in enumerate(self.ports)}
        for k, v in cfg.items():
            m = re.match(r"interface (swp\d+)( .*)?$", k)
            if m:
                groups.setdefault(("interface", m.group(2) or "", v), []).append(m.group(1))
            else:
                groups.setdefault((k, "", v), [])
        lines = []
        for (k, tail, v), ports in groups.items():
            if k == "interface":
                ports.sort(key=lambda p: order.get(p, 1 << 20))
                rng = self.compress(ports)
                line = f"nv set interface {rng}{tail}"
                sortkey = ("interface", tail, order.get(ports[0], 0))
            else:
                line = f"nv set {k}"
                sortkey = (k.split()[0], self._natural(k), 0)
            if v is not None:
                line += f" {v}"
            lines.append((sortkey, line))
        return [line for _, line in sorted(lines, key=lambda x: (x[0][0], x[0][1], x[0][2]))]

    @staticmethod
    def _natural(text):
        return "".join(f"{int(t):08d}" if t.isdigit() else t for t in re.split(r"(\d+)", text))

    def compress(self, ports):
        nums = [int(p[3:]) for p in ports]
        runs = []
        for n in nums:
            if runs and n == runs[-1][1] + 1:
                runs[-1][1] = n
            else:
                runs.append([n, n])
        body = ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)
        return "swp" + body

    def diff_commands(self, old, new):
        out = []
        for k in sorted(old, key=self._natural):
            if k not in new:
                out.append(f"nv unset {k}")
        added = {k: v for k, v in new.items() if k not in old or old[k] != v}
        out += self.render_commands(added)
        return out

    def tree(self, cfg):
        t: dict = {}
        for k, v in cfg.items():
            parts = k.split()
            node = t
            for p in parts[:-1]:
                node = node.setdefault(p, {})
            leaf = parts[-1]
            if v is None:
                node.setdefault(leaf, {})
            else:
                node[leaf] = int(v) if v.isdigit() else v
        return t

    def render_yaml(self, cfg):
        lines = ["- header:", "    model: SN4700", "    nvue-api-version: nvue_v1",
                 f"    rev-id: {self.extra['rev']}.0", "    version: Cumulus Linux 5.9.0", "- set:"]

        def emit(node, ind):
            for k in sorted(node, key=self._natural):
                v = node[k]
                if isinstance(v, dict):
                    lines.append(" " * ind + f"{k}:" + (" {}" if not v else ""))
                    emit(v, ind + 2)
                else:
                    lines.append(" " * ind + f"{k}: {v}")
        emit(self.tree(cfg), 4)
        return "\n".join(lines)

    # -- nv show ----------------------------------------------------------------------
    def nv_show(self, s, w):
        fmt_json = "-o" in w and "json" in w
        w = [x for x in w if x not in ("-o", "json")]
        if w == ["qos", "roce"]:
            return self.show_roce(fmt_json)
        m = re.fullmatch(r"interface (swp\d+) qos roce (status|counters)", " ".join(w))
        if m:
            port = m.group(1)
            if port not in self.ports:
                raise CliError(f"Error: The requested item does not exist: interface {port}")
            if m.group(2) == "status":
                return self.show_port_roce(port, fmt_json)
            c = self.port_counters(port)
            data = {"rx-pfc-stats": {"pause-packets": c["rx_pfc_pause"]},
                    "tx-pfc-stats": {"pause-packets": c["tx_pfc_pause"]},
                    "tx-ecn-stats": {"ecn-marked-packets": c["ecn_marked"]},
                    "tx-cnp-stats": {"cnp-packets": c["cnp_sent"]}}
            if fmt_json:
                return json.dumps(data, indent=2)
            lines = []
            for sec, vals in data.items():
                lines.append(sec)
                for k, v in vals.items():
                    lines.append(f"  {k:<28}{v}")
            return "\n".join(lines)
        m = re.fullmatch(r"interface (swp\d+)(?: link)?", " ".join(w))
        if m and m.group(1) in self.ports:
            v = self.port_view(m.group(1))
            return (f"{'':<24}operational  applied\n{'-' * 48}\n"
                    f"{'link':<4}\n  {'mtu':<22}{v['mtu']:<13}{v['mtu']}\n"
                    f"  {'state':<22}{'up' if v['up'] else 'down':<13}{'up' if v['up'] else 'down'}")
        raise CliError(f"Error: Invalid Command: nv show {' '.join(w)}")

    @staticmethod
    def _size(n):
        """Bytes as NVUE prints them: KB/MB at 1024, two decimals."""
        if n >= 1024 ** 2:
            return f"{n / 1024 ** 2:.2f} MB"
        if n >= 1024:
            return f"{n / 1024:.2f} KB"
        return f"{n} Bytes"

    def show_roce(self, fmt_json):
        """``nv show qos roce`` in Cumulus Linux 5.14's layout: an operational /
        applied table (enable, mode, pfc, congestion-control, trust,
        lldp-app-tlv), then the DSCP->SP, SP->TC and pool tables."""
        cfg = self.running
        on = cfg.get("qos roce enable") == "on" or "qos roce mode" in cfg
        mode = cfg.get("qos roce mode", "lossless") if on else ""
        v = self.port_view(self.ports[0]) if self.ports else {}
        ecn = v.get("ecn")
        trust = {"both": "pcp,dscp", "dscp": "dscp", "pcp": "pcp"}.get(v.get("trust"), str(v.get("trust")))
        rows = [("enable", "", "on" if on else "off"), ("mode", mode, mode)]
        if v.get("pfc_priorities"):
            rows += [("pfc", "", ""), ("  pfc-priority", ",".join(map(str, v["pfc_priorities"])), ""),
                     ("  rx-enabled", "enabled", ""), ("  tx-enabled", "enabled", ""),
                     ("  cable-length", cfg.get("qos pfc default-global cable-length", "100"), "")]
        if ecn:
            rows += [("congestion-control", "", ""), ("  congestion-mode", "ECN", ""),
                     ("  enabled-tc", str(ecn["tc"]), ""), ("  min-threshold", self._size(ecn["min_bytes"]), ""),
                     ("  max-threshold", self._size(ecn["max_bytes"]), ""),
                     ("  probability", cfg.get(f"qos congestion-control default-global traffic-class {ecn['tc']} "
                                               "probability", "100"), "")]
        rows += [("trust", "", ""), ("  trust-mode", trust, "")]
        if on:
            rows += [("lldp-app-tlv", "", ""), ("  priority", "3", ""), ("  protocol-id", "4791", ""),
                     ("  selector", "UDP", "")]
        if fmt_json:
            return json.dumps({"enable": "on" if on else "off", "mode": mode,
                               "pfc": {"pfc-priority": v.get("pfc_priorities", [])},
                               "trust": {"trust-mode": trust}, "congestion-control": ecn or {}}, indent=2)
        w1 = max([11] + [len(r[1]) for r in rows])
        w2 = max([7] + [len(r[2]) for r in rows])
        out = [" " * 20 + "operational".ljust(w1) + "  applied", "-" * 18 + "  " + "-" * w1 + "  " + "-" * w2]
        out += [(f"{k:<20}{op:<{w1}}  {ap}").rstrip() for k, op, ap in rows]
        dmap = v.get("dscp_map") or default_dscp_map()
        by_sp: dict = {}
        for d, sp in sorted(dmap.items()):
            by_sp.setdefault(sp, []).append(d)
        out += ["RoCE PCP/DSCP->SP mapping configurations", "=" * 43,
                f"       {'pcp':<5}{'dscp':<25}switch-prio", f"    -  {'---':<5}{'-' * 23:<25}{'-' * 11}"]
        for sp in range(8):
            ds = ",".join(map(str, by_sp.get(sp, []))) or "-"
            out.append(f"    {sp}  {sp:<5}{ds:<25}{sp}")
        strict = v.get("cnp_strict_tc")
        out += ["RoCE SP->TC mapping and ETS configurations", "=" * 45,
                f"       {'switch-prio':<13}{'traffic-class':<15}scheduler-weight",
                f"    -  {'-' * 11:<13}{'-' * 13:<15}{'-' * 16}"]
        for sp in range(8):
            tc = sp if sp in (3, 6) else 0
            out.append(f"    {sp}  {sp:<13}{tc:<15}{'strict-priority' if sp == strict else 'DWRR-50%'}")
        out += ["RoCE pool config", "=" * 19,
                f"       {'name':<23}{'mode':<9}{'size':<6}{'switch-priorities':<19}traffic-class",
                f"    -  {'-' * 21:<23}{'-' * 7:<9}{'-' * 4:<6}{'-' * 17:<19}{'-' * 13}"]
        if on:
            out += [f"    0  {'lossy-default-ingress':<23}{'Dynamic':<9}{'50%':<6}{'0,1,2,4,5,6,7':<19}-",
                    f"    1  {'roce-reserved-ingress':<23}{'Dynamic':<9}{'50%':<6}{'3':<19}-",
                    f"    2  {'lossy-default-egress':<23}{'Dynamic':<9}{'50%':<6}{'-':<19}0,6",
                    f"    3  {'roce-reserved-egress':<23}{'Dynamic':<9}{'inf':<6}{'-':<19}3"]
        out += ["Exception List", "=" * 17, "No Data"]
        return "\n".join(out)

    def show_port_roce(self, port, fmt_json):
        v = self.port_view(port)
        if fmt_json:
            return json.dumps({k: v[k] for k in v if k != "dscp_map"}, indent=2)
        ecn = v["ecn"]
        lines = [f"{'':<26}operational", "-" * 40,
                 f"{'status':<26}{'enabled' if v['pfc_priorities'] else 'disabled'}",
                 f"{'trust-mode':<26}{v['trust']}",
                 f"{'pfc':<26}",
                 f"  {'pfc-priority':<24}{','.join(map(str, v['pfc_priorities'])) or '-'}",
                 "congestion-control",
                 f"  {'congestion-mode':<24}{'ECN' if ecn else '-'}",
                 f"  {'enabled-tc':<24}{ecn['tc'] if ecn else '-'}",
                 f"  {'min-threshold':<24}{ecn['min_bytes'] if ecn else '-'}",
                 f"  {'max-threshold':<24}{ecn['max_bytes'] if ecn else '-'}",
                 "", "RoCE PCP/DSCP->SP mapping configurations",
                 "===========================================",
                 f"    {'':<6}{'pcp':<6}{'dscp':<22}switch-prio"]
        by_sp: dict = {}
        for d, sp in sorted(v["dscp_map"].items()):
            by_sp.setdefault(sp, []).append(d)
        for sp in sorted(by_sp):
            lines.append(f"    {sp:<6}{sp:<6}{compress_ints(by_sp[sp]):<22}{sp}")
        lines += ["", "RoCE SP->TC mapping and ETS configurations",
                  "===========================================",
                  f"    {'switch-prio':<13}{'traffic-class':<15}{'scheduler-weight'}"]
        for sp in range(8):
            mode = "strict" if sp == v["cnp_strict_tc"] else "dwrr-50%" if sp in (0, 3) else "-"
            lines.append(f"    {sp:<13}{sp:<15}{mode}")
        return "\n".join(lines)

    # -- view -------------------------------------------------------------------------
    def _profile(self, cfg, port, kind):
        return cfg.get(f"interface {port} qos {kind} profile", "default-global")

    def port_view(self, port):
        port = self.canon_port(port)
        cfg = self.running
        roce_on = cfg.get("qos roce enable") == "on" or "qos roce mode" in cfg
        lossless = roce_on and cfg.get("qos roce mode", "lossless").startswith("lossless")
        mp = self._profile(cfg, port, "mapping")
        trust = cfg.get(f"qos mapping {mp} trust")
        trust = TRUST_VIEW[trust] if trust else ("both" if roce_on else "pcp")
        dmap = {}
        if trust in ("dscp", "both"):
            dmap = default_dscp_map()
            for k, v in cfg.items():
                m = re.fullmatch(rf"qos mapping {re.escape(mp)} dscp (\d+) switch-priority", k)
                if m:
                    dmap[int(m.group(1))] = int(v)
        pp = self._profile(cfg, port, "pfc")
        sp = cfg.get(f"qos pfc {pp} switch-priority")
        prios = [int(x) for x in sp.split(",")] if sp else ([3] if lossless else [])
        cc = self._profile(cfg, port, "congestion-control")
        ecn = None
        tcs = {}
        if lossless:
            tcs[3] = list(ROCE_ECN)
        for tc in range(8):
            pre = f"qos congestion-control {cc} traffic-class {tc}"
            if cfg.get(pre + " ecn") == "enable":
                tcs.setdefault(tc, list(ROCE_ECN))
            if cfg.get(pre + " ecn") == "disable":
                tcs.pop(tc, None)
                continue
            if tc in tcs:
                if pre + " min-threshold" in cfg:
                    tcs[tc][0] = int(cfg[pre + " min-threshold"])
                if pre + " max-threshold" in cfg:
                    tcs[tc][1] = int(cfg[pre + " max-threshold"])
        if tcs:
            tc = min(tcs)
            ecn = {"tc": tc, "min_bytes": tcs[tc][0], "max_bytes": tcs[tc][1]}
        strict = None
        es = self._profile(cfg, port, "egress-scheduler")
        for tc in range(8):
            if cfg.get(f"qos egress-scheduler {es} traffic-class {tc} mode") == "strict":
                strict = tc
        if strict is None and roce_on:
            strict = 6
        return {
            "up": cfg.get(f"interface {port} link state", "up") == "up",
            "mtu": int(cfg.get(f"interface {port} link mtu", self.default_mtu)),
            "trust": trust,
            "pfc_priorities": prios,
            "ecn": ecn,
            "cnp_strict_tc": strict,
            "dscp_map": dmap,
        }

    def fault_pfc_off(self, ports):
        # NVUE's PFC configuration is global: the fault removes it for every port.
        cfg = self.running
        for k in [k for k in cfg if k.startswith("qos pfc ")]:
            del cfg[k]
        if cfg.get("qos roce enable") == "on" or "qos roce mode" in cfg:
            cfg["qos roce mode"] = "lossy"

    def fault_watchdog_off(self, ports):
        for p in ports:
            for k in (f"interface {p} qos pfc-watchdog", f"interface {p} qos pfc-watchdog state"):
                self.running.pop(k, None)

    def fault_mtu_low(self, ports, mtu):
        for p in ports:
            if mtu == self.default_mtu:
                self.running.pop(f"interface {p} link mtu", None)
            else:
                self.running[f"interface {p} link mtu"] = str(mtu)
