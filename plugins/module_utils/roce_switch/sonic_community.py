# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Community SONiC (Click CLI from bash, ``admin@sonic:~$``): parsers of the
show commands that report PFC and ECN.

This is the read side of the community SONiC driver, on its own for now: the
driver (running config from ``show runningconfiguration all``, pushes with
``config``/``ecnconfig``/``config apply-patch``) and its twin are not written
yet, so ``get_driver`` does not offer this NOS.  The formats are sonic-utilities'
tabulate tables (tests/unit/fixtures/switch_real/sonic).  As everywhere in
roce_switch, a row of a table these parsers read is understood or the parse
fails naming the switch and the row."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

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
