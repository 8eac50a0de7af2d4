# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One round of perftest pairs on one node, in three calls the play makes in
lockstep over every node of the round:

``serve``    start this node's servers detached (each in its own session,
             under ``timeout``), then wait until each listens or exits;
``run``      run this node's clients at once and wait for them;
``collect``  wait briefly for this node's servers to exit, stop those still
             running (only if the pid is still that server), read their
             output and remove their files;

or in one call, ``round``, when every node of the round makes it at the same
time (the play's nodes fit in its forks): the three steps in turn, with each
client run again while its connection is refused (its server, on a node whose
call started a moment later, not listening yet), for up to ``listen_timeout``
seconds.

Each server leaves ``<run_dir>/server-<port>.{pid,out,err,rc}``.  Results have
the keys of an async job result (``finished``, ``rc``, ``stdout``,
``stderr``), so the pair gate reads them as before.  Plain Python: the proc
root, the clock and the process start are parameters for tests.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import signal
import subprocess
import tempfile
import time

LISTEN = "0A"
ESTABLISHED = "01"

# What a perftest client prints when nothing accepts its out-of-band connection
# (TCP, or rdma_cm): the server is not listening (yet), or the address is not
# reachable.
CONNECT_FAILED = ("Couldn't connect to", "Unable to init the socket connection")

# Seconds between two tries of a client whose connection was refused.
RETRY_PAUSE = 0.5

# The wrapper that runs one server: records its pid, its output and its exit
# status, so a later call can collect them after this process is gone.
_SERVE_SH = 'echo $$ > "$0.pid"; "$@" > "$0.out" 2> "$0.err"; echo $? > "$0.rc"'


def listening_ports(texts, states=(LISTEN,)):
    """Local ports of the sockets in one of ``states`` (LISTEN by default)
    in /proc/net/tcp{,6} texts."""
    ports = set()
    for text in texts:
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) < 4 or fields[3] not in states:
                continue
            try:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
            except (IndexError, ValueError):
                continue
    return ports


def _base(run_dir, port):
    return os.path.join(run_dir, "server-%d" % int(port))


def _read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except (IOError, OSError):
        return default


def _alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _pid(run_dir, port):
    text = _read(_base(run_dir, port) + ".pid").strip()
    return int(text) if text.isdigit() else None


def serve(servers, run_dir, timeout_s, listen_s, mode="tcp", proc_root="/proc", popen=subprocess.Popen,
          clock=time.monotonic, sleep=time.sleep):
    """Start every server ``{port, argv}`` and wait until each listens.

    ``mode`` ``tcp``: ready when a TCP socket listens on the port (perftest
    listens before a client may connect), or already has its client (perftest
    closes its listener on accept: a connection on the port, when a peer's
    client came at once); ``alive``: (rdma_cm, no TCP socket) ready when
    still running after two seconds.  In both, a server that exited 0 served
    its client already.  Returns ``{started:
    [ports], not_listening: [{port, finished, rc, stdout, stderr}]}``: a
    server that failed or did not listen within ``listen_s`` seconds."""
    if not os.path.isdir(run_dir):
        os.makedirs(run_dir)
    started = []
    for server in servers:
        base = _base(run_dir, server["port"])
        for ext in (".pid", ".out", ".err", ".rc"):
            if os.path.exists(base + ext):
                os.unlink(base + ext)
        argv = ["sh", "-c", _SERVE_SH, base, "timeout", "-k", "5", str(int(timeout_s))] + list(server["argv"])
        devnull = open(os.devnull, "rb")
        try:
            popen(argv, stdin=devnull, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                  start_new_session=True, close_fds=True)
        finally:
            devnull.close()
        started.append(int(server["port"]))
    start = clock()
    waiting = list(started)
    gone = []
    while waiting:
        listening = listening_ports([_read(os.path.join(proc_root, "net", n)) for n in ("tcp", "tcp6")],
                                    (LISTEN, ESTABLISHED)) if mode == "tcp" else set()
        still = []
        for port in waiting:
            rc_text = _read(_base(run_dir, port) + ".rc").strip()
            if port in listening:
                continue
            if rc_text == "0":
                continue        # it served its client already
            if rc_text:
                gone.append(port)
            elif mode == "alive" and clock() - start >= 2 and _pid(run_dir, port) is not None:
                continue
            else:
                still.append(port)
        waiting = still
        if waiting and clock() - start >= listen_s:
            break
        if waiting:
            sleep(0.2)
    not_listening = [dict(port=p, **_server_result(run_dir, p)) for p in gone + waiting]
    return {"started": started, "not_listening": not_listening}


def _server_result(run_dir, port):
    base = _base(run_dir, port)
    rc_text = _read(base + ".rc").strip()
    return {"finished": bool(rc_text), "rc": int(rc_text) if rc_text.lstrip("-").isdigit() else None,
            "stdout": _read(base + ".out"), "stderr": _read(base + ".err")}


def connect_failed(result):
    """Whether a finished client failed because nothing accepted its connection."""
    text = (result.get("stdout") or "") + (result.get("stderr") or "")
    return result.get("rc") not in (0, None) and any(m in text for m in CONNECT_FAILED)


def _start(client, timeout_s, popen):
    argv = ["timeout", "-k", "5", str(int(timeout_s))] + list(client["argv"])
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    try:
        proc = popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, close_fds=True)
    except OSError as exc:
        out.close()
        err.close()
        return None, str(exc)
    return (proc, out, err), None


def _finish(client, running):
    proc, out, err = running
    texts = []
    for f in (out, err):
        f.seek(0)
        texts.append(_text(f.read()))
        f.close()
    return {"id": client["id"], "finished": True, "rc": proc.returncode, "stdout": texts[0], "stderr": texts[1]}


def run_clients(clients, timeout_s, retry_s=0, popen=subprocess.Popen, clock=time.monotonic, sleep=time.sleep):
    """Run every client ``{id, argv}`` at once under ``timeout``; returns
    ``[{id, finished, rc, stdout, stderr}]`` in the given order.  A client
    whose connection was refused (``connect_failed``) runs again, after
    ``RETRY_PAUSE`` seconds, until ``retry_s`` seconds have passed since the
    start; its last try is its result."""
    start = clock()
    results = [None] * len(clients)
    running = {}
    due = dict((i, start) for i in range(len(clients)))
    while due or running:
        now = clock()
        for i in sorted(i for i, at in due.items() if at <= now):
            del due[i]
            started, error = _start(clients[i], timeout_s, popen)
            if started is None:
                results[i] = {"id": clients[i]["id"], "finished": True, "rc": 127, "stdout": "", "stderr": error}
            else:
                running[i] = started
        for i in [i for i, r in running.items() if r[0].poll() is not None]:
            result = _finish(clients[i], running.pop(i))
            if connect_failed(result) and clock() - start + RETRY_PAUSE < retry_s:
                due[i] = clock() + RETRY_PAUSE
            else:
                results[i] = result
        if due or running:
            sleep(0.1 if running else RETRY_PAUSE)
    return results


def _text(data):
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else (data or "")


def session_members(proc_root, sid):
    """Live pids whose session id (field 6 of /proc/<pid>/stat) is ``sid``.
    GNU timeout moves itself and the server into a process group of their
    own, so stopping a server means its whole session, not its group."""
    pids = []
    try:
        names = os.listdir(proc_root)
    except OSError:
        return pids
    for name in names:
        if not name.isdigit():
            continue
        stat = _read(os.path.join(proc_root, name, "stat"))
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 3 and fields[3] == str(sid) and fields[0] != "Z":    # a zombie is already gone
            pids.append(int(name))
    return sorted(pids)


def _kill(pid, sig):
    os.kill(pid, sig)


# How long after its connection closed a server is still waited for (its
# exit status is written a moment after it closes the connection).
CLOSED_GRACE_S = 5.0


def collect(ports, run_dir, command, wait_s=5, proc_root="/proc", clock=time.monotonic, sleep=time.sleep,
            kill=_kill, unclaimed_s=None):
    """Results of this node's servers: wait up to ``wait_s`` for them to exit,
    stop those still running whose command line still names ``command``,
    then read and remove their files.  With ``unclaimed_s``, after that many
    seconds only the servers that have their client are waited for: an
    established connection on the port (perftest accepts its client's
    connection, closes its listener and holds the connection through the
    test); one still listening, or that never listened, has no client coming.
    A server whose connection was seen within the last ``CLOSED_GRACE_S``
    is waited for too: when its test ends it closes the connection a moment
    before its exit status is written (one whose client died and that hangs
    is stopped after that grace, not after ``wait_s``).
    Returns ``[{port, finished, rc, stdout, stderr, stopped}]``."""
    start = clock()
    ports = [int(p) for p in ports]
    seen = {}   # port: when its connection was last seen established

    def running(port):
        return not _read(_base(run_dir, port) + ".rc").strip() and _pid(run_dir, port) is not None

    waiting = [p for p in ports if running(p)]
    while waiting and clock() - start < wait_s:
        sleep(0.2)
        waiting = [p for p in waiting if running(p)]
        if waiting and unclaimed_s is not None:
            connected = listening_ports([_read(os.path.join(proc_root, "net", n)) for n in ("tcp", "tcp6")],
                                        (ESTABLISHED,))
            now = clock()
            seen.update((p, now) for p in waiting if p in connected)
            if now - start >= unclaimed_s:
                waiting = [p for p in waiting if p in seen and now - seen[p] < CLOSED_GRACE_S]
    out = []
    for port in ports:
        result = dict(port=port, stopped=False, **_server_result(run_dir, port))
        pid = _pid(run_dir, port)
        if not result["finished"] and pid is not None and _alive(pid):
            cmdline = _read(os.path.join(proc_root, str(pid), "cmdline")).replace("\0", " ")
            if command in cmdline:
                for member in session_members(proc_root, pid) or [pid]:
                    try:
                        kill(member, signal.SIGTERM)
                        result["stopped"] = True
                    except OSError:
                        pass
        base = _base(run_dir, port)
        for ext in (".pid", ".out", ".err", ".rc"):
            if os.path.exists(base + ext):
                os.unlink(base + ext)
        out.append(result)
    return out


def one_round(servers, clients, run_dir, server_timeout_s, client_timeout_s, listen_s, command, mode="tcp",
              proc_root="/proc"):
    """``serve``, ``run`` (retrying refused connections for ``listen_s``
    seconds) and ``collect`` in one call, for every node of the round making
    it at the same time.  The servers are waited for as long as a peer's
    client may still come: its tries, then its run; once no more tries can
    come, only the servers that have their client are.  Returns the keys of the
    three: ``started``, ``not_listening``, ``clients``, ``servers``."""
    start = time.monotonic()
    served = serve(servers, run_dir, server_timeout_s, listen_s, mode=mode, proc_root=proc_root)
    ran = run_clients(clients, client_timeout_s, retry_s=listen_s)
    # a peer's call starts within listen_s of this one (else its clients, or
    # this node's, gave up): a server without its client 2 x listen_s after
    # this call started has none coming
    unclaimed = 2 * listen_s - (time.monotonic() - start) if mode == "tcp" else None
    collected = collect([s["port"] for s in servers], run_dir, command, wait_s=listen_s + client_timeout_s,
                        proc_root=proc_root, unclaimed_s=unclaimed)
    return dict(served, clients=ran, servers=collected)
