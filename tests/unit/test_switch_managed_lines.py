"""A roce_switch parser never drops a line that names something the collection
manages (a DSCP map, PFC, random-detect/ECN, trust): it reads it or fails
naming the switch and the line, in the drivers and through the module's
parsed, gathered and merged states."""

import io
import json
from contextlib import redirect_stdout

import pytest
from ansible.module_utils.testing import patch_module_args

import ansible_collections.gpufabric.stack.plugins.modules.roce_switch as module
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver
from tests.reference import read_real_output
from switch_real import unreadable

pytestmark = pytest.mark.layers(7)

ONYX_OK = "##\n## Interface Ethernet configuration\n##\n   interface ethernet 1/1 mtu 9216 force\n"
NXOS_OK = "interface Ethernet1/1\n  mtu 9216\n"
SONIC_OK = "!\ninterface Eth1/1\n mtu 9216\n!\n"


@pytest.mark.parametrize("line", [
    "   dcb priority-flow-control enable sometimes",
    "   dcb priority-flow-control priority 9 enable",
    "   interface ethernet 1/1 dcb priority-flow-control mode maybe",
    "   interface ethernet 1/1 qos trust L4",
    "   interface ethernet 1/1 traffic-class 3 congestion-control ecn minimum 150 maximum 1500",
    "   interface port-channel 1 dcb priority-flow-control mode sideways",
    "   roce extra-lossless",
])
def test_onyx_unreadable_line_fails(line):
    unreadable("onyx", ONYX_OK + line + "\n", line.strip())


def test_onyx_port_channel_pfc_and_trust_port_are_read():
    d = get_driver("onyx")
    raw = d.parse_raw(read_real_output("switch_configs/onyx-running-config-dcb-pfc.txt"))
    assert raw["lags"]["port-channel 1"] == {"pfc": True}  # dropped before: the line did not say 'ethernet'
    m = d.parse(ONYX_OK + "   interface ethernet 1/1 qos trust port\n")
    assert m["ports"]["ethernet 1/1"]["trust"] == "port"


def test_onyx_relative_ecn_has_no_bytes():
    text = ONYX_OK + ("   interface ethernet 1/1 traffic-class 3 congestion-control ecn minimum-relative 10 "
                      "maximum-relative 80\n")
    unreadable("onyx", text, "ethernet 1/1 ECN thresholds are relative")


@pytest.mark.parametrize("block", [
    "interface Ethernet1/1\n  priority-flow-control mode sometimes\n",
    "interface Ethernet1/1\n  priority-flow-control watch-dog-interval maybe\n",
    "interface port-channel10\n  priority-flow-control mode sideways\n",
    "class-map type qos match-any ROCE\n  match dscp af35\n",
    "policy-map type queuing Q\n  class type queuing c-out-8q-q3\n    random-detect minimum-threshold 150 kbytes\n",
    "priority-flow-control watch-dog-interval sometimes\n",
])
def test_nxos_unreadable_line_fails(block):
    unreadable("nxos", NXOS_OK + block, block.strip().splitlines()[-1].strip())


def test_nxos_dscp_names_and_watchdog_are_read():
    d = get_driver("nxos")
    text = ("class-map type qos match-any ROCE\n  match dscp af31,26 cs6\n"
            "policy-map type qos IN\n  class ROCE\n    set qos-group 3\n"
            "interface Ethernet1/1\n  priority-flow-control mode on\n  priority-flow-control watch-dog-interval on\n"
            "  service-policy type qos input IN\n"
            "priority-flow-control watch-dog-interval on\n")
    raw = d.parse_raw(text)
    assert raw["cmaps"]["ROCE"] == [26, 26, 48]  # 'af31' was dropped before: DSCP 26 read as unmapped
    assert raw["ports"]["Ethernet1/1"]["pfc_other"] == ["watch-dog-interval on"]
    assert raw["pfc_global"] == ["priority-flow-control watch-dog-interval on"]
    assert d.parse(text)["ports"]["Ethernet1/1"]["trust"] == "dscp"


@pytest.mark.parametrize("block", [
    "roce enable pfc-priority 3;4\n!\n",
    "qos map dscp-tc ROCE\n dscp 26,70 traffic-class 3\n!\n",
    "qos wred-policy W\n green minimum-threshold 150 maximum-threshold 1500\n!\n",
    "qos wred-policy W\n ecn sometimes\n!\n",
    "interface Eth1/2\n priority-flow-control priority 3,4\n!\n",
    "interface Eth1/2\n priority-flow-control watchdog action shout\n!\n",
    "interface PortChannel1\n priority-flow-control priority 9\n!\n",
])
def test_sonic_unreadable_line_fails(block):
    unreadable("sonic-dell", SONIC_OK + block, block.strip().splitlines()[-2 if block.endswith("!\n") and
                                                                       len(block.splitlines()) > 2 else 0].strip())


def test_sonic_watchdog_and_dscp_ranges_are_read():
    raw = get_driver("sonic-dell").parse_raw(
        "!\npriority-flow-control watchdog polling-interval 100\n!\nqos map dscp-tc M\n dscp 0-25,27 traffic-class 0\n"
        " dscp 26 traffic-class 3\n!\ninterface Eth1/1\n priority-flow-control priority 3\n"
        " priority-flow-control asymmetric\n priority-flow-control watchdog on detect-time 200\n!\n")
    assert raw["maps"]["M"][26] == 3 and raw["maps"]["M"][25] == 0 and raw["maps"]["M"][27] == 0
    assert raw["pfc_global"] == ["priority-flow-control watchdog polling-interval 100"]
    assert raw["ports"]["Eth1/1"]["pfc_other"] == ["priority-flow-control asymmetric",
                                                   "priority-flow-control watchdog on detect-time 200"]


# -- through the module: parsed, gathered and merged alike -------------------------------

BAD = {
    "eos": ("interface Ethernet1\n   mtu 9214\n   priority-flow-control priority 3 lossless\n!\nend\n",
            "priority-flow-control priority 3 lossless", "Ethernet1"),
    "nvue": ("nv set interface swp1 link mtu 9216\nnv set qos mapping default-global trust l4\n",
             "nv set qos mapping default-global trust l4", "swp1"),
    "onyx": (ONYX_OK + "   interface ethernet 1/1 dcb priority-flow-control mode maybe\n",
             "interface ethernet 1/1 dcb priority-flow-control mode maybe", "ethernet 1/1"),
    "nxos": (NXOS_OK + "  priority-flow-control mode sometimes\n", "priority-flow-control mode sometimes",
             "Ethernet1/1"),
    "sonic-dell": ("!\ninterface Eth1/1\n mtu 9216\n priority-flow-control priority 3,4\n!\n",
              "priority-flow-control priority 3,4", "Eth1/1"),
}


class FakeSwitch:
    """Answers the module's show commands with a fixed running config."""
    text = ""

    def __init__(self, driver, *a, **kw):
        self.driver, self.shows = driver, 0

    def connect(self):
        pass

    def close(self):
        pass

    def show(self, command):
        self.shows += 1
        return self.text if command == self.driver.show_running else ""

    def push(self, lines, before):
        raise AssertionError("nothing may be pushed after a failed read")


def run_module(args):
    out = io.StringIO()
    with patch_module_args(args), redirect_stdout(out), pytest.raises(SystemExit):
        module.main()
    return json.loads(out.getvalue())


@pytest.mark.parametrize("state", ["parsed", "gathered", "merged"])
@pytest.mark.parametrize("nos", sorted(BAD))
def test_module_fails_naming_switch_and_line(nos, state, monkeypatch):
    text, line, port = BAD[nos]
    FakeSwitch.text = text
    monkeypatch.setattr(module.T, "Switch", FakeSwitch)
    args = {"name": "leaf7", "nos": nos, "state": state, "ports": [port]}
    if state == "parsed":
        args["running_config"] = text
    else:
        args.update(host="192.0.2.1", username="admin", password="pw")
    args["config"] = {"pfc_priority": 3, "trust": "dscp", "dscp_map": {26: 3}, "mtu": 9214 if nos == "eos" else 9216}
    res = run_module(args)
    assert res.get("failed") is True, res
    assert res["msg"].startswith("leaf7: ") and line in res["msg"], res["msg"]
    assert res["commands"] == []
