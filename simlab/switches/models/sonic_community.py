"""Community SONiC model: bash (``admin@leaf1:~$``, ``sudo -s`` gives
``root@leaf1:/home/admin#``) with the Click ``show``/``config`` commands and
``sonic-db-cli`` over one CONFIG_DB.

The running configuration is CONFIG_DB itself, ``{table: {key: {field:
value}}}`` with string values as Redis holds them; ``show runningconfiguration
all`` prints it as JSON and ``config save -y`` copies it to the startup store
(``/etc/sonic/config_db.json``).  The factory CONFIG_DB has DEVICE_METADATA
(dynamic buffer model) and PORT (mtu 9100) and no QoS tables, as after
``config qos clear``.  The show tables are tabulate's ``simple`` layout as
sonic-utilities prints them (tests/unit/fixtures/switch_real/sonic_community)."""

from __future__ import annotations

import copy
import json
import re
import shlex

from .base import CliError, Session, SwitchModel

GREEN_ECN = ("ecn_green", "ecn_green_yellow", "ecn_green_red", "ecn_all")
WRED_FIELDS = {"gmin": "green_min_threshold", "gmax": "green_max_threshold", "gdrop": "green_drop_probability",
               "ymin": "yellow_min_threshold", "ymax": "yellow_max_threshold", "ydrop": "yellow_drop_probability",
               "rmin": "red_min_threshold", "rmax": "red_max_threshold", "rdrop": "red_drop_probability"}
ROOT = "Root privileges are required for this operation"


def tabulate_simple(headers, rows, align=None):
    """tabulate(tablefmt='simple') as sonic-utilities prints it: a column is as
    wide as its widest cell or its title plus two; numbers (and every cell when
    ``align`` is 'right') right-aligned; two spaces between columns."""
    cols = list(zip(*rows)) if rows else [() for _ in headers]
    right = [align == "right" or (bool(c) and all(re.fullmatch(r"\d+", str(v)) for v in c)) for c in cols]
    width = [max([len(h) + 2] + [len(str(v)) for v in c]) for h, c in zip(headers, cols)]

    def line(cells):
        return "  ".join(str(v).rjust(w) if r else str(v).ljust(w)
                         for v, w, r in zip(cells, width, right)).rstrip()
    return "\n".join([line(headers), "  ".join("-" * w for w in width)] + [line(r) for r in rows])


class CommunitySonicModel(SwitchModel):
    uname = "Linux {name} 5.10.0-23-2-amd64 #1 SMP Debian 5.10.179-3 (2023-07-27) x86_64 GNU/Linux"
    nos = "sonic-community"
    device_type = "edgecore_sonic"
    initial_mode = "shell"
    abbreviate = False
    config_modes = frozenset()
    default_mtu = 9100
    user = "admin"

    def default_ports(self):
        return [f"Ethernet{4 * i}" for i in range(32)]

    def canon_port(self, text):
        m = re.fullmatch(r"(?:ethernet|eth)\s*(\d+)", text.strip(), re.I)
        if not m:
            raise ValueError(f"not a SONiC port: {text}")
        return f"Ethernet{m.group(1)}"

    def expand_ports(self, text):
        try:
            return [self.canon_port(p) for p in text.split(",")]
        except ValueError:
            return None

    def factory_config(self):
        ports = {}
        for i, p in enumerate(self.ports):
            n = int(p[8:])
            ports[p] = {"admin_status": "up", "alias": f"Eth{i + 1}", "index": str(i + 1),
                        "lanes": ",".join(str(n + k + 1) for k in range(4)), "mtu": str(self.default_mtu),
                        "speed": "100000"}
        return {"DEVICE_METADATA": {"localhost": {"hostname": self.name, "buffer_model": "dynamic",
                                                  "hwsku": "Accton-AS7726-32X", "type": "LeafRouter"}},
                "PORT": ports}

    # -- LLDP: ``show lldp table`` as sonic-utilities' lldpshow prints it ----
    lldp_command = "show lldp table"

    def lldp_port(self, port):
        return ("local", port, "")

    def render_lldp(self, neighbors):
        heads = ("LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr")
        rows = [(n["local"], n["sysname"] or "", n["port_id"], "R", n["port_descr"] or "") for n in neighbors]
        # tabulate's simple format: a column is as wide as its header plus 2, or its widest cell
        widths = [max([len(h) + 2] + [len(r[i]) for r in rows]) for i, h in enumerate(heads)]
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
        out = ["Capability codes: (R) Router, (B) Bridge, (O) Other", line(heads),
               "  ".join("-" * w for w in widths)] + [line(r) for r in rows]
        out += ["-" * 50, "Total entries displayed:  %d" % len(rows)]
        return "\n".join(out) + "\n"

    def build_rules(self):
        pass

    def prompt(self, s: Session):
        if s.mode == "root":
            return f"root@{self.name}:/home/{self.user}# "
        return f"{self.user}@{self.name}:~$ "

    def is_config_line(self, s, line):
        return s.mode == "root" and bool(re.match(
            r"\s*(sudo\s+)?(config\s+(?!save\b)|sonic-db-cli\s+CONFIG_DB\s+(hset|hdel|del)\b)", line, re.I))

    def fault_error(self, s, line):
        return f"Error: {line.strip()}: rejected by the platform"

    # -- shell ---------------------------------------------------------------------------
    comment = "#"

    def run_line(self, s: Session, raw: str) -> str:
        outs = []
        for part in raw.split(" && "):
            cmd, filters = self.split_pipe(part)
            try:
                words = shlex.split(cmd)
            except ValueError as e:
                return f"-bash: syntax error: {e}"
            root = s.mode == "root"
            if len(words) > 1 and words[0] == "sudo" and words[1] not in ("-s", "-i"):
                words, root = words[1:], True
            try:
                out = self.dispatch(s, words, root)
            except CliError as e:
                outs.append(e.message)
                break
            if filters:
                out = self.apply_filters(out or "", [f.replace("grep ", "include ", 1) for f in filters])
            outs.append(out or "")
        return "\n".join(o for o in outs if o)

    def dispatch(self, s, w, root):
        out = self.linux_shell(s, w)
        if out is not None:
            return out
        if w[0] == "show":
            return self.show(w[1:])
        if w[0] == "config":
            if not root:
                raise CliError(ROOT)
            return self.config(w[1:])
        if w[0] == "sonic-db-cli":
            return self.db_cli(w[1:])
        raise CliError(f"-bash: {w[0]}: command not found")

    # -- show ----------------------------------------------------------------------------
    def show(self, w):
        if w == ["runningconfiguration", "all"]:
            return self.render_running(self.running)
        if w[:2] == ["pfc", "priority"]:
            qm = self.running.get("PORT_QOS_MAP", {})
            if len(w) > 2 and w[2] not in qm:
                return f"Cannot find interface {w[2]}"
            names = [w[2]] if len(w) > 2 else [p for p in qm if p != "global"]
            rows = sorted(([p, qm[p].get("pfc_enable", "N/A")] for p in names), key=lambda r: self._nat(r[0]))
            return "\n" + tabulate_simple(("Interface", "Lossless priorities"), rows) + "\n"
        if w[:2] == ["pfcwd", "config"]:
            wd = self.running.get("PFC_WD", {})
            ports = [p for p in (w[2:] or self.ports) if wd.get(p)]
            out = []
            if ports:
                g = wd.get("GLOBAL", {})
                if "POLL_INTERVAL" in g:
                    out.append(f"Changed polling interval to {g['POLL_INTERVAL']}ms")
                if "BIG_RED_SWITCH" in g:
                    out.append(f"BIG_RED_SWITCH status is {g['BIG_RED_SWITCH']}")
            rows = [[p, wd[p].get("action", "drop"), wd[p].get("detection_time", "N/A"),
                     wd[p].get("restoration_time", "infinite"), wd[p].get("pfc_stat_history", "disable")]
                    for p in ports]
            out.append(tabulate_simple(("PORT", "ACTION", "DETECTION TIME", "RESTORATION TIME", "HISTORY"),
                                       rows, "right"))
            return "\n".join(out)
        if w == ["version"]:
            return "SONiC Software Version: SONiC.202311.1\nSONiC OS Version: 11\nDistribution: Debian 11.9"
        raise CliError(f'Usage: show [OPTIONS] COMMAND [ARGS]...\nTry "show -h" for help.\n\n'
                       f'Error: No such command "{w[0] if w else ""}".')

    @staticmethod
    def _nat(text):
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]

    def render_running(self, cfg, only=None):
        # sonic-cfggen --print-data sorts the keys; 'show runningconfiguration all' adds bgpraw after them
        body = json.loads(json.dumps(dict((t, v) for t, v in cfg.items() if v), sort_keys=True))
        body["bgpraw"] = ""
        return json.dumps(body, indent=4)

    # -- config --------------------------------------------------------------------------
    def table(self, name):
        return self.running.setdefault(name, {})

    def prune(self, cfg=None):
        cfg = self.running if cfg is None else cfg
        for t in list(cfg):
            for k in [k for k, v in cfg[t].items() if not v]:
                del cfg[t][k]
            if not cfg[t]:
                del cfg[t]

    def config(self, w):
        if w[:2] == ["save", "-y"] or w == ["save", "--yes"]:
            self.startup = copy.deepcopy(self.running)
            return "Running command: /usr/local/bin/sonic-cfggen -d --print-data > /etc/sonic/config_db.json"
        if w[:2] == ["interface", "mtu"] and len(w) == 4:
            if w[2] not in self.ports:
                raise CliError("Error: Interface name is invalid. Please enter a valid interface name!!")
            if not re.fullmatch(r"\d+", w[3]) or not 68 <= int(w[3]) <= 9216:
                raise CliError(f'Usage: config interface mtu [OPTIONS] <interface_name> <interface_mtu>\n'
                               f'Try "config interface mtu -h" for help.\n\n'
                               f'Error: Invalid value for "<interface_mtu>": {w[3]} is not in the valid range '
                               f'of 68 to 9216.')
            self.table("PORT")[w[2]]["mtu"] = w[3]
            return ""
        if w[:3] == ["interface", "pfc", "priority"] and len(w) == 6:
            port, prio, status = w[3:]
            if prio not in [str(i) for i in range(8)] or status not in ("on", "off"):
                raise CliError(f'Usage: pfc config priority [OPTIONS] STATUS INTERFACE PRIORITY\n\n'
                               f'Error: Invalid value for "priority": invalid choice: {prio}. '
                               f'(choose from 0, 1, 2, 3, 4, 5, 6, 7)')
            qm = self.running.get("PORT_QOS_MAP", {})
            if port not in qm:
                return f"Cannot find interface {port}"
            cur = [x.strip() for x in qm[port].get("pfc_enable", "").split(",") if x.strip()]
            if status == "on" and prio in cur:
                return f"Priority {prio} has already been enabled on {port}"
            if status == "off" and prio not in cur:
                return f"Priority {prio} is not enabled on {port}"
            (cur.append if status == "on" else cur.remove)(prio)
            qm[port]["pfc_enable"] = ",".join(sorted(cur))
            return ""
        if w[:1] == ["ecn"]:
            return self.c_ecn(w[1:])
        if w[:2] == ["pfcwd", "start"]:
            return self.c_pfcwd_start(w[2:])
        if w[:2] == ["pfcwd", "stop"]:
            wd = self.running.get("PFC_WD", {})
            for p in (w[2:] or self.ports):
                wd.pop(p, None)
            self.prune()
            return ""
        if w[:2] == ["qos", "clear"]:
            for t in ("PORT_QOS_MAP", "QUEUE", "TC_TO_PRIORITY_GROUP_MAP", "MAP_PFC_PRIORITY_TO_QUEUE",
                      "TC_TO_QUEUE_MAP", "DSCP_TO_TC_MAP", "SCHEDULER", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
                      "PORT", "WRED_PROFILE", "BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG", "BUFFER_QUEUE"):
                if t != "PORT":
                    self.running.pop(t, None)
            return ""
        raise CliError(f'Usage: config [OPTIONS] COMMAND [ARGS]...\nTry "config -h" for help.\n\n'
                       f'Error: No such command "{w[0] if w else ""}".')

    def c_ecn(self, w):
        opts, i = {}, 0
        while i < len(w):
            k = w[i].lstrip("-")
            if k in ("v", "verbose"):
                i += 1
                continue
            if i + 1 >= len(w) or k not in ("profile",) + tuple(WRED_FIELDS):
                raise CliError(f"Usage: config ecn [OPTIONS]\nTry \"config ecn -h\" for help.\n\n"
                               f"Error: No such option: {w[i]}")
            opts[k] = w[i + 1]
            i += 2
        if "profile" not in opts:
            raise CliError('Usage: config ecn [OPTIONS]\nTry "config ecn -h" for help.\n\n'
                           'Error: Missing option "-profile".')
        name = opts.pop("profile")
        if not opts:
            return "Exception caught:  Input arguments error. Specify at least one threshold parameter to set"
        prof = self.running.get("WRED_PROFILE", {}).get(name)
        if prof is None:
            return f"Exception caught:  Input arguments error. Invalid WRED profile {name} for namespace None"
        new = dict(prof)
        for k, v in opts.items():
            if not re.fullmatch(r"\d+", v) or ("drop" in k and int(v) > 100):
                return "Exception caught:  Input arguments error. Invalid WRED profile parameters"
            new[WRED_FIELDS[k]] = v
        for c in ("green", "yellow", "red"):
            lo, hi = new.get(f"{c}_min_threshold"), new.get(f"{c}_max_threshold")
            if lo is not None and hi is not None and int(lo) > int(hi):
                return "Exception caught:  Input arguments error. Invalid WRED profile parameters"
        prof.update(new)
        return ""

    def c_pfcwd_start(self, w):
        action, restore, ports, i = None, None, [], 0
        while i < len(w):
            if w[i] in ("--action", "-a") and i + 1 < len(w) and w[i + 1] in ("drop", "forward", "alert"):
                action, i = w[i + 1], i + 2
            elif w[i] in ("--restoration-time", "-r") and i + 1 < len(w) and w[i + 1].isdigit():
                restore, i = int(w[i + 1]), i + 2
            elif w[i] == "--pfc-stat-history":
                i += 1
            elif w[i].startswith("-"):
                raise CliError(f'Usage: pfcwd start [OPTIONS] [PORTS]... DETECTION_TIME\n\n'
                               f'Error: No such option: {w[i]}')
            else:
                ports.append(w[i])
                i += 1
        if not ports or not ports[-1].isdigit() or not 100 <= int(ports[-1]) <= 5000:
            raise CliError('Usage: pfcwd start [OPTIONS] [PORTS]... DETECTION_TIME\n\n'
                           'Error: Invalid value for "DETECTION_TIME": not in the valid range of 100 to 5000.')
        detect, ports = int(ports[-1]), ports[:-1]
        bad = [p for p in ports if p != "all" and p not in self.ports]
        if bad:
            return "Failed to run command, invalid options:\n" + "\n".join(bad)
        out = []
        info = {"detection_time": str(detect)}
        if action:
            info["action"] = action
        if restore is None:
            restore = 2 * detect
            out.append(f"restoration time not defined; default to 2 times detection time: {restore} ms")
        info["restoration_time"] = str(restore)
        qm = self.running.get("PORT_QOS_MAP", {})
        for p in (self.ports if not ports or "all" in ports else ports):
            if qm.get(p, {}).get("pfc_enable") is None:
                out.append(f"SKIPPED: PFC is not enabled on port: {p}")
                continue
            self.table("PFC_WD")[p] = dict(info)
        return "\n".join(out)

    # -- sonic-db-cli ------------------------------------------------------------------------
    def db_cli(self, w):
        if len(w) < 3 or w[0] != "CONFIG_DB":
            raise CliError("usage: sonic-db-cli [-h] [-s] [-n NAMESPACE] db_or_op [cmd ...]")
        op, key, args = w[1].upper(), w[2], w[3:]
        table, sep, k = key.partition("|")
        if not sep:
            return "(error) the driver's model keeps CONFIG_DB keys as TABLE|KEY"
        entry = self.running.get(table, {}).get(k)
        if op == "HSET":
            if not args or len(args) % 2:
                return "(error) ERR wrong number of arguments for 'hset' command"
            e = self.table(table).setdefault(k, {})
            new = sum(1 for f in args[::2] if f not in e)
            e.update(zip(args[::2], args[1::2]))
            return str(new)
        if op == "HDEL":
            if not args:
                return "(error) ERR wrong number of arguments for 'hdel' command"
            n = sum(1 for f in args if entry is not None and entry.pop(f, None) is not None)
            self.prune()
            return str(n)
        if op == "DEL":
            found = self.running.get(table, {}).pop(k, None) is not None
            self.prune()
            return "1" if found else "0"
        if op == "HGET" and len(args) == 1:
            return (entry or {}).get(args[0], "")
        if op == "HGETALL":
            return str(entry or {})
        return f"(error) ERR unknown command '{w[1]}'"

    # -- view ------------------------------------------------------------------------------
    def port_view(self, port):
        port = self.canon_port(port)
        cfg = self.running
        pc = cfg.get("PORT", {}).get(port, {})
        qm = cfg.get("PORT_QOS_MAP", {}).get(port, {})
        trust = "dscp" if qm.get("dscp_to_tc_map") else "pcp" if qm.get("dot1p_to_tc_map") else "none"
        dmap = {}
        if trust == "dscp":
            m = cfg.get("DSCP_TO_TC_MAP", {}).get(qm["dscp_to_tc_map"], {})
            dmap = {d: int(m.get(str(d), 0)) for d in range(64)}
        queues = {}
        for key, e in cfg.get("QUEUE", {}).items():
            ps, _, qs = key.partition("|")
            if port in ps.split(","):
                a, _, b = qs.partition("-")
                for n in range(int(a), int(b or a) + 1):
                    queues.setdefault(n, {}).update(e)
        ecn = None
        for n in sorted(queues):
            w = cfg.get("WRED_PROFILE", {}).get(queues[n].get("wred_profile"), {})
            if w.get("ecn") in GREEN_ECN and "green_min_threshold" in w and "green_max_threshold" in w:
                ecn = {"tc": n, "min_bytes": int(w["green_min_threshold"]), "max_bytes": int(w["green_max_threshold"])}
                break
        sched = cfg.get("SCHEDULER", {})
        strict = [n for n, e in queues.items() if sched.get(e.get("scheduler"), {}).get("type") == "STRICT"]
        return {"up": pc.get("admin_status") == "up", "mtu": int(pc.get("mtu", self.default_mtu)), "trust": trust,
                "pfc_priorities": sorted(int(x) for x in qm.get("pfc_enable", "").split(",") if x),
                "ecn": ecn, "cnp_strict_tc": 6 if 6 in strict else (max(strict) if strict else None),
                "dscp_map": dmap}

    def fault_pfc_off(self, ports):
        for p in ports:
            self.running.get("PORT_QOS_MAP", {}).get(p, {}).pop("pfc_enable", None)
        self.prune()

    def fault_watchdog_off(self, ports):
        for p in ports:
            self.running.get("PFC_WD", {}).pop(p, None)
        self.prune()

    def fault_mtu_low(self, ports, mtu):
        for p in ports:
            self.table("PORT").setdefault(p, {})["mtu"] = str(mtu)
