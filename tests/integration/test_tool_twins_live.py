"""The tool twins on a live twin node (podman exec into the session's twin rack)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware import mlx_tools
from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check import rdma_tools

pytestmark = [pytest.mark.twin, pytest.mark.layers(4, 5, 8)]

NODE = None
BDF = "0000:3b:00.0"


def _running() -> bool:
    if shutil.which("podman") is None:
        return False
    r = subprocess.run(["podman", "container", "inspect", "-f", "{{.State.Running}}", NODE],
                       capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() == "true"


@pytest.fixture(scope="module", autouse=True)
def node(twin):
    global NODE
    NODE = twin.container("node01")
    assert _running(), f"twin node {NODE} is not running"


def sh(*argv, stdin=None):
    return subprocess.run(["podman", "exec", "-i", NODE, *argv], capture_output=True, text=True,
                          input=stdin, timeout=60)


def test_mlxconfig_query_on_node():
    r = sh("mstconfig", "-e", "-d", BDF, "q")
    assert r.returncode == 0, r.stdout + r.stderr
    assert mlx_tools.parse_mlxconfig_query(r.stdout)["params"]["SRIOV_EN"]["current_int"] == 1


def test_mlxconfig_prompt_and_unknown_device():
    r = sh("mlxconfig", "-d", BDF, "set", "CNP_DSCP_P1=48", stdin="n\n")
    assert r.returncode == 2 and "-E- Aborted by user." in r.stdout
    r = sh("mlxconfig", "-d", "0000:3c:00.0", "q")
    assert r.returncode == 3 and "-E- Failed to open the device" in r.stdout


def test_rdma_views_agree():
    devinfo = rdma_tools.parse_ibv_devinfo(sh("ibv_devinfo").stdout)
    gids = rdma_tools.parse_show_gids(sh("show_gids").stdout)
    link = sh("rdma", "link").stdout
    assert devinfo and gids["n_gids_found"] >= 4
    for d in devinfo:
        assert f"link {d['hca_id']}/1 " in link


def test_modprobe_mlx5_ib_removes_and_restores_rdma():
    try:
        assert sh("modprobe", "-r", "mlx5_ib").returncode == 0
        assert sh("ls", "/run/simlab/sys/class/infiniband").stdout.strip() == ""
        assert sh("ibv_devinfo").returncode != 0
    finally:
        assert sh("modprobe", "mlx5_ib").returncode == 0
    assert sh("ls", "/run/simlab/sys/class/infiniband").stdout.strip() != ""
    assert sh("test", "-d", "/run/simlab/sys/module/mlx5_ib").returncode == 0


def test_mlnx_qos_and_mstflint():
    r = sh("mlnx_qos", "-i", "enp59s0f0np0", "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0")
    assert r.returncode == 0, r.stdout
    assert mlx_tools.parse_mlnx_qos(r.stdout)["pfc_enabled"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert mlx_tools.parse_mstflint_query(sh("mstflint", "-d", BDF, "q").stdout)["psid"]


def test_a_tool_twin_keeps_its_compiled_code():
    """The twin's code is mounted read-only: each tool twin's Python keeps
    what it compiles under PYTHONPYCACHEPREFIX, so a call does not compile
    the modules it imports again (the wrapper sets it)."""
    from simlab.node import agent
    assert sh("mstconfig", "-e", "-d", BDF, "q").returncode == 0
    kept = sh("sh", "-c", "ls %s/opt/simlab/simlab/tools" % agent.PYCACHE).stdout
    assert "mlxconfig." in kept and "formats." in kept, kept


def test_the_nodes_python_keeps_what_it_compiles_from_a_zip_archive():
    """An AnsiballZ payload is a zip archive in a new temporary file each run:
    the node's Python loads simlab/node/simlab_zipcache.py and keeps the compiled code
    in the host's shared cache, so the second run from another archive compiles
    nothing and still names its own archive."""
    script = r'''
import os, sys, tempfile, zipfile, zipimport
calls = []
def counting(p, s):
    calls.append(p)
    return compile(s, p, "exec", dont_inherit=True)
zipimport._compile_source.__globals__["_compile_source"] = counting
src = b"import os\nNONCE = %r\ndef where():\n    return where.__code__.co_filename\n" % os.urandom(8).hex()
names = []
for run in ("a", "b"):
    d = tempfile.mkdtemp()
    z = os.path.join(d, "ansible_zc_payload.zip")
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("zc_probe.py", src)
    sys.path.insert(0, z)
    sys.modules.pop("zc_probe", None)
    import zc_probe
    names.append(zc_probe.where())
    sys.path.remove(z)
print(zipimport._compile_source.__module__, len(calls), *names)
'''
    out = sh("python3", "-c", script).stdout.split()
    assert out[0] == "simlab_zipcache" and out[1] == "1", out
    assert out[2].endswith("/ansible_zc_payload.zip/zc_probe.py") and out[2] != out[3], out
    assert out[3].endswith("/ansible_zc_payload.zip/zc_probe.py"), out


# What a module's process (here the shell module's child) is given in the node: who it runs as, where, with
# which environment, capabilities, seccomp filter, resource limits, OOM score, cgroup and namespaces.
PROCESS_VIEW = ("id; pwd; umask; env | sort; grep -E '^(Cap|Seccomp|NoNewPrivs|Groups)' /proc/self/status; "
                "cat /proc/self/limits /proc/self/oom_score_adj /proc/self/loginuid; echo; "
                "cat /proc/self/cgroup; for n in cgroup ipc mnt net pid uts; do readlink /proc/self/ns/$n; done")


def _raw(twin, via):
    from tests.integration.twinlab import BIN, ENV, REPO
    proc = subprocess.run([str(BIN / "ansible"), "-i", str(twin.inventory / "hosts.yml"), "node01", "-m", "ansible.builtin.shell",
                           "-a", PROCESS_VIEW, "-vvv"], cwd=REPO, env=dict(ENV, SIMLAB_EXEC=via),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout.split(" | CHANGED | rc=0 >>\n", 1)[1]
    return "RUNC EXEC" in proc.stdout, out


def test_the_nodes_connection_through_runc_starts_the_process_podman_exec_starts(twin):
    """simlab's inventory gives the nodes' connection the container's ID, and as
    root it runs a command through runc exec; the process has to be the one
    podman exec starts, or the twin would run modules as no real node does."""
    used_runc, by_runc = _raw(twin, "runc")
    used_podman, by_podman = _raw(twin, "podman")
    assert used_runc and not used_podman
    assert by_runc == by_podman
    assert "uid=0(root)" in by_runc and "HOSTNAME=node01" in by_runc and "container_uuid" not in by_runc and "Seccomp:\t2" in by_runc
    assert "Max open files" in by_runc
