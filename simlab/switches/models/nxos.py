"""Cisco NX-OS (Nexus 9000) model: class-maps, qos/queuing/network-qos
policy-maps, `system qos`, per-port PFC; `copy running-config startup-config`;
`configure session NAME` ... `commit`/`abort`; `checkpoint NAME` and
`rollback running-config checkpoint NAME`."""

from __future__ import annotations

import copy
import re

from .base import CliError, Failure, Session, SwitchModel, MAX_PORT, compress_ints, parse_int_set

UNITS = {"bytes": 1, "kbytes": 1000, "mbytes": 1000000}
QUE_CLASSES = [f"c-out-8q-q{i}" for i in range(8)] + ["c-out-8q-q-default"]
NQ_CLASSES = [f"c-8q-nq{i}" for i in range(8)] + ["c-8q-nq-default"]
PTYPES = {"qos": "qos", "queuing": "que", "network-qos": "nq"}


def _qnum(cls):
    m = re.search(r"(\d)$", cls)
    return int(m.group(1)) if m and not cls.endswith("default") else 0


class NxosModel(SwitchModel):
    nos = "nxos"
    device_type = "cisco_nxos"
    initial_mode = "enable"
    config_modes = frozenset({"config", "if", "cmap", "pmap-qos", "pmap-que", "pmap-nq",
                              "pc-qos", "pc-que", "pc-nq", "sysqos"})
    default_mtu = 1500

    def default_ports(self):
        return [f"Ethernet1/{i}" for i in range(1, 33)]

    def canon_port(self, text):
        m = re.fullmatch(r"(?:ethernet|eth|e)\s*(\d+/\d+)", text.strip(), re.I)
        if not m:
            raise ValueError(f"not an NX-OS port: {text}")
        return f"Ethernet{m.group(1)}"

    def expand_ports(self, text):
        m = re.fullmatch(r"(?:ethernet|eth|e)?(\d+)/([\d,\-]+)", text, re.I)
        if not m:
            return None
        nums = parse_int_set(m.group(2), 1, MAX_PORT)
        return None if nums is None else [f"Ethernet{m.group(1)}/{i}" for i in nums]

    def factory_config(self):
        return {"class_maps": {}, "policy_maps": {"qos": {}, "queuing": {}, "network-qos": {}},
                "system_qos": {}, "ports": {}}

    def factory_extra(self):
        return {"sessions": {}, "checkpoints": {}}

    # -- prompts and errors ------------------------------------------------------
    MODE_TAG = {"config": "", "if": "-if", "cmap": "-cmap-qos", "pmap-qos": "-pmap-qos",
                "pmap-que": "-pmap-que", "pmap-nq": "-pmap-nqos", "pc-qos": "-pmap-c-qos",
                "pc-que": "-pmap-c-que", "pc-nq": "-pmap-nqos-c", "sysqos": "-sys-qos"}

    def prompt(self, s: Session):
        if s.mode == "enable":
            return f"{self.name}#"
        tag = self.MODE_TAG[s.mode]
        if s.mode == "if" and len(s.ctx["ports"]) > 1:
            tag = "-if-range"
        return f"{self.name}(config{'-s' if s.txn else ''}{tag})#"

    def error(self, s, line, fail: Failure):
        spans = [m.start() for m in re.finditer(r"\S+", line)]
        col = len(self.prompt(s)) + (spans[fail.pos] if fail.pos < len(spans) else len(line) + 1)
        caret = " " * col + "^"
        if fail.reason == "incomplete" or fail.pos >= len(spans):
            return caret + "\n% Incomplete command at '^' marker."
        if fail.reason == "range":
            lo, hi = fail.info
            return caret + f"\n% Invalid number, range is ({lo}:{hi}) at '^' marker."
        return caret + "\n% Invalid command at '^' marker."

    # -- grammar -------------------------------------------------------------------
    # -- LLDP: ``show lldp neighbors detail`` as ntc-templates' NX-OS captures print it ----
    lldp_command = "show lldp neighbors detail"

    def lldp_port(self, port):
        return ("ifname", port, port)

    def render_lldp(self, neighbors):
        out = ["Capability codes:", "  (R) Router, (B) Bridge, (T) Telephone, (C) DOCSIS Cable Device",
               "  (W) WLAN Access Point, (P) Repeater, (S) Station, (O) Other",
               "Device ID            Local Intf      Hold-time  Capability  Port ID  ", ""]
        for n in neighbors:
            mac = n["chassis_id"].replace(":", "")
            out += ["Chassis id: %s.%s.%s" % (mac[0:4], mac[4:8], mac[8:12]), "Port id: %s" % n["port_id"],
                    "Local Port id: %s" % n["local"].replace("Ethernet", "Eth", 1),
                    "Port Description: %s" % (n["port_descr"] or "null"), "System Name: %s" % n["sysname"],
                    "System Description: %s" % self.lldp_sysdescr, "Time remaining: %d seconds" % (n["ttl"] - 20),
                    "System Capabilities: B, W, R", "Enabled Capabilities: R", "Management Address: not advertised",
                    "Vlan ID: not advertised", "", ""]
        out.append("Total entries displayed: %d" % len(neighbors))
        return "\n".join(out) + "\n"

    def build_rules(self):
        add = self.add
        cm = tuple(self.config_modes)
        allm = ("enable",) + cm
        add(allm, "terminal length <n:int:0-511>", lambda s, n: "")
        add(allm, "terminal width <n:int:24-511>", lambda s, n: "")
        add(("enable",), "configure terminal", lambda s: s.push("config"))
        add(("enable",), "configure session <n:word>", self.c_session)
        add(("enable",), "exit", lambda s: setattr(s, "closed", True))
        add(cm, "exit", self.c_exit)
        add(cm, "end", self.c_end)
        add(cm, "commit", self.c_commit)
        add(cm, "abort", self.c_abort)
        add(cm, "verify", self.c_verify)
        add(allm, "copy running-config startup-config", self.c_save)
        add(allm, "copy run start", self.c_save)
        add(("enable",), "checkpoint <n:word>", self.c_checkpoint)
        add(("enable",), "no checkpoint <n:word>", self.c_no_checkpoint)
        add(("enable",), "rollback running-config checkpoint <n:word>", self.c_rollback)
        for pre, modes in (("", allm), ("do ", cm)):
            add(modes, pre + "show running-config", lambda s: self.render_running(self.running))
            add(modes, pre + "show running-config ipqos", lambda s: self.render_running(self.running, ipqos=True))
            add(modes, pre + "show running-config interface <p:ports>",
                lambda s, p: self.render_running(self.running, only=p))
            add(modes, pre + "show startup-config", lambda s: self.render_running(self.startup))
            add(modes, pre + "show checkpoint summary", self.c_show_checkpoints)
            add(modes, pre + "show configuration session", lambda s: self.c_show_session(s, None))
            add(modes, pre + "show configuration session <n:word>", self.c_show_session)
            add(modes, pre + "show interface priority-flow-control", lambda s: self.render_pfc())
            add(modes, pre + "show queuing interface <p:ports>", self.c_show_queuing)
            add(modes, pre + "show version", lambda s: self.render_version())
            add(modes, pre + "show interface <p:ports>", self.c_show_if)
        g = ("config",)  # sub-modes reach these through the parent-mode fallback
        add(g, "class-map type qos <n:word>", lambda s, n: self.c_cmap(s, n, "match-all"))
        add(g, "class-map type qos <m:choice:match-all|match-any> <n:word>",
            lambda s, m, n: self.c_cmap(s, n, m))
        add(g, "no class-map type qos <n:word>", self.c_no_cmap)
        add(g, "no class-map type qos <m:choice:match-all|match-any> <n:word>",
            lambda s, m, n: self.c_no_cmap(s, n))
        add(g, "policy-map type <t:choice:qos|queuing|network-qos> <n:word>", self.c_pmap)
        add(g, "no policy-map type <t:choice:qos|queuing|network-qos> <n:word>", self.c_no_pmap)
        add(g, "system qos", lambda s: s.push("sysqos"))
        add(g, "interface <p:ports>", self.c_interface)
        add(g, "interface ethernet <p:ports>", self.c_interface)
        # class-map
        add("cmap", "match dscp <d:ints:0-63>", lambda s, d: self.m_dscp(s, d, True))
        add("cmap", "no match dscp <d:ints:0-63>", lambda s, d: self.m_dscp(s, d, False))
        # policy-map classes
        add("pmap-qos", "class <c:word>", lambda s, c: self.c_class(s, c))
        add("pmap-qos", "class type qos <c:word>", lambda s, c: self.c_class(s, c))
        add("pmap-qos", "no class <c:word>", lambda s, c: self.c_no_class(s, c))
        add("pmap-que", f"class type queuing <c:choice:{'|'.join(QUE_CLASSES)}>", self.c_class)
        add("pmap-que", f"no class type queuing <c:choice:{'|'.join(QUE_CLASSES)}>", self.c_no_class)
        add("pmap-nq", f"class type network-qos <c:choice:{'|'.join(NQ_CLASSES)}>", self.c_class)
        add("pmap-nq", f"no class type network-qos <c:choice:{'|'.join(NQ_CLASSES)}>", self.c_no_class)
        add("pc-qos", "set qos-group <g:int:0-7>", lambda s, g: self.k_set(s, "qos_group", g))
        add("pc-qos", "no set qos-group", lambda s: self.k_set(s, "qos_group", None))
        add("pc-qos", "no set qos-group <g:int:0-7>", lambda s, g: self.k_set(s, "qos_group", None))
        add("pc-que", "priority level <l:int:1-2>", lambda s, l: self.k_set(s, "priority", l))
        add("pc-que", "priority", lambda s: self.k_set(s, "priority", 0))
        add("pc-que", "no priority", lambda s: self.k_set(s, "priority", None))
        add("pc-que", "no priority level <l:int:1-2>", lambda s, l: self.k_set(s, "priority", None))
        add("pc-que", "bandwidth remaining percent <b:int:0-100>", lambda s, b: self.k_set(s, "bw_rem", b))
        add("pc-que", "no bandwidth remaining percent", lambda s: self.k_set(s, "bw_rem", None))
        add("pc-que", "no bandwidth remaining percent <b:int:0-100>", lambda s, b: self.k_set(s, "bw_rem", None))
        add("pc-que", "bandwidth percent <b:int:0-100>", lambda s, b: self.k_set(s, "bw", b))
        add("pc-que", "no bandwidth percent", lambda s: self.k_set(s, "bw", None))
        unit = "choice:bytes|kbytes|mbytes"
        base = (f"random-detect minimum-threshold <lo:int:1-52428800> <lu:{unit}> "
                f"maximum-threshold <hi:int:1-52428800> <hu:{unit}>")
        for tail in ("", " [ecn]", " drop-probability <dp:int:0-100> [ecn]",
                     " drop-probability <dp:int:0-100> weight <w:int:0-15> [ecn]",
                     " weight <w:int:0-15> [ecn]"):
            add("pc-que", base + tail, self.k_wred)
        add("pc-que", "no random-detect", lambda s: self.k_set(s, "wred", None))
        add("pc-nq", "mtu <mtu:int:1500-9216>", lambda s, mtu: self.k_set(s, "mtu", mtu))
        add("pc-nq", "no mtu", lambda s: self.k_set(s, "mtu", None))
        add("pc-nq", "no mtu <mtu:int:1500-9216>", lambda s, mtu: self.k_set(s, "mtu", None))
        add("pc-nq", "pause pfc-cos <c:ints:0-7>", lambda s, c: self.k_set(s, "pfc_cos", c))
        add("pc-nq", "pause pfc-cos <c:intlist:0-7>", lambda s, c: self.k_set(s, "pfc_cos", sorted(set(c))))
        add("pc-nq", "pause no-drop", lambda s: self.k_set(s, "pfc_cos", "no-drop"))
        add("pc-nq", "no pause", lambda s: self.k_set(s, "pfc_cos", None))
        add("pc-nq", "no pause pfc-cos <c:ints:0-7>", lambda s, c: self.k_set(s, "pfc_cos", None))
        add("pc-nq", "no pause no-drop", lambda s: self.k_set(s, "pfc_cos", None))
        # system qos
        add("sysqos", "service-policy type network-qos <n:word>", lambda s, n: self.sys_set(s, "network-qos", n))
        add("sysqos", "service-policy type queuing output <n:word>", lambda s, n: self.sys_set(s, "queuing", n, "output"))
        add("sysqos", "service-policy type qos input <n:word>", lambda s, n: self.sys_set(s, "qos", n, "input"))
        add("sysqos", "no service-policy type network-qos <n:word>", lambda s, n: self.sys_set(s, "network-qos", None))
        add("sysqos", "no service-policy type queuing output <n:word>", lambda s, n: self.sys_set(s, "queuing", None, "output"))
        add("sysqos", "no service-policy type qos input <n:word>", lambda s, n: self.sys_set(s, "qos", None, "input"))
        # interface
        add("if", "mtu <mtu:int:576-9216>", lambda s, mtu: self.p_set(s, "mtu", None if mtu == 1500 else mtu))
        add("if", "no mtu", lambda s: self.p_set(s, "mtu", None))
        add("if", "no mtu <mtu:int:576-9216>", lambda s, mtu: self.p_set(s, "mtu", None))
        add("if", "shutdown", lambda s: self.p_set(s, "shutdown", True))
        add("if", "no shutdown", lambda s: self.p_set(s, "shutdown", None))
        add("if", "priority-flow-control mode <m:choice:on|auto|off>",
            lambda s, m: self.p_set(s, "pfc_mode", None if m == "auto" else m))
        add("if", "no priority-flow-control mode", lambda s: self.p_set(s, "pfc_mode", None))
        add("if", "no priority-flow-control mode <m:choice:on|auto|off>", lambda s, m: self.p_set(s, "pfc_mode", None))
        add("if", "priority-flow-control watch-dog-interval <m:choice:on|off>",
            lambda s, m: self.p_set(s, "pfc_wd", m))
        add("if", "no priority-flow-control watch-dog-interval", lambda s: self.p_set(s, "pfc_wd", None))
        add("if", "no priority-flow-control watch-dog-interval <m:choice:on|off>",
            lambda s, m: self.p_set(s, "pfc_wd", None))
        add("if", "service-policy type qos input <n:word>", self.p_policy)
        add("if", "no service-policy type qos input <n:word>", lambda s, n: self.p_set(s, "qos_in", None))

    # -- handlers -------------------------------------------------------------------
    def c_exit(self, s):
        s.stack.pop()
        if s.mode == "enable":
            s.txn = None

    def c_end(self, s):
        s.pop_to(1)
        s.txn = None

    def c_session(self, s, n):
        self.extra["sessions"].setdefault(n, copy.deepcopy(self.running))
        s.txn = n
        s.push("config")
        return "Config Session started, Session ID is 1\nEnter configuration commands, one per line.  End with CNTL/Z."

    def c_commit(self, s):
        if not s.txn:
            raise CliError("% Invalid command: not in a configuration session")
        self.running = self.extra["sessions"].pop(s.txn)
        s.txn = None
        s.pop_to(1)
        return "Commit Successful"

    def c_abort(self, s):
        if not s.txn:
            raise CliError("% Invalid command: not in a configuration session")
        self.extra["sessions"].pop(s.txn, None)
        s.txn = None
        s.pop_to(1)

    def c_verify(self, s):
        if not s.txn:
            raise CliError("% Invalid command: not in a configuration session")
        return "Verification Successful"

    def c_save(self, s):
        self.startup = copy.deepcopy(self.running)
        return ("[########################################] 100%\n"
                "Copy complete, now saving to disk (please wait)...\nCopy complete.")

    def c_checkpoint(self, s, n):
        if n in self.extra["checkpoints"]:
            raise CliError(f"ERROR: Checkpoint name {n} is in use already")
        self.extra["checkpoints"][n] = copy.deepcopy(self.running)
        return "...........Done"

    def c_no_checkpoint(self, s, n):
        if self.extra["checkpoints"].pop(n, None) is None:
            raise CliError(f"ERROR: Checkpoint {n} does not exist")

    def c_rollback(self, s, n):
        if n not in self.extra["checkpoints"]:
            raise CliError(f"ERROR: Checkpoint {n} does not exist")
        self.running = copy.deepcopy(self.extra["checkpoints"][n])
        return ("Note: Applying config parallelly may fail Rollback verification\n"
                "Collecting Running-Config\n#Generating Rollback Patch\nExecuting Rollback Patch\n"
                "Generating Running-config for verification\nGenerating Patch for verification\n"
                "Verification is Successful.\n\nRollback completed successfully.")

    def c_show_checkpoints(self, s):
        out = ["User Checkpoint Summary", "-" * 72]
        for i, n in enumerate(self.extra["checkpoints"], 1):
            out += [f"{i}) {n}:", "Created by admin", "Created at Mon, 01:00:00 01 Jan 2024", ""]
        return "\n".join(out)

    def c_show_session(self, s, n):
        n = n or s.txn
        if not n or n not in self.extra["sessions"]:
            raise CliError("ERROR: Session does not exist")
        return f"config session {n}\n" + self.render_running(self.extra["sessions"][n])

    def c_cmap(self, s, n, m):
        cms = self.cfg(s)["class_maps"]
        cms.setdefault(n, {"match": m, "dscp": []})
        s.push("cmap", name=n)

    def c_no_cmap(self, s, n):
        if self.cfg(s)["class_maps"].pop(n, None) is None:
            raise CliError(f"ERROR: class-map {n} does not exist")

    def m_dscp(self, s, d, add):
        cm = self.cfg(s)["class_maps"][s.ctx["name"]]
        cur = set(cm["dscp"])
        cur = cur | set(d) if add else cur - set(d)
        cm["dscp"] = sorted(cur)

    def c_pmap(self, s, t, n):
        self.cfg(s)["policy_maps"][t].setdefault(n, [])
        s.push("pmap-" + PTYPES[t], type=t, name=n)

    def c_no_pmap(self, s, t, n):
        if self.cfg(s)["policy_maps"][t].pop(n, None) is None:
            raise CliError(f"ERROR: policy-map {n} does not exist")

    def _pmap(self, s):
        f = next(f for f in reversed(s.stack) if f.mode.startswith("pmap-"))
        return self.cfg(s)["policy_maps"][f.ctx["type"]][f.ctx["name"]], f.ctx["type"]

    def c_class(self, s, c):
        pm, t = self._pmap(s)
        if t == "qos" and c != "class-default" and c not in self.cfg(s)["class_maps"]:
            raise CliError(f"ERROR: class-map {c} does not exist")
        if not any(x[0] == c for x in pm):
            pm.append([c, {}])
        s.push("pc-" + PTYPES[t], cls=c)

    def c_no_class(self, s, c):
        pm, _ = self._pmap(s)
        pm[:] = [x for x in pm if x[0] != c]

    def k_set(self, s, key, val):
        pm, _ = self._pmap(s)
        attrs = next(x[1] for x in pm if x[0] == s.ctx["cls"])
        if val is None:
            attrs.pop(key, None)
        else:
            attrs[key] = val

    def k_wred(self, s, lo, lu, hi, hu, dp=None, w=None, ecn=False):
        if lo * UNITS[lu] > hi * UNITS[hu]:
            raise CliError("ERROR: minimum-threshold must be less than maximum-threshold")
        self.k_set(s, "wred", [lo, lu, hi, hu, dp, w, bool(ecn)])

    def sys_set(self, s, t, n, direction=""):
        key = f"{t} {direction}".strip()
        sq = self.cfg(s)["system_qos"]
        if n is None:
            sq.pop(key, None)
            return
        if n not in self.cfg(s)["policy_maps"][t]:
            raise CliError(f"ERROR: policy-map {n} does not exist")
        sq[key] = n

    def c_interface(self, s, p):
        self.check_ports(p)
        s.push("if", ports=p)

    def p_set(self, s, key, val):
        cfg = self.cfg(s)
        for p in s.ctx["ports"]:
            pc = self.port_cfg(cfg, p)
            if val is None:
                pc.pop(key, None)
            else:
                pc[key] = val
        self.prune(cfg)

    def p_policy(self, s, n):
        if n not in self.cfg(s)["policy_maps"]["qos"]:
            raise CliError(f"ERROR: policy-map {n} does not exist")
        self.p_set(s, "qos_in", n)

    # -- rendering ----------------------------------------------------------------
    def class_lines(self, t, attrs):
        out = []
        if "qos_group" in attrs:
            out.append(f"    set qos-group {attrs['qos_group']}")
        if "priority" in attrs:
            out.append("    priority" + (f" level {attrs['priority']}" if attrs["priority"] else ""))
        if "bw" in attrs:
            out.append(f"    bandwidth percent {attrs['bw']}")
        if "bw_rem" in attrs:
            out.append(f"    bandwidth remaining percent {attrs['bw_rem']}")
        if "wred" in attrs:
            lo, lu, hi, hu, dp, w, ecn = attrs["wred"]
            line = f"    random-detect minimum-threshold {lo} {lu} maximum-threshold {hi} {hu}"
            if dp is not None:
                line += f" drop-probability {dp}"
            if w is not None:
                line += f" weight {w}"
            if ecn:
                line += " ecn"
            out.append(line)
        if "mtu" in attrs:
            out.append(f"    mtu {attrs['mtu']}")
        if "pfc_cos" in attrs:
            v = attrs["pfc_cos"]
            out.append("    pause no-drop" if v == "no-drop" else f"    pause pfc-cos {','.join(map(str, v))}")
        return out

    def qos_global_lines(self, cfg):
        out = []
        for n, cm in cfg["class_maps"].items():
            out.append(f"class-map type qos {cm['match']} {n}")
            if cm["dscp"]:
                out.append(f"  match dscp {compress_ints(cm['dscp'])}")
        for t in ("qos", "queuing", "network-qos"):
            for n, classes in cfg["policy_maps"][t].items():
                out.append(f"policy-map type {t} {n}")
                for c, attrs in classes:
                    out.append(f"  class {c}" if t == "qos" else f"  class type {t} {c}")
                    out += self.class_lines(t, attrs)
        if cfg["system_qos"]:
            out.append("system qos")
            for key in ("qos input", "queuing output", "network-qos"):
                if key in cfg["system_qos"]:
                    t, _, d = key.partition(" ")
                    out.append(f"  service-policy type {t} {d + ' ' if d else ''}{cfg['system_qos'][key]}")
        return out

    def interface_lines(self, p, pc, ipqos=False):
        out = ["", f"interface {p}"]
        if "pfc_mode" in pc:
            out.append(f"  priority-flow-control mode {pc['pfc_mode']}")
        if "pfc_wd" in pc:
            out.append(f"  priority-flow-control watch-dog-interval {pc['pfc_wd']}")
        if "qos_in" in pc:
            out.append(f"  service-policy type qos input {pc['qos_in']}")
        if not ipqos:
            if "mtu" in pc:
                out.append(f"  mtu {pc['mtu']}")
            if pc.get("shutdown"):
                out.append("  shutdown")
        return out

    def render_running(self, cfg, ipqos=False, only=None):
        head = ["", f"!Command: show running-config{' ipqos' if ipqos else ''}",
                "!No configuration change since last restart", ""]
        ports = cfg.get("ports", {})
        if only is not None:
            self.check_ports(only)
            out = head[:]
            for p in only:
                out += self.interface_lines(p, ports.get(p, {}))
            return "\n".join(out)
        out = head + ["version 10.3(4a) Bios:version 05.47"]
        if not ipqos:
            out.append(f"hostname {self.name}")
        out += self.qos_global_lines(cfg)
        for p in self.ports:
            pc = ports.get(p, {})
            if ipqos and not any(k in pc for k in ("pfc_mode", "pfc_wd", "qos_in")):
                continue
            out += self.interface_lines(p, pc, ipqos)
        return "\n".join(out)

    def render_version(self):
        return ("Cisco Nexus Operating System (NX-OS) Software\n  NXOS: version 10.3(4a) [Maintenance Release]\n"
                "  cisco Nexus9000 C9332C Chassis\n  Device name: " + self.name)

    def render_pfc(self):
        out = ["", "=" * 60, f"{'Port':<19}{'Mode':<5}{'Oper(VL bmap)':<15}{'RxPPP':<11}{'TxPPP':<10}", "=" * 60, ""]
        for p in self.ports:
            pc = self.running.get("ports", {}).get(p, {})
            v = self.port_view(p)
            mode = {"on": "On", "off": "Off"}.get(pc.get("pfc_mode"), "Auto")
            bmap = sum(1 << x for x in v["pfc_priorities"])
            oper = f"On ({bmap:x})" if v["pfc_priorities"] else "Off"
            c = self.port_counters(p)
            # the values sit one column left of their titles, as NX-OS prints them
            out.append(f"{p:<19}{mode:<5}{oper:<14}{c['rx_pfc_pause']:<11}{c['tx_pfc_pause']:<11}")
        return "\n".join(out)

    def c_show_queuing(self, s, p):
        self.check_ports(p)
        out = []
        for port in p:
            v = self.port_view(port)
            c = self.port_counters(port)
            out += ["", f"slot  1", "=======", "", f"Egress Queuing for {port} [System]",
                    "-" * 60, f"QoS-Group# Bandwidth% PrioLevel", "-" * 60]
            for g in range(7, -1, -1):
                out.append(f"{g:>10} {'-' if g == v['cnp_strict_tc'] else '-':>10} "
                           f"{'1' if g == v['cnp_strict_tc'] else '-':>9}")
            for g in range(8):
                ecn = c["ecn_marked"] if v["ecn"] and v["ecn"]["tc"] == g else 0
                out += ["+" + "-" * 58 + "+", f"|{'QOS GROUP ' + str(g):^58}|", "+" + "-" * 58 + "+",
                        f"|   Tx Pkts |{c['tx_packets'] if g == 0 else 0:>20}|",
                        f"|   ECN Marked Pkts |{ecn:>12}|"]
            out += ["", "Ingress Queuing for " + port, "-" * 60,
                    "Per Port Ingress Statistics", f"  Rx PFC Pause {c['rx_pfc_pause']}",
                    f"  Tx PFC Pause {c['tx_pfc_pause']}"]
        return "\n".join(out)

    def c_show_if(self, s, p):
        self.check_ports(p)
        out = []
        for port in p:
            v = self.port_view(port)
            c = self.port_counters(port)
            out += [f"{port} is {'up' if v['up'] else 'down (Administratively down)'}",
                    f"admin state is {'up' if v['up'] else 'down'}, Dedicated Interface",
                    f"  MTU {v['mtu']} bytes, BW 100000000 Kbit , DLY 10 usec",
                    f"    {c['rx_packets']} input packets", f"    {c['tx_packets']} output packets",
                    f"    {c['rx_pfc_pause']} Rx pause", f"    {c['tx_pfc_pause']} Tx pause"]
        return "\n".join(out)

    # -- view ----------------------------------------------------------------------
    def qos_policy_for(self, cfg, port):
        pc = cfg.get("ports", {}).get(port, {})
        return pc.get("qos_in") or cfg["system_qos"].get("qos input")

    def port_view(self, port):
        port = self.canon_port(port)
        cfg = self.running
        pc = cfg.get("ports", {}).get(port, {})
        dmap: dict = {}
        pol = self.qos_policy_for(cfg, port)
        trust = "pcp"
        if pol and pol in cfg["policy_maps"]["qos"]:
            assigned = {}
            for cls, attrs in cfg["policy_maps"]["qos"][pol]:
                cm = cfg["class_maps"].get(cls)
                if cm and cm["dscp"] and "qos_group" in attrs:
                    for d in cm["dscp"]:
                        assigned.setdefault(d, attrs["qos_group"])
            if assigned:
                trust = "dscp"
                dmap = {d: assigned.get(d, 0) for d in range(64)}
        prios: list = []
        nq = cfg["system_qos"].get("network-qos")
        if pc.get("pfc_mode") == "on" and nq in cfg["policy_maps"]["network-qos"]:
            for cls, attrs in cfg["policy_maps"]["network-qos"][nq]:
                v = attrs.get("pfc_cos")
                if isinstance(v, list):
                    prios += v
                elif v == "no-drop":
                    prios.append(_qnum(cls))
        ecn = None
        strict = None
        que = cfg["system_qos"].get("queuing output")
        if que in cfg["policy_maps"]["queuing"]:
            for cls, attrs in cfg["policy_maps"]["queuing"][que]:
                q = _qnum(cls)
                w = attrs.get("wred")
                if w and w[6] and (ecn is None or q < ecn["tc"]):
                    ecn = {"tc": q, "min_bytes": w[0] * UNITS[w[1]], "max_bytes": w[2] * UNITS[w[3]]}
                if "priority" in attrs and (strict is None or q > strict):
                    strict = q
        return {
            "up": not pc.get("shutdown"),
            "mtu": pc.get("mtu", self.default_mtu),
            "trust": trust,
            "pfc_priorities": sorted(set(prios)),
            "ecn": ecn,
            "cnp_strict_tc": strict,
            "dscp_map": dmap,
        }

    def fault_pfc_off(self, ports):
        for p in ports:
            self.port_cfg(self.running, p).pop("pfc_mode", None)
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
