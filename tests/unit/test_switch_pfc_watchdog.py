"""Global PFC and the PFC watchdog on every NOS, against the twin's NOS models
typed at as CLIs: a converge with ``pfc_watchdog: true`` turns the watchdog on
and a second pass sends nothing; with the watchdog or global PFC switched off
on the twin, the drift names the NOS, what is off (and on which port) and the
command that fixes it, and the converge sends that command."""

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import model as M
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver
from test_roce_switch_drivers import INTENT, PORTS, Cli

pytestmark = pytest.mark.layers(7)

WATCHDOG = {"eos": "priority-flow-control pause watchdog under interface {port}",
            "nvue": "nv set interface {port} qos pfc-watchdog",
            "nxos": "priority-flow-control watch-dog-interval on under interface {port}",
            "sonic-dell": "priority-flow-control watchdog on detect-time 200 under interface {port}",
            "sonic-community": "config pfcwd start --action drop {port} 200 --restoration-time 200"}
LABEL = {"eos": "Arista EOS", "nvue": "Cumulus NVUE", "nxos": "Cisco NX-OS", "sonic-dell": "Dell SONiC",
         "sonic-community": "community SONiC", "onyx": "Onyx"}
GLOBAL = {"onyx": ("'dcb priority-flow-control enable' is not in the running config",
                   "dcb priority-flow-control enable force"),
          "eos": ("'priority-flow-control all off' is in the running config", "no priority-flow-control all off")}


def plan(nos, cli, config):
    """-> (driver, intent, commands of a merged converge, (global lines, port lines))."""
    d = get_driver(nos, switch="leaf1")
    want = M.normalise_intent(config, d, PORTS[nos], "leaf1")
    have, raw = d.read(cli.text(), M.scope_of(want))
    ch = d.extra_changes(M.changes(want, have, "merged"), want, have, raw)
    ch["state"] = "merged"
    cmds = d.commands(ch, want, have, raw) if not M.is_empty(ch) else []
    return d, want, cmds, d.pfc_drift(want, raw)


def converged(nos, config):
    cli = Cli(nos)
    _, _, cmds, _ = plan(nos, cli, config)
    assert cmds and cli.run(cmds) == []
    return cli


def test_every_nos_has_a_label_and_the_drivers_say_what_they_manage():
    for nos in PORTS:
        d = get_driver(nos)
        assert d.label == LABEL[nos]
        assert d.watchdog_fix == WATCHDOG.get(nos, "")
        assert bool(d.global_pfc_fix) == (nos in GLOBAL)


@pytest.mark.parametrize("nos", sorted(WATCHDOG))
def test_watchdog_converges_then_off_on_one_port_is_named_and_fixed(nos):
    config = dict(INTENT, pfc_watchdog=True)
    cli = converged(nos, config)
    d, _, again, drift = plan(nos, cli, config)
    assert again == [] and drift == ([], [])
    port = PORTS[nos][1]
    cli.sw.fault_watchdog_off([port])
    d, want, cmds, drift = plan(nos, cli, config)
    assert drift == ([], ["%s: PFC watchdog off on %s (intent on with PFC on priority 3; fix: %s)"
                          % (port, LABEL[nos], WATCHDOG[nos].format(port=port))])
    # only the watchdog of that port is sent
    fix = WATCHDOG[nos].format(port=port).split(" under interface ")[0]
    assert any(fix in c for c in cmds), cmds
    assert cli.run(cmds) == []
    assert plan(nos, cli, config)[2:] == ([], ([], []))


@pytest.mark.parametrize("nos", sorted(WATCHDOG))
def test_watchdog_not_asked_is_not_checked(nos):
    config = dict(INTENT, pfc_watchdog=False)
    cli = converged(nos, config)
    assert plan(nos, cli, config)[2:] == ([], ([], []))


def test_onyx_watchdog_is_not_managed():
    config = dict(INTENT, pfc_watchdog=True)
    cli = converged("onyx", config)
    cli.sw.fault_watchdog_off(PORTS["onyx"])
    assert plan("onyx", cli, config)[2:] == ([], ([], []))


@pytest.mark.parametrize("nos", sorted(GLOBAL))
def test_global_pfc_off_is_named_first_and_fixed(nos):
    cli = converged(nos, INTENT)
    cli.sw.fault_global_pfc_off()
    d, want, cmds, drift = plan(nos, cli, INTENT)
    why, fix = GLOBAL[nos]
    assert drift[0] == ["global PFC off on %s: %s (intent PFC on priority 3; fix: %s)" % (LABEL[nos], why, fix)]
    assert fix in cmds
    assert cli.run(cmds) == []
    assert plan(nos, cli, INTENT)[2:] == ([], ([], []))
    # the twin's PFC show agrees
    assert all(cli.sw.port_view(p)["pfc_priorities"] == [3] for p in PORTS[nos])


@pytest.mark.parametrize("nos", ["nvue", "nxos", "sonic-dell", "sonic-community"])
def test_global_pfc_fault_only_where_the_nos_has_that_state(nos):
    with pytest.raises(ValueError, match="no switch-wide PFC state"):
        Cli(nos).sw.fault_global_pfc_off()


def test_intent_pfc_watchdog_values():
    d = get_driver("eos", switch="leaf1")
    assert "pfc_watchdog" not in M.normalise_intent(INTENT, d, [], "leaf1")["global"]
    assert M.normalise_intent(dict(INTENT, pfc_watchdog="false"), d, [], "leaf1")["global"]["pfc_watchdog"] is False
    with pytest.raises(M.RoceSwitchError, match="leaf1: pfc_watchdog 'sometimes' is not true or false"):
        M.normalise_intent(dict(INTENT, pfc_watchdog="sometimes"), d, [], "leaf1")


def test_nos_names_sonic_dell_alias_and_unknown():
    assert get_driver("sonic-dell").label == "Dell SONiC"
    assert get_driver("sonic").nos == "sonic-dell"
    with pytest.raises(M.RoceSwitchError) as e:
        get_driver("sonik", switch="leaf4")
    assert str(e.value) == ("leaf4: unknown NOS 'sonik'; expected one of eos, nvue, nxos, onyx, sonic-community, "
                            "sonic-dell")
