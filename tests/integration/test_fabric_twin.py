"""ib_write_bw, mpirun and all_reduce_perf twins on a live 2-node, 2-switch
rack, driven by the fabric model: healthy RoCE chain, host PFC mismatch,
link down, NCCL over RDMA, over sockets, and the socket fallback on one node
(only that node's ranks fall back; the job fails)."""

import re
import subprocess
import time

import pytest

from tests.integration.twinlab import ENV, ROCE_PFS, require_twin, roce_host_by_hand, roce_rack

pytestmark = [pytest.mark.twin, pytest.mark.layers(9, 15)]

DEV = "rocep59s0f0"
PFS = ROCE_PFS
RAIL0_NODE02 = "172.30.0.2"


@pytest.fixture(scope="module")
def fab(tmp_path_factory):
    require_twin()
    t = roce_rack(tmp_path_factory, "fb")
    yield t
    t.down()


def write_bw(t, extra=""):
    """Server on node02, client on node01 (rail 0); -> (client proc, server proc)."""
    cmd = f"ib_write_bw -d {DEV} -F --report_gbits {extra}"
    server = subprocess.Popen(["podman", "exec", t.container("node02"), "sh", "-c",
                               f"SIMLAB_PERFTEST_WAIT=15 {cmd}"], env=ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    # as with perftest, the client fails at once unless the server listens:
    # start it once the server says so (or has exited)
    first = []
    while server.poll() is None and not any("Waiting for client to connect" in line for line in first):
        first.append(server.stdout.readline())
    client = t.sh("node01", f"{cmd} {RAIL0_NODE02}", check=False)
    try:
        out, err = server.communicate(timeout=20)
        out = "".join(first) + out
    except subprocess.TimeoutExpired:
        server.kill()
        out, err = server.communicate()
    return client, subprocess.CompletedProcess(server.args, server.returncode, out, err)


def avg_gbps(out):
    rows = [line.split() for line in out.splitlines() if re.match(r"^ \d+\s+\d+\s", line)]
    assert rows, out
    return float(rows[-1][3])


def test_healthy_chain_reaches_line_rate(fab):
    client, server = write_bw(fab)
    assert client.returncode == 0, client.stderr
    assert " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]" in client.stdout
    assert " Mtu             : 4096[B]" in client.stdout
    assert avg_gbps(client.stdout) >= 0.90 * 400
    assert server.returncode == 0


def test_host_pfc_mismatch_degrades(fab):
    since = time.time()
    fab.fault("node02", "host-pfc-mismatch")
    try:
        fab.settle("node02", since, until=lambda state: state["pfs"][0]["pfc"][4] == 1)
        client, _ = write_bw(fab)
        assert client.returncode == 0, client.stderr
        assert avg_gbps(client.stdout) < 0.90 * 400
    finally:
        fab.fault("node02", "clear")
        roce_host_by_hand(fab, "node02")


def test_link_down_fails_client(fab):
    since = time.time()
    fab.fault("node02", "link-down")
    try:
        fab.settle("node02", since)
        client, server = write_bw(fab)
        assert client.returncode != 0
        assert f"Couldn't connect to {RAIL0_NODE02}:18515" in client.stderr
        assert server.returncode != 0 and "Port number 1 state is Down" in server.stderr
    finally:
        since = time.time()
        fab.fault("node02", "clear")
        fab.settle("node02", since)


MPI = ("mpirun -np 16 -H node01:8,node02:8 -x NCCL_DEBUG=INFO --allow-run-as-root "
       "all_reduce_perf -b 1G -e 8G -f 2 -g 1 -c 0")


def busbw(out):
    m = re.search(r"^# Avg bus bandwidth\s+:\s+(\S+)", out, re.M)
    assert m, out
    return float(m.group(1))


def test_nccl_over_rdma_then_socket_fallback(fab):
    healthy = fab.sh("node01", MPI)
    assert "NET/IB : Using [0]rocep59s0f0:1/RoCE [1]rocep134s0f0:1/RoCE" in healthy.stdout
    assert "# Using devices" in healthy.stdout and "Rank 15" in healthy.stdout
    assert busbw(healthy.stdout) >= 0.85 * 2 * 50
    # every node on sockets: the job runs at socket speed
    sockets = fab.sh("node01", MPI.replace("-x NCCL_DEBUG=INFO", "-x NCCL_DEBUG=INFO -x NCCL_IB_DISABLE=1"))
    assert sockets.returncode == 0, sockets.stdout[-2000:] + sockets.stderr[-2000:]
    assert "NET/Socket : Using" in sockets.stdout and "NET/IB : Using" not in sockets.stdout
    assert busbw(sockets.stdout) < 5
    since = time.time()
    fab.fault("node02", "nccl-socket-fallback")
    try:
        fab.settle("node02", since)
        fallback = fab.sh("node01", MPI, check=False)
    finally:
        fab.fault("node02", "clear")
    # only node02's ranks fall back; node01's use RDMA
    node01 = "\n".join(ln for ln in fallback.stdout.splitlines() if ln.startswith("node01:"))
    node02 = "\n".join(ln for ln in fallback.stdout.splitlines() if ln.startswith("node02:"))
    assert "NET/IB : Using [0]rocep59s0f0:1/RoCE [1]rocep134s0f0:1/RoCE" in node01 and "NET/Socket" not in node01
    assert "NET/IB : No device found." in node02 and "NET/Socket : Using" in node02
    assert "NET/IB : Using" not in node02
    # a job with nodes on both networks cannot connect: it fails before any row
    assert fallback.returncode != 0
    assert "NCCL WARN socketFinalizeAccept: wrong type 4 != 3" in node02
    assert "Test NCCL failure" in fallback.stdout and "# Avg bus bandwidth" not in fallback.stdout
