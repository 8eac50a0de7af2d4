"""gpufabric.stack.bios_facts' action: on the controller (a local
connection) it reads the BMC from its own process with the module's options
and answer and executes no module; on another connection the module runs."""

import json
import os
import sys
from pathlib import Path
from unittest import mock

import pytest

from ansible_collections.gpufabric.stack.plugins.action import bios_facts as bios_facts_action
from ansible_collections.gpufabric.stack.plugins.module_utils.bios import redfish_bios
from simlab.bmc.power import FakePowerDriver
from simlab.bmc.server import BmcLab
from tests.unit.local_playbook import write_play

pytestmark = pytest.mark.layers(2)

TASKS = """
    - name: Read through the action
      gpufabric.stack.bios_facts:
        baseuri: "{{ bmc }}"
        username: ADMIN
        password: smc-pw
        timeout: 10
      register: read
    - name: Read without a password
      gpufabric.stack.bios_facts:
        baseuri: "{{ bmc }}"
        username: ADMIN
        password: ""
      register: empty
    - name: Keep both
      ansible.builtin.copy:
        content: "{{ {'read': read, 'empty': empty} | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
"""


@pytest.fixture
def lab(tmp_path):
    lab = BmcLab(tmp_path / "lab", [{"name": "smc1", "port": 0, "vendor": "supermicro", "username": "ADMIN",
                                     "password": "smc-pw", "container": "c-smc1"}], FakePowerDriver(initial="On"))
    lab.start()
    yield lab
    lab.stop()


def test_on_the_controller_the_action_answers_as_the_module_without_executing_it(lab, tmp_path):
    import subprocess
    address = "127.0.0.1:%d" % lab.bmcs["smc1"].port
    play = write_play(tmp_path / "play.yml", TASKS)
    out = tmp_path / "out.json"
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    command = Path(sys.executable).with_name("ansible-playbook")
    proc = subprocess.run([str(command) if command.exists() else "ansible-playbook", "-i", "localhost,", "-vvv",
                           str(play), "-e", "bmc=%s" % address, "-e", "out=%s" % out],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    got = json.loads(out.read_text())
    # no module went to a temporary directory or an interpreter
    assert "modules/bios_facts.py" not in proc.stdout
    assert got["read"]["module_executions"] == 0 and got["read"]["changed"] is False
    params = dict((k, v.get("default")) for k, v in redfish_bios.FACTS_ARGUMENT_SPEC.items())
    params.update(baseuri=address, username="ADMIN", password="smc-pw", timeout=10)
    want = redfish_bios.facts(params)
    assert want["error"] == "" and want["current"] and want["registry"], want
    assert dict((k, got["read"][k]) for k in want) == want
    assert got["empty"]["error"] == "bmc_password must not be empty" and got["empty"]["current"] == {}
    # the task has no no_log (the bios role's has none): the password is in no result and no line of -vvv
    assert "smc-pw" not in json.dumps(got["read"]) and "smc-pw" not in proc.stdout + proc.stderr


def test_on_another_connection_the_module_runs_there():
    task = mock.MagicMock(args={"baseuri": "bmc1", "username": "u", "password": "p"}, async_val=0, check_mode=False)
    connection = mock.MagicMock(transport="ssh")
    connection._shell.tmpdir = "/tmp/x"
    action = bios_facts_action.ActionModule(task, connection, mock.MagicMock(), mock.MagicMock(), mock.MagicMock(),
                                            mock.MagicMock())
    with mock.patch.object(action, "_execute_module", return_value={"error": "", "current": {"A": 1}}) as run, \
            mock.patch.object(redfish_bios, "facts", side_effect=AssertionError("read from the controller")):
        got = action.run(task_vars={})
    assert run.call_args.kwargs["module_name"] == "gpufabric.stack.bios_facts"
    assert run.call_args.kwargs["module_args"] == task.args
    assert got["current"] == {"A": 1} and got["module_executions"] == 1
