"""Arista EOS: the running-config and ``show priority-flow-control`` parsers on
real published formats (tests/unit/fixtures/switch_real/eos), the rule that a
line naming a managed setting is read or fails the read, and the twin's answer
compared in shape with the recording."""

import re

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import model as M
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver
from simlab.switches import make_model
from switch_real import recorded, unreadable

pytestmark = pytest.mark.layers(7)


# -- Arista EOS running-config ------------------------------------------------------

def test_eos_dscp_map_with_drop_precedence_is_read():
    d = get_driver("eos")
    text = recorded("eos/avd-qos-running-config.txt")
    _, _, switch, raw = d.parse_views(text)
    # 'qos map dscp 18 20 22 26 ... to traffic-class 4 drop-precedence 2': DSCP 26 is TC 4, not the default 3
    assert switch["dscp_map"][26] == 4 and raw["map_dp"][26] == 2
    assert switch["dscp_map"][46] == 5 and switch["dscp_map"][8] == 1 and switch["dscp_map"][0] == 0
    assert 26 in switch["explicit_dscps"] and 48 not in switch["explicit_dscps"]
    m = d.parse(text, {"ports": ["Ethernet1"], "dscps": [26, 48]})
    assert m["global"]["dscp_map"] == {26: 4, 48: 6}  # 48 is in none of the maps: DSCP>>3


def test_eos_global_pfc_watchdog_ecn_and_cos_lines_are_read():
    raw = get_driver("eos").parse_raw(recorded("eos/avd-qos-running-config.txt"))
    assert raw["pfc_all_off"] is True
    assert raw["watchdog"] == {"timeout": "0.05", "recovery-time": "1.22", "polling-interval": "10.001",
                               "action": "no-drop"}
    assert raw["ecn_non_ect"] == "chip-based"
    assert raw["cos_map"] == {1: 2, 2: 2, 3: 3, 4: 2}
    prof = raw["profiles"]["test_with_pfc"]
    assert prof["pfc_on"] is True and prof["nodrop"] == {0}
    assert prof["watchdog"][-1] == ("priority-flow-control pause watchdog port timer timeout 0.05 "
                                    "polling-interval auto recovery-time 1.11 forced")
    assert raw["other"]["Port-Channel3"]["trust"] == "cos"


def test_eos_qos_profile_applies_to_its_ports():
    m = get_driver("eos").parse(recorded("eos/avd-qos-running-config.txt"))
    assert sorted(m["ports"]) == ["Ethernet1", "Ethernet6", "Ethernet7"]  # 3 and 4 set nothing of ours
    e1 = m["ports"]["Ethernet1"]  # service-profile test: trust dscp, ECN on tx-queue 2, tx-queue 1 not strict
    assert e1["trust"] == "dscp" and e1["mtu"] == 1500
    assert e1["ecn"] == {"tc": 2, "min_bytes": 320000, "max_bytes": 320000, "probability": 90}
    assert m["ports"]["Ethernet6"]["trust"] == "pcp" and m["ports"]["Ethernet6"]["ecn"] is None
    # 'priority-flow-control all off': no port has PFC whatever its profile says
    assert not any(p["pfc"] for p in m["ports"].values()) and m["global"]["pfc_priority"] is None


def test_eos_all_off_overrides_a_port_with_pfc():
    text = ("interface Ethernet1\n   priority-flow-control on\n   priority-flow-control priority 3 no-drop\n!\n")
    assert get_driver("eos").parse(text)["ports"]["Ethernet1"]["pfc"] is True
    assert get_driver("eos").parse(text + "priority-flow-control all off\n")["ports"]["Ethernet1"]["pfc"] is False


def test_eos_converges_from_all_off():
    d = get_driver("eos")
    m = make_model("eos", "leaf1", ["Ethernet1", "Ethernet2"])
    s = m.session()
    for line in ("enable", "configure terminal", "priority-flow-control all off", "interface Ethernet1",
                 "priority-flow-control on", "priority-flow-control priority 3 no-drop", "end"):
        s.handle(line)
    want = M.normalise_intent({"pfc_priority": 3, "trust": "dscp"}, d, ["Ethernet1", "Ethernet2"])
    have, raw = d.read(s.handle("show running-config"), M.scope_of(want))
    assert not have["ports"]["Ethernet1"]["pfc"]  # configured, but switched off switch-wide
    ch = M.changes(want, have, "merged")
    ch["state"] = "merged"
    cmds = d.commands(ch, want, have, raw)
    assert cmds[0] == "no priority-flow-control all off"
    s.handle("configure terminal")
    assert [x for x in (s.handle(c) for c in cmds) if x.startswith("%")] == []
    s.handle("end")
    after = d.parse(s.handle("show running-config"), M.scope_of(want))
    assert after["ports"]["Ethernet1"]["pfc"] and after["ports"]["Ethernet2"]["pfc"]
    assert d.parse_verify(s.handle("show priority-flow-control")) == {"Ethernet1": [3], "Ethernet2": [3]}


def test_eos_interface_pfc_forms():
    m = get_driver("eos").parse(recorded("eos/avd-ethernet-interfaces-running-config.txt"))
    views = get_driver("eos").parse_views(recorded("eos/avd-ethernet-interfaces-running-config.txt"))
    raw = views[3]
    assert raw["ports"]["Ethernet1"]["pfc_on"] is True and raw["ports"]["Ethernet1"]["nodrop"] == set()
    assert raw["ports"]["Ethernet2"]["nodrop"] == {5}
    assert raw["ports"]["Ethernet3"]["pfc_on"] is False  # 'no priority-flow-control'
    assert m["global"]["pfc_priority"] == 5 and m["ports"]["Ethernet2"]["pfc"] is True
    assert not m["ports"]["Ethernet1"]["pfc"] and not m["ports"]["Ethernet4"]["pfc"]
    assert m["ports"]["Ethernet4"]["mtu"] == 9100 and m["ports"]["Ethernet3"]["mtu"] == 1500


def test_eos_time_thresholds_fail_where_a_port_uses_them():
    text = recorded("eos/avd-qos-running-config.txt")
    get_driver("eos").parse(text)  # the profile with millisecond thresholds is bound to no port: fine
    bound = text.replace("service-profile qprof_testwithpolicy", "service-profile uc_mc_queues_test")
    msg = unreadable("eos", bound, "Ethernet7 ECN min threshold is 3 milliseconds")
    assert "random-detect ecn minimum-threshold 3 milliseconds" in msg


@pytest.mark.parametrize("line", [
    "qos map dscp 26 to traffic-class 3 drop-precedence 9",
    "qos map dscp 26 to tc 3",
    "priority-flow-control pause watchdog default timeout soon",
    "priority-flow-control all of",
])
def test_eos_unreadable_global_line_fails_naming_it(line):
    msg = unreadable("eos", "hostname leaf7\n%s\n!\nend\n" % line, line)
    assert "Arista EOS" in msg


@pytest.mark.parametrize("line", [
    "   priority-flow-control priority 3 lossless",
    "   qos trust everything",
    "   priority-flow-control pause watchdog port timer timeout 1",
    "      random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 parsecs",
    "      random-detect ecn minimum-threshold 150 kbytes",
    "   random-detect ecn count",
])
def test_eos_unreadable_interface_line_fails_naming_it(line):
    text = "interface Ethernet1\n   mtu 9214\n   uc-tx-queue 3\n" if line.startswith("      ") else \
        "interface Ethernet1\n   mtu 9214\n"
    unreadable("eos", text + line + "\n!\n", line.strip())


# -- Arista EOS show priority-flow-control --------------------------------------------

FLAGS = re.compile(r"^(Et\d+)\s+([ED]) ([A-]) ([W-])\s+(-|\d(?:,\d)*|)\s")


def test_eos_pfc_status_three_flags():
    d = get_driver("eos")
    text = ("Global PFC : Enabled\n\nPort     Status   Priorities  Note\n" + "-" * 44 + "\n"
            "Et1      E A W    3           DCBX disabled\n"
            "Et2      E A -    3,4         DCBX disabled\n"
            "Et3      D - -    -           DCBX disabled\n"
            "Et4      E - W    3           DCBX disabled\n")
    # before: the third flag took the priorities' place and Et1 read as PFC on no priority
    assert d.parse_verify(text) == {"Ethernet1": [3], "Ethernet2": [3, 4], "Ethernet3": [], "Ethernet4": []}
    st = d.parse_pfc_status(text)
    assert st["*global"] is True and st["Ethernet4"] == {"enabled": True, "active": False, "watchdog": True,
                                                         "priorities": [3]}
    off = text.replace(recorded("eos/show-priority-flow-control-global-lines.txt").splitlines()[0],
                       recorded("eos/show-priority-flow-control-global-lines.txt").splitlines()[1])
    assert d.parse_pfc_status(off)["*global"] is False
    assert d.parse_verify(off)["Ethernet1"] == []


@pytest.mark.parametrize("row", ["Et1      E A    3   DCBX disabled", "Et1      X A W    3   DCBX disabled",
                                 "Et1      E A W    three"])
def test_eos_pfc_status_row_not_read_fails(row):
    with pytest.raises(M.RoceSwitchError, match="leaf7: show priority-flow-control line not understood"):
        get_driver("eos", switch="leaf7").parse_verify("Global PFC : Enabled\n" + row + "\n")


def test_eos_real_pfc_show_is_read():
    d = get_driver("eos")
    text = recorded("eos/show-priority-flow-control-7050-pfc-off.txt")
    st = d.parse_pfc_status(text)
    assert st == {"*global": True, "Ethernet1": {"enabled": False, "active": False, "watchdog": False,
                                                 "priorities": []}}
    assert d.parse_verify(text) == {"Ethernet1": []}
    # a port with PFC on and the watchdog, its Priorities cell filled; and one with the cell empty and an action
    on = text + ("Et2        E A W   3           drop        0.5      - / -           - / -\n"
                 "Et3        D - W               drop        0.5      - / -           - / -\n")
    assert d.parse_verify(on) == {"Ethernet1": [], "Ethernet2": [3], "Ethernet3": []}
    assert d.parse_pfc_status(on)["Ethernet3"]["watchdog"] is True


def test_eos_status_and_its_drift():
    d = get_driver("eos")
    text = recorded("eos/show-priority-flow-control-7050-pfc-off.txt") + (
        "Et2        E A W   3           drop        0.5      - / -           - / -\n")
    assert d.parse_status(text) == {"global_pfc": True, "watchdog_ports": ["Ethernet2"]}
    want = M.normalise_intent({"pfc_priority": 3}, d, ["Ethernet1"])
    assert d.pfc_drift(want, d.parse_raw(""), d.parse_status(text)) == ([], [])
    off = text.replace("Global PFC : Enabled", "Global PFC : Disabled")
    assert d.pfc_drift(want, d.parse_raw(""), d.parse_status(off)) == ([
        "global PFC off on Arista EOS: show priority-flow-control says 'Global PFC : Disabled' (intent PFC on "
        "priority 3; fix: no priority-flow-control all off)"], [])
    # the watchdog asked for: the W flag of the recorded table says which ports have it
    wd = M.normalise_intent({"pfc_priority": 3, "pfc_watchdog": True}, d, ["Ethernet1", "Ethernet2"])
    assert d.pfc_drift(wd, d.parse_raw(""), d.parse_status(text))[1] == [
        "Ethernet1: PFC watchdog off on Arista EOS (intent on with PFC on priority 3; fix: priority-flow-control "
        "pause watchdog under interface Ethernet1)"]


def test_eos_comment_blocks_are_free_text():
    text = ("interface Ethernet1\n   mtu 9214\n   comment\n   priority-flow-control is on for RoCE, "
            "qos trust dscp\n   EOF\n   priority-flow-control on\n!\n")
    pc = get_driver("eos").parse_raw(text)["ports"]["Ethernet1"]
    assert pc == {"mtu": 9214, "pfc_on": True}


def _fields(row):
    return [m.start() for m in re.finditer(r"\S+(?: \S+)*", row)]


def test_eos_twin_pfc_show_has_the_recorded_shape():
    real = recorded("eos/show-priority-flow-control-7050-pfc-off.txt").splitlines()
    m = make_model("eos", "leaf1", ["Ethernet1", "Ethernet2", "Ethernet3"])
    for line in ("enable", "configure terminal", "interface Ethernet1-2", "priority-flow-control on",
                 "priority-flow-control priority 3 no-drop", "interface Ethernet1",
                 "priority-flow-control pause watchdog", "interface Ethernet2", "shutdown", "end"):
        m.handle(line)
    text = m.handle("show priority-flow-control")
    twin = [x.rstrip() for x in text.splitlines()]
    assert twin[:14] == real[:14]  # switch-wide lines, Global PFC, legend, column titles
    assert twin[16:] and all(x.startswith("Et") for x in twin[16:])
    assert twin[18].replace("Et3", "Et1", 1) == real[14]  # a port with PFC off prints as the real Et1 row
    rows = [FLAGS.match(x + " ") for x in twin[16:]]
    assert all(rows) and [r.groups()[:4] for r in rows] == [("Et1", "E", "A", "W"), ("Et2", "E", "-", "-"),
                                                            ("Et3", "D", "-", "-")]
    assert all(_fields(x)[:2] == [0, 11] for x in twin[16:])
    assert get_driver("eos").parse_verify(text) == {"Ethernet1": [3], "Ethernet2": [], "Ethernet3": []}
    glob = recorded("eos/show-priority-flow-control-global-lines.txt").splitlines()
    assert glob[0] in twin
    m.handle("configure terminal")
    m.handle("priority-flow-control all off")
    text = m.handle("show priority-flow-control")
    assert glob[1] in text.splitlines()
    assert get_driver("eos").parse_verify(text)["Ethernet1"] == []
    assert "priority-flow-control all off" in m.handle("show running-config").splitlines()


# -- Arista EOS port names: slot/port/lane and lanes --------------------------------------

def test_eos_modular_ports_of_a_qos_profile_are_read():
    """AMD's 7388 example binds its RoCE qos profile to Ethernet2/5/1 and
    Ethernet2/5/5; before, those lines fell into 'other' and the read found
    no port at all."""
    d = get_driver("eos")
    m = d.parse(recorded("eos/rocm-7388-dcqcn-qos-profile-running-config.txt"))
    assert sorted(m["ports"]) == ["Ethernet2/5/1", "Ethernet2/5/5"]
    ecn = {"tc": 3, "min_bytes": 2000 * 208, "max_bytes": 10000 * 208, "probability": 20}  # segments of 208 bytes
    for p in m["ports"].values():
        assert p["pfc"] and p["trust"] == "dscp" and p["mtu"] == 9214 and p["ecn"] == ecn
    assert m["global"]["pfc_priority"] == 3 and m["global"]["dscp_map"][26] == 3
    # the inventory's names in any spelling EOS prints reach the same ports
    want = M.normalise_intent({"pfc_priority": 3, "trust": "dscp", "mtu": 9214}, d, ["Ethernet2/5/1", "Et2/5/5"])
    assert sorted(want["ports"]) == ["Ethernet2/5/1", "Ethernet2/5/5"]
    have = d.parse(recorded("eos/rocm-7388-dcqcn-qos-profile-running-config.txt"), M.scope_of(want))
    assert have["ports"]["Ethernet2/5/5"]["pfc"] is True


def test_eos_real_modular_running_config_names_the_lldp_ports():
    """A real 7804 running config: every interface Ethernet3/N/L is a port,
    the subinterfaces and management ports are not, and the names are those
    its own 'show lldp neighbors' gives (tests/unit/fixtures/lldp_real/eos)."""
    from pathlib import Path
    d = get_driver("eos")
    _view, seen, _switch, raw = d.parse_views(recorded("eos/cmp308-7804-modular-interfaces-running-config.txt"))
    assert sorted(raw["ports"]) == sorted(["Ethernet3/%d/1" % n for n in range(1, 49) if n != 9] + ["Ethernet3/10/2"])
    assert seen == ["Ethernet3/%d/1" % n for n in range(1, 6)]  # the ports with mtu 9214; the others set nothing
    assert sorted(raw["other"]) == ["Ethernet3/10/1.%d" % n for n in range(11, 16)] + [
        "Loopback1", "Loopback2", "Management1/1", "Management1/2"]
    lldp = (Path(__file__).parent / "fixtures" / "lldp_real" / "eos" / "show-lldp-neighbors-cmp308-7804-modular.txt")
    local = [n["local"] for n in d.parse_lldp(lldp.read_text().split("# ---\n", 1)[1])]
    assert [p for p in local if p.startswith("Ethernet")] == ["Ethernet3/%d/1" % n for n in (1, 2, 4, 5)]
    assert set(local) - set(raw["ports"]) == {"Ma1/1"}
    m = d.parse(recorded("eos/cmp308-7804-modular-interfaces-running-config.txt"), {"ports": ["Ethernet3/2/1"]})
    assert m["ports"]["Ethernet3/2/1"]["mtu"] == 9214 and not m["ports"]["Ethernet3/2/1"]["pfc"]


@pytest.mark.parametrize("head, ports", [
    ("interface Ethernet49/1", ["Ethernet49/1"]),
    ("interface Ethernet1,3-5", ["Ethernet1", "Ethernet3", "Ethernet4", "Ethernet5"]),
    ("interface Ethernet1/1-4", ["Ethernet1/1", "Ethernet1/2", "Ethernet1/3", "Ethernet1/4"]),
    ("interface Ethernet3/1/1,3/2/1", ["Ethernet3/1/1", "Ethernet3/2/1"]),
    ("interface Ethernet1,Ethernet2/1", ["Ethernet1", "Ethernet2/1"]),
])
def test_eos_interface_lists_and_ranges(head, ports):
    raw = get_driver("eos").parse_raw(head + "\n   priority-flow-control on\n!\n")
    assert sorted(raw["ports"]) == sorted(ports) and all(pc == {"pfc_on": True} for pc in raw["ports"].values())


@pytest.mark.parametrize("head", [
    "interface Ethernet5-3",  # before: an empty range, the block's PFC lines dropped without a word
    "interface Ethernet1/1-2/4",
    "interface Ethernet1/2/3/4",
    "interface Ethernet1/x",
    "interface Ethernet1,",
    "interface Ethernet",
])
def test_eos_interface_name_not_read_fails_quoting_it(head):
    msg = unreadable("eos", head + "\n   priority-flow-control on\n   priority-flow-control priority 3 no-drop\n!\n",
                     "'%s'" % head)
    assert "Ethernet interface name" in msg


def test_eos_subinterface_is_no_port():
    raw = get_driver("eos").parse_raw("interface Ethernet49/1.100\n   qos trust dscp\n!\n")
    assert raw["ports"] == {} and raw["other"] == {"Ethernet49/1.100": {"trust": "dscp"}}


def test_eos_writes_slotted_ports_one_interface_line_each():
    """Single-number ports keep their one 'interface Ethernet1,3' line; a
    slotted or laned port gets a line of its own (before: int('2/5/1') failed)."""
    d = get_driver("eos")
    ports = ["Ethernet1", "Ethernet3", "Ethernet2/5/1", "Et2/5/5", "Ethernet49/1"]
    want = M.normalise_intent({"pfc_priority": 3, "trust": "dscp"}, d, ports)
    have, raw = d.read("", M.scope_of(want))
    ch = M.changes(want, have, "merged")
    ch["state"] = "merged"
    cmds = d.commands(ch, want, have, raw)
    heads = [c for c in cmds if c.startswith("interface ")]
    assert heads == ["interface Ethernet1,3", "interface Ethernet2/5/1", "interface Ethernet2/5/5",
                     "interface Ethernet49/1"]
    # what was written reads back onto the same ports
    text = "\n".join(c if c.startswith("interface ") or c == "exit" else "   " + c for c in cmds)
    after = d.parse(text.replace("exit", "!"), M.scope_of(want))
    assert all(after["ports"][p]["pfc"] and after["ports"][p]["trust"] == "dscp" for p in want["ports"])
