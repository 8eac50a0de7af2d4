"""The twin nodes' connection (simlab/ansible_plugins/connection/simlab_podman.py):
a module goes in on standard input of one `podman exec -i`, the container is
mounted only for a file transfer, and podman refusing the exec (a paused or
stopped node) is a connection failure, so the host is unreachable."""

import importlib.util
from pathlib import Path

import pytest
from ansible.errors import AnsibleConnectionFailure
from ansible.playbook.play_context import PlayContext

pytestmark = pytest.mark.tooling

PLUGIN = Path(__file__).resolve().parents[2] / "simlab" / "ansible_plugins" / "connection" / "simlab_podman.py"


def connection(answers):
    spec = importlib.util.spec_from_file_location("simlab_podman", PLUGIN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ctx = PlayContext()
    ctx.remote_addr = "simlab-lab-node01"
    conn = mod.Connection(ctx, None)
    conn.calls = []

    def podman(cmd, cmd_args=None, in_data=None, use_container_id=True):
        conn.calls.append((list(cmd) if not isinstance(cmd, str) else [cmd], cmd_args, in_data))
        return answers.pop(0)
    conn._podman = podman
    conn.get_option = lambda name: "" if name == "podman_extra_args" else None
    return conn


def test_a_pipelined_module_is_one_exec_with_stdin_and_no_mount():
    conn = connection([(0, b'{"ok": 1}', b"")])
    assert conn.has_pipelining is True
    rc, out, err = conn.exec_command("/bin/sh -c '/usr/bin/python3 && sleep 0'", in_data=b"module")
    assert (rc, out) == (0, b'{"ok": 1}')
    assert conn.calls == [(["exec", "-i"], ["/bin/sh", "-c", "/usr/bin/python3 && sleep 0"], b"module")]


def test_a_command_without_input_is_a_plain_exec_and_its_own_failure_is_the_commands():
    conn = connection([(255, b"", b"exit status of the command\n")])
    assert conn.exec_command("false")[0] == 255
    assert conn.calls[0][0] == ["exec"]


@pytest.mark.parametrize("rc", [125, 255])
def test_podman_refusing_the_exec_is_a_connection_failure_naming_the_container(rc):
    conn = connection([(rc, b"", b"Error: can only create exec sessions on running containers: container state improper\n")])
    with pytest.raises(AnsibleConnectionFailure) as e:
        conn.exec_command("true", in_data=b"x")
    assert "simlab-lab-node01" in str(e.value) and "container state improper" in str(e.value)


def test_the_container_is_mounted_for_a_file_transfer_only(tmp_path):
    root = tmp_path / "root"
    (root / "tmp").mkdir(parents=True)
    conn = connection([(0, str(root).encode(), b"")])
    src = tmp_path / "f"
    src.write_text("data")
    conn.put_file(str(src), "/tmp/f")
    assert conn.calls == [(["mount"], None, None)]
    assert (root / "tmp" / "f").read_text() == "data"
