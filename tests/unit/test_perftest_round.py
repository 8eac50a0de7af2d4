"""module_utils/rdma_check/perftest_round with real processes: a stand-in server that
listens on a TCP port (as perftest does before a client may connect), exits,
or hangs; clients that succeed, fail and time out."""

import os
import socket
import sys
import threading
import time

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check import perftest_round as pr

pytestmark = pytest.mark.layers(9)

# A server: listen on argv[1], accept one client, print, exit 0.
SERVER = ("import socket,sys\n"
          "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
          "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(1)\n"
          "c,_=s.accept(); c.recv(10); print('server done'); sys.stderr.write('srv err\\n')\n")
CLIENT = ("import socket,sys,time\n"
          "c=socket.create_connection(('127.0.0.1', int(sys.argv[1]))); c.send(b'x'); print('client', sys.argv[1])\n")


def free_ports(n):
    """n distinct free ports: every socket is held until all are bound, so
    two calls cannot hand out the same port."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port():
    return free_ports(1)[0]


def test_listening_ports_reads_listen_state_only():
    tcp = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
           "   0: 00000000:4853 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n"
           "   1: 0100007F:4854 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2\n")
    tcp6 = ("  sl  local_address                         remote_address                        st\n"
            "   0: 00000000000000000000000000000000:4855 00000000000000000000000000000000:0000 0A\n")
    assert pr.listening_ports([tcp, tcp6]) == {18515, 18517}


def test_a_round_serve_run_collect(tmp_path):
    p1, p2 = free_ports(2)
    servers = [{"port": p, "argv": [sys.executable, "-c", SERVER, str(p)]} for p in (p1, p2)]
    r = pr.serve(servers, str(tmp_path), timeout_s=30, listen_s=10)
    assert r["started"] == [p1, p2] and r["not_listening"] == []
    clients = [{"id": "a", "argv": [sys.executable, "-c", CLIENT, str(p1)]},
               {"id": "b", "argv": [sys.executable, "-c", CLIENT, str(p2)]},
               {"id": "c", "argv": ["false"]}]
    out = pr.run_clients(clients, timeout_s=20)
    assert [(c["id"], c["rc"], c["stdout"].strip()) for c in out] == [
        ("a", 0, "client %d" % p1), ("b", 0, "client %d" % p2), ("c", 1, "")]
    got = pr.collect([p1, p2], str(tmp_path), command=sys.executable, wait_s=10)
    assert [(s["port"], s["finished"], s["rc"], s["stdout"].strip(), s["stderr"].strip(), s["stopped"])
            for s in got] == [(p1, True, 0, "server done", "srv err", False), (p2, True, 0, "server done", "srv err", False)]
    assert list(tmp_path.iterdir()) == []


def test_a_server_that_exits_is_named_with_its_output(tmp_path):
    port = free_port()
    bad = [{"port": port, "argv": [sys.executable, "-c", "import sys; sys.stderr.write('Couldnt bind\\n'); sys.exit(3)"]}]
    r = pr.serve(bad, str(tmp_path), timeout_s=30, listen_s=10)
    assert [(s["port"], s["finished"], s["rc"], s["stderr"].strip()) for s in r["not_listening"]] == \
        [(port, True, 3, "Couldnt bind")]
    pr.collect([port], str(tmp_path), command=sys.executable, wait_s=0)


def test_a_hanging_server_is_not_listening_then_stopped(tmp_path):
    port = free_port()
    hang = [{"port": port, "argv": [sys.executable, "-c", "import time; time.sleep(60)"]}]
    t = time.monotonic()
    r = pr.serve(hang, str(tmp_path), timeout_s=60, listen_s=1)
    assert r["not_listening"][0]["port"] == port and not r["not_listening"][0]["finished"]
    got = pr.collect([port], str(tmp_path), command=sys.executable, wait_s=0)
    assert got[0]["stopped"] and not got[0]["finished"]
    assert time.monotonic() - t < 30
    assert list(tmp_path.iterdir()) == []


def test_a_server_under_timeout_is_stopped_with_its_whole_session(tmp_path):
    # GNU timeout puts itself and its child in a process group of their own.
    port = free_port()
    pr.serve([{"port": port, "argv": ["sleep", "45"]}], str(tmp_path), timeout_s=60, listen_s=0.5)
    pid = int((tmp_path / ("server-%d.pid" % port)).read_text())
    members = pr.session_members("/proc", pid)
    assert len(members) >= 3                                     # sh, timeout, sleep
    got = pr.collect([port], str(tmp_path), command="sleep", wait_s=0)
    assert got[0]["stopped"]
    for _ in range(50):
        if not pr.session_members("/proc", pid):
            break
        time.sleep(0.1)
    assert pr.session_members("/proc", pid) == []


def test_a_pid_reused_by_another_program_is_not_killed(tmp_path):
    port = free_port()
    (tmp_path / ("server-%d.pid" % port)).write_text("1\n")      # pid 1 is not this server
    killed = []
    got = pr.collect([port], str(tmp_path), command="ib_write_bw", wait_s=0, kill=lambda pid, sig: killed.append(pid))
    assert killed == [] and got[0]["stopped"] is False


def test_client_timeout_is_rc_124():
    out = pr.run_clients([{"id": "slow", "argv": ["sleep", "10"]}], timeout_s=1)
    assert out[0]["rc"] == 124 and out[0]["finished"]


def test_rdma_cm_mode_counts_a_running_server_as_ready(tmp_path):
    port = free_port()
    r = pr.serve([{"port": port, "argv": ["sleep", "30"]}], str(tmp_path), timeout_s=30, listen_s=10, mode="alive")
    assert r["not_listening"] == []
    got = pr.collect([port], str(tmp_path), command="sleep", wait_s=0)
    assert got[0]["stopped"]


# A client as perftest fails when nothing listens: the message, exit 1.
CLIENT_TRYING = ("import socket,sys\n"
                 "open(sys.argv[2], 'a').write('try\\n')\n"
                 "try:\n"
                 "    c=socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
                 "except OSError:\n"
                 "    open(sys.argv[2], 'a').write('refused\\n')\n"
                 "    sys.stderr.write(\"Couldn't connect to 127.0.0.1:%s\\n\" % sys.argv[1]); sys.exit(1)\n"
                 "c.send(b'x'); print('client', sys.argv[1])\n")


def once_refused(tries, fn, *args):
    """A thread that runs ``fn(*args)`` once CLIENT_TRYING has written that its
    first try was refused: the late server starts after that try, however
    slowly the machine runs, not after a guess of a delay."""
    def wait_then_run():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if tries.exists() and "refused" in tries.read_text():
                break
            time.sleep(0.05)
        fn(*args)
    return threading.Thread(target=wait_then_run)


def test_connect_failed_is_only_a_refused_connection():
    assert pr.connect_failed({"rc": 1, "stdout": "", "stderr": "Couldn't connect to 10.0.0.2:18515\n"})
    assert pr.connect_failed({"rc": 1, "stdout": " Unable to perform rdma_client function\n",
                              "stderr": " Unable to init the socket connection\n"})
    assert not pr.connect_failed({"rc": 0, "stdout": "Couldn't connect to", "stderr": ""})
    assert not pr.connect_failed({"rc": 1, "stdout": "", "stderr": " Failed to modify QP to RTR\n"})
    assert not pr.connect_failed({"rc": 124, "stdout": "", "stderr": ""})


def test_a_refused_client_tries_again_until_its_server_listens(tmp_path):
    port = free_port()
    tries = tmp_path / "tries"
    clients = [{"id": "early", "argv": [sys.executable, "-c", CLIENT_TRYING, str(port), str(tries)]}]
    late = once_refused(tries, pr.serve, [{"port": port, "argv": [sys.executable, "-c", SERVER, str(port)]}],
                        str(tmp_path / "run"), 30, 10)
    late.start()
    try:
        out = pr.run_clients(clients, timeout_s=20, retry_s=30)
    finally:
        late.join()
    assert out[0]["rc"] == 0 and out[0]["stdout"].strip() == "client %d" % port
    assert tries.read_text().count("try") >= 2
    got = pr.collect([port], str(tmp_path / "run"), command=sys.executable, wait_s=10)
    assert got[0]["rc"] == 0 and got[0]["stdout"].strip() == "server done"


def test_refused_tries_stop_after_retry_s_and_other_failures_are_not_tried_again(tmp_path):
    port = free_port()
    refused, other = tmp_path / "refused", tmp_path / "other"
    fails = "import sys; open(sys.argv[1], 'a').write('try\\n'); sys.stderr.write(' Failed to modify QP to RTR\\n'); sys.exit(1)"
    out = pr.run_clients([{"id": "r", "argv": [sys.executable, "-c", CLIENT_TRYING, str(port), str(refused)]},
                          {"id": "o", "argv": [sys.executable, "-c", fails, str(other)]}], timeout_s=20, retry_s=2)
    assert out[0]["rc"] == 1 and "Couldn't connect to 127.0.0.1:%d" % port in out[0]["stderr"]
    assert refused.read_text().count("try") >= 2
    assert out[1]["rc"] == 1 and "RTR" in out[1]["stderr"] and other.read_text().count("try") == 1


def test_one_round_on_two_nodes_whose_calls_start_apart(tmp_path):
    """Two nodes, each the server of the other's client; the second node's call
    starts once the first's client was refused, so that client tries again."""
    pa, pb = free_ports(2)

    def node(name, own, peer, results):
        results[name] = pr.one_round([{"port": own, "argv": [sys.executable, "-c", SERVER, str(own)]}],
                                     [{"id": name, "argv": [sys.executable, "-c", CLIENT_TRYING, str(peer),
                                                            str(tmp_path / (name + ".tries"))]}],
                                     str(tmp_path / name), server_timeout_s=60, client_timeout_s=20, listen_s=20,
                                     command=sys.executable)
    results = {}
    a = threading.Thread(target=node, args=("a", pa, pb, results))
    b = once_refused(tmp_path / "a.tries", node, "b", pb, pa, results)
    a.start()
    b.start()
    a.join()
    b.join()
    for name, own, peer in (("a", pa, pb), ("b", pb, pa)):
        r = results[name]
        assert r["started"] == [own] and r["not_listening"] == []
        assert [(c["id"], c["rc"], c["stdout"].strip()) for c in r["clients"]] == [(name, 0, "client %d" % peer)]
        assert [(s["port"], s["rc"], s["stdout"].strip(), s["stopped"]) for s in r["servers"]] == \
            [(own, 0, "server done", False)]
    assert (tmp_path / "a.tries").read_text().count("try") >= 2


def test_after_unclaimed_s_only_servers_with_their_client_are_waited_for(tmp_path):
    """unclaimed_s: a server whose port still listens (no client came) or
    that never listened is stopped without waiting the whole wait_s; one
    that holds its client's connection (perftest accepts it, closes its
    listener and keeps the connection through the test) is waited for."""
    idle, hung, busy = free_ports(3)
    slow = ("import socket,sys,time\n"
            "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(1)\n"
            "c,_=s.accept(); s.close(); time.sleep(2); print('served')\n")
    pr.serve([{"port": p, "argv": [sys.executable, "-c", slow, str(p)]} for p in (idle, busy)]
             + [{"port": hung, "argv": ["sleep", "120"]}], str(tmp_path), timeout_s=120, listen_s=1)
    client = socket.create_connection(("127.0.0.1", busy))
    now = [0.0]
    try:
        got = pr.collect([idle, hung, busy], str(tmp_path), command="", wait_s=100, unclaimed_s=1,
                         clock=lambda: now[0], sleep=lambda s: (now.__setitem__(0, now[0] + s), time.sleep(s)))
    finally:
        client.close()
    assert [(s["port"], s["stopped"]) for s in got] == [(idle, True), (hung, True), (busy, False)]
    assert got[2]["rc"] == 0 and got[2]["stdout"].strip() == "served"
    assert now[0] < 100


def _connect_when_listening(port, held, tries=200):
    """A peer's client that connects the moment the server listens, and
    holds the connection (as perftest's does through the test)."""
    for _ in range(tries):
        try:
            held.append(socket.create_connection(("127.0.0.1", port)))
            return
        except OSError:
            time.sleep(0.02)


# A server as perftest: listen, accept one client, close the listener, work for argv[2] seconds.
ACCEPTS = ("import socket,sys,time\n"
           "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
           "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(1)\n"
           "c,_=s.accept(); s.close(); time.sleep(float(sys.argv[2])); print('served')\n")


def test_a_server_whose_client_came_at_once_is_ready(tmp_path):
    """In a round of one call a peer's client may connect before serve looks:
    the listener is gone, but the server has its client (a connection on the
    port while it works; exit status 0 once done). Neither is 'not listening'."""
    working, done = free_ports(2)
    held = []
    for port in (working, done):
        threading.Thread(target=_connect_when_listening, args=(port, held), daemon=True).start()
    r = pr.serve([{"port": working, "argv": [sys.executable, "-c", ACCEPTS, str(working), "60"]},
                  {"port": done, "argv": [sys.executable, "-c", ACCEPTS, str(done), "0"]}],
                 str(tmp_path), timeout_s=120, listen_s=10)
    assert r["not_listening"] == [], r
    got = pr.collect([working, done], str(tmp_path), command=sys.executable, wait_s=5)
    assert [(s["port"], s["stopped"]) for s in got] == [(working, True), (done, False)]
    assert got[1]["rc"] == 0 and got[1]["stdout"].strip() == "served"
    for conn in held:
        conn.close()


def test_rdma_cm_mode_a_server_that_already_served_is_ready(tmp_path):
    """With rdma_cm (no TCP socket to look at) a peer's client may be done
    before two seconds pass: exit status 0 is a server that served."""
    port = free_port()
    r = pr.serve([{"port": port, "argv": ["true"]}], str(tmp_path), timeout_s=30, listen_s=10, mode="alive")
    assert r["not_listening"] == []
    r = pr.serve([{"port": port, "argv": ["false"]}], str(tmp_path), timeout_s=30, listen_s=10, mode="alive")
    assert [(s["port"], s["rc"]) for s in r["not_listening"]] == [(port, 1)]


# /proc/net/tcp as the kernel prints it (net/ipv4/tcp_ipv4.c), one row: local port and state (tcp_states.h)
TCP_HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
TCP_ROW = "   0: 0100007F:%04X 0100007F:C350 %s 00000000:00000000 00:00000000 00000000     0        0 1\n"


def _one_server(tmp_path, port):
    """A run directory with one ib_write_bw server (this process's pid) and
    a /proc with its command line and no TCP sockets. Returns (run, proc,
    pid, set_tcp), set_tcp(state or None) writing the server's one socket."""
    pid = os.getpid()
    run, proc = tmp_path / "run", tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / str(pid)).mkdir()
    (proc / str(pid) / "cmdline").write_text("ib_write_bw\0-p\0%d\0" % port)
    run.mkdir()
    (run / ("server-%d.pid" % port)).write_text(str(pid))
    (proc / "net" / "tcp6").write_text(TCP_HEADER)

    def set_tcp(state):
        (proc / "net" / "tcp").write_text(TCP_HEADER + (TCP_ROW % (port, state) if state else ""))
    set_tcp(None)
    return run, proc, pid, set_tcp


def test_a_server_whose_client_has_gone_is_waited_for_until_its_exit_status_is_written(tmp_path):
    """A server seen with its client closes the connection when its test ends,
    a moment before its exit status is written: collect waits for that status
    instead of stopping a finished server (found as a flake under load)."""
    port = 18515
    run, proc, _, set_tcp = _one_server(tmp_path, port)
    now, steps, killed = [0.0], [0], []

    def sleep(s):
        now[0] += s
        steps[0] += 1
        if steps[0] == 1:       # the test runs: its connection established
            set_tcp(pr.ESTABLISHED)
        if steps[0] == 8:       # the test ends: the connection closes, the status is not written yet
            set_tcp(None)
        if steps[0] == 12:      # the status is written
            (run / ("server-%d.rc" % port)).write_text("0\n")
            (run / ("server-%d.out" % port)).write_text("done\n")

    got = pr.collect([port], str(run), command="ib_write_bw", wait_s=30, unclaimed_s=1, proc_root=str(proc),
                     clock=lambda: now[0], sleep=sleep, kill=lambda p, sig: killed.append(p))
    assert killed == [] and [(s["stopped"], s["finished"], s["rc"], s["stdout"]) for s in got] == \
        [(False, True, 0, "done\n")]


def test_a_server_whose_client_died_is_stopped_a_grace_after_its_connection_closed(tmp_path):
    """A server seen with its client whose connection closes and that never
    exits (its client died, it hangs) is stopped CLOSED_GRACE_S after the
    close, not after the whole wait_s."""
    port = 18516
    run, proc, pid, set_tcp = _one_server(tmp_path, port)
    set_tcp(pr.ESTABLISHED)
    now, killed, closed = [0.0], [], []

    def sleep(s):
        now[0] += s
        if now[0] >= 3 and not closed:     # the client dies: the connection closes
            closed.append(now[0])
            set_tcp("08")    # CLOSE_WAIT

    got = pr.collect([port], str(run), command="ib_write_bw", wait_s=95, unclaimed_s=1, proc_root=str(proc),
                     clock=lambda: now[0], sleep=sleep, kill=lambda p, sig: killed.append(p))
    assert killed == [pid] and got[0]["stopped"] and not got[0]["finished"]
    # the grace counts from the last poll that saw the connection (one 0.2 s poll before the close)
    assert pr.CLOSED_GRACE_S - 0.2 <= now[0] - closed[0] < pr.CLOSED_GRACE_S + 1
