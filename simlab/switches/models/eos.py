"""Arista EOS model: hierarchical configuration (3-space indent, `!` separators),
`copy running-config startup-config` / `write memory`, configuration sessions
(`configure session NAME` ... `commit` / `abort`)."""

from __future__ import annotations

import copy
import difflib
import re

from .base import CliError, Failure, Session, SwitchModel, MAX_PORT, compress_ints, parse_int_set, default_dscp_map

UNITS = {"bytes": 1, "kbytes": 1000, "mbytes": 1000000, "segments": 208}
TRUST_VIEW = {"dscp": "dscp", "cos": "pcp", "disabled": "none"}


class EosModel(SwitchModel):
    nos = "eos"
    device_type = "arista_eos"
    initial_mode = "exec"
    config_modes = frozenset({"config", "if", "txq"})
    default_mtu = 1500
    mtu_range = (68, 9214)

    def default_ports(self):
        return [f"Ethernet{i}" for i in range(1, 33)]

    def canon_port(self, text):
        m = re.fullmatch(r"(?:ethernet|eth|et)\s*(\d+)", text.strip(), re.I)
        if not m:
            raise ValueError(f"not an EOS port: {text}")
        return f"Ethernet{m.group(1)}"

    def expand_ports(self, text):
        m = re.fullmatch(r"(?:ethernet|eth|et)([\d,\-]+)", text, re.I)
        if not m:
            return None
        nums = parse_int_set(m.group(1), 1, MAX_PORT)
        return None if nums is None else [f"Ethernet{i}" for i in nums]

    def short(self, port):
        return "Et" + port[len("Ethernet"):]

    def factory_config(self):
        return {"qos_map": {}, "ports": {}}

    def factory_extra(self):
        return {"sessions": {}}

    # -- prompts and errors -------------------------------------------------------
    def prompt(self, s: Session):
        if s.mode == "exec":
            return f"{self.name}>"
        if s.mode == "enable":
            return f"{self.name}#"
        sess = f"-s-{s.txn}" if s.txn else ""
        if s.mode == "config":
            return f"{self.name}(config{sess})#" if not sess else f"{self.name}(config{sess})#"
        label = s.stack[-1].ctx.get("label") if s.mode == "if" else s.stack[-2].ctx["label"]
        if s.mode == "if":
            return f"{self.name}(config{sess}-if-{label})#"
        return f"{self.name}(config{sess}-if-{label}-uc-txq-{s.ctx['q']})#"

    def error(self, s, line, fail: Failure):
        words = line.split()
        if fail.reason == "incomplete" or fail.pos >= len(words):
            return "% Incomplete command"
        return f"% Invalid input (at token {fail.pos}: '{words[fail.pos]}')"

    # -- grammar -------------------------------------------------------------------
    # -- LLDP: ``show lldp neighbors`` as ntc-templates' EOS captures print it ----
    lldp_command = "show lldp neighbors"

    def lldp_port(self, port):
        return ("ifname", port, "")

    def render_lldp(self, neighbors):
        rows = [(n["local"].replace("Ethernet", "Et", 1), n["sysname"], n["port_id"], str(n["ttl"])) for n in neighbors]
        out = ["Last table change time   : 0:10:00 ago", "Number of table inserts  : %d" % len(rows),
               "Number of table deletes  : 0", "Number of table drops    : 0", "Number of table age-outs : 0", "",
               "Port          Neighbor Device ID       Neighbor Port ID    TTL",
               "---------- ------------------------ ---------------------- ---"]
        for local, dev, pid, ttl in rows:
            out.append(f"{local:<14}{dev:<25}{pid:<20}{ttl}")
        return "\n".join(out) + "\n"

    def build_rules(self):
        add = self.add
        anyc = ("exec", "enable", "config", "if", "txq")
        add(("exec",), "enable", lambda s: s.push("enable"))
        add(("enable", "config", "if", "txq"), "enable", lambda s: "")
        add(("enable",), "configure terminal", lambda s: s.push("config"))
        add(("enable",), "configure", lambda s: s.push("config"))
        add(("enable", "config"), "configure session <n:word>", self.c_session)
        add(("exec", "enable"), "terminal length <n:int:0-32767>",
            lambda s, n: "Pagination disabled." if n == 0 else "")
        add(("exec", "enable"), "terminal width <n:int:10-32767>", lambda s, n: f"Width set to {n} columns.")
        add(("exec", "enable"), "exit", lambda s: setattr(s, "closed", True))
        add(("config", "if", "txq"), "exit", self.c_exit)
        add(("config", "if", "txq"), "end", self.c_end)
        add(("config", "if", "txq"), "commit", self.c_commit)
        add(("config", "if", "txq"), "abort", self.c_abort)
        add(("enable", "config", "if", "txq"), "copy running-config startup-config", self.c_save)
        add(("enable", "config", "if", "txq"), "write memory", self.c_save)
        add(("enable", "config", "if", "txq"), "write", self.c_save)
        for pre in ("", "do "):
            modes = anyc if not pre else ("config", "if", "txq")
            add(modes, pre + "show running-config", lambda s: self.render_running(self.running))
            add(modes, pre + "show running-config interfaces <p:ports>",
                lambda s, p: self.render_running(self.running, only=p))
            add(modes, pre + "show startup-config", lambda s: self.render_running(self.startup))
            add(modes, pre + "show session-config", self.c_show_session)
            add(modes, pre + "show session-config diffs", lambda s: self.c_session_diffs(s, None))
            add(modes, pre + "show session-config named <n:word>",
                lambda s, n: self.c_show_session(s, n))
            add(modes, pre + "show session-config named <n:word> diffs", self.c_session_diffs)
            add(modes, pre + "show configuration sessions", self.c_show_sessions)
            add(modes, pre + "show priority-flow-control", lambda s: self.render_pfc(self.ports))
            add(modes, pre + "show priority-flow-control status", lambda s: self.render_pfc(self.ports))
            add(modes, pre + "show priority-flow-control interfaces <p:ports>",
                lambda s, p: self.render_pfc(p))
            add(modes, pre + "show priority-flow-control counters", self.c_pfc_counters)
            add(modes, pre + "show priority-flow-control counters detail", self.c_pfc_counters)
            add(modes, pre + "show qos interfaces <p:ports>", self.c_show_qos)
            add(modes, pre + "show qos interfaces <p:ports> ecn", self.c_show_ecn)
            add(modes, pre + "show qos maps", self.c_show_maps)
            add(modes, pre + "show version", lambda s: self.render_version())
            add(modes, pre + "show interfaces <p:ports>", self.c_show_if)
        # global
        add("config", "qos map dscp <d:intlist:0-63> to traffic-class <tc:int:0-7>", self.c_map)
        add("config", "no qos map dscp <d:intlist:0-63> to traffic-class <tc:int:0-7>",
            lambda s, d, tc: self.c_map(s, d, None))
        add("config", "no qos map dscp <d:intlist:0-63>", lambda s, d: self.c_map(s, d, None))
        add("config", "interface <p:ports>", self.c_interface)
        add("config", "priority-flow-control all off", lambda s: self.g_set(s, "pfc_all_off", True))
        add("config", "no priority-flow-control all off", lambda s: self.g_set(s, "pfc_all_off", None))
        # interface
        add("if", "mtu <mtu:int:68-9214>", lambda s, mtu: self.p_set(s, "mtu", None if mtu == 1500 else mtu))
        add("if", "no mtu", lambda s: self.p_set(s, "mtu", None))
        add("if", "default mtu", lambda s: self.p_set(s, "mtu", None))
        add("if", "shutdown", lambda s: self.p_set(s, "shutdown", True))
        add("if", "no shutdown", lambda s: self.p_set(s, "shutdown", None))
        add("if", "qos trust <t:choice:dscp|cos|disabled>", lambda s, t: self.p_set(s, "trust", t))
        add("if", "no qos trust", lambda s: self.p_set(s, "trust", None))
        add("if", "priority-flow-control on", lambda s: self.p_set(s, "pfc_on", True))
        add("if", "priority-flow-control mode on", lambda s: self.p_set(s, "pfc_on", True))
        add("if", "no priority-flow-control", lambda s: self.p_set(s, "pfc_on", None))
        add("if", "no priority-flow-control on", lambda s: self.p_set(s, "pfc_on", None))
        add("if", "no priority-flow-control mode on", lambda s: self.p_set(s, "pfc_on", None))
        add("if", "priority-flow-control priority <p:int:0-7> no-drop", lambda s, p: self.p_nodrop(s, p, True))
        add("if", "priority-flow-control priority <p:int:0-7> drop", lambda s, p: self.p_nodrop(s, p, False))
        add("if", "no priority-flow-control priority <p:int:0-7> [no-drop]",
            lambda s, p, no_drop: self.p_nodrop(s, p, False))
        add("if", "priority-flow-control pause watchdog", lambda s: self.p_set(s, "pfc_wd", True))
        add("if", "no priority-flow-control pause watchdog", lambda s: self.p_set(s, "pfc_wd", None))
        add("if", "uc-tx-queue <q:int:0-7>", self.c_txq)
        add("if", "no uc-tx-queue <q:int:0-7>", self.c_no_txq)
        # uc-tx-queue
        add("txq", "random-detect ecn minimum-threshold <lo:int:1-256000000> <lu:choice:bytes|kbytes|mbytes|segments> "
                   "maximum-threshold <hi:int:1-256000000> <hu:choice:bytes|kbytes|mbytes|segments>", self.q_ecn)
        add("txq", "random-detect ecn minimum-threshold <lo:int:1-256000000> <lu:choice:bytes|kbytes|mbytes|segments> "
                   "maximum-threshold <hi:int:1-256000000> <hu:choice:bytes|kbytes|mbytes|segments> "
                   "max-mark-probability <prob:int:1-100>", self.q_ecn)
        add("txq", "random-detect ecn minimum-threshold <lo:int:1-256000000> <lu:choice:bytes|kbytes|mbytes|segments> "
                   "maximum-threshold <hi:int:1-256000000> <hu:choice:bytes|kbytes|mbytes|segments> "
                   "max-mark-probability <prob:int:1-100> weight <w:int:0-15>", self.q_ecn)
        add("txq", "no random-detect ecn", lambda s: self.q_set(s, "ecn", None))
        add("txq", "random-detect ecn count", lambda s: self.q_set(s, "ecn_count", True))
        add("txq", "no random-detect ecn count", lambda s: self.q_set(s, "ecn_count", None))
        add("txq", "priority strict", lambda s: self.q_set(s, "no_priority", None))
        add("txq", "no priority", lambda s: self.q_set(s, "no_priority", True))
        add("txq", "bandwidth percent <bw:int:1-100>", lambda s, bw: self.q_set(s, "bw", bw))
        add("txq", "no bandwidth percent", lambda s: self.q_set(s, "bw", None))

    # -- handlers ------------------------------------------------------------------
    def c_exit(self, s):
        s.stack.pop()
        if s.mode == "enable":
            s.txn = None

    def c_end(self, s):
        s.pop_to(2)
        s.txn = None

    def c_session(self, s, n):
        self.extra["sessions"].setdefault(n, copy.deepcopy(self.running))
        s.pop_to(2)
        s.txn = n
        s.push("config")

    def c_commit(self, s):
        if not s.txn:
            raise CliError("% No configuration session is active")
        self.running = self.extra["sessions"].pop(s.txn)
        s.txn = None
        s.pop_to(2)

    def c_abort(self, s):
        if not s.txn:
            raise CliError("% No configuration session is active")
        self.extra["sessions"].pop(s.txn, None)
        s.txn = None
        s.pop_to(2)

    def c_save(self, s):
        self.startup = copy.deepcopy(self.running)
        return "Copy completed successfully."

    def c_show_session(self, s, n=None):
        n = n or s.txn
        if not n or n not in self.extra["sessions"]:
            raise CliError("% No configuration session is active" if not n else f"% Session {n} not found")
        return self.render_running(self.extra["sessions"][n])

    def c_session_diffs(self, s, n):
        n = n or s.txn
        if not n or n not in self.extra["sessions"]:
            raise CliError("% No configuration session is active" if not n else f"% Session {n} not found")
        a = self.render_running(self.running).split("\n")
        b = self.render_running(self.extra["sessions"][n]).split("\n")
        return "\n".join(difflib.unified_diff(a, b, "system:/running-config", f"session:/{n}-session-config",
                                              lineterm=""))

    def c_show_sessions(self, s):
        lines = ["Maximum number of completed sessions: 1", "Maximum number of pending sessions: 5", "",
                 "  Name         State         User       Terminal", "  ------------ ------------- ---------- --------"]
        for n in sorted(self.extra["sessions"]):
            lines.append(f"  {n:<12} {'pending':<13}")
        return "\n".join(lines)

    def c_map(self, s, d, tc):
        m = self.cfg(s).setdefault("qos_map", {})
        for x in d:
            if tc is None:
                m.pop(str(x), None)
            else:
                m[str(x)] = tc

    def g_set(self, s, key, val):
        cfg = self.cfg(s)
        if val is None:
            cfg.pop(key, None)
        else:
            cfg[key] = val

    def c_interface(self, s, p):
        self.check_ports(p)
        label = "Et" + compress_ints(int(x[len("Ethernet"):]) for x in p)
        s.push("if", ports=p, label=label)

    def _ports(self, s):
        for f in reversed(s.stack):
            if "ports" in f.ctx:
                return f.ctx["ports"]
        raise CliError("% Incomplete command")

    def p_set(self, s, key, val):
        cfg = self.cfg(s)
        for p in self._ports(s):
            pc = self.port_cfg(cfg, p)
            if val is None:
                pc.pop(key, None)
            else:
                pc[key] = val
        self.prune(cfg)

    def p_nodrop(self, s, prio, on):
        cfg = self.cfg(s)
        for p in self._ports(s):
            pc = self.port_cfg(cfg, p)
            nd = set(pc.get("pfc_nodrop", []))
            (nd.add if on else nd.discard)(prio)
            if nd:
                pc["pfc_nodrop"] = sorted(nd)
            else:
                pc.pop("pfc_nodrop", None)
        self.prune(cfg)

    def c_txq(self, s, q):
        s.push("txq", q=q)

    def c_no_txq(self, s, q):
        cfg = self.cfg(s)
        for p in self._ports(s):
            pc = self.port_cfg(cfg, p)
            pc.get("txq", {}).pop(str(q), None)
            if not pc.get("txq"):
                pc.pop("txq", None)
        self.prune(cfg)

    def q_set(self, s, key, val):
        cfg = self.cfg(s)
        q = str(s.ctx["q"])
        for p in self._ports(s):
            pc = self.port_cfg(cfg, p)
            qc = pc.setdefault("txq", {}).setdefault(q, {})
            if val is None:
                qc.pop(key, None)
            else:
                qc[key] = val
            if not qc:
                del pc["txq"][q]
            if not pc["txq"]:
                del pc["txq"]
        self.prune(cfg)

    def q_ecn(self, s, lo, lu, hi, hu, prob=None, w=None):
        if lo * UNITS[lu] > hi * UNITS[hu]:
            raise CliError("% Minimum threshold must be less than or equal to maximum threshold")
        self.q_set(s, "ecn", [lo, lu, hi, hu, prob, w])

    # -- rendering -------------------------------------------------------------------
    def interface_lines(self, port, pc):
        out = [f"interface {port}"]
        if "mtu" in pc:
            out.append(f"   mtu {pc['mtu']}")
        if pc.get("shutdown"):
            out.append("   shutdown")
        if "trust" in pc:
            out.append(f"   qos trust {pc['trust']}")
        if pc.get("pfc_on"):
            out.append("   priority-flow-control on")
        for p in pc.get("pfc_nodrop", []):
            out.append(f"   priority-flow-control priority {p} no-drop")
        if pc.get("pfc_wd"):
            out.append("   priority-flow-control pause watchdog")
        for q, qc in sorted(pc.get("txq", {}).items(), key=lambda kv: int(kv[0])):
            out += ["   !", f"   uc-tx-queue {q}"]
            if qc.get("no_priority"):
                out.append("      no priority")
            if "bw" in qc:
                out.append(f"      bandwidth percent {qc['bw']}")
            if qc.get("ecn"):
                lo, lu, hi, hu, prob, w = qc["ecn"]
                line = f"      random-detect ecn minimum-threshold {lo} {lu} maximum-threshold {hi} {hu}"
                if prob is not None:
                    line += f" max-mark-probability {prob}"
                if w is not None:
                    line += f" weight {w}"
                out.append(line)
            if qc.get("ecn_count"):
                out.append("      random-detect ecn count")
        return out

    def render_running(self, cfg, only=None):
        ports = cfg.get("ports", {})
        if only is not None:
            out = []
            for p in only:
                if p in self.ports:
                    out += self.interface_lines(p, ports.get(p, {}))
            return "\n".join(out)
        out = ["! Command: show running-config", "! device: %s (DCS-7050CX3-32S, EOS-4.30.1F)" % self.name,
               "!", "! boot system flash:/EOS.swi", "!", "no aaa root", "!", f"hostname {self.name}", "!",
               "spanning-tree mode mstp", "!"]
        bytc: dict = {}
        for d, tc in cfg.get("qos_map", {}).items():
            bytc.setdefault(tc, []).append(int(d))
        if bytc:
            for tc in sorted(bytc):
                out.append(f"qos map dscp {' '.join(map(str, sorted(bytc[tc])))} to traffic-class {tc}")
            out.append("!")
        for p in self.ports:
            out += self.interface_lines(p, ports.get(p, {}))
            out.append("!")
        if cfg.get("pfc_all_off"):
            out += ["priority-flow-control all off", "!"]
        out += ["interface Management1", "!", "no ip routing", "!", "end"]
        return "\n".join(out)

    def render_version(self):
        return ("Arista DCS-7050CX3-32S\nHardware version: 11.00\nSerial number: SIM0001\n"
                "System MAC address: 0200.0000.0001\n\nSoftware image version: 4.30.1F\n"
                "Architecture: x86_64\n")

    def render_pfc(self, ports):
        """``show priority-flow-control`` as EOS prints it (see
        tests/unit/fixtures/switch_real/eos): switch-wide lines, 'Global PFC :
        Enabled|Disabled' (Disabled under 'priority-flow-control all off'), the
        flag legend, two title rows and a rule, then per port a status of three
        flag positions, E|D (configured on), A|- (active: on, a no-drop priority,
        link up), W|- (pause watchdog), and the no-drop priorities (empty if none)."""
        self.check_ports(ports)
        glob = not self.running.get("pfc_all_off")
        lines = ["The hardware supports PFC on priorities 0 1 2 3 4 5 6 7",
                 "PFC receive processing is enabled on priorities 0 1 2 3 4 5 6 7",
                 "The PFC watchdog timeout is 0.0 second(s) (default)",
                 "The PFC watchdog recovery-time is 0.0 second(s) (auto) (default)",
                 "The PFC watchdog polling-interval is 0.0 second(s) (default)",
                 "The PFC watchdog action is errdisable",
                 "The PFC watchdog override action drop is false",
                 "The PFC watchdog non-disruptive priorities are not configured",
                 "The PFC watchdog non-disruptive action is not configured",
                 "The PFC watchdog port non-disruptive-only is false",
                 f"Global PFC : {'Enabled' if glob else 'Disabled'}", "",
                 "E: PFC Enabled, D: PFC Disabled, A: PFC Active, W: PFC Watchdog Enabled",
                 f"{'Port':<11}{'Status':<8}{'Priorities':<12}{'Action':<12}{'Timeout':<9}{'Recovery':<16}"
                 f"{'Polling':<16}Note",
                 f"{'':<52}{'Interval/Mode':<16}Config/Oper", "-" * 87]
        for p in ports:
            pc = self.running.get("ports", {}).get(p, {})
            v = self.port_view(p)
            st = " ".join(("E" if pc.get("pfc_on") else "D",
                           "A" if v["pfc_priorities"] and v["up"] else "-",
                           "W" if pc.get("pfc_wd") else "-"))
            prios = ",".join(map(str, pc.get("pfc_nodrop", [])))
            lines.append(f"{self.short(p):<11}{st:<8}{prios:<12}{'-':<12}{'-':<9}{'- / -':<16}- / -")
        return "\n".join(lines)

    def c_pfc_counters(self, s):
        lines = [f"{'Port':<14}{'RxPfc':>12}{'TxPfc':>12}", "-" * 38]
        for p in self.ports:
            c = self.port_counters(p)
            lines.append(f"{self.short(p):<14}{c['rx_pfc_pause']:>12}{c['tx_pfc_pause']:>12}")
        return "\n".join(lines)

    def c_show_qos(self, s, p):
        self.check_ports(p)
        out = []
        for port in p:
            v = self.port_view(port)
            pc = self.running.get("ports", {}).get(port, {})
            out += [f"{port}:", f"   Trust Mode: {pc.get('trust', 'cos').upper()}",
                    "   Default COS: 0", "   Default DSCP: 0", ""]
            out.append(f"   Tx-Queue   Bandwidth   Priority   Shape Rate   ECN")
            for q in range(8):
                strict = q in self.strict_queues(self.running, port)
                ecn = "Enabled" if pc.get("txq", {}).get(str(q), {}).get("ecn") else "Disabled"
                out.append(f"   {q:<11}{'-' if strict else pc.get('txq', {}).get(str(q), {}).get('bw', '-'):<12}"
                           f"{'SP' if strict else 'RR':<11}{'-':<13}{ecn}")
            out.append("")
        return "\n".join(out)

    def c_show_ecn(self, s, p):
        self.check_ports(p)
        out = []
        for port in p:
            pc = self.running.get("ports", {}).get(port, {})
            out += [f"{port}:", f"{'Tx-Queue':<10}{'Min threshold':<18}{'Max threshold':<18}{'Max mark prob':<14}"]
            for q in range(8):
                e = pc.get("txq", {}).get(str(q), {}).get("ecn")
                if e:
                    out.append(f"{q:<10}{f'{e[0]} {e[1]}':<18}{f'{e[2]} {e[3]}':<18}{e[4] if e[4] else 100}%")
            out.append("")
        return "\n".join(out)

    def c_show_maps(self, s):
        m = self.effective_map(self.running)
        out = ["Dscp Tc map:"]
        for tc in range(8):
            ds = [d for d in range(64) if m[d] == tc]
            out.append(f"   {tc}: {' '.join(map(str, ds))}")
        return "\n".join(out)

    def c_show_if(self, s, p):
        self.check_ports(p)
        out = []
        for port in p:
            v = self.port_view(port)
            c = self.port_counters(port)
            st = "up" if v["up"] else "administratively down"
            out += [f"{port} is {st}, line protocol is {'up' if v['up'] else 'down'} (connected)",
                    f"  IP MTU {v['mtu']} bytes, Ethernet MRU 10240 bytes",
                    f"     {c['rx_packets']} packets input", f"     {c['tx_packets']} packets output"]
        return "\n".join(out)

    # -- view ---------------------------------------------------------------------
    def effective_map(self, cfg):
        m = default_dscp_map()
        for d, tc in cfg.get("qos_map", {}).items():
            m[int(d)] = tc
        return m

    def strict_queues(self, cfg, port):
        pc = cfg.get("ports", {}).get(port, {})
        return {q for q in range(8) if not pc.get("txq", {}).get(str(q), {}).get("no_priority")}

    def port_view(self, port):
        port = self.canon_port(port)
        cfg = self.running
        pc = cfg.get("ports", {}).get(port, {})
        trust = TRUST_VIEW[pc.get("trust", "cos")]
        ecn = None
        for q in sorted(pc.get("txq", {}), key=int):
            e = pc["txq"][q].get("ecn")
            if e:
                ecn = {"tc": int(q), "min_bytes": e[0] * UNITS[e[1]], "max_bytes": e[2] * UNITS[e[3]]}
                break
        strict = self.strict_queues(cfg, port)
        return {
            "up": not pc.get("shutdown"),
            "mtu": pc.get("mtu", self.default_mtu),
            "trust": trust,
            "pfc_priorities": list(pc.get("pfc_nodrop", [])) if pc.get("pfc_on") and not cfg.get("pfc_all_off")
            else [],
            "ecn": ecn,
            "cnp_strict_tc": 6 if 6 in strict else (max(strict) if strict else None),
            "dscp_map": self.effective_map(cfg) if trust == "dscp" else {},
        }

    def fault_pfc_off(self, ports):
        for p in ports:
            pc = self.port_cfg(self.running, p)
            pc.pop("pfc_on", None)
            pc.pop("pfc_nodrop", None)
        self.prune(self.running)

    def fault_watchdog_off(self, ports):
        for p in ports:
            self.port_cfg(self.running, p).pop("pfc_wd", None)
        self.prune(self.running)

    def fault_global_pfc_off(self):
        self.running["pfc_all_off"] = True

    def fault_mtu_low(self, ports, mtu):
        for p in ports:
            pc = self.port_cfg(self.running, p)
            if mtu == self.default_mtu:
                pc.pop("mtu", None)
            else:
                pc["mtu"] = mtu
        self.prune(self.running)
