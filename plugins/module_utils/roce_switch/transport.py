# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""netmiko transport: connect with host key checking, read, push inside the
NOS's transaction (EOS/NX-OS configuration session, NVUE pending revision) or,
where the NOS has none to use (Onyx, SONiC), undone by inverse commands
(community SONiC pushes from a 'sudo -s' root shell), restore the
running config on any rejected command or dropped connection, and save."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import os
import re
import time

from .model import RoceSwitchError

try:
    from netmiko import ConnectHandler
    from netmiko.base_connection import BaseConnection
    from netmiko.exceptions import ConfigInvalidException, ReadTimeout
    from netmiko.ssh_dispatcher import CLASS_MAPPER
    HAS_NETMIKO = True
except ImportError:  # reported by the module
    HAS_NETMIKO = False

# seconds a session waits for the NOS's prompt after login (driver.prompt_pattern)
# before it falls back to netmiko's own wait, which sends returns until the channel answers
PROMPT_WAIT = 5


class PushFailed(RoceSwitchError):
    pass


class UndoFailed(RoceSwitchError):
    """The inverse commands do not put the running config back (or cannot be computed)."""


class Switch:
    def __init__(self, driver, name, host, port, username, password, known_hosts=None,
                 host_key_checking=True, timeout=30):
        self.driver, self.name = driver, name
        self.params = dict(device_type=driver.device_type, host=host, port=port, username=username,
                           password=password, conn_timeout=timeout, auth_timeout=timeout,
                           banner_timeout=timeout, read_timeout_override=None)
        if host_key_checking:
            self.params.update(ssh_strict=True, system_host_keys=not known_hosts,
                               alt_host_keys=bool(known_hosts), alt_key_file=known_hosts or "")
        else:
            self.params.update(ssh_strict=False, system_host_keys=False)
        self.params.pop("read_timeout_override")
        if driver.sudo:
            self.params["secret"] = password
        self.timeout = timeout
        self.conn = None
        self.log = None
        self.shows = 0
        self.sent = []

    # -- connection --------------------------------------------------------------
    def connect(self):
        self.log = io.BytesIO()
        try:
            cls = connection_class(self.driver)
            if cls is None:
                self.conn = ConnectHandler(session_log=self.log, **self.params)
            else:
                self.conn = cls(session_log=self.log, **self.params)
            fail_fast_on_close(self.conn)
            if self.driver.enable:
                self.conn.enable()
        except Exception as e:
            self.conn = None
            raise RoceSwitchError("%s: cannot connect to %s:%s: %s"
                                  % (self.name, self.params["host"], self.params["port"], _one_line(e)))

    def close(self):
        if self.conn is not None:
            try:
                self.conn.disconnect()
            except Exception:
                pass
            self.conn = None

    def reconnect(self):
        self.close()
        last = None
        for _ in range(3):
            try:
                self.connect()
                return
            except RoceSwitchError as e:
                last = e
                time.sleep(0.5)
        raise last

    def show(self, command):
        self.shows += 1
        return self.conn.send_command(command, read_timeout=self.timeout)

    def config(self, lines, **kw):
        """Send configuration lines; raise PushFailed naming the command and the device's error."""
        self.sent += list(lines)
        kw.setdefault("error_pattern", self.driver.error_pattern)
        kw.setdefault("read_timeout", self.timeout)
        try:
            return self.conn.send_config_set(lines, **kw)
        except ConfigInvalidException as e:
            m = re.search(r"at command: (.*), matched error: (.*)$", str(e), re.S)
            cmd, err = (m.group(1), m.group(2).strip()) if m else ("?", str(e))
            raise PushFailed("%s: command '%s' rejected: %s" % (self.name, cmd, err), )
        except Exception as e:
            raise PushFailed("%s: connection dropped while sending '%s' (%s)"
                             % (self.name, self._last_sent(lines), _one_line(e)))

    def _last_sent(self, lines):
        text = self.log.getvalue().decode("utf-8", "replace") if self.log else ""
        best, pos = lines[0] if lines else "?", -1
        for line in lines:
            p = text.rfind(line)
            if p > pos:
                best, pos = line, p
        return best

    # -- the push ------------------------------------------------------------------
    def push(self, lines, before_text):
        """Apply ``lines`` as one unit; on failure restore the running config and raise."""
        d = self.driver
        try:
            if d.transaction == "session":
                name = "gpufabric_%d" % os.getpid()
                self._session_name = name
                out = self.config(list(lines) + ["commit"], config_mode_command="configure session %s" % name)
                return out
            if d.transaction == "pending":
                self.config(lines, enter_config_mode=False, exit_config_mode=False)
                out = self.conn.send_command("nv config apply -y", read_timeout=max(self.timeout, 60))
                if re.search(d.error_pattern, out, re.M):
                    raise PushFailed("%s: command 'nv config apply -y' rejected: %s"
                                     % (self.name, re.search(d.error_pattern, out, re.M).group(0)))
                return out
            tail = [d.end_word] if d.end_word else []
            return self.config(list(lines) + tail, exit_config_mode=not d.end_word)
        except PushFailed as failure:
            try:
                self.restore(before_text)
            except Exception as e:  # the push failure is the news; name the restore failure too
                raise PushFailed("%s; restoring the running config also failed: %s" % (failure, _one_line(e)))
            raise PushFailed("%s; running config restored" % failure)

    def restore(self, before_text):
        """Put the running config back as ``before_text``. Inverse commands
        are computed, sent and checked again from a fresh read until nothing
        differs; an undo that comes out the same twice, or is still not empty
        after ten rounds, fails naming what it could not put back."""
        d = self.driver
        last = None
        for attempt in range(10):
            try:
                if self.conn is None or not self.conn.is_alive():
                    self.reconnect()
                if d.transaction == "session":
                    self.conn.send_config_set(["abort"], config_mode_command="configure session %s"
                                              % self._session_name, exit_config_mode=False)
                    self.conn.send_command("end", expect_string=r"#")
                    return
                if d.transaction == "pending":
                    self.conn.send_command("nv config detach")
                    return
                now = self.conn.send_command(d.show_running, read_timeout=self.timeout)
                from .base import assemble
                try:
                    undo = assemble(d.undo_commands(before_text, now), d.exit_word)
                except RoceSwitchError as exc:  # what the driver cannot undo: final
                    raise UndoFailed(str(exc))
                if not undo:
                    return
                if undo == last:
                    # sent whole, read again, and nothing it sets took: no round more will do better
                    raise UndoFailed("%s: these commands did not put the running config back: %s"
                                     % (self.name, "; ".join(undo)))
                tail = [d.end_word] if d.end_word else []
                self.conn.send_config_set(undo + tail, exit_config_mode=not d.end_word, error_pattern=d.error_pattern)
                last = undo
            except UndoFailed:
                raise
            except Exception:
                self.close()
                if attempt == 9:
                    raise
                continue
            if d.transaction != "inverse":
                return
        raise UndoFailed("%s: the running config still differs after ten rounds of undo: %s"
                         % (self.name, "; ".join(last or [])))

    def save(self):
        if self.driver.save_exec:
            return self.conn.send_command(self.driver.save_exec, read_timeout=max(self.timeout, 60))
        if self.driver.save_command:
            return self.config([self.driver.save_command])
        return self.conn.save_config()


def connection_class(driver):
    """netmiko's class for the driver's device type with a session
    preparation that reads up to the NOS's login prompt (driver.prompt_pattern),
    as netmiko's own classes for most NOSes do; or None, for ConnectHandler's
    class as it is. netmiko's class for MLNX-OS (Onyx) keeps BaseConnection's
    preparation, which waits for the channel to stay quiet (a second's sleep,
    then reads until two seconds pass without data): every connection to an
    Onyx switch spent 2.3 s there. Where no prompt comes within PROMPT_WAIT
    seconds (a NOS that shows it only when sent a return), netmiko's own wait
    follows. The steps after it are BaseConnection's; a netmiko whose class
    prepares the session its own way keeps its own."""
    if not driver.prompt_pattern:
        return None
    base = CLASS_MAPPER[driver.device_type]
    if base.session_preparation is not BaseConnection.session_preparation:
        return None
    pattern = driver.prompt_pattern

    class PromptPrepared(base):
        def session_preparation(self):
            try:
                self.read_until_pattern(pattern=pattern, read_timeout=PROMPT_WAIT)
            except ReadTimeout:
                self._test_channel_read()
            self.set_base_prompt()
            self.set_terminal_width()
            self.disable_paging()

    PromptPrepared.__name__ = base.__name__ + "PromptPrepared"
    return PromptPrepared


def fail_fast_on_close(conn):
    """netmiko reads an idle channel until its read timeout even after the
    switch has closed the session (paramiko's channel is then closed and
    empty, which netmiko does not look at): a push cut mid-way would wait out
    the timeout on every attempt. Wrap the connection's reader so that an
    empty read from a closed channel raises at once; the push then fails,
    names the line and restores the running config without waiting."""
    inner = conn.read_channel

    def read_channel():
        out = inner()
        chan = getattr(conn, "remote_conn", None)
        if not out and chan is not None and getattr(chan, "closed", False):
            raise EOFError("the switch closed the SSH session")
        return out

    conn.read_channel = read_channel
    return conn


def _one_line(e):
    return " ".join(str(e).split())[:300] or e.__class__.__name__
