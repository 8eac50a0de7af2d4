"""module_utils/perftest_round with real processes: a stand-in server that
listens on a TCP port (as perftest does before a client may connect), exits,
or hangs; clients that succeed, fail and time out."""

import socket
import sys
import time

from ansible_collections.gpufabric.stack.plugins.module_utils import perftest_round as pr

# A server: listen on argv[1], accept one client, print, exit 0.
SERVER = ("import socket,sys\n"
          "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
          "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(1)\n"
          "c,_=s.accept(); c.recv(10); print('server done'); sys.stderr.write('srv err\\n')\n")
CLIENT = ("import socket,sys,time\n"
          "c=socket.create_connection(('127.0.0.1', int(sys.argv[1]))); c.send(b'x'); print('client', sys.argv[1])\n")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_listening_ports_reads_listen_state_only():
    tcp = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
           "   0: 00000000:4853 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n"
           "   1: 0100007F:4854 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2\n")
    tcp6 = ("  sl  local_address                         remote_address                        st\n"
            "   0: 00000000000000000000000000000000:4855 00000000000000000000000000000000:0000 0A\n")
    assert pr.listening_ports([tcp, tcp6]) == {18515, 18517}


def test_a_round_serve_run_collect(tmp_path):
    p1, p2 = free_port(), free_port()
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
