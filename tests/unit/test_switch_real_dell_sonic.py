"""The Dell Enterprise SONiC driver's PFC watchdog read on the recorded real
running-configuration of an interface (fixtures/switch_real/dell_sonic: the
vendor's own collection documents it), not on the twin's idea of it."""

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import model as M
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver
from switch_real import recorded

pytestmark = pytest.mark.layers(7)

REC = "dell_sonic/running-configuration-interface-qos.txt"


def test_watchdog_on_is_read_from_the_recorded_interface():
    d = get_driver("sonic-dell", switch="leaf1")
    raw = d.parse_raw(recorded(REC))
    assert d.watchdog_ports(raw) == {"Eth1/5"}
    want = M.normalise_intent({"pfc_priority": 1, "pfc_watchdog": True}, d, ["Eth1/5"], "leaf1")
    assert d.pfc_drift(want, raw) == ([], [])


def test_watchdog_off_when_the_recorded_on_line_is_gone():
    d = get_driver("sonic-dell", switch="leaf1")
    text = "\n".join(line for line in recorded(REC).splitlines()
                     if line.strip() != "priority-flow-control watchdog on detect-time 100") + "\n"
    raw = d.parse_raw(text)
    assert d.watchdog_ports(raw) == set()
    want = M.normalise_intent({"pfc_priority": 1, "pfc_watchdog": True}, d, ["Eth1/5"], "leaf1")
    assert d.pfc_drift(want, raw)[1] == [
        "Eth1/5: PFC watchdog off on Dell SONiC (intent on with PFC on priority 1; fix: "
        "priority-flow-control watchdog on detect-time 200 under interface Eth1/5)"]
