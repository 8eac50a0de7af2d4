"""The twin nodes' connection (simlab/ansible_plugins/connection/simlab_podman.py):
a module goes in on standard input of one `podman exec -i`, the container is
mounted only for a file transfer, and podman refusing the exec (a paused or
stopped node) is a connection failure, so the host is unreachable. With the
container's ID, as root, the command goes through `runc exec` instead, and
runc refusing it hands it to podman exec by name."""

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


class FakePopen:
    """subprocess.Popen for runc: records the command and what went in."""

    def __init__(self, answers, calls):
        self.answers, self.calls = answers, calls

    def __call__(self, cmd, stdin=None, stdout=None, stderr=None):
        self.cmd, self.stdin = cmd, stdin
        return self

    def communicate(self, data=None):
        self.calls.append(("runc", self.cmd, data, self.stdin))
        self.returncode, out, err = self.answers.pop(0)
        return out, err


ID = "932ce9328197a6d10b644511af47639e587560b6b02116bb5fe9cb4da63c5b18"
RUNC_PAUSED = (b'time="2026-12-03T17:05:52Z" level=error msg="exec failed: cannot exec in a paused container '
               b'(use --ignore-paused to override)"\n')


def runc_connection(monkeypatch, runc_answers, podman_answers=(), options=None, euid=0, user=None):
    conn = connection(list(podman_answers))
    opts = {"podman_extra_args": "", "container_id": ID, "exec_via": "runc", **(options or {})}
    conn.get_option = opts.get
    conn.user = user
    glb = conn._runc_exec.__func__.__globals__  # the plugin module's, loaded anew by connection()
    monkeypatch.setitem(glb, "subprocess", type("S", (), {"Popen": FakePopen(list(runc_answers), conn.calls),
                                                          "PIPE": -1, "DEVNULL": -3}))
    monkeypatch.setitem(glb, "os", type("O", (), {"geteuid": staticmethod(lambda: euid)}))
    monkeypatch.setitem(glb, "shutil", type("W", (), {"which": staticmethod(lambda name: "/usr/bin/runc")}))
    return conn


def test_with_the_containers_id_as_root_a_module_is_one_runc_exec_with_stdin_and_no_podman(monkeypatch):
    conn = runc_connection(monkeypatch, [(0, b'{"ok": 1}', b"")])
    rc, out, err = conn.exec_command("/bin/sh -c '/usr/bin/python3 && sleep 0'", in_data=b"module")
    assert (rc, out) == (0, b'{"ok": 1}')
    # podman exec leaves the container_uuid of systemd mode out of the environment; so does the runc path
    assert conn.calls == [("runc", ["/usr/bin/runc", "exec", ID, "env", "-u", "container_uuid",
                                    "/bin/sh", "-c", "/usr/bin/python3 && sleep 0"], b"module", -1)]


def test_a_command_without_input_gets_no_stdin_and_its_own_255_is_the_commands(monkeypatch):
    conn = runc_connection(monkeypatch, [(255, b"", b"exit status of the command\n")])
    assert conn.exec_command("false") == (255, b"", b"exit status of the command\n")
    assert [c[0] for c in conn.calls] == ["runc"] and conn.calls[0][3] == -3


def test_runc_refusing_the_exec_goes_to_podman_exec_by_name_whose_refusal_is_a_connection_failure(monkeypatch):
    conn = runc_connection(monkeypatch, [(255, b"", RUNC_PAUSED)],
                           [(125, b"", b"Error: can only create exec sessions on running containers: "
                                       b"container state improper\n")])
    with pytest.raises(AnsibleConnectionFailure) as e:
        conn.exec_command("true", in_data=b"x")
    assert "simlab-lab-node01" in str(e.value) and "container state improper" in str(e.value)
    assert [c[0] for c in conn.calls] == ["runc", ["exec", "-i"]]


@pytest.mark.parametrize("gone", [b'time="2026-12-03T17:05:52Z" level=error msg="exec failed: container does not exist"\n',
                                  b'level=error msg="exec failed: container does not exist"\n'])
def test_a_container_made_anew_under_another_id_is_still_reached_through_podman(monkeypatch, gone):
    conn = runc_connection(monkeypatch, [(255, b"", gone)], [(0, b"ran", b"")])
    assert conn.exec_command("true") == (0, b"ran", b"")
    assert conn.calls[1] == (["exec"], ["true"], None)


def test_a_commands_own_255_that_reads_like_a_log_line_but_not_runcs_refusal_is_the_commands(monkeypatch):
    # runc's refusal is its log line at the start of stderr with nothing on stdout; anything else is the command's
    for answer in [(255, b"out", RUNC_PAUSED), (255, b"", b'level=error msg="exit 255"\n'), (1, b"", RUNC_PAUSED)]:
        conn = runc_connection(monkeypatch, [answer])
        assert conn.exec_command("false") == answer and [c[0] for c in conn.calls] == ["runc"]


@pytest.mark.parametrize("how", [{"options": {"exec_via": "podman"}}, {"options": {"container_id": None}},
                                 {"euid": 1000}, {"user": "nobody"}])
def test_podman_exec_where_runc_cannot_or_should_not(monkeypatch, how):
    conn = runc_connection(monkeypatch, [], [(0, b"", b"")], **how)
    conn.exec_command("true")
    assert [c[0] for c in conn.calls] == [["exec"] + (["--user", "nobody"] if how.get("user") else [])]
