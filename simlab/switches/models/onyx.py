"""NVIDIA Onyx (MLNX-OS) model: flat configuration lines, `configuration write`,
named configuration files (`configuration write to`, `configuration switch-to`, which asks to
reboot the switch into the file)."""

from __future__ import annotations

import copy
import re

from .base import CliError, Failure, Session, SwitchModel, default_dscp_map

TRUST_VIEW = {"L2": "pcp", "L3": "dscp", "both": "both"}
ROCE_ECN = (150, 1500)  # KB, the `roce lossless` profile


class OnyxModel(SwitchModel):
    nos = "onyx"
    device_type = "mellanox_mlnxos"
    initial_mode = "exec"
    config_modes = frozenset({"config", "if"})
    default_mtu = 1500
    mtu_range = (1500, 9216)

    # -- ports -------------------------------------------------------------
    def default_ports(self):
        return [f"1/{i}" for i in range(1, 33)]

    def canon_port(self, text):
        m = re.fullmatch(r"(?:(?:ethernet|eth)\s*)?(\d+/\d+)", text.strip(), re.I)
        if not m:
            raise ValueError(f"not an Onyx port: {text}")
        return m.group(1)

    def expand_ports(self, text):
        m = re.fullmatch(r"(\d+)/(\d+)(?:-(\d+)/(\d+))?", text)
        if not m:
            return None
        if not m.group(3):
            return [text]
        if m.group(1) != m.group(3) or int(m.group(2)) > int(m.group(4)):
            return None
        return [f"{m.group(1)}/{i}" for i in range(int(m.group(2)), int(m.group(4)) + 1)]

    def compress_ports(self, ports):
        order = {p: i for i, p in enumerate(self.ports)}
        ps = sorted(ports, key=lambda p: order.get(p, 1 << 20))
        runs = []
        for p in ps:
            if runs and order.get(p) == order.get(runs[-1][-1], -9) + 1 \
                    and p.split("/")[0] == runs[-1][0].split("/")[0]:
                runs[-1].append(p)
            else:
                runs.append([p])
        return [r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs]

    # -- state -------------------------------------------------------------
    def factory_config(self):
        return {"roce": None, "pfc_enable": False, "pfc_prios": [], "ports": {}}

    def factory_extra(self):
        return {"files": {"initial": self.factory_config()}, "active": "initial"}

    # -- prompts and errors -------------------------------------------------
    def prompt(self, s: Session):
        base = f"{self.name} [standalone: master] "
        if s.mode == "exec":
            return base + "> "
        if s.mode == "enable":
            return base + "# "
        if s.mode == "config":
            return base + "(config) # "
        return base + f"(config interface ethernet {s.ctx['label']}) # "

    def error(self, s: Session, line: str, fail: Failure):
        spans = [m.start() for m in re.finditer(r"\S+", line)]
        if fail.reason == "incomplete" or fail.pos >= len(spans):
            return "% Incomplete command."
        caret = " " * (len(self.prompt(s)) + spans[fail.pos]) + "^"
        return caret + "\n% Unrecognized command found at '^' position."

    def reject(self, s, line, e: CliError):
        return e.message

    # -- grammar -------------------------------------------------------------
    # -- LLDP: ``show lldp remote`` as Onyx prints it (intel/mfd-switchmanagement's capture) ----
    lldp_command = "show lldp remote"

    def lldp_port(self, port):
        return ("local", "Eth" + port.split()[-1], "")

    def render_lldp(self, neighbors):
        rule = "-" * 80
        out = [rule, "Local Interface      Device ID            Port ID              System Name", rule]
        for n in neighbors:
            local = "Eth" + n["local"].split()[-1]
            out.append(f"{local:<21}{n['chassis_id']:<21}{n['port_id']:<21}{n['sysname'] or 'Not Advertised'}")
        return "\n".join(out) + "\n"

    def build_rules(self):
        add = self.add
        anyc = ("exec", "enable", "config", "if")
        add(("exec",), "enable", self.c_enable)
        add(("enable", "config", "if"), "enable", lambda s: "")
        add(("enable",), "configure terminal", self.c_configure)
        add(anyc, "no cli session paging enable", lambda s: "")
        add(anyc, "terminal length <n:int:0-999>", lambda s, n: "")
        add(anyc, "terminal width <n:int:0-999>", lambda s, n: "")
        add(("exec", "enable"), "exit", self.c_logout)
        add(("config", "if"), "exit", self.c_exit)
        # show commands (valid in every mode)
        add(anyc, "show running-config", lambda s: self.render_running(self.running))
        add(anyc, "show configuration running", lambda s: self.render_running(self.running))
        add(anyc, "show configuration files", self.c_show_files)
        add(anyc, "show configuration files <f:word>", self.c_show_file)
        add(anyc, "show roce", lambda s: self.render_show_roce())
        add(anyc, "show dcb priority-flow-control", lambda s: self.render_show_pfc())
        add(anyc, "show version", lambda s: self.render_version())
        add(anyc, "show qos interface ethernet <p:ports>", self.c_show_qos)
        add(anyc, "show interfaces ethernet <p:ports>", self.c_show_if)
        add(anyc, "show interfaces ethernet <p:ports> congestion-control", self.c_show_cc)
        add(anyc, "show interfaces ethernet <p:ports> counters pfc prio <prio:int:0-7>",
            self.c_show_pfc_counters)
        add(anyc, "show dcb ets interface ethernet <p:ports>", self.c_show_ets)
        # global configuration
        add("config", "roce", lambda s: self.set_global(s, "roce", "lossless"))
        add("config", "roce <m:choice:lossless|lossy|semi-lossless>",
            lambda s, m: self.set_global(s, "roce", m))
        add("config", "no roce", lambda s: self.set_global(s, "roce", None))
        add("config", "dcb priority-flow-control enable [force]",
            lambda s, force: self.set_global(s, "pfc_enable", True))
        add("config", "no dcb priority-flow-control enable [force]",
            lambda s, force: self.set_global(s, "pfc_enable", False))
        add("config", "dcb priority-flow-control priority <p:int:0-7> enable", self.c_pfc_prio)
        add("config", "no dcb priority-flow-control priority <p:int:0-7> enable",
            lambda s, p: self.c_pfc_prio(s, p, remove=True))
        add("config", "interface ethernet <p:ports>", self.c_interface)
        add("config", "configuration write", self.c_write)
        add("config", "write memory", self.c_write)
        add("config", "configuration write to <f:word> [no-switch]", self.c_write_to)
        add("config", "configuration switch-to <f:word>", self.c_switch_to)
        add("config", "configuration delete <f:word>", self.c_delete)
        # per-port configuration: with the 'interface ethernet X' prefix or in the port mode
        port_cmds = [
            ("mtu <mtu:int:1500-9216> [force]", self.p_mtu),
            ("no mtu [force]", lambda s, ports, force: self.p_set(s, ports, "mtu", None)),
            ("shutdown", lambda s, ports: self.p_set(s, ports, "shutdown", True)),
            ("no shutdown", lambda s, ports: self.p_set(s, ports, "shutdown", None)),
            ("qos trust <t:choice:L2|L3|both>",
             lambda s, ports, t: self.p_set(s, ports, "trust", None if t == "L2" else t)),
            ("no qos trust", lambda s, ports: self.p_set(s, ports, "trust", None)),
            ("dcb priority-flow-control mode on [force]",
             lambda s, ports, force: self.p_set(s, ports, "pfc", True)),
            ("no dcb priority-flow-control mode [force]",
             lambda s, ports, force: self.p_set(s, ports, "pfc", None)),
            ("traffic-class <tc:int:0-7> congestion-control ecn minimum-absolute "
             "<lo:int:1-16000> maximum-absolute <hi:int:1-16000>", self.p_ecn),
            ("no traffic-class <tc:int:0-7> congestion-control", self.p_no_ecn),
            ("traffic-class <tc:int:0-7> dcb ets strict", self.p_strict),
            ("no traffic-class <tc:int:0-7> dcb ets [strict]",
             lambda s, ports, tc, strict: self.p_strict(s, ports, tc, remove=True)),
            ("pfc-wd", lambda s, ports: self.p_set(s, ports, "pfc_wd", True)),
            ("no pfc-wd", lambda s, ports: self.p_set(s, ports, "pfc_wd", None)),
        ]
        for pat, fn in port_cmds:
            self.add("config", "interface ethernet <ports:ports> " + pat, fn)
            self.add("if", pat, self._in_port(fn))

    def _in_port(self, fn):
        return lambda s, **kw: fn(s, s.ctx["ports"], **kw)

    # -- handlers -------------------------------------------------------------
    def c_enable(self, s):
        s.push("enable")

    def c_configure(self, s):
        s.push("config")

    def c_logout(self, s):
        s.closed = True

    def c_exit(self, s):
        s.stack.pop()

    def c_interface(self, s, p):
        self.check_ports(p)
        label = p[0] if len(p) == 1 else f"{p[0]}-{p[-1]}"
        s.push("if", ports=p, label=label)

    def set_global(self, s, key, val):
        self.cfg(s)[key] = val

    def c_pfc_prio(self, s, p, remove=False):
        prios = set(self.cfg(s)["pfc_prios"])
        (prios.discard if remove else prios.add)(p)
        self.cfg(s)["pfc_prios"] = sorted(prios)

    def p_set(self, s, ports, key, val):
        self.check_ports(ports)
        cfg = self.cfg(s)
        for p in ports:
            pc = self.port_cfg(cfg, p)
            if val is None:
                pc.pop(key, None)
            else:
                pc[key] = val
        self.prune(cfg)

    def p_mtu(self, s, ports, mtu, force):
        self.p_set(s, ports, "mtu", None if mtu == self.default_mtu else mtu)

    def p_ecn(self, s, ports, tc, lo, hi):
        if lo > hi:
            raise CliError("% Minimum threshold must be lower than maximum threshold")
        self.check_ports(ports)
        for p in ports:
            self.port_cfg(self.cfg(s), p).setdefault("ecn", {})[str(tc)] = [lo, hi]

    def p_no_ecn(self, s, ports, tc):
        self.check_ports(ports)
        cfg = self.cfg(s)
        for p in ports:
            pc = self.port_cfg(cfg, p)
            pc.get("ecn", {}).pop(str(tc), None)
            if not pc.get("ecn"):
                pc.pop("ecn", None)
        self.prune(cfg)

    def p_strict(self, s, ports, tc, remove=False):
        self.check_ports(ports)
        cfg = self.cfg(s)
        for p in ports:
            pc = self.port_cfg(cfg, p)
            st = set(pc.get("strict", []))
            (st.discard if remove else st.add)(tc)
            if st:
                pc["strict"] = sorted(st)
            else:
                pc.pop("strict", None)
        self.prune(cfg)

    def c_write(self, s):
        self.startup = copy.deepcopy(self.running)
        self.extra["files"][self.extra["active"]] = copy.deepcopy(self.running)

    def c_write_to(self, s, f, no_switch):
        self.extra["files"][f] = copy.deepcopy(self.running)
        if not no_switch:
            self.extra["active"] = f
            self.startup = copy.deepcopy(self.running)

    def c_switch_to(self, s, f):
        """Onyx 3.9.x: the file becomes the active configuration at a reboot
        the command asks for (tests/unit/fixtures/switch_real/onyx). On
        'yes' the twin reboots at once: the file is the running and startup
        config and the session that answered ends (a real switch drops every
        session and is gone for minutes); any other answer changes nothing
        (the real switch's answer to it is not recorded)."""
        if f not in self.extra["files"]:
            raise CliError(f"% Configuration file {f} does not exist")

        def answer(a):
            if a != "yes":
                return ""
            self.extra["active"] = f
            self.running = copy.deepcopy(self.extra["files"][f])
            self.startup = copy.deepcopy(self.running)
            s.closed = True
            return ""
        s.pending_prompt = answer
        s.flags["no_newline_prompt"] = True
        return "This requires a reboot.\nType 'yes' to confirm: "

    def c_delete(self, s, f):
        if f not in self.extra["files"]:
            raise CliError(f"% Configuration file {f} does not exist")
        if f == self.extra["active"]:
            raise CliError("% Cannot delete the active configuration file")
        del self.extra["files"][f]

    def c_show_files(self, s):
        act = self.extra["active"]
        lines = [f"{n} (active)" if n == act else n for n in sorted(self.extra["files"])]
        unsaved = "yes" if self.running != self.extra["files"][act] else "no"
        return "\n".join(lines + ["", f"Active configuration: {act}",
                                  f"Unsaved changes     : {unsaved}"])

    def c_show_file(self, s, f):
        if f not in self.extra["files"]:
            raise CliError(f"% Configuration file {f} does not exist")
        return self.render_running(self.extra["files"][f], db=f)

    # -- rendering ------------------------------------------------------------
    def port_lines(self, pc: dict):
        """(section, order, suffix) for one port's configuration."""
        out = []
        if "mtu" in pc:
            out.append(("if", 0, f"mtu {pc['mtu']} force"))
        if pc.get("shutdown"):
            out.append(("if", 1, "shutdown"))
        if "trust" in pc:
            out.append(("if", 2, f"qos trust {pc['trust']}"))
        for tc, (lo, hi) in sorted(pc.get("ecn", {}).items()):
            out.append(("if", 3, f"traffic-class {tc} congestion-control ecn "
                                 f"minimum-absolute {lo} maximum-absolute {hi}"))
        for tc in pc.get("strict", []):
            out.append(("if", 4, f"traffic-class {tc} dcb ets strict"))
        if pc.get("pfc_wd"):
            out.append(("if", 5, "pfc-wd"))
        if pc.get("pfc"):
            out.append(("pfc", 0, "dcb priority-flow-control mode on force"))
        return out

    def grouped_port_lines(self, cfg, section):
        groups: dict = {}
        for p in self.ports:
            for sec, order, suffix in self.port_lines(cfg.get("ports", {}).get(p, {})):
                if sec == section:
                    groups.setdefault((order, suffix), []).append(p)
        order = {p: i for i, p in enumerate(self.ports)}
        keys = sorted(groups, key=lambda k: (k[0], order[groups[k][0]]))
        lines = []
        for k in keys:
            for rng in self.compress_ports(groups[k]):
                lines.append(f"   interface ethernet {rng} {k[1]}")
        return lines

    def render_running(self, cfg, db=None):
        out = ["##", f'## Running database "{db or self.extra["active"]}"',
               f"## Hostname: {self.name}", "##", "",
               "##", "## Running-config temporary prefix mode setting", "##",
               "no cli default prefix-modes enable", ""]

        def section(title, lines):
            if lines:
                out.extend(["##", f"## {title}", "##"] + lines + ["   "])

        section("Interface Ethernet configuration", self.grouped_port_lines(cfg, "if"))
        if cfg.get("roce"):
            section("RoCE configuration", [f"   roce {cfg['roce']}"])
        dcb = []
        if cfg.get("pfc_enable"):
            dcb.append("   dcb priority-flow-control enable force")
        dcb += [f"   dcb priority-flow-control priority {p} enable" for p in cfg.get("pfc_prios", [])]
        dcb += self.grouped_port_lines(cfg, "pfc")
        section("DCBX PFC configuration", dcb)
        out += ["##", "## Other IP configuration", "##", f"hostname {self.name}", "",
                "##", "## Persistent prefix mode setting", "##", "cli default prefix-modes enable"]
        return "\n".join(out)

    def render_version(self):
        return ("Product name:      Onyx\nProduct release:   3.10.4606\n"
                "Build ID:          #1-dev\nProduct model:     x86onie\n"
                "Host ID:           SIMLAB\nSystem serial num: SIM0001\n"
                "Uptime:            1d 0h 0m 0.000s\n")

    def render_show_roce(self):
        cfg = self.running
        mode = cfg.get("roce") or "none"
        v = self.port_view(self.ports[0]) if self.ports else {}
        ecn = v.get("ecn")
        lines = [f"RoCE mode       : {mode}",
                 f"Port trust mode : {'L3' if v.get('trust') == 'dscp' else 'L2'}",
                 "",
                 "Port congestion-control:",
                 f"  Mode          : {'ecn' if ecn else 'none'}"]
        if ecn:
            lines += ["  Threshold mode: absolute",
                      f"  Min           : {ecn['min_bytes'] // 1000}",
                      f"  Max           : {ecn['max_bytes'] // 1000}"]
        lines += ["", f"PFC                     : {'enabled' if v.get('pfc_priorities') else 'disabled'}"]
        for p in range(8):
            en = "enabled" if p in v.get("pfc_priorities", []) else "disabled"
            lines.append(f"  switch-priority {p}     : {en}")
        return "\n".join(lines)

    def global_pfc(self, cfg):
        roce = cfg.get("roce") in ("lossless", "semi-lossless")
        enabled = cfg.get("pfc_enable") or roce
        prios = set(cfg.get("pfc_prios", []))
        if roce:
            prios.add(3)
        return enabled, sorted(prios)

    def render_show_pfc(self):
        enabled, prios = self.global_pfc(self.running)
        lines = ["", f"PFC                    : {'enabled' if enabled else 'disabled'}",
                 f"Priority Enabled List  : {' '.join(map(str, prios))}",
                 f"Priority Disabled List : {' '.join(str(p) for p in range(8) if p not in prios)}",
                 "", "-" * 44, f"{'Interface':<13}{'PFC admin':<13}PFC oper", "-" * 44]
        for p in self.ports:
            pc = self.running.get("ports", {}).get(p, {})
            admin = "On" if pc.get("pfc") or self.running.get("roce") == "lossless" else "Auto"
            oper = "Enabled" if self.port_view(p)["pfc_priorities"] else "Disabled"
            lines.append(f"{'Eth' + p:<13}{admin:<13}{oper}")
        return "\n".join(lines)

    def c_show_qos(self, s, p):
        out = []
        for port in p:
            self.check_ports([port])
            v = self.port_view(port)
            out += [f"Interface: eth{port}", f"  Trust mode: {'L3' if v['trust'] == 'dscp' else v['trust'] == 'both' and 'both' or 'L2'}",
                    "  DSCP rewrite: disabled", "", "  DSCP to switch-priority mapping:"]
            for prio in range(8):
                ds = [str(d) for d, sp in sorted(v["dscp_map"].items()) if sp == prio]
                if ds:
                    out.append(f"    {prio}: {' '.join(ds)}")
            out.append("")
        return "\n".join(out)

    def c_show_if(self, s, p):
        out = []
        for port in p:
            self.check_ports([port])
            v = self.port_view(port)
            c = self.port_counters(port)
            out += [f"Eth{port}:", f"  Admin state                      : {'Enabled' if v['up'] else 'Disabled'}",
                    f"  Operational state                : {'Up' if v['up'] else 'Down'}",
                    f"  MTU                              : {v['mtu']} bytes",
                    "", "Rx:", f"  {c['rx_packets']:<20} packets",
                    f"  {c['discards']:<20} discard packets",
                    "", "Tx:", f"  {c['tx_packets']:<20} packets", ""]
        return "\n".join(out)

    def c_show_cc(self, s, p):
        out = []
        for port in p:
            self.check_ports([port])
            ecn = self.effective_ecn(self.running, port)
            out.append(f"Interface ethernet {port}")
            for tc in range(8):
                rng = ecn.get(tc)
                out += [f"  Traffic class {tc}:",
                        f"    Mode                : {'ECN' if rng else 'none'}"]
                if rng:
                    out += ["    Threshold mode      : absolute",
                            f"    Minimum threshold   : {rng[0]} KB",
                            f"    Maximum threshold   : {rng[1]} KB",
                            f"    Marked packets      : {self.port_counters(port)['ecn_marked'] if tc == 3 else 0}"]
        return "\n".join(out)

    def c_show_pfc_counters(self, s, p, prio):
        out = []
        for port in p:
            self.check_ports([port])
            c = self.port_counters(port)
            rx = c["rx_pfc_pause"] if prio in self.port_view(port)["pfc_priorities"] else 0
            tx = c["tx_pfc_pause"] if prio in self.port_view(port)["pfc_priorities"] else 0
            out += [f"Eth{port}", "Rx:", f"  {rx:<20} pause packets", f"  0{' ' * 19} pause duration",
                    "", "Tx:", f"  {tx:<20} pause packets", f"  0{' ' * 19} pause duration", ""]
        return "\n".join(out)

    def c_show_ets(self, s, p):
        out = []
        for port in p:
            self.check_ports([port])
            strict = self.effective_strict(self.running, port)
            out += [f"Eth{port}:", f"{'TC':<5}{'Mode':<8}Bandwidth"]
            for tc in range(8):
                out.append(f"{tc:<5}{'SP' if tc in strict else 'WRR':<8}{'-' if tc in strict else '13%'}")
        return "\n".join(out)

    # -- normalised view ------------------------------------------------------
    def effective_ecn(self, cfg, port):
        pc = cfg.get("ports", {}).get(port, {})
        ecn = {int(k): v for k, v in pc.get("ecn", {}).items()}
        if not ecn and cfg.get("roce") in ("lossless", "semi-lossless"):
            ecn = {3: list(ROCE_ECN)}
        return ecn

    def effective_strict(self, cfg, port):
        pc = cfg.get("ports", {}).get(port, {})
        st = set(pc.get("strict", []))
        if cfg.get("roce"):
            st.add(6)
        return st

    def port_view(self, port):
        port = self.canon_port(port)
        cfg = self.running
        pc = cfg.get("ports", {}).get(port, {})
        roce = cfg.get("roce") in ("lossless", "semi-lossless")
        trust = TRUST_VIEW[pc.get("trust") or ("L3" if cfg.get("roce") else "L2")]
        enabled, prios = self.global_pfc(cfg)
        port_on = pc.get("pfc") or roce
        ecn = self.effective_ecn(cfg, port)
        ecn_v = None
        if ecn:
            tc = min(ecn)
            ecn_v = {"tc": tc, "min_bytes": ecn[tc][0] * 1000, "max_bytes": ecn[tc][1] * 1000}
        strict = self.effective_strict(cfg, port)
        return {
            "up": not pc.get("shutdown"),
            "mtu": pc.get("mtu", self.default_mtu),
            "trust": trust,
            "pfc_priorities": prios if (enabled and port_on) else [],
            "ecn": ecn_v,
            "cnp_strict_tc": 6 if 6 in strict else (max(strict) if strict else None),
            "dscp_map": default_dscp_map() if trust in ("dscp", "both") else {},
        }

    # -- faults -----------------------------------------------------------------
    def fault_pfc_off(self, ports):
        cfg = self.running
        if cfg.get("roce"):
            # undo the macro but keep everything except PFC on the affected ports
            others = [p for p in self.ports if p not in ports]
            for p in self.ports:
                pc = self.port_cfg(cfg, p)
                pc.setdefault("trust", "L3")
                if not pc.get("ecn"):
                    pc["ecn"] = {"3": list(ROCE_ECN)}
                pc["strict"] = sorted(set(pc.get("strict", [])) | {6})
            for p in others:
                self.port_cfg(cfg, p)["pfc"] = True
            cfg["roce"] = None
            cfg["pfc_enable"] = True
            cfg["pfc_prios"] = sorted(set(cfg.get("pfc_prios", [])) | {3})
        for p in ports:
            self.port_cfg(cfg, p).pop("pfc", None)
        self.prune(cfg)

    def fault_watchdog_off(self, ports):
        for p in ports:
            self.port_cfg(self.running, p).pop("pfc_wd", None)
        self.prune(self.running)

    def fault_global_pfc_off(self):
        self.fault_pfc_off([])  # a 'roce' macro becomes its explicit lines first
        self.running["pfc_enable"] = False

    def fault_mtu_low(self, ports, mtu):
        for p in ports:
            if mtu == self.default_mtu:
                self.port_cfg(self.running, p).pop("mtu", None)
            else:
                self.port_cfg(self.running, p)["mtu"] = mtu
        self.prune(self.running)
