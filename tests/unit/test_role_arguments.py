"""gpufabric.stack.role_arguments: site.yml checks every GPU node layer's
variables for a host in one task, with ansible's own validator, instead of one
argument-check task per role. Run on the example inventory (no connection is
made: the action runs on the controller)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.layers(1, 2, 3, 4, 5, 6, 8, 9)

REPO = Path(__file__).resolve().parents[2]
SECRET = "vault-pw-Zq81"

PLAY = """
- hosts: gpu_workers[0]
  gather_facts: false
  tasks:
    - name: Check the layers' variables
      gpufabric.stack.role_arguments:
        roles: {roles}
      register: checked
      ignore_errors: true
    - name: Keep the result
      ansible.builtin.copy:
        content: "{{{{ checked | to_json }}}}"
        dest: "{out}"
        mode: "0600"
      delegate_to: localhost
"""


def site_check_roles():
    """The roles site.yml's first GPU node play checks, and the roles site.yml
    imports without ansible's own check."""
    plays = yaml.safe_load((REPO / "playbooks" / "site.yml").read_text())
    checked, unchecked = None, []
    for play in plays:
        for task in play.get("tasks") or []:
            if "gpufabric.stack.role_arguments" in task:
                assert checked is None, "one argument check in site.yml"
                assert task.get("tags") == ["always"], task
                checked = task["gpufabric.stack.role_arguments"]["roles"]
            imported = task.get("ansible.builtin.import_role") or task.get("ansible.builtin.include_role")
            if imported and imported.get("rolespec_validate") is False:
                unchecked.append(imported["name"].rsplit(".", 1)[-1])
    return checked, unchecked


def run(tmp_path, roles, *extra):
    out = tmp_path / "out.json"
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(roles=json.dumps(roles), out=out))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    command = Path(sys.executable).with_name("ansible-playbook")
    proc = subprocess.run([str(command) if command.exists() else "ansible-playbook", "-vvv",
                           "-i", str(REPO / "inventories" / "example" / "hosts.yml"), str(play),
                           "-e", "vault_bmc_password=%s" % SECRET, "-e", "vault_switch_password=%s" % SECRET, *extra],
                          env=env, capture_output=True, text=True, timeout=180, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # the BMC and switch passwords are in no line of -vvv and not in the result
    assert SECRET not in proc.stdout + proc.stderr + out.read_text()
    return json.loads(out.read_text())


def test_site_checks_every_role_it_imports_without_ansibles_check():
    checked, unchecked = site_check_roles()
    assert checked and sorted(set(checked)) == sorted(unchecked), (checked, unchecked)
    for role in checked:
        assert (REPO / "roles" / role / "meta" / "argument_specs.yml").is_file()


def test_the_example_inventory_passes_every_layer(tmp_path):
    roles, _ = site_check_roles()
    got = run(tmp_path, roles)
    assert not got.get("failed"), got
    assert got["roles"] == roles and got["argument_errors"] == {} and got["changed"] is False
    assert got["module_executions"] == 0


def test_every_role_with_a_bad_value_is_named_with_ansibles_message(tmp_path):
    roles, _ = site_check_roles()
    # cpu_vendor reaches the BIOS and kernel roles through their defaults
    # (bios_cpu_vendor: "{{ cpu_vendor }}"), so the defaults are templated
    got = run(tmp_path, roles, "-e", "cpu_vendor=arm", "-e", "sriov_vfs_wait_timeout=soon")
    assert got["failed"] is True
    errors = got["argument_errors"]
    assert sorted(errors) == ["bios", "kernel", "sriov_vfs"], errors
    assert errors["bios"] == ["value of bios_cpu_vendor must be one of: intel, amd, got: arm"]
    assert errors["kernel"] == ["value of kernel_cpu_vendor must be one of: intel, amd, got: arm"]
    assert "sriov_vfs_wait_timeout" in errors["sriov_vfs"][0]
    # the host first, then every role with its messages
    assert got["msg"].startswith("gpu-a01: "), got["msg"]
    for role, messages in errors.items():
        assert "%s: %s" % (role, ", ".join(messages)) in got["msg"]


def test_an_unknown_role_or_no_role_is_refused(tmp_path):
    got = run(tmp_path, ["bmc", "no_such_role"])
    assert got["failed"] is True and "no_such_role" in got["msg"] and "argument_specs.yml" in got["msg"]
    got = run(tmp_path, [])
    assert got["failed"] is True and "non-empty list" in got["msg"]


def fabric_roles():
    """The roles of the layers read across nodes: the doctor's layer.yml checks
    their variables on the doctor entry point, then includes them unchecked."""
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import layers
    return [entry["role"] for entry in layers.entries(layers.select(scope="fabric"))]


def test_the_doctor_checks_each_fabric_layer_before_including_it_unchecked():
    tasks = yaml.safe_load((REPO / "roles" / "doctor" / "tasks" / "layer.yml").read_text())
    check, include = tasks[0], tasks[1]
    assert check["gpufabric.stack.role_arguments"] == {"roles": ["{{ doctor_role }}"], "entry_point": "doctor"}
    assert check["when"] == "doctor_layer_due" and check["register"] == "doctor_layer_args"
    assert include["ansible.builtin.include_role"]["tasks_from"] == "doctor"
    assert include["ansible.builtin.include_role"]["rolespec_validate"] is False
    assert include["when"] == tasks[2]["when"] == "doctor_layer_args is not skipped"
    assert fabric_roles() == ["rdma_check", "nccl_validate"]
    for role in fabric_roles():
        spec = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
        assert spec["doctor"]["options"], role


def test_no_checked_option_is_set_in_a_roles_vars():
    """The action layers a role's defaults under the host's variables, as
    ansible does for the role's own check; a role's vars/main.yml, which
    ansible puts above the inventory, is not layered in. That holds only while
    no option of a checked role (site.yml's on main, the doctor's on doctor)
    is set there."""
    roles, _ = site_check_roles()
    for role, entry in [(role, "main") for role in roles] + [(role, "doctor") for role in fabric_roles()]:
        spec = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
        options = set((spec[entry].get("options") or {}))
        path = REPO / "roles" / role / "vars" / "main.yml"
        role_vars = set((yaml.safe_load(path.read_text()) or {}) if path.is_file() else {})
        assert not options & role_vars, (role, sorted(options & role_vars))
