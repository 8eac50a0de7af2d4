"""The twin's leaf switches over SSH, driven by netmiko with the real device types."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

netmiko = pytest.importorskip("netmiko")
from netmiko import ConnectHandler  # noqa: E402
from netmiko.exceptions import ConfigInvalidException, NetmikoAuthenticationException  # noqa: E402

from simlab.switches import SwitchFleet, inject_fault, load_switch  # noqa: E402

pytestmark = pytest.mark.layers(7)

REPO = Path(__file__).resolve().parents[2]
SPECS = [
    {"name": "onyx1", "nos": "onyx", "ports": ["1/1", "1/2"]},
    {"name": "eos1", "nos": "eos", "ports": ["Ethernet1", "Ethernet2"]},
    {"name": "nxos1", "nos": "nxos", "ports": ["Ethernet1/1", "Ethernet1/2"]},
    {"name": "cl1", "nos": "nvue", "username": "cumulus", "password": "CumulusLinux!", "ports": ["swp1", "swp2"]},
    {"name": "sonic1", "nos": "sonic-dell", "ports": ["Eth1/1", "Eth1/2"]},
]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    d = tmp_path_factory.mktemp("switches")
    f = SwitchFleet(d, SPECS).start()
    f.write_known_hosts(d / "known_hosts")
    yield f
    f.stop()


def connect(fleet, name, **kw):
    s = fleet.servers[name]
    params = dict(device_type=s.model.device_type, host="127.0.0.1", port=s.port, username=s.username,
                  password=s.password, ssh_strict=True, system_host_keys=False, alt_host_keys=True,
                  alt_key_file=str(fleet.state_dir / "known_hosts"), conn_timeout=5)
    params.update(kw)
    return ConnectHandler(**params)


def test_ready_file_and_host_keys(fleet):
    ready = json.loads((fleet.state_dir / "ready").read_text())
    assert {n: r["device_type"] for n, r in ready.items()} == {
        "onyx1": "mellanox_mlnxos", "eos1": "arista_eos", "nxos1": "cisco_nxos", "cl1": "cumulus_linux",
        "sonic1": "dell_sonic"}
    lines = (fleet.state_dir / "known_hosts").read_text().splitlines()
    assert len(lines) == 5 and all(l.startswith("[127.0.0.1]:") for l in lines)
    # the host key survives a server restart
    key = fleet.servers["eos1"].host_key.get_base64()
    again = SwitchFleet(fleet.state_dir, [SPECS[1]])
    assert again.servers["eos1"].host_key.get_base64() == key


def test_wrong_password_rejected(fleet):
    with pytest.raises(NetmikoAuthenticationException):
        connect(fleet, "eos1", password="wrong")


def test_eos_push_session_save_show(fleet):
    c = connect(fleet, "eos1")
    try:
        assert c.find_prompt() == "eos1>"
        c.enable()
        cmds = ["qos map dscp 26 to traffic-class 3", "interface Ethernet1", "mtu 9214", "qos trust dscp",
                "priority-flow-control on", "priority-flow-control priority 3 no-drop", "uc-tx-queue 3",
                "random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes", "commit"]
        c.send_config_set(cmds, config_mode_command="configure session roce", error_pattern=r"% Invalid")
        assert "Copy completed successfully." in c.save_config()
        run = c.send_command("show running-config interfaces Ethernet1")
        assert "   priority-flow-control priority 3 no-drop" in run.splitlines()
        with pytest.raises(ConfigInvalidException):
            c.send_config_set(["interface Ethernet2", "mtu 9216"], error_pattern=r"% Invalid")
    finally:
        c.disconnect()
    m = load_switch(fleet.state_dir, "eos1")
    assert m.port_view("Ethernet1")["pfc_priorities"] == [3]
    assert m.startup == m.running


def test_nxos_push_and_save(fleet):
    c = connect(fleet, "nxos1")
    try:
        out = c.send_config_set(["interface Ethernet1/1", "mtu 9216", "priority-flow-control mode on"],
                                error_pattern=r"% Invalid")
        assert "(config-if)#" in out
        assert "Copy complete." in c.save_config()
        pfc = c.send_command("show interface priority-flow-control")
        assert any(l.split()[:2] == ["Ethernet1/1", "On"] for l in pfc.splitlines())
    finally:
        c.disconnect()


def test_nvue_apply_save_and_sudo(fleet):
    c = connect(fleet, "cl1")
    try:
        c.send_config_set(["nv set qos roce mode lossless", "nv set interface swp1-2 link mtu 9216"],
                          enter_config_mode=False, exit_config_mode=False, error_pattern=r"Error:")
        assert "applied [rev_id: 2]" in c.send_command("nv config apply -y")
        assert "saved" in c.send_command("nv config save")
        assert c.send_command("nv config show -o commands").splitlines()[0] == \
            "nv set interface swp1-2 link mtu 9216"
        with pytest.raises(ConfigInvalidException):
            c.send_config_set(["nv set interface swp1 link mtu 9999"], enter_config_mode=False,
                              exit_config_mode=False, error_pattern=r"Error:")
        c.secret = "CumulusLinux!"
        c.config_mode()  # sudo -s, answering the password prompt
        assert c.find_prompt().startswith("root@cl1")
        c.exit_config_mode()
    finally:
        c.disconnect()
    assert load_switch(fleet.state_dir, "cl1").port_view("swp2")["pfc_priorities"] == [3]


def test_onyx_push_save_and_state_survives_restart(fleet):
    c = connect(fleet, "onyx1", global_delay_factor=0.2)
    try:
        assert c.find_prompt() == "onyx1 [standalone: master] >"
        c.enable()
        c.send_config_set(["dcb priority-flow-control enable force", "dcb priority-flow-control priority 3 enable",
                           "interface ethernet 1/1-1/2 dcb priority-flow-control mode on force",
                           "interface ethernet 1/1-1/2 mtu 9216 force"], error_pattern=r"% Unrecognized")
        c.save_config()
        assert "interface ethernet 1/1-1/2 mtu 9216 force" in c.send_command("show running-config")
        with pytest.raises(ConfigInvalidException):
            c.send_config_set(["interface ethernet 1/1 bogus"], error_pattern=r"% Unrecognized")
    finally:
        c.disconnect()
    restarted = SwitchFleet(fleet.state_dir, [SPECS[0]])
    assert restarted.servers["onyx1"].model.port_view("1/1")["mtu"] == 9216
    assert restarted.servers["onyx1"].model.startup == restarted.servers["onyx1"].model.running


def test_sonic_push_and_write_memory(fleet):
    c = connect(fleet, "sonic1")
    try:
        assert c.find_prompt() == "sonic1#"
        # leaving with an explicit 'end' spares netmiko's timing-based exit check (2 s each)
        out = c.send_config_set(["interface Eth1/1", "mtu 9216", "priority-flow-control priority 3", "end"],
                                exit_config_mode=False, error_pattern=r"% Error")
        assert "sonic1(conf-if-Eth1/1)#" in out
        assert c.find_prompt() == "sonic1#"
        c.save_config()
        out = c.send_command("show running-configuration interface Eth1/1")
        assert " priority-flow-control priority 3" in out.splitlines()
    finally:
        c.disconnect()
    m = load_switch(fleet.state_dir, "sonic1")
    assert m.startup == m.running and m.port_view("Eth1/1")["mtu"] == 9216


def test_faults_over_ssh(fleet):
    d = fleet.state_dir
    inject_fault(d, "nxos1", "switch-rejects-command")
    c = connect(fleet, "nxos1")
    try:
        c.send_config_set(["policy-map type queuing Q", "class type queuing c-out-8q-q3"])
        with pytest.raises(ConfigInvalidException):
            c.send_config_set(["policy-map type queuing Q", "class type queuing c-out-8q-q3",
                               "random-detect minimum-threshold 150 kbytes maximum-threshold 1500 kbytes ecn"],
                              error_pattern=r"% Invalid")
        # one-shot: the retry goes through
        c.send_config_set(["policy-map type queuing Q", "class type queuing c-out-8q-q3",
                           "random-detect minimum-threshold 150 kbytes maximum-threshold 1500 kbytes ecn"],
                          error_pattern=r"% Invalid")
    finally:
        c.disconnect()
    inject_fault(d, "nxos1", "switch-ssh-drops-mid-push", after=2)
    c = connect(fleet, "nxos1")
    with pytest.raises(Exception):
        c.send_config_set(["interface Ethernet1/2", "mtu 9000", "mtu 9100", "mtu 9200"], read_timeout=1)
    c.disconnect()
    assert load_switch(d, "nxos1").port_view("Ethernet1/2")["mtu"] == 9000
    # netmiko alone reads the closed session until read_timeout and raises
    # ReadTimeout; the module's transport wraps the reader so that a closed
    # channel raises at once, naming it
    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.transport import fail_fast_on_close
    c = fail_fast_on_close(connect(fleet, "nxos1"))
    with pytest.raises(EOFError, match="the switch closed the SSH session"):
        c.send_config_set(["interface Ethernet1/2", "mtu 9000", "mtu 9100", "mtu 9200"], read_timeout=10)
    c.disconnect()
    assert load_switch(d, "nxos1").port_view("Ethernet1/2")["mtu"] == 9000
    inject_fault(d, "nxos1", "clear")
    # the port's PFC and MTU, pushed here: the module's tests may run on other workers (pytest -n)
    c = connect(fleet, "nxos1")
    try:
        c.send_config_set(["interface Ethernet1/1", "mtu 9216", "priority-flow-control mode on"])
        assert "priority-flow-control mode on" in c.send_command("show running-config interface Ethernet1/1")
    finally:
        c.disconnect()
    # a fault injected from another process takes effect on the running server at once
    subprocess.run([sys.executable, "-m", "simlab.switches", "fault", "--state-dir", str(d), "nxos1",
                    "switch-pfc-off", "--ports", "Ethernet1/1"], check=True, cwd=REPO, capture_output=True)
    c = connect(fleet, "nxos1")
    try:
        out = c.send_command("show running-config interface Ethernet1/1")
        assert "priority-flow-control mode on" not in out and "mtu 9216" in out
    finally:
        c.disconnect()


def test_serve_entry_point(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps([{"name": "leafx", "nos": "eos", "port": 0, "ports": ["Ethernet1"]}]))
    p = subprocess.Popen([sys.executable, "-m", "simlab.switches", "serve", "--state-dir", str(tmp_path / "st"),
                          "--spec", str(spec)], cwd=REPO)
    try:
        ready = tmp_path / "st" / "ready"
        for _ in range(100):
            if ready.exists():
                break
            time.sleep(0.05)
        port = json.loads(ready.read_text())["leafx"]["port"]
        c = ConnectHandler(device_type="arista_eos", host="127.0.0.1", port=port, username="admin",
                           password="admin")
        c.enable()
        c.send_config_set(["interface Ethernet1", "mtu 9000"])
        c.disconnect()
        assert load_switch(tmp_path / "st", "leafx").port_view("Ethernet1")["mtu"] == 9000
    finally:
        p.terminate()
        p.wait(5)


def test_sonic_community_sudo_push_and_config_save(tmp_path):
    spec = [{"name": "sc1", "nos": "sonic-community", "ports": ["Ethernet0", "Ethernet4"], "password": "sc-pw"}]
    with SwitchFleet(tmp_path, spec) as f:
        f.write_known_hosts(tmp_path / "known_hosts")
        c = connect(f, "sc1", secret="sc-pw")
        try:
            assert c.find_prompt() == "admin@sc1:~$"
            err = r"^(?:Error:|Usage:|Cannot find interface|Exception caught:|\(error\)).*$"
            # netmiko's config mode on edgecore_sonic is 'sudo -s' with the secret
            c.send_config_set(["config interface mtu Ethernet0 9216",
                               "sonic-db-cli CONFIG_DB HSET 'PORT_QOS_MAP|Ethernet0' dscp_to_tc_map AZURE",
                               "config interface pfc priority Ethernet0 3 on"], error_pattern=err)
            with pytest.raises(ConfigInvalidException):
                c.send_config_set(["config interface pfc priority Ethernet4 3 on"], error_pattern=err)
            assert c.find_prompt() == "root@sc1:/home/admin#"  # netmiko stays in config mode on an error
            c.exit_config_mode()
            assert c.find_prompt() == "admin@sc1:~$"
            assert "Root privileges are required" in c.send_command("config save -y")
            c.send_config_set(["config save -y"], error_pattern=err)
            out = c.send_command("show pfc priority && show pfcwd config")
            assert "Ethernet0                        3" in out.splitlines()
        finally:
            c.disconnect()
        m = load_switch(tmp_path, "sc1")
        assert m.startup == m.running and m.port_view("Ethernet0")["mtu"] == 9216


def test_the_transport_reads_up_to_onyxs_prompt_instead_of_waiting_for_a_quiet_channel(fleet, monkeypatch):
    """netmiko's MLNX-OS class prepares the session as BaseConnection does,
    waiting for the channel to stay quiet (a second's sleep, then two seconds
    without data); the transport's class for Onyx reads up to the prompt and
    ends in the same session: the same base prompt as netmiko's own class,
    enable mode, a show that answers. A NOS whose netmiko class prepares the
    session its own way, or whose driver names no prompt, keeps netmiko's."""
    from netmiko.base_connection import BaseConnection
    from netmiko.ssh_dispatcher import CLASS_MAPPER

    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import drivers, transport
    s = fleet.servers["onyx1"]
    quiet_reads = []
    real = BaseConnection.read_channel_timing

    def read_channel_timing(self, *a, **kw):
        quiet_reads.append(type(self).__name__)
        return real(self, *a, **kw)

    own = connect(fleet, "onyx1")
    try:
        netmikos_prompt = own.base_prompt
    finally:
        own.disconnect()
    monkeypatch.setattr(BaseConnection, "read_channel_timing", read_channel_timing)
    sw = transport.Switch(drivers.get_driver("onyx", switch="onyx1"), "onyx1", "127.0.0.1", s.port, s.username,
                          s.password, str(fleet.state_dir / "known_hosts"))
    sw.connect()
    try:
        assert isinstance(sw.conn, CLASS_MAPPER["mellanox_mlnxos"])
        assert type(sw.conn).__name__ == "MellanoxMlnxosSSHPromptPrepared"
        # no wait for a quiet channel while connecting, enable included
        assert quiet_reads == []
        assert sw.conn.base_prompt == netmikos_prompt == "onyx1 [standalone: master] "
        assert sw.conn.find_prompt() == "onyx1 [standalone: master] #"
        assert "Priority Enabled List" in sw.show("show dcb priority-flow-control")
    finally:
        sw.close()
    # the others: netmiko's classes as ConnectHandler picks them
    for nos in ("eos", "nxos", "nvue", "sonic-dell", "sonic"):
        assert transport.connection_class(drivers.get_driver(nos, switch="x")) is None, nos

    class NoPrompt(type(drivers.get_driver("onyx", switch="x"))):
        prompt_pattern = ""
    assert transport.connection_class(NoPrompt()) is None


def test_a_nos_that_shows_no_prompt_after_login_gets_netmikos_own_wait():
    """Where the prompt does not come within PROMPT_WAIT seconds (a NOS that
    shows it only when sent a return), the session falls back to netmiko's
    own wait, which sends returns until the channel answers, and goes on as
    netmiko's would; a prompt that comes skips that wait."""
    from netmiko.exceptions import ReadTimeout

    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import drivers, transport
    cls = transport.connection_class(drivers.get_driver("onyx", switch="onyx1"))

    def prepared(prompt_comes):
        calls = []
        conn = object.__new__(cls)

        def read_until_pattern(pattern, read_timeout):
            calls.append(("read to", pattern, read_timeout))
            if not prompt_comes:
                raise ReadTimeout("no prompt")
            return "onyx1 [standalone: master] >"
        conn.read_until_pattern = read_until_pattern
        conn._test_channel_read = lambda *a, **kw: calls.append(("netmiko's wait", a, kw)) or "onyx1 >"
        for step in ("set_base_prompt", "set_terminal_width", "disable_paging"):
            conn.__dict__[step] = (lambda step: lambda *a, **kw: calls.append(step))(step)
        conn.session_preparation()
        return calls

    steps = ["set_base_prompt", "set_terminal_width", "disable_paging"]
    assert prepared(True) == [("read to", "[>#]", transport.PROMPT_WAIT)] + steps
    assert prepared(False) == [("read to", "[>#]", transport.PROMPT_WAIT), ("netmiko's wait", (), {})] + steps


def test_an_onyx_push_rejected_midway_is_undone_by_commands(fleet):
    """On Onyx the lines a push applied before a rejected one are undone by
    commands computed from the running config read before the push (no
    configuration file is written or switched to: on Onyx 3.9.x that
    reboots the switch); the running config is as before, byte for byte."""
    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import drivers, transport
    s = fleet.servers["onyx1"]
    sw = transport.Switch(drivers.get_driver("onyx", switch="onyx1"), "onyx1", "127.0.0.1", s.port, s.username,
                          s.password, str(fleet.state_dir / "known_hosts"))
    sw.connect()
    try:
        before = sw.show("show running-config")
        inject_fault(fleet.state_dir, "onyx1", "switch-rejects-command", pattern=r"traffic-class 3 congestion-control")
        lines = ["dcb priority-flow-control priority 5 enable", "interface ethernet 1/2 mtu 9100 force",
                 "interface ethernet 1/2 traffic-class 3 congestion-control ecn minimum-absolute 150 "
                 "maximum-absolute 1500"]
        rejected = (r"^onyx1: command 'interface ethernet 1/2 traffic-class 3 congestion-control .*' rejected: .*; "
                    r"running config restored$")
        with pytest.raises(transport.PushFailed, match=rejected):
            sw.push(lines, before)
        typed = sw.log.getvalue().decode("utf-8", "replace")
        # the two lines that took were undone, each by its own command
        assert "no dcb priority-flow-control priority 5 enable" in typed
        atoms = sw.driver.parse_raw(before)["lines"]
        mtu_before = atoms.get((("ethernet 1/2",), "mtu"), "mtu 1500 force")
        assert "interface ethernet 1/2 %s" % mtu_before in typed.split("mtu 9100 force", 1)[1]
        assert "configuration switch-to" not in typed and "configuration write" not in typed
        assert sw.show("show running-config") == before
    finally:
        inject_fault(fleet.state_dir, "onyx1", "clear")
        sw.close()


def test_an_undo_that_does_not_take_fails_the_restore_naming_it():
    """The inverse restore reads the running config again after each undo:
    an undo that changes nothing fails, naming its commands, rather than
    reporting the running config restored."""
    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import drivers, transport

    class Stuck:
        """A session whose switch accepts every line and changes nothing."""
        def __init__(self):
            self.sent = []

        def is_alive(self):
            return True

        def send_command(self, command, **kw):
            return "interface ethernet 1/1 mtu 9216 force\n"

        def send_config_set(self, lines, **kw):
            self.sent.append(list(lines))
            return ""

    sw = transport.Switch(drivers.get_driver("onyx", switch="leaf9"), "leaf9", "127.0.0.1", 22, "u", "p")
    sw.conn = Stuck()
    with pytest.raises(transport.UndoFailed, match=r"^leaf9: these commands did not put the running config back: "
                                                   r"interface ethernet 1/1 mtu 1500 force$"):
        sw.restore("")
    assert sw.conn.sent == [["interface ethernet 1/1 mtu 1500 force"]]
