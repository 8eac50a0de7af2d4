# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Community SONiC (Click CLI from bash, ``admin@sonic:~$``), netmiko
``edgecore_sonic``: the show parsers and the driver.

The running configuration is CONFIG_DB as ``show runningconfiguration all``
prints it (``sonic-cfggen -d --print-data``: JSON, one object per table).  The
driver reads PORT (mtu), PORT_QOS_MAP (dscp_to_tc_map, dot1p_to_tc_map,
pfc_enable), DSCP_TO_TC_MAP, WRED_PROFILE, QUEUE (wred_profile, scheduler),
SCHEDULER, BUFFER_PG, BUFFER_PROFILE and PFC_WD.  It writes with the ``config``
commands where SONiC has one (``config interface mtu``, ``config interface pfc
priority``, ``config ecn -profile``, ``config pfcwd start|stop``, ``config save
-y``) and with ``sonic-db-cli CONFIG_DB HSET|HDEL`` where it has none (the DSCP
map, the port's map binding, the queue's WRED profile and scheduler, the
lossless priority group), all from a root shell (``sudo -s``).  SONiC has no
configuration transaction: a failed push is undone by ``sonic-db-cli``
commands computed from CONFIG_DB read before it, field by field.

A field of these tables that names PFC, DSCP, ECN/WRED or a watchdog setting in
a form the parser does not know fails the read, naming switch, table, key and
field; so does a row of a show table these parsers read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from . import lldp_text
from .base import Driver, natural_key
from .model import RoceSwitchError

PRIOS = r"[0-7](?:,[0-7])*"


def _count(cell):
    """'93,845' -> 93845; 'N/A' -> None; anything else -> ValueError."""
    if cell == "N/A":
        return None
    if not re.fullmatch(r"\d{1,3}(?:,\d{3})*|\d+", cell):
        raise ValueError(cell)
    return int(cell.replace(",", ""))


class CommunitySonicShows:
    label = "community SONiC"

    def __init__(self, switch="switch"):
        self.switch = switch

    def unreadable(self, line, what, why=""):
        raise RoceSwitchError("%s: %s line not understood by the %s parser%s: '%s'"
                              % (self.switch, what, self.label, (" (%s)" % why) if why else "", line.strip()))

    @staticmethod
    def _rule(line):
        return bool(re.fullmatch(r" *-+(?:  +-+)* *", line)) and "-" in line

    # -- show pfc counters --------------------------------------------------------------
    def parse_pfc_counters(self, text):
        """{"rx": {port: [PFC0..PFC7]}, "tx": {...}}; a count is None where the
        tool prints N/A.  Thousands separators are read ('93,845')."""
        out, table = {"rx": {}, "tx": {}}, None
        for line in text.splitlines():
            s = line.strip()
            m = re.fullmatch(r"Port (Rx|Tx)((?:\s+PFC\d)+)", s)
            if m:
                if m.group(2).split() != ["PFC%d" % i for i in range(8)]:
                    self.unreadable(line, "show pfc counters", "columns")
                table = out[m.group(1).lower()]
                continue
            if not s:
                table = None
                continue
            if table is None or self._rule(line):
                continue
            cells = s.split()
            try:
                if len(cells) != 9:
                    raise ValueError(s)
                table[cells[0]] = [_count(c) for c in cells[1:]]
            except ValueError:
                self.unreadable(line, "show pfc counters", "a port and eight counts")
        return out

    # -- show pfc priority ----------------------------------------------------------------
    def parse_pfc_priority(self, text):
        """{port: [lossless priorities]}."""
        out, inside = {}, False
        for line in text.splitlines():
            s = line.strip()
            if re.fullmatch(r"Interface\s+Lossless priorities", s):
                inside = True
                continue
            if not inside or not s or self._rule(line):
                continue
            m = re.fullmatch(r"(\S+)(?:\s+(%s|N/A))?" % PRIOS, s)
            if not m:
                self.unreadable(line, "show pfc priority", "an interface and its priorities")
            v = m.group(2)
            out[m.group(1)] = [int(x) for x in v.split(",")] if v and v != "N/A" else []
        return out

    # -- show ecn ---------------------------------------------------------------------------
    def parse_ecn(self, text):
        """{profile: {field: value}} of 'show ecn' (``ecnconfig -l``); numbers as int."""
        out, prof, rules = {}, None, 0
        for line in text.splitlines():
            s = line.strip()
            m = re.fullmatch(r"Profile: (?:\*\*)?(\S+?)(?:\*\*)?", s)
            if m:
                prof, rules = out.setdefault(m.group(1), {}), 0
                continue
            if prof is None or not s:
                continue
            if self._rule(line):
                rules += 1
                continue
            if rules != 1:
                self.unreadable(line, "show ecn", "outside a profile's table")
            m = re.fullmatch(r"(\w+)\s+(\S+)", s)
            if not m:
                self.unreadable(line, "show ecn", "a field and its value")
            prof[m.group(1)] = int(m.group(2)) if m.group(2).isdigit() else m.group(2)
        return out

    def ecn_of(self, profile, name="profile"):
        """A WRED profile's ECN as the data model has it for the green colour:
        {min_bytes, max_bytes, probability, mode} (thresholds are bytes in
        CONFIG_DB); None when ECN is off ('ecn_none' or no ecn field)."""
        mode = profile.get("ecn", "ecn_none")
        if mode not in ("ecn_none", "ecn_green", "ecn_yellow", "ecn_red", "ecn_green_yellow", "ecn_green_red",
                        "ecn_yellow_red", "ecn_all"):
            raise RoceSwitchError("%s: WRED profile %s has ecn %r, which the %s parser does not know"
                                  % (self.switch, name, mode, self.label))
        if mode == "ecn_none":
            return None
        keys = ("green_min_threshold", "green_max_threshold", "green_drop_probability")
        if any(not isinstance(profile.get(k), int) for k in keys):
            raise RoceSwitchError("%s: WRED profile %s marks ECN (%s) without green thresholds and probability"
                                  % (self.switch, name, mode))
        return {"min_bytes": profile[keys[0]], "max_bytes": profile[keys[1]], "probability": profile[keys[2]],
                "mode": mode}

    # -- show pfcwd ---------------------------------------------------------------------------
    def parse_pfcwd_stats(self, text):
        """{port: {queue: {status, storm_detected, storm_restored, tx_ok, tx_drop,
        rx_ok, rx_drop, tx_last_ok, tx_last_drop, rx_last_ok, rx_last_drop}}}."""
        out, inside = {}, False
        pairs = ("storm_detected", "storm_restored", "tx_ok", "tx_drop", "rx_ok", "rx_drop", "tx_last_ok",
                 "tx_last_drop", "rx_last_ok", "rx_last_drop")
        for line in text.splitlines():
            s = line.strip()
            if s.startswith("QUEUE") and "STATUS" in s and "STORM DETECTED/RESTORED" in s:
                inside = True
                continue
            if not inside or not s or self._rule(line):
                continue
            cells = s.split()
            m = re.fullmatch(r"(\S+):(\d+)", cells[0])
            vals = []
            try:
                if not m or len(cells) != 7:
                    raise ValueError(s)
                for c in cells[2:]:
                    a, b = c.split("/")
                    vals += [_count(a), _count(b)]
            except ValueError:
                self.unreadable(line, "show pfcwd stats", "PORT:QUEUE, a status and five OK/DROP pairs")
            out.setdefault(m.group(1), {})[int(m.group(2))] = dict(zip(("status",) + pairs, [cells[1]] + vals))
        return out

    def parse_pfcwd_config(self, text):
        """{"polling_ms": int or None, "big_red_switch": str or None,
        "ports": {port: {action, detection_ms, restoration_ms, history}}}."""
        out = {"polling_ms": None, "big_red_switch": None, "ports": {}}
        inside = False
        for line in text.splitlines():
            s = line.strip()
            m = re.fullmatch(r"Changed polling interval to (\d+)ms(?: on \S+)?", s)
            if m:
                out["polling_ms"] = int(m.group(1))
                continue
            m = re.fullmatch(r"BIG_RED_SWITCH status is (\S+)(?: on \S+)?", s)
            if m:
                out["big_red_switch"] = m.group(1)
                continue
            if re.fullmatch(r"PORT\s+ACTION\s+DETECTION TIME\s+RESTORATION TIME(?:\s+HISTORY)?", s):
                inside = True
                continue
            if not inside or not s or self._rule(line):
                continue
            m = re.fullmatch(r"(\S+)\s+(drop|forward|alert)\s+(\d+)\s+(\d+)(?:\s+(enable|disable))?", s)
            if not m:
                self.unreadable(line, "show pfcwd config", "a port, its action and two times")
            out["ports"][m.group(1)] = {"action": m.group(2), "detection_ms": int(m.group(3)),
                                        "restoration_ms": int(m.group(4)), "history": m.group(5)}
        return out


# ---------------------------------------------------------------------------------------------
# the driver

MAP = "AZURE"  # the DSCP_TO_TC_MAP the QoS templates create and bind
WRED = "AZURE_LOSSLESS"  # the WRED profile the templates bind to the lossless queues
STRICT = "GPUFABRIC_STRICT"  # the SCHEDULER entry the driver adds for the CNP queue
WD_DETECT, WD_RESTORE = 200, 200  # 'config pfcwd start_default' values (ms)
ECN_MODES = ("ecn_none", "ecn_green", "ecn_yellow", "ecn_red", "ecn_green_yellow", "ecn_green_red",
             "ecn_yellow_red", "ecn_all")
GREEN_ECN = ("ecn_green", "ecn_green_yellow", "ecn_green_red", "ecn_all")
# fields of the tables the driver reads: name -> value pattern (None: any value)
FIELDS = {
    "PORT_QOS_MAP": {"dscp_to_tc_map": r"\S+", "dot1p_to_tc_map": r"\S+", "pfc_enable": r"|[0-7](?:,[0-7])*",
                     "pfcwd_sw_enable": r"|[0-7](?:,[0-7])*", "tc_to_queue_map": None, "tc_to_pg_map": None,
                     "pfc_to_queue_map": None, "pfc_to_pg_map": None, "tc_to_dscp_map": None,
                     "tc_to_dot1p_map": None, "scheduler": None, "dscp_to_fc_map": None, "exp_to_fc_map": None,
                     "mpls_tc_to_tc_map": None, "pfc_asym": None},
    "WRED_PROFILE": dict([("ecn", "|".join(ECN_MODES))]
                         + [("%s_%s" % (c, k), r"\d+") for c in ("green", "yellow", "red")
                            for k in ("min_threshold", "max_threshold", "drop_probability")]
                         + [("wred_%s_enable" % c, r"true|false") for c in ("green", "yellow", "red")]),
    "QUEUE": {"wred_profile": r"\S+", "scheduler": r"\S+", "buffer_profile": None},
    "SCHEDULER": {"type": r"STRICT|DWRR|WRR", "weight": r"\d+", "priority": r"\d+", "meter_type": None,
                  "cir": None, "cbs": None, "pir": None, "pbs": None},
    "BUFFER_PG": {"profile": r"\S+"},
    "PFC_WD": {"action": r"drop|forward|alert", "detection_time": r"\d+", "restoration_time": r"\d+",
               "pfc_stat_history": r"enable|disable", "POLL_INTERVAL": r"\d+", "BIG_RED_SWITCH": r"enable|disable"},
}
MANAGED_WORDS = re.compile(r"pfc|dscp|ecn|wred|watchdog|pfcwd", re.I)
# tables a rollback puts back field by field (PORT: the mtu only)
UNDO_TABLES = ("DSCP_TO_TC_MAP", "WRED_PROFILE", "SCHEDULER", "PORT_QOS_MAP", "QUEUE", "BUFFER_PG", "PFC_WD")


def q(text):
    """A word for bash: single-quoted when it holds anything but letters, digits and _.,:-."""
    text = str(text)
    return text if re.fullmatch(r"[\w.,:\-]+", text) else "'%s'" % text.replace("'", "'\\''")


def _int_set(text):
    """'3', '3-4' -> [3] / [3, 4]; None when malformed."""
    m = re.fullmatch(r"(\d+)(?:-(\d+))?", text)
    if not m or int(m.group(2) or m.group(1)) < int(m.group(1)):
        return None
    return list(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))


class CommunitySonicDriver(Driver):
    nos = "sonic-community"
    label = "community SONiC"
    device_type = "edgecore_sonic"
    min_mtu, max_mtu, default_mtu = 68, 9216, 9100
    default_trust = "none"
    # Click's usage errors, pfc's, pfcwd's and ecnconfig's refusals, sonic-db-cli's and bash's errors
    error_pattern = (r"^(?:Error:|Usage:|Cannot find interface|Failed to run command|Root privileges are required"
                     r"|Exception caught:|\(error\)|-bash: |bash: ).*$")
    show_running = "show runningconfiguration all"
    show_verify = "show pfc priority && show pfcwd config"
    transaction = "inverse"
    exit_word = ""
    end_word = ""  # no 'end': the push runs in a root shell
    sudo = True  # configuration commands run after 'sudo -s' (netmiko's config mode on this device type)
    save_command = "config save -y"

    def __init__(self):
        self.shows = CommunitySonicShows()

    def canon_port(self, text):
        m = re.fullmatch(r"(?:ethernet|eth)\s*(\d+)", text.strip(), re.I)
        if not m:
            raise ValueError(text)
        return "Ethernet" + m.group(1)

    # -- LLDP: ``show lldp table`` (LocalPort, RemoteDevice, RemotePortID, Capability, RemotePortDescr) ----
    show_lldp = "show lldp table"

    def parse_lldp(self, text, managed=()):
        _h, rows = lldp_text.table(text, r"^LocalPort\s+RemoteDevice\s+RemotePortID\s+Capability\s+RemotePortDescr$",
                                   ("LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr"),
                                   self.label)
        out = []
        for line, f in rows:
            # eth0 is the management port, not Ethernet0
            local = f[0] if re.match(r"^eth\d+$", f[0]) else lldp_text.local_port(self, f[0])
            if len(f) != 5 or not f[2]:
                if local in managed:
                    lldp_text.unreadable(self, line, "not LocalPort, RemoteDevice, RemotePortID, Capability, "
                                                     "RemotePortDescr")
                continue
            out.append(lldp_text.neighbor(local, sysname=f[1], port_id=f[2], port_descr=f[4]))
        return out

    def check(self, want):
        if want["global"]["trust"] != "dscp":
            return ["community SONiC: the driver classifies on DSCP (a dscp_to_tc_map on the port); trust %s is "
                    "not supported" % want["global"]["trust"]]
        return []

    def default_map(self):
        return {}

    # -- reading -------------------------------------------------------------------------
    def bad(self, table, key, field, value, why=""):
        self.unreadable("%s|%s %s: %s" % (table, key, field, json.dumps(value)), "CONFIG_DB", why)

    def load(self, text):
        """CONFIG_DB of 'show runningconfiguration all' as {table: {key: {field: value}}}."""
        body = text.strip()
        if not body:
            return {}
        start = body.find("{")
        try:
            data = json.loads(body[start:]) if start >= 0 else None
        except ValueError as e:
            data, err = None, str(e)
        else:
            err = "not a JSON object"
        if not isinstance(data, dict):
            raise RoceSwitchError("%s: 'show runningconfiguration all' did not print CONFIG_DB as JSON (%s): '%s'"
                                  % (self.switch, err, body.splitlines()[0][:200]))
        if "PORT" not in data and isinstance(data.get("localhost"), dict):  # multi-ASIC: per namespace
            data = data["localhost"]
        return data

    def _table(self, db, name):
        t = db.get(name, {})
        if not isinstance(t, dict) or any(not isinstance(v, dict) for v in t.values()):
            raise RoceSwitchError("%s: CONFIG_DB table %s is not a table of entries" % (self.switch, name))
        return t

    def _checked(self, db, name):
        """The table with each field the driver knows checked against its form; an
        unknown field whose name says PFC, DSCP, ECN, WRED or watchdog fails."""
        t = self._table(db, name)
        for key, entry in t.items():
            for field, value in entry.items():
                pat = FIELDS[name].get(field, False)
                if pat is False:
                    if MANAGED_WORDS.search(field):
                        self.bad(name, key, field, value, "field")
                    continue
                if pat is not None and (not isinstance(value, str) or not re.fullmatch(pat, value)):
                    self.bad(name, key, field, value)
        return t

    def _split_key(self, table, key, entry):
        """'Ethernet0|3', 'Ethernet0,Ethernet4|3-4' -> ([ports], [numbers])."""
        parts = key.split("|")
        nums = _int_set(parts[1]) if len(parts) == 2 else None
        ports = parts[0].split(",")
        if nums is None or not all(re.fullmatch(r"Ethernet\d+", p) for p in ports):
            self.bad(table, key, "key", entry, "not PORT[,PORT]|N[-M]")
        return ports, nums

    def parse_raw(self, text):
        db = self.load(text)
        raw = {"db": db, "mtu": {}, "qos": {}, "maps": {}, "wred": {}, "queues": {}, "sched": {}, "pg": {},
               "wd": {}, "wd_global": {}, "buffer_model": None, "profiles": {}}
        for port, entry in self._table(db, "PORT").items():
            mtu = entry.get("mtu")
            if mtu is not None and not re.fullmatch(r"\d+", str(mtu)):
                self.bad("PORT", port, "mtu", mtu)
            raw["mtu"][port] = int(mtu) if mtu is not None else self.default_mtu
        for name, m in self._table(db, "DSCP_TO_TC_MAP").items():
            out = raw["maps"][name] = {}
            for d, tc in m.items():
                if not re.fullmatch(r"\d+", d) or int(d) > 63 or not re.fullmatch(r"\d+", str(tc)) or int(tc) > 15:
                    self.bad("DSCP_TO_TC_MAP", name, d, tc, "a DSCP 0-63 and a traffic class")
                out[int(d)] = int(tc)
        for key, entry in self._checked(db, "PORT_QOS_MAP").items():
            for ref in ("dscp_to_tc_map",):
                if ref in entry and entry[ref] not in raw["maps"]:
                    raise RoceSwitchError("%s: PORT_QOS_MAP|%s names %s %s, which DSCP_TO_TC_MAP does not hold"
                                          % (self.switch, key, ref, entry[ref]))
            raw["qos"][key] = dict(entry, pfc=[int(x) for x in entry.get("pfc_enable", "").split(",") if x])
        wred = self._checked(db, "WRED_PROFILE")
        for name, prof in wred.items():
            typed = dict((k, int(v) if re.fullmatch(r"\d+", v) else v) for k, v in prof.items())
            e = self.shows.ecn_of(typed, name) if "ecn" in typed else None
            raw["wred"][name] = e
        for name, entry in self._checked(db, "SCHEDULER").items():
            raw["sched"][name] = entry.get("type")
        for key, entry in self._checked(db, "QUEUE").items():
            ports, nums = self._split_key("QUEUE", key, entry)
            if entry.get("wred_profile") and entry["wred_profile"] not in raw["wred"]:
                raise RoceSwitchError("%s: QUEUE|%s names WRED profile %s, which WRED_PROFILE does not hold"
                                      % (self.switch, key, entry["wred_profile"]))
            for p in ports:
                for n in nums:
                    raw["queues"].setdefault(p, {})[n] = dict(entry, key=key)
        for name, entry in self._table(db, "BUFFER_PROFILE").items():
            raw["profiles"][name] = "xoff" in entry or entry.get("pool") == "ingress_lossless_pool" and "xon" in entry
        for key, entry in self._checked(db, "BUFFER_PG").items():
            ports, nums = self._split_key("BUFFER_PG", key, entry)
            for p in ports:
                for n in nums:
                    raw["pg"].setdefault(p, {})[n] = dict(entry, key=key)
        for key, entry in self._checked(db, "PFC_WD").items():
            if key == "GLOBAL":
                raw["wd_global"] = entry
            else:
                raw["wd"][key] = entry
        meta = self._table(db, "DEVICE_METADATA").get("localhost", {})
        raw["buffer_model"] = meta.get("buffer_model")
        return raw

    def trust_of(self, qm):
        d, p = bool(qm.get("dscp_to_tc_map")), bool(qm.get("dot1p_to_tc_map"))
        return "both" if d and p else "dscp" if d else "pcp" if p else "none"

    def ecn_of_port(self, raw, port):
        for n, qc in sorted(raw["queues"].get(port, {}).items()):
            e = raw["wred"].get(qc.get("wred_profile"))
            if e and e["mode"] in GREEN_ECN:
                return {"tc": n, "min_bytes": e["min_bytes"], "max_bytes": e["max_bytes"],
                        "probability": e["probability"]}
        return None

    def map_name(self, raw, ports=None):
        """The DSCP_TO_TC_MAP the ports use (the most bound one), else the global
        binding, else AZURE."""
        counts = {}
        for p in ports if ports is not None else raw["qos"]:
            n = raw["qos"].get(p, {}).get("dscp_to_tc_map")
            if n:
                counts[n] = counts.get(n, 0) + 1
        if counts:
            return max(sorted(counts), key=lambda n: counts[n])
        g = raw["qos"].get("global", {}).get("dscp_to_tc_map")
        return g or MAP

    def parse_views(self, text):
        raw = self.parse_raw(text)

        def view(port):
            qm = raw["qos"].get(port, {})
            return {"mtu": raw["mtu"].get(port, self.default_mtu), "trust": self.trust_of(qm),
                    "pfc_priorities": sorted(qm.get("pfc", [])), "ecn": self.ecn_of_port(raw, port),
                    "strict_tcs": set(n for n, qc in raw["queues"].get(port, {}).items()
                                      if raw["sched"].get(qc.get("scheduler")) == "STRICT")}
        name = self.map_name(raw)
        m = raw["maps"].get(name, {})
        switch = {"dscp_map": dict(m), "explicit_dscps": sorted(m)}
        seen = sorted(set(raw["mtu"]) | set(p for p in raw["qos"] if p != "global"), key=natural_key)
        return view, seen, switch, raw

    def read(self, text, scope=None):
        model, raw = Driver.read(self, text, scope)
        if scope and scope.get("ports"):  # the map the given ports use is the one to report
            m = raw["maps"].get(self.map_name(raw, scope["ports"]), {})
            dscps = scope.get("dscps") or sorted(m)
            model["global"]["dscp_map"] = dict((d, m[d]) for d in dscps if d in m)
            model["global"]["explicit_dscps"] = sorted(m)
        return model, raw

    # -- what CONFIG_DB holds beyond the data model: watchdog and lossless buffer -------------
    def lossless_pg(self, raw, port, prio):
        pg = raw["pg"].get(port, {}).get(prio)
        return bool(pg) and (pg.get("profile") == "NULL" or raw["profiles"].get(pg.get("profile"), False))

    def pg_profile(self, raw):
        """The profile a new lossless priority group gets: NULL (computed by
        buffermgrd) under the dynamic buffer model, else the lossless profile
        other priority groups use."""
        if raw.get("buffer_model") == "traditional":
            used = sorted(set(pg.get("profile") for pgs in raw["pg"].values() for pg in pgs.values()
                              if raw["profiles"].get(pg.get("profile"))))
            if not used:
                raise RoceSwitchError("%s: the traditional buffer model and no lossless BUFFER_PROFILE in use; give the"
                                      " lossless priority group a profile first" % self.switch)
            return used[0]
        return "NULL"

    # The PFC watchdog follows the ports with PFC unless the intent says pfc_watchdog: false.
    watchdog_default = True
    watchdog_fix = "config pfcwd start --action drop {port} %d --restoration-time %d" % (WD_DETECT, WD_RESTORE)

    def watchdog_ports(self, raw, status=None):
        if status is not None:
            return set(status["watchdog_ports"])
        return set(raw.get("wd", {}))

    def extra_changes(self, ch, want, have, raw):
        """PFC watchdog (watchdog_changes) and lossless priority group on the
        ports where the intent has PFC (not in the data model; CONFIG_DB is
        their only record)."""
        prio = want["global"]["pfc_priority"]
        if prio is None:
            return ch
        ch = self.watchdog_changes(ch, want, raw)
        for p, wp in want["ports"].items():
            if wp.get("pfc") and not self.lossless_pg(raw, p, prio):
                ch["ports"].setdefault(p, {})["buffer_pg"] = (True, False)
        return ch

    def config_drift(self, want, raw):
        prio = want["global"]["pfc_priority"] if want else None
        if prio is None:
            return []
        return ["%s: no lossless buffer profile on priority group %d (BUFFER_PG)" % (p, prio)
                for p, wp in want["ports"].items() if wp.get("pfc") and not self.lossless_pg(raw, p, prio)]

    # -- verification: show pfc priority && show pfcwd config ----------------------------------
    WD_START = re.compile(r"\s*(?:Changed polling interval to|BIG_RED_SWITCH status is|PORT\s+ACTION\s)")

    def _split_verify(self, text):
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if self.WD_START.match(line):
                return "\n".join(lines[:i]), "\n".join(lines[i:])
        return text, ""

    def parse_verify(self, text):
        """PFC priorities per port from 'show pfc priority' (CONFIG_DB's pfc_enable:
        SONiC prints no other per-port PFC state)."""
        self.shows.switch = self.switch
        return self.shows.parse_pfc_priority(self._split_verify(text)[0])

    def parse_status(self, text):
        self.shows.switch = self.switch
        wd = self.shows.parse_pfcwd_config(self._split_verify(text)[1])
        return {"watchdog_ports": sorted(wd["ports"], key=natural_key), "watchdog_polling_ms": wd["polling_ms"]}

    # -- writing ---------------------------------------------------------------------------
    def item_commands(self, ch, want, have, raw):
        state = ch.get("state")
        out = []
        db = "sonic-db-cli CONFIG_DB"
        ports_all = list(want["ports"]) + [p for p in ch["ports"] if p not in want["ports"]]
        name = self.map_name(raw, ports_all) if raw.get("qos") is not None else MAP
        g = ch["global"]
        if "dscp_map" in g and state != "deleted":
            pairs = " ".join("%d %d" % (d, p) for d, p in sorted(g["dscp_map"][0].items()))
            out.append("%s HSET %s %s" % (db, q("DSCP_TO_TC_MAP|" + name), pairs))
        if ch["dscp_unset"] and state != "deleted":
            out.append("%s HDEL %s %s" % (db, q("DSCP_TO_TC_MAP|" + name), " ".join(map(str, ch["dscp_unset"]))))
        wecn = want["global"]["ecn"]
        if wecn and any("ecn" in d and d["ecn"][0] for d in ch["ports"].values()) or "ecn" in g and wecn:
            held = WRED in raw.get("wred", {})
            cur = raw.get("wred", {}).get(WRED) or {}
            if not held:  # 'config ecn' changes a profile, it does not create one
                out.append("%s HSET %s ecn ecn_all wred_green_enable true green_min_threshold %d "
                           "green_max_threshold %d green_drop_probability %d"
                           % (db, q("WRED_PROFILE|" + WRED), wecn["min_bytes"], wecn["max_bytes"],
                              wecn["probability"]))
            else:
                if (cur.get("min_bytes"), cur.get("max_bytes"), cur.get("probability")) != (
                        wecn["min_bytes"], wecn["max_bytes"], wecn["probability"]):
                    out.append("config ecn -profile %s -gmin %d -gmax %d -gdrop %d"
                               % (WRED, wecn["min_bytes"], wecn["max_bytes"], wecn["probability"]))
                if cur.get("mode") not in GREEN_ECN:
                    out.append("%s HSET %s ecn ecn_all wred_green_enable true" % (db, q("WRED_PROFILE|" + WRED)))
        cprio = (want["global"]["cnp"] or have["global"]["cnp"] or {}).get("priority", 6)
        if any(d.get("cnp_strict", (False,))[0] for d in ch["ports"].values()) and \
                raw.get("sched", {}).get(STRICT) != "STRICT":
            out.append("%s HSET %s type STRICT" % (db, q("SCHEDULER|" + STRICT)))
        wprio, hprio = want["global"]["pfc_priority"], have["global"]["pfc_priority"]
        wd_start, wd_stop = [], []
        for port in sorted(set(ch["ports"]) | set(p for p in want["ports"] if "pfc_priority" in g), key=natural_key):
            diff = ch["ports"].get(port, {})
            pq = q("PORT_QOS_MAP|" + port)
            queues = raw.get("queues", {}).get(port, {})
            if "mtu" in diff:
                out.append("config interface mtu %s %d" % (port, diff["mtu"][0]))
            if "trust" in diff:
                if diff["trust"][0] == "dscp":
                    out.append("%s HSET %s dscp_to_tc_map %s" % (db, pq, name))
                else:
                    out.append("%s HDEL %s dscp_to_tc_map" % (db, pq))
            have_prios = raw.get("qos", {}).get(port, {}).get("pfc", [])
            wp = diff["pfc"][0] if "pfc" in diff else want["ports"].get(port, {}).get("pfc")
            if "pfc" in diff or "pfc_priority" in g:
                if wp and wprio is not None:
                    if wprio not in have_prios:
                        out.append("config interface pfc priority %s %d on" % (port, wprio))
                    if hprio is not None and hprio != wprio and hprio in have_prios:
                        out.append("config interface pfc priority %s %d off" % (port, hprio))
                else:
                    for pr in ([hprio] if hprio is not None and hprio in have_prios else []):
                        out.append("config interface pfc priority %s %d off" % (port, pr))
                    if port in raw.get("wd", {}):
                        wd_stop.append(port)
            if diff.get("buffer_pg", (False,))[0]:
                out.append("%s HSET %s profile %s" % (db, q("BUFFER_PG|%s|%d" % (port, wprio)), self.pg_profile(raw)))
            if diff.get("watchdog", (False,))[0]:
                wd_start.append(port)
            if "ecn" in diff:
                w, h = diff["ecn"]
                if h and (not w or h["tc"] != w["tc"]):
                    out.append("%s HDEL %s wred_profile" % (db, q("QUEUE|" + queues.get(h["tc"], {}).get(
                        "key", "%s|%d" % (port, h["tc"])))))
                if w and queues.get(w["tc"], {}).get("wred_profile") != WRED:
                    out.append("%s HSET %s wred_profile %s" % (db, q("QUEUE|%s|%d" % (port, w["tc"])), WRED))
            if "cnp_strict" in diff:
                if diff["cnp_strict"][0]:
                    out.append("%s HSET %s scheduler %s" % (db, q("QUEUE|%s|%d" % (port, cprio)), STRICT))
                else:
                    out.append("%s HDEL %s scheduler" % (db, q("QUEUE|" + queues.get(cprio, {}).get(
                        "key", "%s|%d" % (port, cprio)))))
        if wd_start:
            out.append("config pfcwd start --action drop %s %d --restoration-time %d"
                       % (" ".join(wd_start), WD_DETECT, WD_RESTORE))
        if wd_stop:
            out.append("config pfcwd stop %s" % " ".join(wd_stop))
        if state == "deleted" and ch["dscp_unset"]:
            others = [p for p, qm in raw.get("qos", {}).items()
                      if qm.get("dscp_to_tc_map") == name and p not in ch["ports"]]
            if not others:
                out.append("%s DEL %s" % (db, q("DSCP_TO_TC_MAP|" + name)))
        seen, items = set(), []
        for line in out:
            if line not in seen:
                seen.add(line)
                items.append(((), line))
        return items

    # -- rollback ----------------------------------------------------------------------------
    def undo_commands(self, before_text, now_text):
        """sonic-db-cli commands that put CONFIG_DB's managed tables (and PORT mtu)
        back as ``before_text`` has them."""
        before, now = self.load(before_text), self.load(now_text)
        db = "sonic-db-cli CONFIG_DB"
        out = []
        for table in UNDO_TABLES + ("PORT",):
            b, n = before.get(table, {}), now.get(table, {})
            for key in sorted(set(b) | set(n), key=natural_key):
                be, ne = b.get(key), n.get(key)
                if table == "PORT":
                    be = {"mtu": be["mtu"]} if be and "mtu" in be else ({} if be is not None else None)
                    ne = {"mtu": ne["mtu"]} if ne and "mtu" in ne else ({} if ne is not None else None)
                if be == ne:
                    continue
                k = q("%s|%s" % (table, key))
                if be is None:
                    if table != "PORT":
                        out.append("%s DEL %s" % (db, k))
                    continue
                gone = [f for f in (ne or {}) if f not in be]
                if gone:
                    out.append("%s HDEL %s %s" % (db, k, " ".join(q(f) for f in gone)))
                put = [(f, v) for f, v in sorted(be.items()) if (ne or {}).get(f) != v]
                if put:
                    out.append("%s HSET %s %s" % (db, k, " ".join("%s %s" % (q(f), q(v)) for f, v in put)))
        return [((), line) for line in out]
