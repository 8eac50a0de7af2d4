"""SSH front-end of the twin's leaf switches: one paramiko server per switch on
127.0.0.1, password authentication, an interactive shell that echoes input as a
PTY does and runs every line through the switch's NOS model.

State lives in ``<state_dir>/<name>.json`` (reloaded when another process
changed it, written after every change); faults in ``<state_dir>/<name>.faults.json``
are read before every command; the host key is ``<state_dir>/<name>.hostkey``."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
from pathlib import Path

import paramiko

from . import faults
from .models import by_nos
from .models.base import SwitchModel

MODELS = by_nos()
FAULT_KINDS = faults.KINDS + ("clear",)

logging.getLogger("paramiko").setLevel(logging.CRITICAL)


# ---------------------------------------------------------------------------
# state files


def state_path(state_dir, name) -> Path:
    return Path(state_dir) / f"{name}.json"


def faults_path(state_dir, name) -> Path:
    return Path(state_dir) / f"{name}.faults.json"


def make_model(nos: str, name: str = "leaf1", ports=None) -> SwitchModel:
    if nos not in MODELS:
        raise ValueError(f"unknown NOS {nos!r}; expected one of {sorted(MODELS)}")
    return MODELS[nos](name, ports)


def _atomic_write(path: Path, text: str):
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def save_switch(state_dir, model: SwitchModel):
    Path(state_dir).mkdir(parents=True, exist_ok=True)
    _atomic_write(state_path(state_dir, model.name), model.state_json())


def load_switch(state_dir, name) -> SwitchModel:
    """The switch's model as last saved by its server (or by inject_fault)."""
    st = json.loads(state_path(state_dir, name).read_text())
    m = make_model(st["nos"], st["name"], st["ports"])
    m.load_state(st)
    return m


def read_faults(state_dir, name) -> dict:
    try:
        return json.loads(faults_path(state_dir, name).read_text())
    except (FileNotFoundError, ValueError):
        return {}


def write_faults(state_dir, name, faults: dict):
    if faults:
        _atomic_write(faults_path(state_dir, name), json.dumps(faults, indent=1, sort_keys=True))
    else:
        try:
            faults_path(state_dir, name).unlink()
        except FileNotFoundError:
            pass


def inject_fault(state_dir, name, kind, ports=None, **params) -> dict:
    """Inject a fault into switch ``name``; returns the switch's active faults.

    - ``switch-pfc-off``: PFC is removed from the running configuration of
      ``ports`` (default: every port).
    - ``switch-mtu-low``: the running MTU of ``ports`` becomes ``mtu`` (default 1500).
    - ``switch-rejects-command``: the next ``count`` (default 1) configuration
      lines matching ``pattern`` (default: any ECN line) fail with the NOS's error.
    - ``switch-ssh-drops-mid-push``: every SSH session is cut, without applying
      the line, when it sends configuration line number ``after`` + 1 (default 3).
    - ``switch-watchdog-off``: the PFC watchdog configuration of ``ports``
      (default: every port) is removed from the running configuration.
    - ``switch-global-pfc-off``: PFC is switched off switch-wide (Onyx without
      ``dcb priority-flow-control enable``, EOS ``priority-flow-control all
      off``); the ports' PFC lines stay.  Other NOSes have no such state: ValueError.
    - ``clear``: removes the faults; configuration changes already made stay.
    """
    if kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault {kind!r}; expected one of {FAULT_KINDS}")
    if kind == "clear":
        write_faults(state_dir, name, {})
        return {}
    faults = read_faults(state_dir, name)
    if kind in ("switch-pfc-off", "switch-mtu-low", "switch-watchdog-off", "switch-global-pfc-off"):
        m = load_switch(state_dir, name)
        sel = [m.canon_port(p) for p in ports] if ports else list(m.ports)
        if kind == "switch-pfc-off":
            m.fault_pfc_off(sel)
            faults[kind] = {"ports": sel}
        elif kind == "switch-watchdog-off":
            m.fault_watchdog_off(sel)
            faults[kind] = {"ports": sel}
        elif kind == "switch-global-pfc-off":
            m.fault_global_pfc_off()
            faults[kind] = {}
        else:
            mtu = int(params.get("mtu", 1500))
            m.fault_mtu_low(sel, mtu)
            faults[kind] = {"ports": sel, "mtu": mtu}
        save_switch(state_dir, m)
    elif kind == "switch-rejects-command":
        faults[kind] = {"remaining": int(params.get("count", 1)),
                        "pattern": params.get("pattern") or SwitchModel.feature_fault_re.pattern}
    else:
        faults[kind] = {"after": int(params.get("after", 3))}
    write_faults(state_dir, name, faults)
    return faults


# ---------------------------------------------------------------------------
# SSH server


class _Auth(paramiko.ServerInterface):
    def __init__(self, username, password):
        self.username, self.password = username, password
        self.shell = threading.Event()

    def check_auth_password(self, username, password):
        if username == self.username and password == self.password:
            return paramiko.AUTH_SUCCESSFUL
        return paramiko.AUTH_FAILED

    def get_allowed_auths(self, username):
        return "password"

    def check_channel_request(self, kind, chanid):
        return paramiko.OPEN_SUCCEEDED if kind == "session" else \
            paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_pty_request(self, *args):
        return True

    def check_channel_shell_request(self, channel):
        self.shell.set()
        return True

    def check_channel_window_change_request(self, *args):
        return True


class SwitchServer:
    """One switch: its model, its host key and a listening socket on 127.0.0.1."""

    def __init__(self, state_dir, name, nos, port=0, username="admin", password="admin", ports=None):
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.name, self.nos, self.username, self.password = name, nos, username, password
        self.requested_port = int(port)
        self.lock = threading.RLock()
        if state_path(state_dir, name).exists():
            self.model = load_switch(state_dir, name)
        else:
            self.model = make_model(nos, name, ports)
            save_switch(state_dir, self.model)
        self._stamp = self._file_stamp()
        # the LLDP table from the rack's cables as they are (the rack directory holds the switches' state dir)
        rack_dir = self.state_dir.parent
        if (rack_dir / "lab.json").exists():
            from simlab.fabric import cables
            self.model.lldp_source = lambda: cables.switch_neighbors(rack_dir, name)
        keyfile = self.state_dir / f"{name}.hostkey"
        if keyfile.exists():
            self.host_key = paramiko.ECDSAKey(filename=str(keyfile))
        else:
            self.host_key = paramiko.ECDSAKey.generate(bits=256)
            self.host_key.write_private_key_file(str(keyfile))
        self.sock: socket.socket | None = None
        self.port = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- state sync --------------------------------------------------------------
    def _file_stamp(self):
        try:
            st = state_path(self.state_dir, self.name).stat()
            return (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            return None

    def _refresh(self):
        stamp = self._file_stamp()
        if stamp is not None and stamp != self._stamp:
            st = json.loads(state_path(self.state_dir, self.name).read_text())
            self.model.load_state(st)
            self._stamp = stamp

    def _persist(self, before: str):
        after = self.model.state_json()
        if after != before:
            _atomic_write(state_path(self.state_dir, self.name), after)
            self._stamp = self._file_stamp()

    # -- lifecycle ---------------------------------------------------------------
    def start(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.requested_port))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        t = threading.Thread(target=self._accept_loop, name=f"switch-{self.name}", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self):
        self._stop.set()
        if self.sock:
            self.sock.close()

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.host_key.get_name()} {self.host_key.get_base64()}"

    def _accept_loop(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(None)
            threading.Thread(target=self._serve_conn, args=(conn,), daemon=True).start()

    def _serve_conn(self, conn):
        t = paramiko.Transport(conn)
        t.add_server_key(self.host_key)
        auth = _Auth(self.username, self.password)
        try:
            t.start_server(server=auth)
            chan = t.accept(20)
            if chan is None or not auth.shell.wait(10):
                t.close()
                return
            self._shell(t, chan)
        except Exception:  # a client that goes away mid-handshake
            pass
        finally:
            t.close()

    # -- shell ---------------------------------------------------------------------
    def _shell(self, t, chan):
        with self.lock:
            self._refresh()
            session = self.model.session()
        session.flags["password"] = self.password
        session.flags["config_lines"] = 0
        chan.sendall(self._crlf(session.prompt()))
        buf, prev = "", ""
        while not session.closed:
            data = chan.recv(4096)
            if not data:
                break
            for ch in data.decode("utf-8", "replace"):
                if ch in "\r\n":
                    if ch == "\n" and prev == "\r":
                        prev = ch
                        continue
                    prev = ch
                    chan.sendall(b"\r\n")
                    reply = self._run_line(t, session, buf)
                    buf = ""
                    if reply is None:  # connection dropped by a fault
                        return
                    chan.sendall(reply)
                    if session.closed:
                        break
                    continue
                prev = ch
                if ch in "\x7f\x08":
                    if buf:
                        buf = buf[:-1]
                        chan.sendall(b"\x08 \x08")
                elif ch == "\x03":
                    buf = ""
                    chan.sendall(b"^C\r\n" + self._crlf(session.prompt()))
                elif ch >= " " or ch == "\t":
                    buf += ch
                    if not session.flags.get("secret_input"):
                        chan.sendall(ch.encode())
        chan.close()

    @staticmethod
    def _crlf(text: str) -> bytes:
        return text.replace("\r\n", "\n").replace("\n", "\r\n").encode()

    def _run_line(self, t, session, line):
        with self.lock:
            self._refresh()
            faults = read_faults(self.state_dir, self.name)
            m = self.model
            if m.is_config_line(session, line):
                drop = faults.get("switch-ssh-drops-mid-push")
                if drop:
                    session.flags["config_lines"] += 1
                    if session.flags["config_lines"] > drop["after"]:
                        t.close()
                        return None
                rej = faults.get("switch-rejects-command")
                if rej and rej.get("remaining", 0) > 0 and re.search(rej["pattern"], line, re.I):
                    rej["remaining"] -= 1
                    if rej["remaining"] <= 0:
                        del faults["switch-rejects-command"]
                    write_faults(self.state_dir, self.name, faults)
                    out = self.fault_error(session, line)
                    return self._crlf(out + "\n" + session.prompt())
            before = m.state_json()
            session.flags.pop("secret_input", None)
            try:
                out = session.handle(line)
            except Exception as e:  # keep the session alive whatever the model does
                out = f"% simulator error: {e}"
            self._persist(before)
        if session.flags.pop("no_newline_prompt", False):
            if "password" in out:
                session.flags["secret_input"] = True
            return self._crlf(out)
        if session.closed:
            return self._crlf(out + "\n" if out else "")
        return self._crlf((out + "\n" if out else "") + session.prompt())

    def fault_error(self, session, line) -> str:
        m = self.model
        if hasattr(m, "fault_error"):
            return m.fault_error(session, line)
        from .models.base import Failure
        return m.error(session, line.strip(), Failure(0, "invalid"))


class SwitchFleet:
    """Every switch of a spec, served from one process."""

    def __init__(self, state_dir, specs: list[dict]):
        self.state_dir = Path(state_dir)
        self.servers = {s["name"]: SwitchServer(state_dir, s["name"], s["nos"], s.get("port", 0),
                                                s.get("username", "admin"), s.get("password", "admin"),
                                                s.get("ports"))
                        for s in specs}

    def start(self):
        for s in self.servers.values():
            s.start()
        ready = {n: {"port": s.port, "nos": s.nos, "device_type": s.model.device_type}
                 for n, s in self.servers.items()}
        _atomic_write(self.state_dir / "ready", json.dumps(ready, indent=1, sort_keys=True))
        return self

    def stop(self):
        for s in self.servers.values():
            s.stop()
        try:
            (self.state_dir / "ready").unlink()
        except FileNotFoundError:
            pass

    def write_known_hosts(self, path):
        Path(path).write_text("".join(s.known_hosts_line() + "\n" for s in self.servers.values()))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
