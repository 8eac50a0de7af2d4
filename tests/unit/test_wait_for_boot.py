"""gpufabric.stack.wait_for_boot (action plugin): waits for a boot marker
other than the one read before a BMC reset, retrying while the node does not
answer; run by ansible-playbook on localhost with a marker file standing in
for the node's boot id."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK_BIN = Path(sys.executable).with_name("ansible-playbook")

pytestmark = [pytest.mark.skipif(not PLAYBOOK_BIN.exists(), reason="ansible-playbook not in this virtualenv"), pytest.mark.layers(1, 2, 3, 4)]

PLAY = """- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Wait
      gpufabric.stack.wait_for_boot: {args}
      register: waited
    - name: Keep the result
      ansible.builtin.copy:
        content: "{{{{ waited | to_json }}}}"
        dest: "{out}"
        mode: "0644"
      check_mode: false
"""


def play(tmp_path, args, check=False):
    """ansible-playbook of one wait_for_boot task with ``args`` on localhost:
    (the run, the task's result or None)."""
    out = tmp_path / "result.json"
    path = tmp_path / "play.yml"
    path.write_text(PLAY.format(args=json.dumps(args), out=out))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    proc = subprocess.run([str(PLAYBOOK_BIN), "-i", "localhost,", str(path)] + (["--check"] if check else []),
                          env=env, capture_output=True, text=True, timeout=120)
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def run(tmp_path, previous, sleep=1, timeout=30, check=False, command=None):
    """The bmc role's reset path: wait for a marker other than ``previous``."""
    return play(tmp_path, {"previous": previous, "boot_time_command": command or "cat %s" % (tmp_path / "marker"),
                           "sleep": sleep, "timeout": timeout}, check=check)


def answers(tmp_path, *replies):
    """A boot-time command that answers ``replies`` in turn, one per call
    (None: the node does not answer), then the last one for ever: the test
    does not depend on how long ansible-playbook takes to start."""
    (tmp_path / "replies").write_text("\n".join(r or "-" for r in replies) + "\n")
    script = tmp_path / "node.sh"
    script.write_text('n=$(cat "$0.calls" 2>/dev/null || echo 0); echo $((n + 1)) > "$0.calls"\n'
                      'r=$(sed -n "$((n + 1))p" %s); [ -n "$r" ] || r=$(tail -n 1 %s)\n'
                      '[ "$r" = "-" ] && exit 1; echo "$r"\n' % (tmp_path / "replies", tmp_path / "replies"))
    return "sh %s" % script


def test_waits_until_the_marker_changes(tmp_path):
    proc, res = run(tmp_path, "boot-1", command=answers(tmp_path, "boot-1", "boot-1", "boot-2"))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert res["boot_marker"] == "boot-2" and res["new_boot"] is True
    assert res["attempts"] == 3


def test_retries_while_the_node_does_not_answer(tmp_path):
    # the command fails twice, as a node that is down, then answers
    proc, res = run(tmp_path, "boot-1", command=answers(tmp_path, None, None, "boot-2"))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert res["boot_marker"] == "boot-2" and res["attempts"] == 3


def test_fails_naming_the_host_when_no_new_boot_comes(tmp_path):
    (tmp_path / "marker").write_text("boot-1\n")
    proc, res = run(tmp_path, "boot-1", timeout=3)
    assert proc.returncode != 0
    assert res is None
    assert "localhost: no new boot within 3 s" in proc.stdout
    assert "the boot marker it had before the reset (boot-1)" in proc.stdout


def test_the_last_error_of_a_node_that_never_answers(tmp_path):
    proc, _ = run(tmp_path, "boot-1", timeout=2)
    assert proc.returncode != 0
    assert "localhost: no new boot within 2 s: 'cat %s' returned rc 1" % (tmp_path / "marker") in proc.stdout


def test_check_mode_and_an_unknown_previous_take_the_first_answer(tmp_path):
    (tmp_path / "marker").write_text("boot-1\n")
    proc, res = run(tmp_path, "boot-1", check=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert res["attempts"] == 1 and res["new_boot"] is False
    proc, res = run(tmp_path, "")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert res["attempts"] == 1 and res["new_boot"] is None and res["boot_marker"] == "boot-1"


def test_negative_values_fail_before_waiting(tmp_path):
    (tmp_path / "marker").write_text("boot-1\n")
    proc, _ = run(tmp_path, "boot-1", sleep=-1)
    assert proc.returncode != 0
    assert "localhost: sleep must not be negative, got -1" in proc.stdout


def reboot(tmp_path, reboot_cmd, command, test="true", timeout=30, check=False):
    """The reboot role's path: reboot with ``reboot_cmd``, then wait."""
    return play(tmp_path, {"reboot_command": reboot_cmd, "boot_time_command": command, "test_command": test,
                           "sleep": 1, "timeout": timeout}, check=check)


def test_reboot_reads_the_marker_reboots_and_waits_for_a_new_boot_and_the_test(tmp_path):
    """The reboot role's path: the marker read before the reboot (boot-1), the
    reboot command run once, the old boot answering and then no answer while
    it goes down, the new boot, then the test command (failing once, as a node
    whose sshd is up before its services)."""
    command = answers(tmp_path, "boot-1", "boot-1", None, "boot-2")
    (tmp_path / "test.sh").write_text('[ -e "$0.ok" ] && exit 0; touch "$0.ok"; echo starting >&2; exit 1\n')
    proc, res = reboot(tmp_path, "echo reboot >> %s" % (tmp_path / "reboots"), command,
                       test="sh %s" % (tmp_path / "test.sh"))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert res["changed"] is True and res["rebooted"] is True
    assert res["boot_marker"] == "boot-2" and res["new_boot"] is True and res["attempts"] == 3
    assert (tmp_path / "reboots").read_text() == "reboot\n"
    assert (tmp_path / "test.sh.ok").exists()


def test_a_reboot_command_that_fails_is_named_and_nothing_is_waited_for(tmp_path):
    command = answers(tmp_path, "boot-1")
    proc, res = reboot(tmp_path, "sh -c 'echo shutdown: not permitted >&2; exit 1'", command)
    assert proc.returncode != 0 and res is None
    assert "localhost: the reboot command failed:" in proc.stdout and "shutdown: not permitted" in proc.stdout


def test_a_node_that_does_not_answer_before_the_reboot_is_not_rebooted(tmp_path):
    command = answers(tmp_path, None)
    proc, _ = reboot(tmp_path, "echo reboot >> %s" % (tmp_path / "reboots"), command)
    assert proc.returncode != 0
    assert "localhost: cannot read the boot marker before the reboot" in proc.stdout
    assert not (tmp_path / "reboots").exists()


def test_reboot_in_check_mode_reboots_nothing_and_says_changed(tmp_path):
    command = answers(tmp_path, "boot-1")
    proc, res = reboot(tmp_path, "echo reboot >> %s" % (tmp_path / "reboots"), command, check=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert res["changed"] is True and res["rebooted"] is False and res["attempts"] == 0
    assert not (tmp_path / "reboots").exists()
