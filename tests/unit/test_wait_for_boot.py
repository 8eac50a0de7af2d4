"""gpufabric.stack.wait_for_boot (action plugin): waits for a boot marker
other than the one read before a BMC reset, retrying while the node does not
answer; run by ansible-playbook on localhost with a marker file standing in
for the node's boot id."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK_BIN = Path(sys.executable).with_name("ansible-playbook")

pytestmark = pytest.mark.skipif(not PLAYBOOK_BIN.exists(), reason="ansible-playbook not in this virtualenv")

PLAY = """- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Wait
      gpufabric.stack.wait_for_boot:
        previous: "{previous}"
        boot_time_command: "cat {marker}"
        sleep: {sleep}
        timeout: {timeout}
      register: waited
    - name: Keep the result
      ansible.builtin.copy:
        content: "{{{{ waited | to_json }}}}"
        dest: "{out}"
        mode: "0644"
      check_mode: false
"""


def run(tmp_path, previous, sleep=1, timeout=30, check=False):
    out = tmp_path / "result.json"
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(previous=previous, marker=tmp_path / "marker", sleep=sleep,
                                timeout=timeout, out=out))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    proc = subprocess.run([str(PLAYBOOK_BIN), "-i", "localhost,", str(play)] + (["--check"] if check else []),
                          env=env, capture_output=True, text=True, timeout=120)
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def later(seconds, action):
    t = threading.Timer(seconds, action)
    t.start()
    return t


def test_waits_until_the_marker_changes(tmp_path):
    marker = tmp_path / "marker"
    marker.write_text("boot-1\n")
    t = later(2.5, lambda: marker.write_text("boot-2\n"))
    try:
        proc, res = run(tmp_path, "boot-1")
    finally:
        t.cancel()
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert res["boot_marker"] == "boot-2" and res["new_boot"] is True
    assert res["attempts"] >= 2


def test_retries_while_the_node_does_not_answer(tmp_path):
    # no marker file: the command fails, as a node that is down
    marker = tmp_path / "marker"
    t = later(2.5, lambda: marker.write_text("boot-2\n"))
    try:
        proc, res = run(tmp_path, "boot-1")
    finally:
        t.cancel()
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert res["boot_marker"] == "boot-2" and res["attempts"] >= 2


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
