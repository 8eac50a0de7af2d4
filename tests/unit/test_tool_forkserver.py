"""The tool twins' fork server (simlab.tools.forkserver): a call through the
wrapper's client prints, fails and exits exactly as the same tool twin run as
an interpreter of its own, against the same node agent."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from simlab.node import agent as agent_mod
from simlab.node import boot, hardware
from simlab.tools import forkserver

pytestmark = pytest.mark.layers(4, 5, 8)

REPO = str(Path(__file__).resolve().parents[2])
PF = "enp59s0f0np0"
BDF = "0000:3b:00.0"


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A node agent on a socket of its own (the wire protocol, as in a node)."""
    monkeypatch.setattr(boot, "LAB", tmp_path)
    hw = hardware.default_spec("node01", 1, nics=2, driver="ofed", link_type="ETH")
    hw["preset"] = "ready"
    fw = hardware.factory_firmware(hw)
    state = {"hw": hw, "firmware": fw, "cmdline": "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro",
             "bios": {"sriov": True, "iommu": True, "acs": False}, "faults": {}}
    a = agent_mod.Agent(state)
    sock = tmp_path / "agent.sock"
    server = agent_mod._Server(str(sock), agent_mod._Handler)  # pylint: disable=protected-access
    server.agent = a
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"dir": tmp_path, "env": {"PYTHONPATH": REPO, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                    "PYTHONDONTWRITEBYTECODE": "1", "SIMLAB_AGENT_SOCK": str(sock)}}
    server.shutdown()
    server.server_close()


@pytest.fixture
def tool_server(node):
    """The fork server for that node, a child of this test process."""
    sock = node["dir"] / "tools.sock"
    proc = subprocess.Popen([sys.executable, "-S", "-m", "simlab.tools.forkserver", str(sock), str(os.getpid())],
                            env=node["env"], stdin=subprocess.DEVNULL)
    for _ in range(400):
        if sock.exists():
            break
        time.sleep(0.025)
    yield sock
    proc.kill()
    proc.wait()


def through_client(sock, argv, env, cwd, stdin=""):
    code = forkserver.client(str(sock))
    return subprocess.run([sys.executable, "-S", "-c", code, *argv], env=env, cwd=cwd, input=stdin,
                          capture_output=True, text=True)


def own_interpreter(argv, env, cwd, stdin=""):
    return subprocess.run([sys.executable, "-S", "-c", forkserver.ENTRY, *argv], env=env, cwd=cwd, input=stdin,
                          capture_output=True, text=True)


CALLS = [
    ["mlnx_qos", "-i", PF],
    ["mlnx_qos", "-i", "nope0"],                        # the tool's own error and status
    ["mstconfig", "-d", BDF, "-e", "q"],
    ["mstflint", "-d", BDF, "q"],
    ["cma_roce_mode", "-d", "rocep59s0f0", "-p", "1"],
    ["ibv_devinfo", "-d", "rocep59s0f0"],
    ["modinfo", "mlx5_core"],
    ["sysctl", "-n", "net.ipv4.conf.all.nope"],         # unmodelled: handed to the real sysctl (exec)
    ["no-such-tool", "x"],                              # 127, as the entry point says
]


@pytest.mark.parametrize("argv", CALLS, ids=[" ".join(c) for c in CALLS])
def test_a_call_through_the_server_is_the_tool_twin_run_on_its_own(node, tool_server, argv):
    served = through_client(tool_server, argv, node["env"], node["dir"])
    alone = own_interpreter(argv, node["env"], node["dir"])
    assert (served.returncode, served.stdout, served.stderr) == (alone.returncode, alone.stdout, alone.stderr)
    if argv[0] == "mlnx_qos" and argv[2] == PF:
        assert served.returncode == 0 and "Priority trust state" in served.stdout
    if argv[0] == "no-such-tool":
        assert served.returncode == 127


def test_calls_side_by_side_each_get_their_own_output_and_status(node, tool_server):
    calls = [CALLS[i % 3] for i in range(12)]
    with ThreadPoolExecutor(6) as pool:
        served = list(pool.map(lambda a: through_client(tool_server, a, node["env"], node["dir"]), calls))
    alone = {tuple(a): own_interpreter(a, node["env"], node["dir"]) for a in CALLS[:3]}
    for argv, got in zip(calls, served):
        ref = alone[tuple(argv)]
        assert (got.returncode, got.stdout, got.stderr) == (ref.returncode, ref.stdout, ref.stderr)


def test_the_client_sends_directory_arguments_environment_and_its_three_descriptors(tmp_path):
    """The wire format, held against decode_request: one SOCK_SEQPACKET
    message with the client's stdin, stdout and stderr; the status sent back
    is the client's exit status."""
    sock = tmp_path / "tools.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    srv.bind(str(sock))
    srv.listen(1)
    got = {}

    def answer():
        conn, _ = srv.accept()
        msg, fds, _, _ = socket.recv_fds(conn, forkserver.MAX_REQUEST, 3)
        got["request"] = forkserver.decode_request(msg)
        with os.fdopen(fds[1], "w") as out:
            out.write("from the server\n")
        got["stdin"] = os.read(fds[0], 100)
        os.close(fds[0])
        os.close(fds[2])
        conn.send((3).to_bytes(4, "little", signed=True))
        conn.close()

    t = threading.Thread(target=answer)
    t.start()
    env = {"PATH": "/usr/bin:/bin", "SIMLAB_X": "a=b c"}
    proc = through_client(sock, ["mlnx_qos", "-i", "a b", "é"], env, tmp_path, stdin="in")
    t.join(10)
    srv.close()
    cwd, argv, senv = got["request"]
    assert proc.returncode == 3 and proc.stdout == "from the server\n" and got["stdin"] == b"in"
    assert cwd == os.fsencode(tmp_path) and argv == ["mlnx_qos", "-i", "a b", "é"]
    assert senv["SIMLAB_X"] == "a=b c" and senv["PATH"] == "/usr/bin:/bin"


def test_a_call_that_ends_without_a_status_says_so(tmp_path):
    sock = tmp_path / "tools.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    srv.bind(str(sock))
    srv.listen(1)

    def hang_up():
        conn, _ = srv.accept()
        _, fds, _, _ = socket.recv_fds(conn, forkserver.MAX_REQUEST, 3)
        for fd in fds:
            os.close(fd)
        conn.close()

    t = threading.Thread(target=hang_up)
    t.start()
    proc = through_client(sock, ["mlnx_qos"], {"PATH": "/usr/bin:/bin"}, tmp_path)
    t.join(10)
    srv.close()
    assert (proc.returncode, proc.stderr) == (1, "simlab: the tool twin ended without an exit status\n")


def test_without_a_server_the_client_runs_the_tool_twin_itself(node):
    argv = ["mlnx_qos", "-i", PF]
    served = through_client(node["dir"] / "no-server.sock", argv, node["env"], node["dir"])
    alone = own_interpreter(argv, node["env"], node["dir"])
    assert served.returncode == 0 and (served.stdout, served.stderr) == (alone.stdout, alone.stderr)


def test_a_caller_with_other_simlab_settings_gets_an_interpreter_of_its_own(node, tool_server, tmp_path):
    """The twins read SIMLAB_* when imported, which the server did with its
    own: a caller pointing at another agent is answered by that agent."""
    env = dict(node["env"], SIMLAB_AGENT_SOCK=str(tmp_path / "absent.sock"))
    argv = ["mlnx_qos", "-i", PF]
    served = through_client(tool_server, argv, env, node["dir"])
    alone = own_interpreter(argv, env, node["dir"])
    assert served.returncode == 1 and "twin hardware agent not reachable" in served.stderr
    assert (served.returncode, served.stdout, served.stderr) == (alone.returncode, alone.stdout, alone.stderr)


def test_the_server_stops_when_its_parent_is_gone(node):
    """Started with a parent pid that is not its parent (the agent gone), the
    server ends instead of answering."""
    proc = subprocess.run([sys.executable, "-S", "-m", "simlab.tools.forkserver", str(node["dir"] / "t.sock"), "1"],
                          env=node["env"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == ""


def test_the_wrappers_use_the_server_except_for_the_nccl_launcher_and_test():
    assert set(agent_mod.DIRECT_TOOLS) == {"mpirun", "all_reduce_perf"}
    for tool in agent_mod.DIRECT_TOOLS:
        assert "python3 -S -c '%s' %s \"$@\"" % (agent_mod.ENTRY, tool) in agent_mod.wrapper(tool)
    for tool in ("mlnx_qos", "ib_write_bw"):
        text = agent_mod.wrapper(tool)
        assert "python3 -S -c '%s' %s \"$@\"" % (forkserver.client(str(agent_mod.TOOLS_SOCK)), tool) in text
    assert "'" not in forkserver.client(str(agent_mod.TOOLS_SOCK))


def test_a_client_that_ends_takes_its_tool_with_it(node, tool_server):
    """A caller whose client is killed while its tool runs (the perftest
    round stopping an ib_write_bw server by its session, or ``timeout``) stops
    the tool too, as it would stop a tool that was its own child. The tool
    here waits on its standard input (mlxconfig's question), a pipe this
    test holds the other end of: once no other process holds the pipe, the
    tool is gone."""
    import glob
    import signal
    r, w = os.pipe()
    pipe = "pipe:[%d]" % os.fstat(w).st_ino
    mine = "/proc/%d/" % os.getpid()

    def holders():
        found = []
        for fd in glob.glob("/proc/[0-9]*/fd/*"):
            try:
                if not fd.startswith(mine) and os.readlink(fd) == pipe:
                    found.append(fd.split("/")[2])
            except OSError:
                pass
        return sorted(set(found))

    argv = ["mstconfig", "-d", BDF, "set", "SRIOV_EN=1"]
    client = subprocess.Popen([sys.executable, "-S", "-c", forkserver.client(str(tool_server)), *argv],
                              env=node["env"], cwd=node["dir"], stdin=r, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    os.close(r)
    try:
        out = b""
        while b"(y/n)" not in out:
            chunk = client.stdout.read1(4096)
            assert chunk, "the tool ended without asking"
            out += chunk
        # the tool asks and waits for the answer: it and the client hold the pipe
        assert len(holders()) == 2 and str(client.pid) in holders()
        client.send_signal(signal.SIGTERM)
        client.wait(timeout=10)
        for _ in range(200):
            if not holders():
                break
            time.sleep(0.05)
        assert holders() == [], "the tool still waits on its caller's standard input after the caller was killed"
    finally:
        os.close(w)
        client.kill()


def test_the_server_warms_a_tool_twin_before_forking_its_call(monkeypatch):
    """Before it forks a call, the server runs the tool twin module's ``warm()`` (perftest parses the rack's
    files there, which the call inherits); a tool without one, or a warm() that fails, is forked as it is."""
    import simlab.tools.perftest as perftest
    called = []
    monkeypatch.setattr(perftest, "warm", lambda: called.append("perftest"))

    def request(tool):
        return b"\0".join([b"/", b"2", tool.encode(), b"--help", b"PATH=/usr/bin"])

    for tool in ("ib_write_bw", "ip", "no-such-tool"):
        forkserver.warm(request(tool))
    assert called == ["perftest"]
    monkeypatch.setattr(perftest, "warm", lambda: called.append("failing") or 1 / 0)
    forkserver.warm(request("ib_write_bw"))
    forkserver.warm(b"garbage")
    assert called == ["perftest", "failing"]
