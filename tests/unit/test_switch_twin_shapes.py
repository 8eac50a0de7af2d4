"""The NX-OS and Onyx twins' answers compared in shape with the real outputs in
../shared/reference/real-outputs/switch_configs, and the Dell SONiC twin's with
tests/unit/fixtures/switch_real/dell_sonic, and the community SONiC twin's with
tests/unit/fixtures/switch_real/sonic_community (EOS and NVUE: see
test_switch_real_eos.py and test_switch_real_nvue.py)."""

import json
import re

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import model as M
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver
from simlab.switches import make_model
from switch_real import recorded

pytestmark = pytest.mark.layers(7)


def _columns(row):
    return [m.start() for m in re.finditer(r"\S+", row)]


def test_nxos_twin_pfc_show_has_the_recorded_shape(real_output):
    real = real_output("switch_configs/nxos-n5k-show-interface-priority-flow-control.txt").strip("\n").splitlines()
    m = make_model("nxos", "leaf1", ["Ethernet1/1", "Ethernet1/2"])
    twin = m.handle("show interface priority-flow-control").strip("\n").splitlines()
    assert twin[:4] == real[:4]  # rule, column titles (with their trailing spaces), rule, blank
    real_rows = [x for x in real if x.startswith("Ethernet")]
    twin_rows = [x for x in twin if x.startswith("Ethernet")]
    assert twin_rows and all(_columns(t) == _columns(real_rows[0]) for t in twin_rows)
    assert all(len(t) == len(r) for t, r in zip(twin_rows, real_rows[:-1]))  # padded alike (the last real row is not)
    d = get_driver("nxos")
    assert d.parse_verify("\n".join(twin)) == {"Ethernet1/1": [], "Ethernet1/2": []}
    assert set(d.parse_verify("\n".join(real))) == {"Ethernet1/47", "Ethernet1/48", "Ethernet4/15", "Ethernet4/16"}


def test_onyx_twin_running_config_has_the_recorded_shape(real_output):
    real = real_output("switch_configs/onyx-running-config-dcb-pfc.txt").splitlines()
    m = make_model("onyx", "leaf1", ["1/7", "1/8"])
    for line in ("enable", "configure terminal", "dcb priority-flow-control enable force",
                 "interface ethernet 1/7-1/8 dcb priority-flow-control mode on force"):
        m.handle(line)
    twin = m.handle("show running-config").splitlines()

    def titles(lines):
        return [lines[i] for i in range(1, len(lines) - 1)
                if lines[i].startswith("## ") and lines[i - 1] == "##" and lines[i + 1] == "##"]
    assert twin[:2] == real[:2] == ["##", '## Running database "initial"']
    assert set(titles(twin)) - {"## Hostname: leaf1"} <= set(titles(real)) | {"## Hostname: leaf1"}
    assert "## DCBX PFC configuration" in titles(twin) and "## DCBX PFC configuration" in titles(real)
    for line in ("   dcb priority-flow-control enable force",
                 "   interface ethernet 1/7-1/8 dcb priority-flow-control mode on force",
                 "no cli default prefix-modes enable", "cli default prefix-modes enable"):
        assert line in real and line in twin, line
    assert twin[-1] == real[-1] == "cli default prefix-modes enable"


def _dell_shape(line):
    """A Dell SONiC interface line with its numbers and object names made generic."""
    line = re.sub(r"(wred-policy|scheduler-policy|qos-map \S+|watchdog action) \S+", r"\1 NAME", line)
    return re.sub(r"\d+", "N", line)


def test_dell_sonic_twin_interface_config_has_the_recorded_shape():
    real = recorded("dell_sonic/running-configuration-interface-qos.txt").splitlines()
    m = make_model("sonic-dell", "leaf1", ["Eth1/1", "Eth1/2"])
    for line in ("sonic-cli", "configure terminal", "qos wred-policy ROCE",
                 "green minimum-threshold 150 maximum-threshold 1500 drop-probability 100", "ecn green",
                 "qos scheduler-policy ROCE", "queue 6", "type strict", "interface Eth1/1", "mtu 9216",
                 "queue 3 wred-policy ROCE", "scheduler-policy ROCE", "priority-flow-control priority 3",
                 "priority-flow-control watchdog action drop", "priority-flow-control watchdog on detect-time 200",
                 "priority-flow-control watchdog restore-time 400", "end"):
        m.handle(line)
    twin = m.handle("show running-configuration interface Eth1/1").splitlines()
    assert twin[:2] == ["!", "interface Eth1/1"] and real[:2] == ["!", "interface Eth1/5"]
    shapes = [_dell_shape(x) for x in real[2:]]
    ours = [x for x in (_dell_shape(y) for y in twin[2:]) if x not in (" mtu N", " no shutdown")]
    assert ours and all(x in shapes for x in ours), [x for x in ours if x not in shapes]
    order = [x for i, x in enumerate(shapes) if x in ours and x not in shapes[:i]]
    assert [x for i, x in enumerate(ours) if x not in ours[:i]] == order  # in the recorded order
    d = get_driver("sonic-dell")
    rec = d.parse("\n".join(real))
    assert rec["ports"]["Eth1/5"]["pfc"] is True and rec["global"]["pfc_priority"] == 0
    assert d.parse_raw("\n".join(real))["ports"]["Eth1/5"]["pfc"] == [0, 1]
    assert d.parse("\n".join(twin))["ports"]["Eth1/1"]["pfc"] is True


def _community(ports):
    m = make_model("sonic-community", "leaf1", ports)
    s = m.session()
    s.handle("sudo -s")
    s.handle("pw")
    return m, s


def test_community_sonic_twin_pfc_shows_print_the_recorded_text():
    real = recorded("sonic_community/show-pfc-priority-doc.txt")
    ports = ["Ethernet0", "Ethernet2", "Ethernet8", "Ethernet10", "Ethernet16"]
    m, s = _community(ports)
    for p in ports:
        s.handle("sonic-db-cli CONFIG_DB HSET 'PORT_QOS_MAP|%s' pfc_enable 3,4" % p)
    assert s.handle("show pfc priority").strip("\n") == real.strip("\n")
    real = recorded("sonic_community/show-pfcwd-config-test-vector.txt")
    m, s = _community(["Ethernet0", "Ethernet4", "Ethernet8"])
    for p in ("Ethernet0", "Ethernet4", "Ethernet8"):
        s.handle("sonic-db-cli CONFIG_DB HSET 'PORT_QOS_MAP|%s' dscp_to_tc_map AZURE pfc_enable 3" % p)
    s.handle("config pfcwd start --action drop all 600 --restoration-time 600")
    s.handle("sonic-db-cli CONFIG_DB HSET 'PFC_WD|GLOBAL' POLL_INTERVAL 600")
    assert s.handle("show pfcwd config").strip("\n") == real.strip("\n")


def test_community_sonic_twin_config_db_uses_the_recorded_tables_and_fields():
    real = json.loads(recorded("sonic_community/config-qos-reload.json"))
    for table, rows in json.loads(recorded("sonic_community/update-qos-ethernet0.json")).items():
        real.setdefault(table, {}).update(rows)
    for name in ("mock-config-db-pfc-wd.txt", "mock-config-db-port-buffer-pg.txt"):
        body = json.loads("{" + recorded("sonic_community/" + name).rstrip().rstrip(",") + "}")
        for key, row in body.items():
            table, _, k = key.partition("|")
            real.setdefault(table, {})[k] = row
    d = get_driver("sonic-community")
    want = M.normalise_intent({"pfc_priority": 3, "trust": "dscp", "dscp_map": {26: 3},
                               "ecn": {"tc": 3, "min_kbytes": 150, "max_kbytes": 1500}, "mtu": 9216},
                              d, ["Ethernet0"], "leaf1")
    m, s = _community(["Ethernet0", "Ethernet4"])
    have, raw = d.read(s.handle(d.show_running), M.scope_of(want))
    ch = d.extra_changes(M.changes(want, have, "merged"), want, have, raw)
    ch["state"] = "merged"
    for line in d.commands(ch, want, have, raw):
        s.handle(line)
    twin = json.loads(s.handle("show runningconfiguration all"))
    assert list(twin) == sorted(set(twin) - {"bgpraw"}) + ["bgpraw"]  # sonic-cfggen's sorted tables, then bgpraw
    for table in ("PORT", "PORT_QOS_MAP", "DSCP_TO_TC_MAP", "WRED_PROFILE", "QUEUE", "BUFFER_PG", "PFC_WD"):
        fields = set(f for row in twin[table].values() for f in row)
        real_fields = set(f for row in real[table].values() for f in row)
        if table == "DSCP_TO_TC_MAP":
            assert fields <= set(str(i) for i in range(64)), table
        else:
            assert fields <= real_fields | {"admin_status"}, (table, fields - real_fields)
    assert twin["BUFFER_PG"]["Ethernet0|3"] == {"profile": "NULL"}
    assert twin["PFC_WD"]["Ethernet0"] == {"action": "drop", "detection_time": "200", "restoration_time": "200"}
