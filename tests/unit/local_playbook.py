"""Run a playbook on localhost in check mode with stand-in commands first in
PATH: the module tests of modules that call host tools (systemctl, ctr, ...)."""

import os
import subprocess
import sys
from pathlib import Path


def stand_ins(bindir, scripts):
    """Write each {name: shell body} as an executable under bindir."""
    bindir.mkdir(exist_ok=True)
    for name, body in scripts.items():
        path = bindir / name
        path.write_text(body if body.startswith("#!") else "#!/bin/sh\n%s\n" % body)
        path.chmod(0o755)
    return bindir


def write_play(path, tasks):
    """A play on localhost, local connection, no facts, with the given tasks
    (YAML text indented as a play's task list)."""
    path.write_text("- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n" + tasks)
    return path


def run_check(playbook, bindir):
    """ansible-playbook --check on localhost, with bindir first in PATH;
    fails the test with the run's output when the play fails."""
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]), ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    command = Path(sys.executable).with_name("ansible-playbook")
    proc = subprocess.run([str(command) if command.exists() else "ansible-playbook", "-i", "localhost,", "--check",
                           str(playbook)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc
