"""The mlx_config module with several PFs in one call, run in-process against
the twin's mstconfig and mstflint (their byte-exact output, their errors)."""

import io
import json
import sys
from contextlib import redirect_stdout

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufabric.stack.plugins.modules import mlx_config as module
from simlab.node import agent as agent_mod
from simlab.node import boot, hardware
from simlab.tools import agentclient, mlxconfig, mstflint

pytestmark = pytest.mark.layers(4)

PF0, PF1 = "0000:3b:00.0", "0000:86:00.0"


@pytest.fixture
def agent(tmp_path, monkeypatch):
    monkeypatch.setattr(boot, "LAB", tmp_path)
    hw = hardware.default_spec("node01", 1, nics=2, driver="inbox", link_type="ETH")
    hw["preset"] = "factory"
    state = {"hw": hw, "firmware": hardware.factory_firmware(hw),
             "cmdline": "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro",
             "bios": {"sriov": True, "iommu": True, "acs": False}, "faults": {}}
    a = agent_mod.Agent(state)

    def request(req, sock_path=None, timeout=30):
        return json.loads(json.dumps(a.handle(json.loads(json.dumps(req)))))
    monkeypatch.setattr(agentclient, "request", request)
    calls = []

    def run(mod, argv):
        calls.append(argv)
        tool = {"mstconfig": (mlxconfig, "mstconfig"), "mstflint": (mstflint, None)}[argv[0]]
        out, err = io.StringIO(), io.StringIO()
        old_err = sys.stderr
        sys.stderr = err
        try:
            with redirect_stdout(out):
                rc = tool[0].main(argv[1:], prog=tool[1]) if tool[1] else tool[0].main(argv[1:])
        finally:
            sys.stderr = old_err
        return rc, out.getvalue(), err.getvalue()
    monkeypatch.setattr(module, "_run", run)
    a.calls = calls
    return a


def _call(args, check=False, diff=False):
    args = dict(args)
    if check:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    out = io.StringIO()
    with patch_module_args(args), redirect_stdout(out), pytest.raises(SystemExit):
        module.main()
    return json.loads(out.getvalue())


def _devices(n0, n1):
    return [{"device": PF0, "params": {"SRIOV_EN": True, "NUM_OF_VFS": n0}},
            {"device": PF1, "params": {"SRIOV_EN": True, "NUM_OF_VFS": n1}}]


def test_two_pfs_check_mode_then_apply_then_nothing(agent):
    r = _call({"devices": _devices(8, 4), "at_least": ["NUM_OF_VFS"]}, check=True, diff=True)
    assert r["changed"] and r["reboot_required"]
    assert [d["device"] for d in r["devices"]] == [PF0, PF1]
    assert [c["name"] for c in r["devices"][0]["changed_params"]] == ["SRIOV_EN", "NUM_OF_VFS"]
    assert len(r["command"]) == 2 and r["command"][1][:3] == ["mstconfig", "-d", PF1]
    assert [d["before_header"] for d in r["diff"]] == [PF0 + " next boot", PF1 + " next boot"]
    assert not any(a[1:2] == ["-d"] and "set" in a for a in agent.calls)      # check mode sets nothing

    r = _call({"devices": _devices(8, 4), "at_least": ["NUM_OF_VFS"]})
    assert r["changed"] and r["reboot_required"]
    assert [d["next_boot"]["NUM_OF_VFS"] for d in r["devices"]] == ["8", "4"]
    assert all(d["pending"] for d in r["devices"])                             # current waits for the reboot

    r = _call({"devices": _devices(8, 4), "at_least": ["NUM_OF_VFS"]})
    assert not r["changed"] and r["command"] == [] and r["reboot_required"]    # still pending, nothing to set


def test_a_bad_value_on_the_second_pf_fails_before_any_device_is_touched(agent):
    agent.calls.clear()
    r = _call({"devices": _devices(8, 500)})
    assert r["failed"] and PF1 in r["msg"] and "500" in r["msg"]
    assert agent.calls == []


def test_check_mode_reads_every_device_and_names_the_failing_one(agent):
    r = _call({"devices": _devices(8, 4) + [{"device": "0000:99:00.0", "params": {"SRIOV_EN": True}}]},
              check=True)
    assert r["failed"] and "0000:99:00.0" in r["msg"]
    assert [d["device"] for d in r["devices"]] == [PF0, PF1, "0000:99:00.0"]
    assert r["devices"][2]["failed"] and not r["devices"][0].get("failed")


def test_single_device_result_is_unchanged(agent):
    r = _call({"device": PF0, "params": {"SRIOV_EN": True, "NUM_OF_VFS": 8}}, check=True)
    assert r["changed"] and r["command"][:3] == ["mstconfig", "-d", PF0] and "devices" not in r


def test_device_and_devices_are_exclusive(agent):
    r = _call({"device": PF0, "params": {"SRIOV_EN": True}, "devices": _devices(1, 1)})
    assert r["failed"] and "mutually exclusive" in r["msg"]


def _read_all(agent_calls_run, devices, tool="mstconfig", flint_tool="mstflint"):
    """What nic_facts' firmware option returns for these devices."""
    from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware import mlx_config as utils
    out = []
    for device in devices:
        try:
            out.append(utils.read_device(agent_calls_run, tool, flint_tool, device))
        except utils.MlxConfigError as exc:
            out.append({"device": device, "tool": tool, "flint_tool": flint_tool, "msg": str(exc)})
    return {"firmware": out}


def test_the_doctors_reading_is_judged_as_the_module_judges_the_node(agent):
    """The layer 4 check's judgement of nic_facts' firmware queries
    (checks/nic_firmware.py) gives what the module answers in check mode,
    through factory, staged, unreadable devices and a value no firmware
    takes."""
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks.nic_firmware import (
        checked_from_reading as mlx_config_checked)
    run = lambda argv: module._run(None, argv)  # noqa: E731 the fixture's stand-in for the module's runner
    bad = {"device": "0000:99:00.0", "params": {"SRIOV_EN": True}}
    for devices, apply in ((_devices(8, 4), False), (_devices(8, 4), True), (_devices(8, 16), False),
                           (_devices(8, 4) + [bad], False), (_devices(8, 500), False)):
        if apply:
            _call({"devices": devices, "at_least": ["NUM_OF_VFS"]})
        want = _call({"devices": devices, "at_least": ["NUM_OF_VFS"]}, check=True)
        want.pop("invocation")
        reading = _read_all(run, [d["device"] for d in devices])
        got = mlx_config_checked(reading, devices, "mstconfig", "mstflint", ["NUM_OF_VFS"], 127)
        assert got == want


def test_a_reading_that_lacks_a_device_or_used_other_tools_fails_that_device(agent):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks.nic_firmware import (
        checked_from_reading as mlx_config_checked)
    run = lambda argv: module._run(None, argv)  # noqa: E731
    reading = _read_all(run, [PF0])
    got = mlx_config_checked(reading, _devices(8, 4)[:1], "mstconfig", "mstflint")
    assert got["devices"][0]["device"] == PF0 and not got.get("failed")

    def failed(got):
        return [(d["device"], d["msg"]) for d in got["devices"] if d.get("failed")]
    assert failed(mlx_config_checked(reading, _devices(8, 4), "mstconfig", "mstflint")) == [
        (PF1, "%s: the node's read has no firmware query of this PF" % PF1)]                  # PF1 not read
    assert "read with mstconfig/mstflint, not mlxconfig/mstflint" in failed(
        mlx_config_checked(reading, _devices(8, 4)[:1], "mlxconfig", "mstflint"))[0][1]      # another tool
    assert failed(mlx_config_checked(reading, _devices(8, 4)[:1], "mstconfig", ""))            # no flint query
    assert len(failed(mlx_config_checked({"nics": []}, _devices(8, 4), "mstconfig", "mstflint"))) == 2
    bad = mlx_config_checked(reading, [{"device": PF0, "params": {"NUM_OF_VFS": 500}}], "mstconfig", "mstflint")
    assert bad["failed"] and "500" in bad["msg"] and bad["devices"] == []


LLDP_OFF = {"LLDP_NB_RX_MODE_P1": 0, "LLDP_NB_TX_MODE_P1": 0, "LLDP_NB_DCBX_P1": 0}


def test_where_present_sets_the_lldp_agent_off_only_where_the_firmware_has_it(agent):
    """PF0's firmware has the LLDP agent's parameters (receiving and sending
    ALL, as a Dell-branded ConnectX-4 Lx ships them); PF1's has none: the
    parameters go to PF0 alone, and PF1 is not failed for lacking them."""
    fw = agent.kernel.firmware[PF0]
    for col in ("default", "current", "next"):
        fw[col].update(LLDP_NB_RX_MODE_P1=2, LLDP_NB_TX_MODE_P1=2, LLDP_NB_DCBX_P1=0)
    r = _call({"devices": _devices(8, 4), "at_least": ["NUM_OF_VFS"], "where_present": LLDP_OFF}, check=True)
    assert [c["name"] for c in r["devices"][0]["changed_params"]] == [
        "SRIOV_EN", "NUM_OF_VFS", "LLDP_NB_RX_MODE_P1", "LLDP_NB_TX_MODE_P1"]
    assert [c["name"] for c in r["devices"][1]["changed_params"]] == ["SRIOV_EN", "NUM_OF_VFS"]
    r = _call({"devices": _devices(8, 4), "at_least": ["NUM_OF_VFS"], "where_present": LLDP_OFF})
    assert r["changed"] and not r.get("failed")
    assert (fw["next"]["LLDP_NB_RX_MODE_P1"], fw["next"]["LLDP_NB_TX_MODE_P1"]) == (0, 0)
    r = _call({"devices": _devices(8, 4), "at_least": ["NUM_OF_VFS"], "where_present": LLDP_OFF}, check=True)
    assert not r["changed"]


def test_where_present_is_checked_before_any_device_is_read(agent):
    r = _call({"devices": _devices(8, 4), "where_present": {"LLDP_NB_RX_MODE_P1": "off-ish"}}, check=True)
    assert r["failed"] and "LLDP_NB_RX_MODE_P1='off-ish' is not a number" in r["msg"]
    assert agent.calls == []


# --- the action: the module's answer judged from the play's reading ---------

def _reading(agent, run="run-1", devices=(PF0, PF1)):
    """nic_facts' firmware reading of the twin's PFs, as the kernel layer's
    read carries it for layer 4 (mlx_config.read_device per PF)."""
    from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware import mlx_config as mc
    return {"run": run, "nics": [], "firmware": [mc.read_device(lambda argv: module._run(None, argv), "mstconfig",
                                                                "mstflint", d) for d in devices]}


def test_the_action_answers_from_the_reading_only_what_the_module_would(agent):
    from ansible_collections.gpufabric.stack.plugins.action import mlx_config as action
    args = {"devices": _devices(8, 4), "at_least": ["NUM_OF_VFS"], "tool": "mstconfig", "flint_tool": "mstflint"}
    # factory firmware: values to set, so the module runs
    assert action.judged(_reading(agent), args, "run-1") is None
    _call(args)
    # staged: nothing to set, a reboot pending; the same answer as the module's own run
    staged = action.judged(_reading(agent), args, "run-1")
    again = _call(args)
    assert again["changed"] is False and again["reboot_required"] is True
    assert staged == dict((k, again[k]) for k in ("changed", "reboot_required", "command", "devices"))
    # where_present: a parameter this firmware lacks is left alone; one it has and differs is set
    assert action.judged(_reading(agent), dict(args, where_present={"LLDP_NB_DCBX_P1": 0}), "run-1") == staged
    assert action.judged(_reading(agent), dict(args, where_present={"ATS_ENABLED": 1}), "run-1") is None
    # more VFs wanted than the firmware has: the module runs
    assert action.judged(_reading(agent), dict(args, devices=_devices(8, 32)), "run-1") is None
    # a reading of another run, another tool, a device it lacks, a failed query, the one-device form
    assert action.judged(_reading(agent), args, "run-2") is None
    assert action.judged(_reading(agent), dict(args, tool="mlxconfig"), "run-1") is None
    assert action.judged(_reading(agent, devices=(PF0,)), args, "run-1") is None
    failed = _reading(agent)
    failed["firmware"][1] = {"device": PF1, "tool": "mstconfig", "flint_tool": "mstflint", "msg": PF1 + ": gone"}
    assert action.judged(failed, args, "run-1") is None
    assert action.judged(_reading(agent), {"device": PF0, "params": {"NUM_OF_VFS": 8}}, "run-1") is None
    assert action.judged(None, args, "run-1") is None
