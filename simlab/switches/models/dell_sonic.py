"""Dell Enterprise SONiC model: a Linux shell (`admin@leaf1:~$`) from which
`sonic-cli` starts the Klish CLI; `write memory` saves."""

from __future__ import annotations

import copy
import re

from .base import CliError, Failure, Session, SwitchModel, compress_ints, default_dscp_map


class DellSonicModel(SwitchModel):
    nos = "sonic-dell"
    device_type = "dell_sonic"
    initial_mode = "shell"
    config_modes = frozenset({"config", "if", "dscpmap", "wred", "sched", "schedq"})
    default_mtu = 9100
    user = "admin"

    def default_ports(self):
        return [f"Eth1/{i}" for i in range(1, 33)]

    def canon_port(self, text):
        m = re.fullmatch(r"(?:eth(?:ernet)?)?\s*(\d+/\d+)", text.strip(), re.I)
        if not m:
            raise ValueError(f"not a Dell SONiC port: {text}")
        return f"Eth{m.group(1)}"

    def expand_ports(self, text):
        m = re.fullmatch(r"(?:eth)?(\d+)/(\d+)(?:-(?:(\d+)/)?(\d+))?", text, re.I)
        if not m:
            return None
        if m.group(3) and m.group(3) != m.group(1):
            return None
        a = int(m.group(2))
        b = int(m.group(4) or a)
        if a > b:
            return None
        return [f"Eth{m.group(1)}/{i}" for i in range(a, b + 1)]

    def factory_config(self):
        return {"roce": None, "dscp_maps": {}, "wred": {}, "sched": {}, "ports": {}}

    # -- prompts and errors -----------------------------------------------------
    def prompt(self, s: Session):
        n = self.name
        return {
            "shell": f"{self.user}@{n}:~$ ",
            "exec": f"{n}#",
            "config": f"{n}(config)#",
            "if": f"{n}(conf-if-{s.ctx.get('label')})#",
            "dscpmap": f"{n}(config-dscp-tc-map-{s.ctx.get('name')})#",
            "wred": f"{n}(config-wred-{s.ctx.get('name')})#",
            "sched": f"{n}(config-sched-policy-{s.ctx.get('name')})#",
            "schedq": f"{n}(config-sched-policy-queue-{s.ctx.get('q')})#",
        }[s.mode]

    def error(self, s, line, fail: Failure):
        if s.mode == "shell":
            return f"-bash: {line.split()[0]}: command not found"
        spans = [m.start() for m in re.finditer(r"\S+", line)]
        if fail.reason == "incomplete" or fail.pos >= len(spans):
            return "% Error: Incomplete command"
        return " " * (len(self.prompt(s)) + spans[fail.pos]) + "^\n" \
            '% Error: Invalid input detected at "^" marker.'

    def reject(self, s, line, e):
        return e.message

    # -- grammar -----------------------------------------------------------------
    # -- LLDP: ``show lldp neighbor`` as the SONiC management framework renders it ----
    lldp_command = "show lldp neighbor"

    def lldp_port(self, port):
        # the port's native name as port ID, its standard name as description
        n = int(port.split("/")[-1])
        return ("local", f"Ethernet{4 * (n - 1)}", port)

    def render_lldp(self, neighbors):
        rule = "-----------------------------------------------------------"
        out = [rule, "LLDP Neighbors".ljust(20), rule]
        for n in neighbors:
            out += [f"Interface:   {n['local']},via: LLDP", "  Chassis:", f"    ChassisID:    {n['chassis_id']}",
                    f"    SysName:      {n['sysname']}", f"    SysDescr:     {self.lldp_sysdescr}",
                    f"    TTL:          {n['ttl']}", "    Capability:   MAC_BRIDGE, OFF", "    Capability:   ROUTER, ON",
                    "  Port", f"    PortID:       {n['port_id']}", f"    PortDescr:    {n['port_descr'] or ''}", rule]
        return "\n".join(out) + "\n"

    def build_rules(self):
        add = self.add
        cm = tuple(self.config_modes)
        add("shell", "sonic-cli", lambda s: s.push("exec"))
        add("shell", "exit", lambda s: setattr(s, "closed", True))
        add("shell", "uname [-a]", lambda s, _a=None, **k: f"Linux {self.name} 5.10.0-21-2-amd64 #1 SMP x86_64 GNU/Linux")
        add("exec", "exit", lambda s: s.stack.pop())
        add(("exec",) + cm, "terminal length <n:int:0-512>", lambda s, n: "")
        add("exec", "configure terminal", lambda s: s.push("config"))
        add(cm, "exit", lambda s: s.stack.pop())
        add(cm, "end", lambda s: s.pop_to(2))
        add(("exec",) + cm, "write memory", self.c_save)
        add(("exec",), "copy running-configuration startup-configuration", self.c_save)
        for pre, modes in (("", ("exec",)), ("do ", cm)):
            add(modes, pre + "show running-configuration", lambda s: self.render_running(self.running))
            add(modes, pre + "show running-configuration interface <p:ports>",
                lambda s, p: self.render_running(self.running, only=p))
            add(modes, pre + "show running-configuration interface Eth <p:ports>",
                lambda s, p: self.render_running(self.running, only=p))
            add(modes, pre + "show startup-configuration", lambda s: self.render_running(self.startup))
            add(modes, pre + "show qos map dscp-tc", lambda s: self.show_maps(None))
            add(modes, pre + "show qos map dscp-tc <n:word>", lambda s, n: self.show_maps(n))
            add(modes, pre + "show qos wred-policy", lambda s: self.show_wred())
            add(modes, pre + "show qos interface <p:ports>", self.show_qos_if)
            add(modes, pre + "show qos interface Eth <p:ports>", self.show_qos_if)
            add(modes, pre + "show priority-flow-control statistics", lambda s: self.show_pfc_stats())
            add(modes, pre + "show version", lambda s: "Software Version  : 4.2.0-Enterprise_Base\n"
                                                      "Product           : Enterprise SONiC Distribution by Dell Technologies")
        # global configuration
        add("config", "roce enable", lambda s: self.set_g(s, "roce", [3, 4]))
        add("config", "roce enable pfc-priority <p:ints:0-7>", lambda s, p: self.set_g(s, "roce", p))
        add("config", "no roce enable", lambda s: self.set_g(s, "roce", None))
        add("config", "qos map dscp-tc <n:word>", self.c_map)
        add("config", "no qos map dscp-tc <n:word>", lambda s, n: self.c_del(s, "dscp_maps", n))
        add("config", "qos wred-policy <n:word>", self.c_wred)
        add("config", "no qos wred-policy <n:word>", lambda s, n: self.c_del(s, "wred", n))
        add("config", "qos scheduler-policy <n:word>", self.c_sched)
        add("config", "no qos scheduler-policy <n:word>", lambda s, n: self.c_del(s, "sched", n))
        add("config", "interface <p:ports>", self.c_interface)
        add("config", "interface Eth <p:ports>", self.c_interface)
        add("config", "interface range <p:ports>", self.c_interface)
        add("config", "interface range Eth <p:ports>", self.c_interface)
        # sub-modes
        add("dscpmap", "dscp <d:ints:0-63> traffic-class <tc:int:0-7>", self.m_dscp)
        add("dscpmap", "no dscp <d:ints:0-63>", lambda s, d: self.m_dscp(s, d, None))
        add("wred", "green minimum-threshold <lo:int:1-12288> maximum-threshold <hi:int:1-12288> "
                    "drop-probability <dp:int:0-100>", self.w_green)
        add("wred", "no green", lambda s: self.w_set(s, "green", None))
        add("wred", "ecn <c:choice:green|green-yellow|green-red|all|none>", lambda s, c: self.w_set(s, "ecn", c))
        add("wred", "no ecn", lambda s: self.w_set(s, "ecn", None))
        add("sched", "queue <q:int:0-7>", self.s_queue)
        add("sched", "no queue <q:int:0-7>", lambda s, q: self.cur(s, "sched")["queues"].pop(str(q), None))
        add("schedq", "type <t:choice:strict|dwrr|wrr>", lambda s, t: self.q_set(s, "type", t))
        add("schedq", "weight <w:int:1-100>", lambda s, w: self.q_set(s, "weight", w))
        add("schedq", "no weight", lambda s: self.q_set(s, "weight", None))
        # interface
        add("if", "mtu <mtu:int:1312-9216>", lambda s, mtu: self.p_set(s, "mtu", None if mtu == 9100 else mtu))
        add("if", "no mtu", lambda s: self.p_set(s, "mtu", None))
        add("if", "shutdown", lambda s: self.p_set(s, "shutdown", True))
        add("if", "no shutdown", lambda s: self.p_set(s, "shutdown", None))
        add("if", "qos-map dscp-tc <n:word>", lambda s, n: self.p_ref(s, "dscp_map", "dscp_maps", n))
        add("if", "no qos-map dscp-tc", lambda s: self.p_set(s, "dscp_map", None))
        add("if", "queue <q:int:0-7> wred-policy <n:word>", self.p_wred)
        add("if", "no queue <q:int:0-7> wred-policy", lambda s, q: self.p_wred(s, q, None))
        add("if", "scheduler-policy <n:word>", lambda s, n: self.p_ref(s, "sched", "sched", n))
        add("if", "no scheduler-policy", lambda s: self.p_set(s, "sched", None))
        add("if", "priority-flow-control priority <p:int:0-7>", lambda s, p: self.p_pfc(s, p, True))
        add("if", "no priority-flow-control priority <p:int:0-7>", lambda s, p: self.p_pfc(s, p, False))
        add("if", "priority-flow-control watchdog action <a:choice:drop|forward>",
            lambda s, a: self.p_wd(s, "action", a))
        add("if", "priority-flow-control watchdog on detect-time <t:int:100-5000>",
            lambda s, t: self.p_wd(s, "detect", t))
        add("if", "priority-flow-control watchdog restore-time <t:int:100-60000>",
            lambda s, t: self.p_wd(s, "restore", t))
        add("if", "no priority-flow-control watchdog", lambda s: self.p_set(s, "pfc_wd", None))

    # -- handlers ------------------------------------------------------------------
    def c_save(self, s):
        self.startup = copy.deepcopy(self.running)

    def set_g(self, s, k, v):
        self.cfg(s)[k] = v

    def c_del(self, s, table, n):
        if self.cfg(s)[table].pop(n, None) is None:
            raise CliError(f"% Error: {n} not found")

    def cur(self, s, table):
        f = next(f for f in reversed(s.stack) if "name" in f.ctx)
        return self.cfg(s)[table][f.ctx["name"]]

    def c_map(self, s, n):
        self.cfg(s)["dscp_maps"].setdefault(n, {})
        s.push("dscpmap", name=n)

    def m_dscp(self, s, d, tc):
        m = self.cur(s, "dscp_maps")
        for x in d:
            if tc is None:
                m.pop(str(x), None)
            else:
                m[str(x)] = tc

    def c_wred(self, s, n):
        self.cfg(s)["wred"].setdefault(n, {})
        s.push("wred", name=n)

    def w_green(self, s, lo, hi, dp):
        if lo > hi:
            raise CliError("% Error: minimum-threshold must be less than maximum-threshold")
        self.w_set(s, "green", [lo, hi, dp])

    def w_set(self, s, k, v):
        w = self.cur(s, "wred")
        if v is None:
            w.pop(k, None)
        else:
            w[k] = v

    def c_sched(self, s, n):
        self.cfg(s)["sched"].setdefault(n, {"queues": {}})
        s.push("sched", name=n)

    def s_queue(self, s, q):
        self.cur(s, "sched")["queues"].setdefault(str(q), {})
        s.push("schedq", q=q)

    def q_set(self, s, k, v):
        q = self.cur(s, "sched")["queues"][str(s.ctx["q"])]
        if v is None:
            q.pop(k, None)
        else:
            q[k] = v

    def c_interface(self, s, p):
        self.check_ports(p)
        label = p[0] if len(p) == 1 else "range-eth**"
        s.push("if", ports=p, label=label)

    def p_set(self, s, k, v):
        cfg = self.cfg(s)
        for p in s.ctx["ports"]:
            pc = self.port_cfg(cfg, p)
            if v is None:
                pc.pop(k, None)
            else:
                pc[k] = v
        self.prune(cfg)

    def p_ref(self, s, k, table, n):
        if n not in self.cfg(s)[table]:
            raise CliError(f"% Error: {n} not found")
        self.p_set(s, k, n)

    def p_wred(self, s, q, n):
        if n is not None and n not in self.cfg(s)["wred"]:
            raise CliError(f"% Error: {n} not found")
        cfg = self.cfg(s)
        for p in s.ctx["ports"]:
            pc = self.port_cfg(cfg, p)
            w = pc.setdefault("wred", {})
            if n is None:
                w.pop(str(q), None)
            else:
                w[str(q)] = n
            if not w:
                del pc["wred"]
        self.prune(cfg)

    def p_pfc(self, s, prio, on):
        cfg = self.cfg(s)
        for p in s.ctx["ports"]:
            pc = self.port_cfg(cfg, p)
            cur = set(pc.get("pfc", []))
            (cur.add if on else cur.discard)(prio)
            if cur:
                pc["pfc"] = sorted(cur)
            else:
                pc.pop("pfc", None)
        self.prune(cfg)

    def p_wd(self, s, k, v):
        cfg = self.cfg(s)
        for p in s.ctx["ports"]:
            self.port_cfg(cfg, p).setdefault("pfc_wd", {})[k] = v

    # -- rendering ------------------------------------------------------------------
    def interface_lines(self, p, pc):
        out = [f"interface {p}", f" mtu {pc.get('mtu', self.default_mtu)}"]
        for q, n in sorted(pc.get("wred", {}).items()):
            out.append(f" queue {q} wred-policy {n}")
        if "sched" in pc:
            out.append(f" scheduler-policy {pc['sched']}")
        if "dscp_map" in pc:
            out.append(f" qos-map dscp-tc {pc['dscp_map']}")
        for pr in pc.get("pfc", []):
            out.append(f" priority-flow-control priority {pr}")
        wd = pc.get("pfc_wd", {})
        if "action" in wd:
            out.append(f" priority-flow-control watchdog action {wd['action']}")
        if "detect" in wd:
            out.append(f" priority-flow-control watchdog on detect-time {wd['detect']}")
        if "restore" in wd:
            out.append(f" priority-flow-control watchdog restore-time {wd['restore']}")
        out.append(" shutdown" if pc.get("shutdown") else " no shutdown")
        return out

    def render_running(self, cfg, only=None):
        ports = cfg.get("ports", {})
        if only is not None:
            self.check_ports(only)
            out = []
            for p in only:
                out += ["!"] + self.interface_lines(p, ports.get(p, {}))
            return "\n".join(out)
        out = ["!", f"hostname {self.name}"]
        if cfg.get("roce"):
            out += ["!", f"roce enable pfc-priority {','.join(map(str, cfg['roce']))}"]
        for n, m in cfg["dscp_maps"].items():
            out += ["!", f"qos map dscp-tc {n}"]
            by: dict = {}
            for d, tc in m.items():
                by.setdefault(tc, []).append(int(d))
            for tc in sorted(by):
                out.append(f" dscp {compress_ints(by[tc])} traffic-class {tc}")
        for n, w in cfg["wred"].items():
            out += ["!", f"qos wred-policy {n}"]
            if "green" in w:
                lo, hi, dp = w["green"]
                out.append(f" green minimum-threshold {lo} maximum-threshold {hi} drop-probability {dp}")
            if "ecn" in w:
                out.append(f" ecn {w['ecn']}")
        for n, sp in cfg["sched"].items():
            out += ["!", f"qos scheduler-policy {n}"]
            for q in sorted(sp["queues"], key=int):
                qc = sp["queues"][q]
                out += [" !", f" queue {q}"]
                if "type" in qc:
                    out.append(f"  type {qc['type']}")
                if "weight" in qc:
                    out.append(f"  weight {qc['weight']}")
        for p in self.ports:
            out += ["!"] + self.interface_lines(p, ports.get(p, {}))
        out.append("!")
        return "\n".join(out)

    def show_maps(self, name):
        out = []
        for n, m in self.running["dscp_maps"].items():
            if name and n != name:
                continue
            out += [f"DSCP-TC-MAP: {n}", "-" * 22, f"{'DSCP':<6}TC", "-" * 22]
            out += [f"{int(d):<6}{tc}" for d, tc in sorted(m.items(), key=lambda kv: int(kv[0]))]
            out.append("")
        return "\n".join(out)

    def show_wred(self):
        out = []
        for n, w in self.running["wred"].items():
            g = w.get("green")
            out += [f"Policy          : {n}", f"ecn             : ecn_{w.get('ecn', 'none')}"]
            if g:
                out += [f"green-min-threshold : {g[0]} KBytes", f"green-max-threshold : {g[1]} KBytes",
                        f"green-drop-probability : {g[2]}"]
            out.append("")
        return "\n".join(out)

    def show_qos_if(self, s, p):
        self.check_ports(p)
        out = []
        for port in p:
            v = self.port_view(port)
            pc = self.running["ports"].get(port, {})
            out += [f"Interface: {port}", f"    scheduler-policy        : {pc.get('sched', '-')}",
                    f"    dscp-tc-map             : {pc.get('dscp_map', '-')}",
                    f"    pfc-priority            : {','.join(map(str, v['pfc_priorities'])) or '-'}", ""]
        return "\n".join(out)

    def show_pfc_stats(self):
        out = [f"{'Port':<12}{'Priority':<10}{'Rx':>10}{'Tx':>10}", "-" * 42]
        for p in self.ports:
            c = self.port_counters(p)
            for pr in self.port_view(p)["pfc_priorities"]:
                out.append(f"{p:<12}{'PFC' + str(pr):<10}{c['rx_pfc_pause']:>10}{c['tx_pfc_pause']:>10}")
        return "\n".join(out)

    # -- view -------------------------------------------------------------------------
    def port_view(self, port):
        port = self.canon_port(port)
        cfg = self.running
        pc = cfg["ports"].get(port, {})
        roce = cfg.get("roce")
        trust, dmap = "pcp", {}
        if pc.get("dscp_map") in cfg["dscp_maps"]:
            m = cfg["dscp_maps"][pc["dscp_map"]]
            trust = "dscp"
            dmap = {d: m.get(str(d), 0) for d in range(64)}
        elif roce:
            trust, dmap = "dscp", default_dscp_map()
        prios = pc.get("pfc") or (list(roce) if roce else [])
        ecn = None
        for q, n in sorted(pc.get("wred", {}).items()):
            w = cfg["wred"].get(n, {})
            if w.get("ecn", "none") != "none" and w.get("green"):
                ecn = {"tc": int(q), "min_bytes": w["green"][0] * 1000, "max_bytes": w["green"][1] * 1000}
                break
        strict = 6 if roce else None
        sp = cfg["sched"].get(pc.get("sched"))
        if sp:
            st = [int(q) for q, qc in sp["queues"].items() if qc.get("type") == "strict"]
            strict = 6 if 6 in st else (max(st) if st else None)
        return {
            "up": not pc.get("shutdown"),
            "mtu": pc.get("mtu", self.default_mtu),
            "trust": trust,
            "pfc_priorities": prios,
            "ecn": ecn,
            "cnp_strict_tc": strict,
            "dscp_map": dmap,
        }

    def fault_pfc_off(self, ports):
        for p in ports:
            self.port_cfg(self.running, p).pop("pfc", None)
        if self.running.get("roce") and set(ports) >= set(self.ports):
            self.running["roce"] = None
        self.prune(self.running)

    def fault_watchdog_off(self, ports):
        for p in ports:
            self.port_cfg(self.running, p).pop("pfc_wd", None)
        self.prune(self.running)

    def fault_mtu_low(self, ports, mtu):
        for p in ports:
            pc = self.port_cfg(self.running, p)
            if mtu == self.default_mtu:
                pc.pop("mtu", None)
            else:
                pc["mtu"] = mtu
        self.prune(self.running)
