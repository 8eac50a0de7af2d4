# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every NOS driver provides, and the assembly of mode-scoped commands
into the lines a CLI session types."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from .model import RoceSwitchError, build_model, default_dscp_map


class Driver:
    """One NOS.  Subclasses set the class attributes and implement
    ``canon_port``, ``parse_views``, ``item_commands`` and ``parse_verify``."""

    nos = ""
    label = ""
    device_type = ""
    min_mtu, max_mtu, default_mtu = 68, 9216, 1500
    default_trust = "pcp"
    error_pattern = r"^%.*$"
    show_running = "show running-config"
    show_verify = ""
    transaction = ""  # session | pending | inverse (undo_commands)
    end_word = "end"  # what leaves configuration mode after a push ("": netmiko's exit, or a shell push)
    sudo = False  # netmiko's config mode is 'sudo -s', which asks for the login password
    save_command = ""  # the configuration command that saves, where netmiko's save_config does not
    save_exec = ""  # the exec-mode command that saves (NVUE: nv config save), where neither does
    enable = False  # enter privileged (enable) mode after login
    # the end of the NOS's login prompt, where netmiko's class for device_type waits
    # for the channel to go quiet after login instead (about 2.3 s of sleeps)
    prompt_pattern = ""
    switch = "switch"  # the switch's name in messages (get_driver sets it)

    # -- lines a parser must understand ------------------------------------------
    def unreadable(self, line, what="running config", why=""):
        """A line naming something the collection manages (a DSCP map, PFC,
        random-detect/ECN, trust) that the parser cannot read: fail rather than
        guess, naming the switch and the line."""
        raise RoceSwitchError("%s: %s line not understood by the %s parser%s: '%s'"
                              % (self.switch, what, self.label, (" (%s)" % why) if why else "", line.strip()))

    # -- ports -------------------------------------------------------------
    def canon_port(self, text):
        raise NotImplementedError

    # -- intent checks the NOS adds -----------------------------------------
    def check(self, want):
        return []

    # -- defaults ----------------------------------------------------------
    def default_map(self):
        return default_dscp_map()

    def default_strict(self, tc):
        return False

    def port_default(self, cprio):
        return {"mtu": self.default_mtu, "pfc": False, "trust": self.default_trust, "ecn": None,
                "cnp_strict": self.default_strict(cprio)}

    # -- reading -----------------------------------------------------------
    def parse_views(self, text):
        """-> (view(port) function, ports the config names, switch-wide values, raw parse)."""
        raise NotImplementedError

    def read(self, text, scope=None):
        """-> (data model, raw parse) of a running configuration."""
        view, seen, switch, raw = self.parse_views(text)
        names = (scope or {}).get("ports")
        names = seen if names is None else names
        return build_model(dict((p, view(p)) for p in names), switch, scope), raw

    def parse(self, text, scope=None):
        return self.read(text, scope)[0]

    # -- LLDP (layer 9's cabling check) ----------------------------------------
    show_lldp = ""  # the show command of the NOS's LLDP neighbour table

    def parse_lldp(self, text, managed=()):
        """The neighbours of the LLDP table ``text``: ``[{local, sysname,
        chassis_id, port_id, port_id_type, port_descr}]``, ``local`` in
        :meth:`canon_port`'s spelling; a line naming a port of ``managed``
        that the parser cannot read fails quoting it (lldp_text.py)."""
        raise RoceSwitchError("%s: reading LLDP neighbours is not implemented for %s" % (self.switch, self.label))

    def parse_verify(self, text):
        """Operational PFC per port from the verification show: {port: [prio, ...]}."""
        return {}

    def parse_status(self, text):
        """More of the verification show where the NOS prints it (mode, trust,
        ECN); None where it does not."""
        return None

    def status_drift(self, want, status):
        """Lines where ``parse_status`` differs from the intent."""
        return []

    def extra_changes(self, ch, want, have, raw):
        """Changes of settings the NOS needs for the intent beyond the data model
        (added to ``ch["ports"]``): by default the PFC watchdog (watchdog_changes)."""
        return self.watchdog_changes(ch, want, raw)

    def config_drift(self, want, raw):
        """Drift of those settings, read from the running config."""
        return []

    # -- global PFC and the PFC watchdog ---------------------------------------
    # The NOS command that turns the watchdog on for one port ('{port}' is the
    # port); "" where the driver does not manage the watchdog.
    watchdog_fix = ""
    # The NOS command that turns PFC on switch-wide; "" where the NOS has no
    # switch-wide PFC state apart from the ports'.
    global_pfc_fix = ""
    # What the watchdog intent means when the inventory does not say.
    watchdog_default = False

    def wants_watchdog(self, want):
        """The intent asks for the PFC watchdog on its PFC ports."""
        if not want or want["global"].get("pfc_priority") is None or not self.watchdog_fix:
            return False
        wd = want["global"].get("pfc_watchdog")
        return self.watchdog_default if wd is None else bool(wd)

    def watchdog_ports(self, raw, status=None):
        """Ports with the PFC watchdog on: from the verification show where it
        says, else from the running config."""
        return set()

    def global_pfc_off(self, raw, status=None):
        """Why PFC is off switch-wide (the line that says so), or None."""
        return None

    def watchdog_changes(self, ch, want, raw):
        """Add ``watchdog: (True, False)`` to the ports the intent wants the
        watchdog on and that do not have it."""
        if self.wants_watchdog(want):
            on = self.watchdog_ports(raw)
            for p, wp in want["ports"].items():
                if wp.get("pfc") and p not in on:
                    ch["ports"].setdefault(p, {})["watchdog"] = (True, False)
        return ch

    def pfc_drift(self, want, raw, status=None):
        """-> (switch-wide lines, per-port lines): global PFC off where the
        intent has PFC, the watchdog off on a PFC port where the intent asks
        for it; each names the NOS and the fix."""
        prio = want["global"].get("pfc_priority") if want else None
        if prio is None:
            return [], []
        glob = []
        why = self.global_pfc_off(raw, status)
        if why:
            glob.append("global PFC off on %s: %s (intent PFC on priority %d; fix: %s)"
                        % (self.label, why, prio, self.global_pfc_fix))
        ports = []
        if self.wants_watchdog(want):
            on = self.watchdog_ports(raw, status)
            for p, wp in want["ports"].items():
                if wp.get("pfc") and p not in on:
                    ports.append("%s: PFC watchdog off on %s (intent on with PFC on priority %d; fix: %s)"
                                 % (p, self.label, prio, self.watchdog_fix.format(port=p)))
        return glob, ports

    # -- writing -----------------------------------------------------------
    def item_commands(self, ch, want, have, raw):
        """-> list of (context tuple, line) for the changes ``ch``."""
        raise NotImplementedError

    def commands(self, ch, want, have, raw=None):
        return assemble(self.item_commands(ch, want, have, raw or {}), self.exit_word)

    exit_word = "exit"
    # settings the NOS can set on one port (the others are switch-wide there)
    per_port = ("mtu", "pfc", "trust", "ecn", "cnp_strict")


def assemble(items, exit_word="exit"):
    """[(ctx, line)] -> CLI lines: enter each context (a tuple of mode commands)
    once per run of commands in it, leave sub-modes with ``exit_word``."""
    out, cur = [], ()
    for ctx, line in items:
        ctx = tuple(ctx)
        if ctx != cur:
            common = 0
            while common < min(len(ctx), len(cur)) and ctx[common] == cur[common]:
                common += 1
            if exit_word:
                out += [exit_word] * (len(cur) - common)
            elif common < len(cur):
                common = 0  # no exit word: re-enter from the top, the CLI leaves sub-modes itself
            out += list(ctx[common:])
            cur = ctx
        out.append(line)
    if exit_word:
        out += [exit_word] * len(cur)
    return out


def dedupe(items):
    seen, out = set(), []
    for it in items:
        key = (tuple(it[0]), it[1])
        if key not in seen:
            seen.add(key)
            out.append(it)
    return out


def natural_key(text):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]
