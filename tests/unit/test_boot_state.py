"""The doctor's read of the boot units and files (module_utils/host/boot_state),
with systemctl's `show` output as systemd prints it for several units, and
as nic_facts returns it, run by ansible-playbook with a stand-in systemctl."""

import json

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.host import boot_state
from local_playbook import run_check, stand_ins, write_play

pytestmark = pytest.mark.layers(6, 8)

UNITS = ["gpufabric-sriov.service", "gpufabric-roce-qos.service"]


def answering(rc, out, err=""):
    calls = []

    def run(argv):
        calls.append(argv)
        return rc, out, err
    return run, calls


def test_one_call_for_every_unit_in_the_order_asked():
    run, calls = answering(0, "Id=gpufabric-sriov.service\nUnitFileState=enabled\n\n"
                              "Id=gpufabric-roce-qos.service\nUnitFileState=disabled\n")
    states, error = boot_state.unit_file_states(run, UNITS)
    assert states == {"gpufabric-sriov.service": "enabled", "gpufabric-roce-qos.service": "disabled"}
    assert error == ""
    assert calls == [["systemctl", "show", "-p", "Id", "-p", "UnitFileState", "--"] + UNITS]


def test_a_unit_systemd_does_not_know_is_not_enabled():
    # systemctl prints the requested property even when it is empty
    run, _ = answering(0, "Id=gpufabric-sriov.service\nUnitFileState=\n\n"
                          "Id=gpufabric-roce-qos.service\nUnitFileState=enabled\n")
    states, _ = boot_state.unit_file_states(run, UNITS)
    assert states["gpufabric-sriov.service"] == ""
    assert states["gpufabric-roce-qos.service"] == "enabled"


def test_the_states_follow_the_order_not_the_id():
    # an alias is answered with the unit's own Id: the answer still belongs
    # to the name asked for
    run, _ = answering(0, "Id=real-name.service\nUnitFileState=masked\n\nId=b.service\nUnitFileState=static\n")
    states, _ = boot_state.unit_file_states(run, ["alias.service", "b.service"])
    assert states == {"alias.service": "masked", "b.service": "static"}


def test_duplicates_and_empty_names_are_asked_once():
    run, calls = answering(0, "Id=a.service\nUnitFileState=enabled\n")
    states, _ = boot_state.unit_file_states(run, ["a.service", "", "a.service"])
    assert states == {"a.service": "enabled"}
    assert calls[0][-1:] == ["a.service"] and calls[0].count("a.service") == 1


def test_no_units_no_call():
    run, calls = answering(0, "")
    assert boot_state.unit_file_states(run, []) == ({}, "")
    assert calls == []


def test_a_failing_systemctl_leaves_the_units_to_the_layers():
    run, _ = answering(1, "", "System has not been booted with systemd as init system (PID 1). Can't operate.\n"
                              "Failed to connect to bus: Host is down\n")
    states, error = boot_state.unit_file_states(run, UNITS)
    assert states == {}
    assert error == "systemctl show: Failed to connect to bus: Host is down"


def test_an_answer_that_does_not_match_the_question_is_not_used():
    run, _ = answering(0, "Id=gpufabric-sriov.service\nUnitFileState=enabled\n")
    states, error = boot_state.unit_file_states(run, UNITS)
    assert states == {}
    assert error == "systemctl show: 1 answers for 2 units"


def test_files_present(tmp_path):
    rule = tmp_path / "70-gpufabric-nm-unmanaged.rules"
    rule.write_text('ACTION=="add", ENV{NM_UNMANAGED}="1"\n')
    missing = str(tmp_path / "missing.rules")
    assert boot_state.files_present([str(rule), missing, ""]) == {str(rule): True, missing: False}


SYSTEMCTL = """#!/bin/sh
# systemctl show -p Id -p UnitFileState -- UNIT...: one block per unit; each
# call is logged beside the stand-in
echo "$*" >> "$(dirname "$0")/systemctl.calls"
while [ "$1" != "--" ]; do shift; done
shift
first=1
for unit in "$@"; do
  [ "$first" = 1 ] || echo
  first=0
  echo "Id=$unit"
  case "$unit" in gpufabric-sriov.service) echo "UnitFileState=enabled" ;; *) echo "UnitFileState=" ;; esac
done
"""


def run_nic_facts(tmp_path, args):
    bindir = stand_ins(tmp_path / "bin", {"systemctl": SYSTEMCTL})
    (tmp_path / "sys/bus/pci/devices").mkdir(parents=True)
    out = tmp_path / "out.json"
    pb = write_play(tmp_path / "pb.yml", """\
    - name: Read the node
      gpufabric.stack.nic_facts: %s
      register: read
      ignore_errors: true
    - name: Save it
      ansible.builtin.copy: {content: "{{ read | to_json }}", dest: %s, mode: "0644"}
      check_mode: false
""" % (json.dumps(dict(args, sysfs_root=str(tmp_path / "sys"), proc_root=str(tmp_path / "proc"))), out))
    run_check(pb, bindir)
    calls = bindir / "systemctl.calls"
    return json.loads(out.read_text()), calls.read_text().splitlines() if calls.exists() else []


def test_nic_facts_reads_the_boot_units_and_files_in_the_same_call(tmp_path):
    rule = tmp_path / "70-gpufabric-nm-unmanaged.rules"
    rule.write_text("")
    r, calls = run_nic_facts(tmp_path, {"units": UNITS, "files": [str(rule), str(tmp_path / "gone.rules")]})
    assert calls == ["show -p Id -p UnitFileState -p ActiveState -- " + " ".join(UNITS)]
    assert r["changed"] is False and r["nics"] == []
    assert r["units"] == {"gpufabric-sriov.service": "enabled", "gpufabric-roce-qos.service": ""}
    assert r["units_error"] == ""
    assert r["files"] == {str(rule): True, str(tmp_path / "gone.rules"): False}


def test_nic_facts_asks_the_boot_files_units_in_the_same_call(tmp_path):
    # inspect_units (the boot files' units) ride on the one `systemctl show`;
    # no `is-enabled` per unit follows it
    r, calls = run_nic_facts(tmp_path, {"units": UNITS[:1], "inspect_units": UNITS[::-1]})
    assert calls == ["show -p Id -p UnitFileState -p ActiveState -- " + " ".join(UNITS)]
    assert r["units"] == {"gpufabric-sriov.service": "enabled"}
    assert list(r["units_active"]) == ["gpufabric-sriov.service"]
    assert r["inspected"]["units"] == {"gpufabric-roce-qos.service": False, "gpufabric-sriov.service": True}
    (tmp_path / "only").mkdir()
    r, calls = run_nic_facts(tmp_path / "only", {"inspect_units": UNITS[:1]})
    assert calls == ["show -p Id -p UnitFileState -p ActiveState -- gpufabric-sriov.service"]
    assert r["units"] == {} and r["units_error"] == ""
    assert r["inspected"]["units"] == {"gpufabric-sriov.service": True}


def test_nic_facts_without_units_does_not_ask_systemd(tmp_path):
    r, calls = run_nic_facts(tmp_path, {})
    assert calls == []
    assert r["units"] == {} and r["units_error"] == "" and r["files"] == {}


def test_nic_facts_rejects_a_relative_file_before_reading(tmp_path):
    r, _ = run_nic_facts(tmp_path, {"files": ["etc/udev/rules.d/70-gpufabric-nm-unmanaged.rules"]})
    assert r["failed"] is True
    assert r["msg"] == "files: etc/udev/rules.d/70-gpufabric-nm-unmanaged.rules is not an absolute path"


def test_nic_facts_lists_the_modules_load_files_with_every_reading(tmp_path):
    for sub in ("listed", "absent", "relative"):
        (tmp_path / sub).mkdir()
    d = tmp_path / "modules-load.d"
    d.mkdir()
    (d / "gpufabric-rdma.conf").write_text("mlx5_ib\n")
    (d / "notes.txt").write_text("")
    r, _ = run_nic_facts(tmp_path / "listed", {"modules_load_dir": str(d)})
    assert list(r["modules_load"]) == [str(d / "gpufabric-rdma.conf")]
    assert r["modules_load"][str(d / "gpufabric-rdma.conf")]["mode"] == "0644"
    r, _ = run_nic_facts(tmp_path / "absent", {"modules_load_dir": str(tmp_path / "absent/modules-load.d")})
    assert r["modules_load"] == {}
    r, _ = run_nic_facts(tmp_path / "relative", {"modules_load_dir": "modules-load.d"})
    assert r["failed"] is True and r["msg"] == "modules_load_dir: modules-load.d is not an absolute path"


def test_nic_facts_plans_the_vf_call_by_its_own_run_and_names_what_it_cannot(tmp_path):
    """nic_facts' vfs: the sriov_vf module's run in check mode, in the same
    call; a plan that would fail (no PF matches) is an answer naming why, not
    a failed read; options that are not the module's are named."""
    from ansible_collections.gpufabric.stack.plugins.modules import nic_facts
    r, _calls = run_nic_facts(tmp_path, {"vfs": {"pfs": [{"name": "enp59s0f0np0", "num_vfs": 4}]}})
    assert r.get("failed") is not True and r["nics"] == []
    assert r["vfs"]["failed"] is True and "enp59s0f0np0" in r["vfs"]["msg"], r["vfs"]
    bad = nic_facts.read_vfs(None, {"pfs": [{"name": "enp59s0f0np0"}]}, [])
    assert bad["failed"] is True and bad["msg"].startswith("vfs: ") and "num_vfs" in bad["msg"], bad
