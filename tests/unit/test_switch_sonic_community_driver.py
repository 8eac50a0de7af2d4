"""Community SONiC driver: CONFIG_DB as sonic-utilities' own test data prints it
(tests/unit/fixtures/switch_real/sonic_community), the verification shows on
their recorded formats (tests/unit/fixtures/switch_real/sonic_community), and the whole
cycle against the twin: commands, re-read, PFC watchdog and lossless buffer,
rollback commands, and reads that fail naming the switch and the field."""

import json

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import model as M
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver
from simlab.switches import make_model
from switch_real import recorded

pytestmark = pytest.mark.layers(7)

NOS = "sonic-community"
INTENT = {"pfc_priority": 3, "trust": "dscp", "dscp_map": {26: 3, 48: 6},
          "ecn": {"tc": 3, "min_kbytes": 150, "max_kbytes": 1500, "probability": 100},
          "cnp": {"priority": 6, "strict": True}, "mtu": 9216}


def redis_rows(text):
    """Lines of sonic-utilities' mock CONFIG_DB ("TABLE|KEY": {...}) as tables."""
    out = {}
    for k, v in json.loads("{" + text.rstrip().rstrip(",") + "}").items():
        table, _, key = k.partition("|")
        out.setdefault(table, {})[key] = v
    return out


def real_db():
    """The switch-wide QoS tables of 'config qos reload', Ethernet0's port tables of
    'config qos reload --ports Ethernet0', PORT|Ethernet0, BUFFER_PG|Ethernet0|3-4
    and the PFC_WD rows of the mock CONFIG_DB: one CONFIG_DB."""
    db = json.loads(recorded("sonic_community/config-qos-reload.json"))
    for part in (json.loads(recorded("sonic_community/update-qos-ethernet0.json")),
                 redis_rows(recorded("sonic_community/mock-config-db-pfc-wd.txt")),
                 redis_rows(recorded("sonic_community/mock-config-db-port-buffer-pg.txt"))):
        for table, rows in part.items():
            db.setdefault(table, {}).update(rows)
    return db


def show_all(db):
    """'show runningconfiguration all': CONFIG_DB then bgpraw, indent 4."""
    return json.dumps(dict(db, bgpraw=""), indent=4)


def driver():
    return get_driver(NOS, switch="leaf7")


def test_registered_by_name_and_netmiko_device_type():
    d = get_driver(device_type="edgecore_sonic")
    assert d.nos == NOS and d.label == "community SONiC" and d.canon_port("ethernet 4") == "Ethernet4"
    assert get_driver("sonic-dell").label == "Dell SONiC"  # the Klish driver keeps its name
    with pytest.raises(M.RoceSwitchError, match="leaf7: community SONiC: the driver classifies on DSCP"):
        M.normalise_intent(dict(INTENT, trust="pcp"), driver(), ["Ethernet0"], "leaf7")


def test_real_config_db_read():
    d = driver()
    want = M.normalise_intent(INTENT, d, ["Ethernet0"], "leaf7")
    have, raw = d.read(show_all(real_db()), M.scope_of(want))
    ecn = {"tc": 3, "min_bytes": 1048576, "max_bytes": 2097152, "probability": 5}
    assert have["ports"] == {"Ethernet0": {"mtu": 9100, "pfc": True, "trust": "dscp", "ecn": ecn, "cnp_strict": False}}
    assert have["global"]["pfc_priority"] == 3  # pfc_enable 3,4: the lower one
    assert have["global"]["dscp_map"] == {26: 1, 48: 6} and len(have["global"]["explicit_dscps"]) == 64
    assert raw["wd"]["Ethernet0"]["detection_time"] == "600" and raw["wd_global"] == {"POLL_INTERVAL": "600"}
    # watchdog on and a lossless PG (profile NULL, dynamic model) on 3-4: nothing beyond the data model to add
    ch = d.extra_changes(M.changes(want, have, "merged"), want, have, raw)
    assert set(ch["ports"]["Ethernet0"]) == {"mtu", "ecn", "cnp_strict"}
    assert d.config_drift(want, raw) == []


def test_real_config_db_without_watchdog_and_lossless_pg():
    db = real_db()
    del db["PFC_WD"]["Ethernet0"]
    db["BUFFER_PG"] = {"Ethernet0|0": {"profile": "ingress_lossy_profile"}}
    d = driver()
    want = M.normalise_intent(INTENT, d, ["Ethernet0"], "leaf7")
    have, raw = d.read(show_all(db), M.scope_of(want))
    assert d.config_drift(want, raw) == ["Ethernet0: no lossless buffer profile on priority group 3 (BUFFER_PG)"]
    ch = d.extra_changes(M.changes(want, have, "merged"), want, have, raw)
    ch["state"] = "merged"
    cmds = d.commands(ch, want, have, raw)
    assert cmds == [
        "sonic-db-cli CONFIG_DB HSET 'DSCP_TO_TC_MAP|AZURE' 26 3",
        "config ecn -profile AZURE_LOSSLESS -gmin 150000 -gmax 1500000 -gdrop 100",
        "sonic-db-cli CONFIG_DB HSET 'SCHEDULER|GPUFABRIC_STRICT' type STRICT",
        "config interface mtu Ethernet0 9216",
        "sonic-db-cli CONFIG_DB HSET 'BUFFER_PG|Ethernet0|3' profile NULL",
        "sonic-db-cli CONFIG_DB HSET 'QUEUE|Ethernet0|6' scheduler GPUFABRIC_STRICT",
        "config pfcwd start --action drop Ethernet0 200 --restoration-time 200",
    ]
    # the traditional buffer model takes the lossless profile in use; none in use fails, naming the switch
    db["DEVICE_METADATA"] = {"localhost": {"buffer_model": "traditional"}}
    with pytest.raises(M.RoceSwitchError, match="leaf7: the traditional buffer model and no lossless BUFFER_PROFILE"):
        d.commands(ch, want, have, d.read(show_all(db), M.scope_of(want))[1])


def test_multi_asic_output_is_read_from_localhost():
    d = driver()
    text = json.dumps({"localhost": real_db(), "asic0": {}}, indent=4)
    assert d.parse(text, {"ports": ["Ethernet0"]})["ports"]["Ethernet0"]["trust"] == "dscp"


@pytest.mark.parametrize("table,key,field,value,needle", [
    ("PORT_QOS_MAP", "Ethernet0", "pfc_enable", "3;4", 'PORT_QOS_MAP|Ethernet0 pfc_enable: "3;4"'),
    ("PORT_QOS_MAP", "Ethernet0", "pfc_priority_mode", "on", "PORT_QOS_MAP|Ethernet0 pfc_priority_mode"),
    ("WRED_PROFILE", "AZURE_LOSSLESS", "ecn", "ecn_some", 'WRED_PROFILE|AZURE_LOSSLESS ecn: "ecn_some"'),
    ("WRED_PROFILE", "AZURE_LOSSLESS", "green_min_threshold", "1M", "green_min_threshold"),
    ("PFC_WD", "Ethernet0", "action", "shout", 'PFC_WD|Ethernet0 action: "shout"'),
    ("PFC_WD", "Ethernet0", "detection_time", "fast", "PFC_WD|Ethernet0 detection_time"),
    ("QUEUE", "leaf1|asic0|Ethernet0|3", "wred_profile", "AZURE_LOSSLESS", "not PORT[,PORT]|N[-M]"),
    ("BUFFER_PG", "Ethernet0|3+4", "profile", "NULL", "BUFFER_PG|Ethernet0|3+4 key"),
])
def test_a_managed_field_not_understood_fails_naming_switch_and_field(table, key, field, value, needle):
    db = real_db()
    db.setdefault(table, {}).setdefault(key, {})[field] = value
    with pytest.raises(M.RoceSwitchError) as e:
        driver().parse(show_all(db), {"ports": ["Ethernet0"]})
    msg = str(e.value)
    assert msg.startswith("leaf7: CONFIG_DB line not understood by the community SONiC parser") and needle in msg, msg


def test_dangling_references_and_non_json_fail():
    db = real_db()
    db["PORT_QOS_MAP"]["Ethernet0"]["dscp_to_tc_map"] = "NOPE"
    with pytest.raises(M.RoceSwitchError, match="leaf7: PORT_QOS_MAP|Ethernet0 names dscp_to_tc_map NOPE"):
        driver().parse(show_all(db))
    with pytest.raises(M.RoceSwitchError, match="leaf7: 'show runningconfiguration all' did not print CONFIG_DB"):
        driver().parse("Failed to get cmd output 'sonic-cfggen -d --print-data':rc 1")


def test_verification_shows_on_recorded_formats():
    d = driver()
    text = recorded("sonic_community/show-pfc-priority-doc.txt") + recorded("sonic_community/show-pfcwd-config-test-vector.txt")
    assert d.parse_verify(text)["Ethernet8"] == [3, 4]
    status = d.parse_status(text)
    assert status == {"watchdog_ports": ["Ethernet0", "Ethernet4", "Ethernet8"], "watchdog_polling_ms": 600}
    want = M.normalise_intent(INTENT, d, ["Ethernet0", "Ethernet2", "Ethernet8"], "leaf7")
    assert d.pfc_drift(want, None, status) == ([], [
        "Ethernet2: PFC watchdog off on community SONiC (intent on with PFC on priority 3; "
        "fix: config pfcwd start --action drop Ethernet2 200 --restoration-time 200)"])
    # pfc_watchdog false: the intent does not ask for it
    off = M.normalise_intent(dict(INTENT, pfc_watchdog=False), d, ["Ethernet2"], "leaf7")
    assert d.pfc_drift(off, None, status) == ([], [])
    with pytest.raises(M.RoceSwitchError, match="leaf7: show pfcwd config line not understood"):
        d.parse_status(text.replace("Ethernet4      drop", "Ethernet4     storm"))


class Twin:
    def __init__(self, ports=("Ethernet0", "Ethernet4", "Ethernet8")):
        self.sw = make_model(NOS, "leaf7", list(ports))
        self.s = self.sw.session()
        self.s.handle("sudo -s")
        self.s.handle("pw")

    def text(self):
        return self.s.handle("show runningconfiguration all")

    def run(self, lines):
        outs = [(line, self.s.handle(line)) for line in lines]
        return [(line, o) for line, o in outs if o and not o.isdigit()]


def plan(d, twin, want, state="merged"):
    have, raw = d.read(twin.text(), M.scope_of(want))
    ch = M.changes(want, have, state)
    if state == "deleted":  # as the module plans it
        ch["dscp_unset"] = list(have["global"].get("explicit_dscps", []))
    else:
        ch = d.extra_changes(ch, want, have, raw)
    ch["state"] = state
    return d.commands(ch, want, have, raw) if not M.is_empty(ch) else []


def test_twin_converges_with_watchdog_and_lossless_pg_then_has_nothing_to_do():
    d, twin = driver(), Twin()
    want = M.normalise_intent(INTENT, d, ["Ethernet0", "Ethernet4"], "leaf7")
    cmds = plan(d, twin, want)
    assert cmds[:3] == [
        "sonic-db-cli CONFIG_DB HSET 'DSCP_TO_TC_MAP|AZURE' 26 3 48 6",
        "sonic-db-cli CONFIG_DB HSET 'WRED_PROFILE|AZURE_LOSSLESS' ecn ecn_all wred_green_enable true "
        "green_min_threshold 150000 green_max_threshold 1500000 green_drop_probability 100",
        "sonic-db-cli CONFIG_DB HSET 'SCHEDULER|GPUFABRIC_STRICT' type STRICT"]
    assert cmds[3:9] == [
        "config interface mtu Ethernet0 9216",
        "sonic-db-cli CONFIG_DB HSET 'PORT_QOS_MAP|Ethernet0' dscp_to_tc_map AZURE",
        "config interface pfc priority Ethernet0 3 on",
        "sonic-db-cli CONFIG_DB HSET 'BUFFER_PG|Ethernet0|3' profile NULL",
        "sonic-db-cli CONFIG_DB HSET 'QUEUE|Ethernet0|3' wred_profile AZURE_LOSSLESS",
        "sonic-db-cli CONFIG_DB HSET 'QUEUE|Ethernet0|6' scheduler GPUFABRIC_STRICT"]
    assert cmds[-1] == "config pfcwd start --action drop Ethernet0 Ethernet4 200 --restoration-time 200"
    assert twin.run(cmds) == []
    assert M.strip_internal(d.parse(twin.text(), M.scope_of(want))) == want
    assert plan(d, twin, want) == []
    v = twin.sw.port_view("Ethernet4")
    assert v["pfc_priorities"] == [3] and v["ecn"] == {"tc": 3, "min_bytes": 150000, "max_bytes": 1500000}
    assert v["cnp_strict_tc"] == 6 and v["dscp_map"][26] == 3 and v["mtu"] == 9216
    verify = twin.s.handle(d.show_verify)
    assert d.parse_verify(verify) == {"Ethernet0": [3], "Ethernet4": [3]}
    assert d.pfc_drift(want, None, d.parse_status(verify)) == ([], [])
    # the watchdog stopped on one port: the doctor says which, merged starts it again
    twin.run(["config pfcwd stop Ethernet4"])
    assert d.pfc_drift(want, None, d.parse_status(twin.s.handle(d.show_verify)))[1] == [
        "Ethernet4: PFC watchdog off on community SONiC (intent on with PFC on priority 3; "
        "fix: config pfcwd start --action drop Ethernet4 200 --restoration-time 200)"]
    assert plan(d, twin, want) == ["config pfcwd start --action drop Ethernet4 200 --restoration-time 200"]


def test_twin_changed_priority_thresholds_and_deleted():
    d, twin = driver(), Twin()
    want = M.normalise_intent(INTENT, d, ["Ethernet0"], "leaf7")
    twin.run(plan(d, twin, want))
    want4 = M.normalise_intent(dict(INTENT, pfc_priority=4, ecn={"tc": 4, "min_kbytes": 200, "max_kbytes": 2000}),
                               d, ["Ethernet0"], "leaf7")
    cmds = plan(d, twin, want4)
    assert "config ecn -profile AZURE_LOSSLESS -gmin 200000 -gmax 2000000 -gdrop 100" in cmds
    assert cmds.index("config interface pfc priority Ethernet0 4 on") < cmds.index(
        "config interface pfc priority Ethernet0 3 off")
    assert "sonic-db-cli CONFIG_DB HDEL 'QUEUE|Ethernet0|3' wred_profile" in cmds
    assert twin.run(cmds) == []
    assert plan(d, twin, want4) == []
    assert twin.sw.port_view("Ethernet0")["pfc_priorities"] == [4]
    # deleted: PFC off, watchdog stopped, trust and queue bindings gone, the map with them
    cmds = plan(d, twin, M.deleted_target(d, d.read(twin.text(), M.scope_of(want4))[0], ["Ethernet0"]), "deleted")
    assert "config pfcwd stop Ethernet0" in cmds and "sonic-db-cli CONFIG_DB DEL 'DSCP_TO_TC_MAP|AZURE'" in cmds
    assert twin.run(cmds) == []
    v = twin.sw.port_view("Ethernet0")
    assert v["pfc_priorities"] == [] and v["trust"] == "none" and v["ecn"] is None and v["cnp_strict_tc"] is None
    assert v["mtu"] == 9100 and "PFC_WD" not in twin.sw.running


def test_undo_puts_config_db_back_exactly():
    d, twin = driver(), Twin()
    want = M.normalise_intent(INTENT, d, ["Ethernet0", "Ethernet4"], "leaf7")
    twin.run(plan(d, twin, want))
    before = twin.text()
    assert twin.run(["config interface mtu Ethernet0 1500", "config interface pfc priority Ethernet4 3 off",
                     "config interface pfc priority Ethernet4 5 on", "config pfcwd stop Ethernet0",
                     "config ecn -profile AZURE_LOSSLESS -gmax 3000000",
                     "sonic-db-cli CONFIG_DB HSET 'DSCP_TO_TC_MAP|EXTRA' 1 1",
                     "sonic-db-cli CONFIG_DB HDEL 'QUEUE|Ethernet0|6' scheduler"]) == []
    undo = [line for _, line in d.undo_commands(before, twin.text())]
    assert "sonic-db-cli CONFIG_DB DEL 'DSCP_TO_TC_MAP|EXTRA'" in undo
    assert "sonic-db-cli CONFIG_DB HSET 'PORT|Ethernet0' mtu 9216" in undo
    assert twin.run(undo) == []
    assert twin.text() == before
    assert d.undo_commands(before, twin.text()) == []


def test_twin_refuses_like_sonic():
    d, twin = driver(), Twin()
    import re
    bad = twin.s.handle("config interface pfc priority Ethernet0 3 on")  # no PORT_QOS_MAP entry yet
    assert re.search(d.error_pattern, bad, re.M) and bad == "Cannot find interface Ethernet0"
    assert re.search(d.error_pattern, twin.s.handle("config ecn -profile AZURE_LOSSLESS -gmin 1"), re.M)
    twin.s.handle("exit")
    assert twin.s.handle("config save -y") == "Root privileges are required for this operation"


def test_lab_kind_and_sonic_port_names():
    from simlab.lab import NOS_KINDS, plan, switch_port_name
    assert NOS in NOS_KINDS and [switch_port_name(NOS, i) for i in (1, 2, 32)] == [
        "Ethernet0", "Ethernet4", "Ethernet124"]
    leaf = plan("t", 2, 1, nics=1, nos=[NOS])["switches"][0]
    assert leaf["nos"] == NOS and leaf["ports"] == ["Ethernet0", "Ethernet4"]
    assert make_model(NOS, leaf["name"], leaf["ports"]).ports == leaf["ports"]
    assert make_model(NOS).ports[-1] == "Ethernet124"


def test_module_plan_replaced_and_overridden_on_the_twin():
    from ansible_collections.gpufabric.stack.plugins.modules.roce_switch import plan as module_plan
    d, twin = driver(), Twin(("Ethernet0", "Ethernet4", "Ethernet8"))
    both = M.normalise_intent(INTENT, d, ["Ethernet0", "Ethernet4"], "leaf7")
    twin.run(plan(d, twin, both))
    twin.run(["sonic-db-cli CONFIG_DB HSET 'DSCP_TO_TC_MAP|AZURE' 46 5"])
    # replaced: the DSCP entry the intent does not name goes
    want = M.normalise_intent(INTENT, d, ["Ethernet0", "Ethernet4"], "leaf7")
    have, raw, target, ch = module_plan(d, "replaced", want, twin.text(), M.scope_of(want), True)
    assert d.commands(ch, target, have, raw) == ["sonic-db-cli CONFIG_DB HDEL 'DSCP_TO_TC_MAP|AZURE' 46"]
    # overridden with Ethernet0 only: Ethernet4 loses PFC, watchdog, trust, ECN and CNP, keeps its MTU
    one = M.normalise_intent(INTENT, d, ["Ethernet0"], "leaf7")
    have, raw, target, ch = module_plan(d, "overridden", one, twin.text(), M.scope_of(one), True)
    cmds = d.commands(ch, target, have, raw)
    assert "config interface pfc priority Ethernet4 3 off" in cmds and "config pfcwd stop Ethernet4" in cmds
    assert not any("mtu" in c for c in cmds) and not any("Ethernet0" in c for c in cmds if "DSCP" not in c)
    assert twin.run(cmds) == []
    v = twin.sw.port_view("Ethernet4")
    assert v["pfc_priorities"] == [] and v["trust"] == "none" and v["ecn"] is None and v["mtu"] == 9216
    assert twin.sw.port_view("Ethernet0")["pfc_priorities"] == [3]


def _module(tmp_path, **args):
    import os
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    f = tmp_path / "args.json"
    f.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(name="leaf7", nos=NOS, **args)}))
    p = subprocess.run([sys.executable, "-m", "ansible_collections.gpufabric.stack.plugins.modules.roce_switch",
                        str(f)], capture_output=True, text=True, cwd=repo,
                       env=dict(os.environ, PYTHONPATH=str(repo / ".build")))
    return json.loads(p.stdout)


def test_module_rendered_includes_watchdog_and_lossless_pg_and_parsed_reads_config_db(tmp_path):
    out = _module(tmp_path, state="rendered", ports=["Ethernet0"],
                  config={"pfc_priority": 3, "trust": "dscp", "dscp_map": {"26": 3}, "mtu": 9216})
    assert out["rendered"][-2:] == ["sonic-db-cli CONFIG_DB HSET 'BUFFER_PG|Ethernet0|3' profile NULL",
                                    "config pfcwd start --action drop Ethernet0 200 --restoration-time 200"]
    out = _module(tmp_path, state="parsed", ports=["Ethernet0"], running_config=show_all(real_db()))
    assert out["parsed"]["ports"]["Ethernet0"]["pfc"] is True and out["parsed"]["global"]["dscp_map"]["48"] == 6
    db = real_db()
    db["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] = "3,9"
    out = _module(tmp_path, state="parsed", running_config=show_all(db))
    assert out["failed"] and out["msg"].startswith("leaf7: CONFIG_DB line not understood") and "3,9" in out["msg"]
