"""roce_switch drivers: rendered -> parsed round trip for every NOS (against the
twin's NOS models as the CLI), real configs, diff per state, validation."""

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import model as M
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver
from tests.reference import read_real_output
from simlab.switches import make_model

pytestmark = pytest.mark.layers(7)

PORTS = {"onyx": ["ethernet 1/1", "ethernet 1/2", "ethernet 1/4"], "nvue": ["swp1", "swp2", "swp4"],
         "eos": ["Ethernet1", "Ethernet2", "Ethernet4"], "nxos": ["Ethernet1/1", "Ethernet1/2", "Ethernet1/4"],
         "sonic-dell": ["Eth1/1", "Eth1/2", "Eth1/4"], "sonic-community": ["Ethernet0", "Ethernet4", "Ethernet12"]}
ENTER = {"onyx": ["enable", "configure terminal"], "eos": ["enable", "configure terminal"],
         "nxos": ["configure terminal"], "sonic-dell": ["sonic-cli", "configure terminal"], "nvue": [],
         "sonic-community": ["sudo -s", "admin-pw"]}
SHOW = {"onyx": "show running-config", "eos": "show running-config", "nxos": "show running-config",
        "sonic-dell": "do show running-configuration", "nvue": "nv config show -o commands",
        "sonic-community": "show runningconfiguration all"}
INTENT = {"pfc_priority": 3, "trust": "dscp", "dscp_map": {26: 3, 48: 6},
          "ecn": {"tc": 3, "min_kbytes": 150, "max_kbytes": 1500, "probability": 100},
          "cnp": {"priority": 6, "strict": True}, "mtu": 9216, "mtu_per_nos": {"eos": 9214}}


class Cli:
    """A twin NOS model typed at like a CLI session."""

    def __init__(self, nos):
        self.nos = nos
        self.sw = make_model(nos, "leaf1")
        self.s = self.sw.session()
        for line in ENTER[nos]:
            self.s.handle(line)

    def run(self, lines):
        errors = []
        for line in lines:
            out = self.s.handle(line)
            if any(mark in out for mark in ("% ", "Error:", "ERROR:")):
                errors.append((line, out))
        if self.nos == "nvue":
            self.s.handle("nv config apply -y")
        return errors

    def text(self):
        return self.s.handle(SHOW[self.nos])


def converge(nos, state="merged", cli=None, config=INTENT, ports=None):
    d = get_driver(nos)
    want = M.normalise_intent(config, d, ports or PORTS[nos], "leaf1")
    cli = cli or Cli(nos)
    have, raw = d.read(cli.text(), M.scope_of(want))
    ch = M.changes(want, have, state)
    ch["state"] = state
    cmds = d.commands(ch, want, have, raw) if not M.is_empty(ch) else []
    assert cli.run(cmds) == []
    return d, want, cli, cmds


@pytest.mark.parametrize("nos", sorted(PORTS))
def test_rendered_then_parsed_equals_intent(nos):
    d, want, cli, cmds = converge(nos)
    assert cmds
    parsed = d.parse(cli.text(), M.scope_of(want))
    assert M.strip_internal(parsed) == want
    # the twin agrees on every port
    for p in PORTS[nos]:
        v = cli.sw.port_view(p)
        assert v["pfc_priorities"] == [3] and v["trust"] == "dscp" and v["cnp_strict_tc"] == 6
        assert v["ecn"] == {"tc": 3, "min_bytes": 150000, "max_bytes": 1500000}
        assert v["mtu"] == (9214 if nos == "eos" else 9216)
    # a second pass has nothing to do
    _, _, _, again = converge(nos, cli=cli)
    assert again == []


@pytest.mark.parametrize("nos", sorted(PORTS))
def test_deleted_returns_to_factory(nos):
    d, want, cli, _ = converge(nos)
    factory = Cli(nos)
    have, raw = d.read(cli.text(), M.scope_of(want))
    target = M.deleted_target(d, have)
    ch = M.changes(target, have, "deleted")
    ch["dscp_unset"] = list(have["global"]["explicit_dscps"])
    ch["state"] = "deleted"
    assert cli.run(d.commands(ch, target, have, raw)) == []
    for p in PORTS[nos]:
        assert cli.sw.port_view(p) == factory.sw.port_view(p), p


def test_merged_changes_only_what_differs_and_replaced_removes_extra_dscp():
    d, want, cli, _ = converge("eos")
    cli.run(["interface Ethernet2", "mtu 1500", "exit", "qos map dscp 27 to traffic-class 5"])
    have, raw = d.read(cli.text(), M.scope_of(want))
    ch = M.changes(want, have, "merged")
    assert list(ch["ports"]) == ["Ethernet2"] and set(ch["ports"]["Ethernet2"]) == {"mtu"}
    ch["state"] = "merged"
    assert d.commands(ch, want, have, raw) == ["interface Ethernet2", "mtu 9214", "exit"]
    rep = M.changes(want, have, "replaced")
    rep["state"] = "replaced"
    assert "no qos map dscp 27" in d.commands(rep, want, have, raw)


def test_overridden_resets_unlisted_ports_but_not_their_mtu():
    d, want, cli, _ = converge("onyx")
    cli.run(["interface ethernet 1/9 dcb priority-flow-control mode on force", "interface ethernet 1/9 mtu 9000 force"])
    text = cli.text()
    d2 = get_driver("onyx")
    import ansible_collections.gpufabric.stack.plugins.modules.roce_switch as mod
    have, raw, target, ch = mod.plan(d2, "overridden", want, text, M.scope_of(want), True)
    cmds = d2.commands(ch, target, have, raw)
    assert "interface ethernet 1/9 no dcb priority-flow-control mode force" in cmds
    assert not any("1/9 mtu" in c for c in cmds)


def test_onyx_real_config_ranges_expanded():
    d = get_driver("onyx")
    m = d.parse(read_real_output("switch_configs/onyx-running-config-dcb-pfc.txt"))
    assert set(m["ports"]) == {"ethernet 1/7", "ethernet 1/8", "ethernet 1/32"}
    assert m["ports"]["ethernet 1/7"]["pfc"] is False  # global PFC on, but no priority enabled
    assert m["global"]["pfc_priority"] is None and m["ports"]["ethernet 1/32"]["mtu"] == 1500
    _, _, _, raw = d.parse_views(read_real_output("switch_configs/onyx-running-config-dcb-pfc.txt"))
    assert raw["pfc_enable"]
    assert raw["ports"]["ethernet 1/8"] == {"pfc": True}


def test_nxos_reference_qos_and_pfc_show():
    d = get_driver("nxos")
    text = read_real_output("switch_configs/nxos-azurelocal-rdma-qos-reference.txt")
    _, _, switch, raw = d.parse_views(text)
    assert raw["pmaps"]["network-qos"]["QOS_NETWORK"]["c-8q-nq3"] == {"mtu": 9216, "pfc_cos": [3]} or \
        raw["pmaps"]["network-qos"]["QOS_NETWORK"]["c-8q-nq3"]["pfc_cos"] == [3]
    wred = raw["pmaps"]["queuing"]["QOS_EGRESS_PORT"]["c-out-8q-q3"]["wred"]
    assert wred == {"min_bytes": 300000, "max_bytes": 300000, "probability": 100, "ecn": True}
    # no system qos attaches them, and RDMA is classified on CoS: no DSCP map, no lossless priority
    assert switch["pfc_priority"] is None and switch["dscp_map"] == {}
    oper = d.parse_verify(read_real_output("switch_configs/nxos-n5k-show-interface-priority-flow-control.txt"))
    assert oper == {"Ethernet1/47": [], "Ethernet1/48": [], "Ethernet4/15": [], "Ethernet4/16": []}


def test_units_normalised():
    assert get_driver("nvue").parse("nv set qos congestion-control default-global traffic-class 3 ecn enable\n"
                                    "nv set qos congestion-control default-global traffic-class 3 min-threshold 200000\n"
                                    "nv set qos congestion-control default-global traffic-class 3 max-threshold 2000000\n"
                                    "nv set interface swp1-2,32 link mtu 9000")["global"]["ecn"] == \
        {"tc": 3, "min_bytes": 200000, "max_bytes": 2000000, "probability": 100}
    m = get_driver("nvue").parse("nv set interface swp1-2,32 link mtu 9000")
    assert sorted(m["ports"]) == ["swp1", "swp2", "swp32"]
    eos = get_driver("eos").parse("interface Ethernet1\n   uc-tx-queue 3\n      random-detect ecn minimum-threshold "
                                  "150 kbytes maximum-threshold 2 mbytes max-mark-probability 50\n")
    assert eos["ports"]["Ethernet1"]["ecn"] == {"tc": 3, "min_bytes": 150000, "max_bytes": 2000000, "probability": 50}
    son = get_driver("sonic-dell").parse("!\nqos wred-policy W\n green minimum-threshold 150 maximum-threshold 1500 "
                                    "drop-probability 100\n ecn green\n!\ninterface Eth1/1\n mtu 9216\n"
                                    " queue 3 wred-policy W\n no shutdown\n!")
    assert son["ports"]["Eth1/1"]["ecn"]["max_bytes"] == 1500000


@pytest.mark.parametrize("nos,config,ports,needle", [
    ("eos", dict(INTENT, mtu_per_nos={}), ["Ethernet1"], "leaf1: MTU 9216 is outside what Arista EOS accepts"),
    ("onyx", dict(INTENT, pfc_priority=8), ["ethernet 1/1"], "leaf1: PFC priority 8 is outside 0-7"),
    ("nxos", dict(INTENT, dscp_map={64: 3}), ["Ethernet1/1"], "leaf1: DSCP 64 is outside 0-63"),
    ("nvue", dict(INTENT, cnp={"priority": 9}), ["swp1"], "leaf1: CNP priority 9 is outside 0-7"),
    ("onyx", dict(INTENT, dscp_map={26: 4}), ["ethernet 1/1"], "cannot map it to 4"),
    ("sonic-dell", INTENT, ["swp1"], "leaf1: port 'swp1' is not a Dell SONiC port name"),
    ("eos", dict(INTENT, trust="both"), ["Ethernet1"], "not both"),
])
def test_validation_names_switch_and_value(nos, config, ports, needle):
    with pytest.raises(M.RoceSwitchError) as e:
        M.normalise_intent(config, get_driver(nos), ports, "leaf1")
    assert needle in str(e.value)


def test_unknown_nos():
    with pytest.raises(M.RoceSwitchError, match="leaf9: unknown NOS 'junos'"):
        get_driver("junos", switch="leaf9")


def test_drift_lines():
    d, want, cli, _ = converge("nxos")
    cli.run(["interface Ethernet1/2", "no priority-flow-control mode", "mtu 1500"])
    have = d.parse(cli.text(), M.scope_of(want))
    assert M.drift(want, have) == ["Ethernet1/2: PFC off (intent priority 3), MTU 1500 below 9216"]


@pytest.mark.parametrize("changes", [
    # what a push can change on a converged switch: values replaced, lines added and removed,
    # on one port of a range and switch-wide
    ["interface ethernet 1/1 mtu 1500 force", "interface ethernet 1/2 qos trust both",
     "interface ethernet 1/4 no traffic-class 3 congestion-control",
     "interface ethernet 1/1 traffic-class 3 congestion-control ecn minimum-absolute 200 maximum-absolute 2000",
     "interface ethernet 1/2 traffic-class 5 dcb ets strict",
     "interface ethernet 1/1 no dcb priority-flow-control mode force",
     "no dcb priority-flow-control priority 3 enable", "dcb priority-flow-control priority 4 enable"],
    ["no dcb priority-flow-control enable force", "interface ethernet 1/1-1/4 no traffic-class 6 dcb ets",
     "interface ethernet 1/3 mtu 9000 force", "roce lossless"],
])
def test_onyx_undo_restores_running_config_exactly(changes):
    d, _want, cli, _ = converge("onyx")
    before = cli.text()
    assert cli.run(changes) == []
    assert cli.text() != before
    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.base import assemble
    undo = assemble(d.undo_commands(before, cli.text()), d.exit_word)
    assert not any("configuration" in line for line in undo), undo
    assert cli.run(undo) == []
    assert cli.text() == before
    assert d.undo_commands(before, cli.text()) == []


def test_onyx_undo_on_a_real_running_config():
    """The undo reads a real Onyx running config (mellanox.onyx's fixture,
    a capture of a switch) with the parser the converge reads it with: the
    compressed range, global PFC and the port-channel line as they are. A
    push that changed a port of the range and added a priority is undone
    line by line, the range's other port and the port-channel untouched."""
    d = get_driver("onyx", switch="ufm-switch16")
    real = read_real_output("switch_configs/onyx-running-config-dcb-pfc.txt")
    assert d.undo_commands(real, real) == []
    lines = d.parse_raw(real)["lines"]
    assert lines[((), "pfc-enable")] == "dcb priority-flow-control enable force"
    assert lines[(("ethernet 1/7",), "pfc")] == lines[(("ethernet 1/8",), "pfc")] == \
        "dcb priority-flow-control mode on force"
    assert not [k for k in lines if k[0] and not k[0][0].startswith("ethernet ")]  # the LAG line is not a port's
    pushed = real + ("\n   dcb priority-flow-control priority 3 enable"
                     "\n   interface ethernet 1/8 no dcb priority-flow-control mode force"
                     "\n   interface ethernet 1/8 mtu 9216 force\n")
    assert d.undo_commands(real, pushed) == [
        ((), "interface ethernet 1/8 mtu 1500 force"), ((), "no dcb priority-flow-control priority 3 enable"),
        ((), "interface ethernet 1/8 dcb priority-flow-control mode on force")]


def test_onyx_undo_leaves_a_line_that_states_the_default():
    """A switch that shows the default it was set to ('qos trust L2',
    'mtu 1500 force') is not sent the same line again (the restore re-reads
    and undoes until nothing differs)."""
    d = get_driver("onyx")
    before = "interface ethernet 1/1 qos trust L3\n"
    now = before + "interface ethernet 1/2 qos trust L2\ninterface ethernet 1/2 mtu 1500 force\n"
    assert d.undo_commands(before, now) == []
    now += "interface ethernet 1/3 mtu 9216 force\n"
    assert d.undo_commands(before, now) == [((), "interface ethernet 1/3 mtu 1500 force")]


def test_onyx_undo_puts_back_an_ets_weight_and_refuses_to_guess_under_the_roce_macro():
    d = get_driver("onyx", switch="leaf7")
    before = "interface ethernet 1/1-1/2 traffic-class 6 dcb ets wrr 50\n"
    now = ("interface ethernet 1/1 traffic-class 6 dcb ets strict\n"
           "interface ethernet 1/2 traffic-class 6 dcb ets wrr 50\n")
    assert d.undo_commands(before, now) == [((), "interface ethernet 1/1 traffic-class 6 dcb ets wrr 50")]
    # under 'roce' a port's defaults are the macro's: unsetting a line to them is not attempted
    with pytest.raises(M.RoceSwitchError, match=r"^leaf7: cannot undo 'interface ethernet 1/1 qos trust L2' under "
                                                r"the roce macro \('roce lossless'\)"):
        d.undo_commands("roce lossless\n", "roce lossless\ninterface ethernet 1/1 qos trust L2\n")
    assert d.undo_commands("roce lossless\n", "roce lossless\n") == []


def test_onyx_undo_of_a_first_converge_leaves_the_factory_config():
    cli = Cli("onyx")
    factory = cli.text()
    d, _want, cli, cmds = converge("onyx", cli=cli)
    assert cmds and cli.text() != factory
    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.base import assemble
    assert cli.run(assemble(d.undo_commands(factory, cli.text()), d.exit_word)) == []
    assert cli.text() == factory


def test_sonic_undo_restores_running_config_exactly():
    d, want, cli, _ = converge("sonic-dell")
    before = cli.text()
    cli.run(["interface Eth1/1", "mtu 9000", "no priority-flow-control priority 3",
             "qos map dscp-tc EXTRA", "dscp 1 traffic-class 1"])
    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.base import assemble
    undo = assemble(d.undo_commands(before, cli.text()), d.exit_word)
    assert cli.run(undo) == []
    assert cli.text() == before
