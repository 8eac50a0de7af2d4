"""NOS models of the twin's leaf switches, driven line by line without SSH."""

import pytest

from simlab.switches import inject_fault, load_switch, make_model, read_faults, save_switch

pytestmark = pytest.mark.layers(7)

ONYX_ROCE = [
    "enable", "configure terminal",
    "interface ethernet 1/1-1/4 qos trust L3",
    "dcb priority-flow-control enable force",
    "dcb priority-flow-control priority 3 enable",
    "interface ethernet 1/1-1/4 dcb priority-flow-control mode on force",
    "interface ethernet 1/1-1/4 traffic-class 3 congestion-control ecn minimum-absolute 150 maximum-absolute 1500",
    "interface ethernet 1/1-1/4 traffic-class 6 dcb ets strict",
    "interface ethernet 1/1-1/4 mtu 9216 force",
    "interface ethernet 1/1-1/4 pfc-wd",
]
EOS_ROCE = [
    "enable", "configure terminal",
    "qos map dscp 26 to traffic-class 3", "qos map dscp 48 to traffic-class 6",
    "interface Ethernet1-4", "mtu 9214", "qos trust dscp", "priority-flow-control on",
    "priority-flow-control priority 3 no-drop", "uc-tx-queue 3",
    "random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes max-mark-probability 100",
    "random-detect ecn count", "uc-tx-queue 6", "priority strict", "end",
]
NXOS_ROCE = """configure terminal
class-map type qos match-all ROCE
  match dscp 26
class-map type qos match-all CNP
  match dscp 48
policy-map type qos ROCE_IN
  class ROCE
    set qos-group 3
  class CNP
    set qos-group 6
policy-map type queuing ROCE_OUT
  class type queuing c-out-8q-q6
    priority level 1
  class type queuing c-out-8q-q3
    bandwidth remaining percent 50
    random-detect minimum-threshold 150 kbytes maximum-threshold 1500 kbytes drop-probability 7 weight 0 ecn
  class type queuing c-out-8q-q-default
    bandwidth remaining percent 50
policy-map type network-qos ROCE_NQ
  class type network-qos c-8q-nq3
    mtu 9216
    pause pfc-cos 3
  class type network-qos c-8q-nq-default
    mtu 9216
system qos
  service-policy type network-qos ROCE_NQ
  service-policy type queuing output ROCE_OUT
interface Ethernet1/1-4
  mtu 9216
  priority-flow-control mode on
  priority-flow-control watch-dog-interval on
  service-policy type qos input ROCE_IN
end""".split("\n")
NVUE_ROCE = ["nv set qos roce mode lossless", "nv set interface swp1-4 link mtu 9216", "nv config apply -y"]
SONIC_ROCE = """sonic-cli
configure terminal
qos map dscp-tc ROCE
 dscp 0-25,27-47,49-63 traffic-class 0
 dscp 26 traffic-class 3
 dscp 48 traffic-class 6
qos wred-policy ROCE
 green minimum-threshold 150 maximum-threshold 1500 drop-probability 100
 ecn green
qos scheduler-policy ROCE
 queue 0
  type dwrr
  weight 50
 queue 3
  type dwrr
  weight 50
 queue 6
  type strict
interface range Eth1/1-1/4
 mtu 9216
 qos-map dscp-tc ROCE
 queue 3 wred-policy ROCE
 scheduler-policy ROCE
 priority-flow-control priority 3
 priority-flow-control watchdog action drop
 priority-flow-control watchdog on detect-time 200
 priority-flow-control watchdog restore-time 400
end""".split("\n")

PORTS = {"onyx": ["1/1", "1/2", "1/3", "1/4", "1/5"],
         "eos": [f"Ethernet{i}" for i in range(1, 6)],
         "nxos": [f"Ethernet1/{i}" for i in range(1, 6)],
         "nvue": [f"swp{i}" for i in range(1, 6)],
         "sonic-dell": [f"Eth1/{i}" for i in range(1, 6)]}
ROCE = {"onyx": ONYX_ROCE, "eos": EOS_ROCE, "nxos": NXOS_ROCE, "nvue": NVUE_ROCE, "sonic-dell": SONIC_ROCE}
SHOW_RUN = {"onyx": "show running-config", "eos": "show running-config", "nxos": "show running-config",
            "nvue": "nv config show -o commands", "sonic-dell": "show running-configuration"}


def run(model, lines):
    outs = [model.handle(line) for line in lines]
    return outs


def configured(nos):
    m = make_model(nos, "leaf1", PORTS[nos])
    outs = run(m, ROCE[nos])
    assert not [o for o in outs if o and ("%" in o or "Error" in o)], outs
    return m


@pytest.mark.parametrize("nos", sorted(ROCE))
def test_roce_profile_applies_and_port_view(nos):
    m = configured(nos)
    v = m.port_view(PORTS[nos][0])
    assert v["pfc_priorities"] == [3]
    assert v["trust"] in ("dscp", "both")
    assert v["dscp_map"][26] == 3 and v["dscp_map"][48] == 6
    assert v["ecn"] == {"tc": 3, "min_bytes": 150000, "max_bytes": 1500000}
    assert v["cnp_strict_tc"] == 6
    assert v["mtu"] == (9214 if nos == "eos" else 9216)
    assert v["up"] is True
    # the fifth port was left alone (NVUE's roce profile is global, so only MTU differs there)
    other = m.port_view(PORTS[nos][4])
    if nos != "nvue":
        assert other["pfc_priorities"] == []
        assert other["mtu"] == {"onyx": 1500, "eos": 1500, "nxos": 1500, "sonic-dell": 9100}[nos]


def test_factory_state():
    assert make_model("onyx").port_view("1/1") == {
        "up": True, "mtu": 1500, "trust": "pcp", "pfc_priorities": [], "ecn": None,
        "cnp_strict_tc": None, "dscp_map": {}}
    assert make_model("nvue").port_view("swp1")["mtu"] == 9216
    assert make_model("sonic-dell").port_view("Eth1/1")["mtu"] == 9100
    assert make_model("eos").port_view("Ethernet3")["trust"] == "pcp"
    assert len(make_model("nxos").ports) == 32


def test_onyx_running_config_format_and_ranges():
    m = configured("onyx")
    run(m, ["interface ethernet 1/3 no pfc-wd"])
    text = m.handle("show running-config")
    lines = text.split("\n")
    assert "no cli default prefix-modes enable" in lines
    assert "   interface ethernet 1/1-1/4 mtu 9216 force" in lines
    assert "   interface ethernet 1/1-1/4 traffic-class 3 congestion-control ecn minimum-absolute 150 " \
           "maximum-absolute 1500" in lines
    assert "   interface ethernet 1/1-1/2 pfc-wd" in lines and "   interface ethernet 1/4 pfc-wd" in lines
    dcb = lines[lines.index("## DCBX PFC configuration") + 2:]
    assert dcb[:3] == ["   dcb priority-flow-control enable force",
                       "   dcb priority-flow-control priority 3 enable",
                       "   interface ethernet 1/1-1/4 dcb priority-flow-control mode on force"]
    pfc = m.handle("show dcb priority-flow-control")
    assert "Priority Enabled List  : 3" in pfc
    assert any(l.split() == ["Eth1/1", "On", "Enabled"] for l in pfc.split("\n"))
    assert any(l.split() == ["Eth1/5", "Auto", "Disabled"] for l in pfc.split("\n"))


def test_onyx_removal_forms_restore_factory():
    m = configured("onyx")
    run(m, ["no dcb priority-flow-control priority 3 enable", "no dcb priority-flow-control enable force",
            "interface ethernet 1/1-1/4 no dcb priority-flow-control mode force",
            "interface ethernet 1/1-1/4 no traffic-class 3 congestion-control",
            "interface ethernet 1/1-1/4 no traffic-class 6 dcb ets strict",
            "interface ethernet 1/1-1/4 no mtu force", "interface ethernet 1/1-1/4 no qos trust",
            "interface ethernet 1/1-1/4 no pfc-wd"])
    assert m.running == make_model("onyx", "leaf1", PORTS["onyx"]).running


def test_onyx_errors_and_limits():
    m = make_model("onyx", "leaf1", PORTS["onyx"])
    run(m, ["enable", "configure terminal"])
    out = m.handle("interface ethernet 1/1 bogus thing")
    caret, msg = out.split("\n")
    assert msg == "% Unrecognized command found at '^' position."
    prompt = "leaf1 [standalone: master] (config) # "
    assert len(caret) - 1 == len(prompt) + len("interface ethernet 1/1 ")
    for bad in ("interface ethernet 1/1 mtu 9217 force", "dcb priority-flow-control priority 8 enable",
                "interface ethernet 1/9 mtu 9216 force"):
        assert "%" in m.handle(bad), bad
    assert m.running == make_model("onyx", "leaf1", PORTS["onyx"]).running


def test_onyx_configuration_files_switch_to_reboots_into_the_file():
    m = configured("onyx")
    run(m, ["configuration write", "configuration write to before no-switch"])
    before = m.handle("show running-config")
    run(m, ["interface ethernet 1/1-1/4 traffic-class 3 congestion-control ecn minimum-absolute 200 maximum-absolute 2000",
            "no dcb priority-flow-control priority 3 enable"])
    assert m.handle("show running-config") != before
    assert "Unsaved changes     : yes" in m.handle("show configuration files")
    # Onyx asks before it reboots into the file; anything but 'yes' changes nothing
    s = m.session()
    run_in = [s.handle(x) for x in ("enable", "configure terminal")]
    assert run_in == ["", ""]
    assert s.handle("configuration switch-to before") == "This requires a reboot.\nType 'yes' to confirm: "
    assert s.handle("no") == "" and not s.closed and m.extra["active"] == "initial"
    assert m.handle("show running-config") != before
    s.handle("configuration switch-to before")
    assert s.handle("yes") == "" and s.closed
    assert m.handle("show running-config").replace('"before"', '"initial"') == before
    assert m.extra["active"] == "before"


def test_startup_semantics_per_nos():
    for nos, save in (("onyx", "configuration write"), ("eos", "write memory"),
                      ("nxos", "copy running-config startup-config"), ("nvue", "nv config save"),
                      ("sonic-dell", "write memory")):
        m = configured(nos)
        factory = make_model(nos, "leaf1", PORTS[nos])
        assert m.startup == factory.startup
        m.reboot()
        assert m.port_view(PORTS[nos][0]) == factory.port_view(PORTS[nos][0]), nos
        m = configured(nos)
        if nos in ("onyx",):
            m.handle("configure terminal")
        elif nos == "sonic-dell":
            pass
        m.handle(save)
        m.reboot()
        assert m.port_view(PORTS[nos][0])["pfc_priorities"] == [3], nos


def test_eos_running_config_limits_and_errors():
    m = configured("eos")
    text = m.handle("show running-config interfaces Ethernet1")
    assert text.split("\n") == [
        "interface Ethernet1", "   mtu 9214", "   qos trust dscp", "   priority-flow-control on",
        "   priority-flow-control priority 3 no-drop", "   !", "   uc-tx-queue 3",
        "      random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes max-mark-probability 100",
        "      random-detect ecn count"]
    full = m.handle("show running-config")
    assert "qos map dscp 26 to traffic-class 3" in full and full.endswith("end")
    run(m, ["configure terminal", "interface Ethernet1"])
    assert m.handle("mtu 9216") == "% Invalid input (at token 1: '9216')"
    assert m.handle("priority-flow-control priority 8 no-drop").startswith("% Invalid input")
    assert m.handle("priority-flow-control priority") == "% Incomplete command"
    assert m.port_view("Et1")["mtu"] == 9214
    run(m, ["no priority-flow-control on", "no priority-flow-control priority 3", "uc-tx-queue 3",
            "no random-detect ecn", "uc-tx-queue 6", "no priority"])
    v = m.port_view("Ethernet1")
    assert v["pfc_priorities"] == [] and v["ecn"] is None and v["cnp_strict_tc"] == 7  # every other queue stays strict
    assert "      no priority" in m.handle("show running-config interfaces Ethernet1")


def test_eos_session_commit_and_abort():
    m = make_model("eos", "leaf1", PORTS["eos"])
    run(m, ["enable"])
    before = m.handle("show running-config")
    s = m.default_session
    m.handle("configure session roce")
    assert s.prompt() == "leaf1(config-s-roce)#"
    run(m, EOS_ROCE[2:-1])
    assert s.prompt() == "leaf1(config-s-roce-if-Et1-4-uc-txq-6)#"
    assert m.handle("show running-config") == before  # nothing applied yet
    diff = m.handle("show session-config diffs")
    assert "+   priority-flow-control on" in diff
    m.handle("abort")
    assert s.prompt() == "leaf1#" and m.handle("show running-config") == before
    m.handle("configure session roce2")
    run(m, EOS_ROCE[2:-1] + ["commit"])
    assert s.prompt() == "leaf1#"
    assert m.port_view("Ethernet2")["pfc_priorities"] == [3]
    assert m.extra["sessions"] == {}


def test_nxos_format_errors_checkpoint_rollback():
    m = configured("nxos")
    ipqos = m.handle("show running-config ipqos")
    assert "policy-map type network-qos ROCE_NQ\n  class type network-qos c-8q-nq3\n    mtu 9216\n" \
           "    pause pfc-cos 3" in ipqos
    assert "interface Ethernet1/1\n  priority-flow-control mode on\n  priority-flow-control " \
           "watch-dog-interval on\n  service-policy type qos input ROCE_IN" in ipqos
    pfc = m.handle("show interface priority-flow-control")
    assert any(l.split()[:4] == ["Ethernet1/1", "On", "On", "(8)"] for l in pfc.split("\n"))
    assert m.handle("checkpoint pre") == "...........Done"
    before = m.handle("show running-config")
    run(m, ["configure terminal", "interface Ethernet1/1"])
    out = m.handle("mtu 9300")
    assert out.endswith("% Invalid number, range is (576:9216) at '^' marker.")
    assert m.handle("bogus").endswith("% Invalid command at '^' marker.")
    run(m, ["no priority-flow-control mode on", "system qos", "no service-policy type queuing output ROCE_OUT",
            "end"])
    v = m.port_view("Ethernet1/1")
    assert v["pfc_priorities"] == [] and v["ecn"] is None
    assert "Rollback completed successfully." in m.handle("rollback running-config checkpoint pre")
    assert m.handle("show running-config") == before


def test_nxos_config_session():
    m = make_model("nxos", "leaf1", PORTS["nxos"])
    before = m.handle("show running-config")
    m.handle("configure session roce")
    assert m.default_session.prompt() == "leaf1(config-s)#"
    run(m, NXOS_ROCE[1:-1])
    assert m.handle("show running-config") == before
    assert m.handle("verify") == "Verification Successful"
    assert m.handle("commit") == "Commit Successful"
    assert m.port_view("Ethernet1/2")["pfc_priorities"] == [3]


def test_nvue_pending_applied_saved():
    m = make_model("nvue", "leaf1", PORTS["nvue"])
    run(m, ["nv set qos roce mode lossless", "nv set interface swp1-2,4 link mtu 9000"])
    assert m.port_view("swp1")["pfc_priorities"] == []  # pending only
    assert m.handle("nv config diff").split("\n") == ["nv set interface swp1-2,4 link mtu 9000",
                                                     "nv set qos roce mode lossless"]
    q = m.handle("nv config apply")
    assert q.endswith("Are you sure? [y/N] ")
    assert m.handle("n").startswith("Aborted")
    assert m.handle("nv config apply -y") == "applied [rev_id: 2]"
    assert m.handle("nv config apply -y") == "Warning: Nothing to apply"
    assert m.port_view("swp1")["mtu"] == 9000 and m.port_view("swp1")["pfc_priorities"] == [3]
    assert m.handle("nv config show -o commands").split("\n") == [
        "nv set interface swp1-2,4 link mtu 9000", "nv set qos roce mode lossless",
        "nv set system hostname leaf1"]
    assert m.startup != m.running
    assert m.handle("nv config save") == "saved [rev_id: 2]"
    assert m.startup == m.running
    m.handle("nv unset interface swp2 link mtu")
    m.handle("nv config detach")
    assert m.extra["pending"] is None
    assert m.handle("nv set interface swp1 link mtu 9300").startswith("Error:")
    assert m.handle("nv set qos pfc default-global switch-priority 8").startswith("Error:")
    assert m.handle("nv set bogus thing").startswith("Error:")
    assert m.handle("ls") == "-bash: ls: command not found"
    status = m.handle("nv show interface swp1 qos roce status")
    assert "pfc-priority            3" in status
    run(m, ["nv unset qos roce", "nv unset interface swp1-4", "nv config apply -y"])
    assert m.running == {"system hostname": "leaf1"}


def test_sonic_format_and_errors():
    m = configured("sonic-dell")
    text = m.handle("show running-configuration interface Eth1/1")
    assert text.split("\n") == [
        "!", "interface Eth1/1", " mtu 9216", " queue 3 wred-policy ROCE", " scheduler-policy ROCE",
        " qos-map dscp-tc ROCE", " priority-flow-control priority 3",
        " priority-flow-control watchdog action drop", " priority-flow-control watchdog on detect-time 200",
        " priority-flow-control watchdog restore-time 400", " no shutdown"]
    full = m.handle("show running-configuration")
    assert "qos map dscp-tc ROCE\n dscp 0-25,27-47,49-63 traffic-class 0\n dscp 26 traffic-class 3" in full
    run(m, ["configure terminal", "interface Eth1/1"])
    assert m.handle("mtu 9217").endswith('% Error: Invalid input detected at "^" marker.')
    assert m.handle("priority-flow-control priority 9").endswith('% Error: Invalid input detected at "^" marker.')
    assert m.handle("qos-map dscp-tc NOPE") == "% Error: NOPE not found"
    run(m, ["no priority-flow-control priority 3", "no queue 3 wred-policy", "end"])
    assert m.port_view("Eth1/1")["pfc_priorities"] == [] and m.port_view("Eth1/1")["ecn"] is None


def test_persistence_and_faults(tmp_path):
    for nos in sorted(ROCE):
        m = configured(nos)
        m.name = f"sw-{nos}"
        save_switch(tmp_path, m)
        port = PORTS[nos][0]
        again = load_switch(tmp_path, m.name)
        assert again.port_view(port) == m.port_view(port)
        inject_fault(tmp_path, m.name, "switch-pfc-off", [port])
        hurt = load_switch(tmp_path, m.name)
        assert hurt.port_view(port)["pfc_priorities"] == [], nos
        if nos not in ("nvue",):
            assert hurt.port_view(PORTS[nos][1])["pfc_priorities"] == [3], nos
        assert hurt.port_view(port)["ecn"] == m.port_view(port)["ecn"] or nos == "nvue"
        inject_fault(tmp_path, m.name, "switch-mtu-low", [port])
        assert load_switch(tmp_path, m.name).port_view(port)["mtu"] == 1500
        inject_fault(tmp_path, m.name, "switch-rejects-command")
        assert "switch-rejects-command" in read_faults(tmp_path, m.name)
        inject_fault(tmp_path, m.name, "clear")
        assert read_faults(tmp_path, m.name) == {}
        assert load_switch(tmp_path, m.name).port_view(port)["mtu"] == 1500  # config changes stay
    with pytest.raises(ValueError):
        inject_fault(tmp_path, "sw-eos", "switch-on-fire")
