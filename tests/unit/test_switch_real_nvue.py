"""Cumulus NVUE: ``nv show qos roce`` and the ``nv config show -o commands``
parser on real published formats (tests/unit/fixtures/switch_real/nvue), the
rule that a line naming a managed setting is read or fails the read, and the
twin's answer compared in shape with the recordings."""

import re

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import model as M
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver
from simlab.switches import make_model
from switch_real import recorded, unreadable

pytestmark = pytest.mark.layers(7)


# -- Cumulus NVUE nv show qos roce ------------------------------------------------------

@pytest.mark.parametrize("rec,mode", [("nvue/nv-show-qos-roce-cl514-single-ipool.txt", "lossless-single-ipool"),
                                      ("nvue/nv-show-qos-roce-cl56-lossless.txt", "lossless")])
def test_nvue_roce_show_mode_trust_ecn(rec, mode):
    d = get_driver("nvue")
    st = d.parse_status(recorded(rec))
    assert st["enable"] is True and st["mode"] == mode and st["trust"] == "both"
    assert st["pfc_priorities"] == [3] and st["pfc_rx"] is True and st["pfc_tx"] is True
    # 146.48 KB and 1.43 MB at 1024: the documented 150000 / 1500000 bytes within NVUE's rounding
    assert st["ecn"] == {"tcs": [0, 3], "min_bytes": 149996, "max_bytes": 1499464, "probability": 100,
                         "mode": "ECN"}
    assert d.parse_verify(recorded(rec)) == {"*": [3]}
    want = M.normalise_intent({"pfc_priority": 3, "trust": "both", "ecn": {"tc": 3, "min_kbytes": 150,
                                                                          "max_kbytes": 1500}}, d, ["swp1"])
    assert d.status_drift(want, st) == []
    want["global"]["ecn"]["max_bytes"] = 2000000
    want["global"]["trust"] = "dscp"
    assert d.status_drift(want, st) == ["operational trust both (intent dscp)",
                                        "operational ECN max_bytes 1499464 (intent 2000000)"]


def test_nvue_roce_show_516_state_row():
    """Cumulus Linux 5.15 renamed the first row 'enable on' to 'state enabled'
    (applied column only); before, the 5.16 table read as RoCE on/off unknown."""
    d = get_driver("nvue")
    text = recorded("nvue/nv-show-qos-roce-cl516-state.txt")
    st = d.parse_status(text)
    assert st["enable"] is True and st["mode"] == "lossless-single-ipool" and st["trust"] == "both"
    assert st["pfc_priorities"] == [3] and st["pfc_rx"] is True and st["pfc_tx"] is True
    assert st["ecn"] == {"tcs": [0, 3], "min_bytes": 149996, "max_bytes": 1499464, "probability": 100,
                         "mode": "ECN"}
    assert d.parse_verify(text) == {"*": [3]}
    assert d.parse_status(text.replace("enabled\nmode", "disabled\nmode", 1))["enable"] is False
    # the rest of the table is the 5.14 one: only the first row's name changed
    keys, older = _table_shape(text)["keys"], _table_shape(recorded("nvue/nv-show-qos-roce-cl514-single-ipool.txt"))
    assert keys[0] == "state" and older["keys"][0] == "enable" and keys[1:] == older["keys"][1:]
    bad = text.replace("state" + " " * 38 + "enabled", "state" + " " * 38 + "on")
    assert bad != text
    with pytest.raises(M.RoceSwitchError, match=r"leaf7: nv show qos roce line not understood .*state.*'state +on'"):
        get_driver("nvue", switch="leaf7").parse_status(bad)


def test_nvue_roce_show_lossy_is_drift():
    text = recorded("nvue/nv-show-qos-roce-cl56-lossless.txt").replace(
        "mode                lossless     lossless", "mode                lossy        lossy   ")
    d = get_driver("nvue")
    want = M.normalise_intent({"pfc_priority": 3, "trust": "both"}, d, ["swp1"])
    assert d.status_drift(want, d.parse_status(text)) == ["RoCE mode lossy (intent lossless PFC on priority 3)"]


@pytest.mark.parametrize("old,new,what", [
    ("  min-threshold     146.48 KB", "  min-threshold     146.48 furlongs", "ECN min threshold"),
    ("  trust-mode        pcp,dscp", "  trust-mode        sometimes", "trust"),
    ("  pfc-priority      3", "  pfc-priority      3 and 4", "PFC priority"),
    ("mode                lossless", "mode                lossful ", "mode"),
])
def test_nvue_roce_show_unreadable_row_fails(old, new, what):
    text = recorded("nvue/nv-show-qos-roce-cl56-lossless.txt").replace(old, new)
    with pytest.raises(M.RoceSwitchError, match="leaf7: nv show qos roce line not understood .*%s" % what):
        get_driver("nvue", switch="leaf7").parse_status(text)


def _table_shape(text):
    """Top-level and nested row names, column count of the rule, '===' block titles and their headers."""
    lines = text.splitlines()
    dash = next(i for i, x in enumerate(lines) if re.fullmatch(r"-+(?: +-+)+ *", x))
    keys, i = [], dash + 1
    while i < len(lines) and lines[i].strip() and not (i + 1 < len(lines) and lines[i + 1].startswith("===")):
        keys.append(re.match(r"( *\S+)", lines[i]).group(1))
        i += 1
    blocks = [(lines[j - 1], lines[j + 1].split()) for j, x in enumerate(lines) if x.startswith("===")]
    return {"head": lines[dash - 1].split(), "rule": len(lines[dash].split()), "keys": keys, "blocks": blocks}


def test_nvue_twin_roce_show_has_the_recorded_shape():
    m = make_model("nvue", "leaf1", ["swp1", "swp2"])
    m.handle("nv set qos roce mode lossless")
    m.handle("nv config apply -y")
    twin = _table_shape(m.handle("nv show qos roce"))
    real = _table_shape(recorded("nvue/nv-show-qos-roce-cl514-single-ipool.txt"))
    assert twin == real
    older = _table_shape(recorded("nvue/nv-show-qos-roce-cl56-lossless.txt"))
    assert sorted(older["keys"]) == sorted(k for k in real["keys"] if k != "  cable-length")
    assert get_driver("nvue").parse_status(m.handle("nv show qos roce"))["mode"] == "lossless"


# -- Cumulus NVUE running config ------------------------------------------------------

def test_nvue_dscp_range_in_running_config_is_expanded():
    m = get_driver("nvue").parse("nv set qos mapping default-global trust l3\n"
                                 "nv set qos mapping default-global dscp 24-27,30 switch-priority 4\n"
                                 "nv set interface swp1 link mtu 9216")
    assert m["global"]["dscp_map"][26] == 4 and set(m["global"]["explicit_dscps"]) >= {24, 25, 26, 27, 30}


# 5.15 and later: 'nv set qos roce state enabled|disabled' (CumulusNetworks/docs
# content/cumulus-linux-515/Whats-New/New-and-Changed-NVUE-Commands.md: 'nv set
# qos roce enable on|off' became 'nv set qos roce state enabled|disabled')
@pytest.mark.parametrize("lines, on", [
    (["nv set qos roce state enabled"], True),
    (["nv set qos roce state enabled", "nv set qos roce mode lossless"], True),
    (["nv set qos roce state disabled"], False),
    (["nv set qos roce state disabled", "nv set qos roce mode lossless"], False),
    (["nv set qos roce"], True),  # up to 5.14, kept
    (["nv set qos roce enable on"], True),
    (["nv set qos roce enable off", "nv set qos roce mode lossless"], False),
    (["nv set qos roce mode lossless"], True),
])
def test_nvue_roce_state_and_enable_forms(lines, on):
    text = "\n".join(lines) + "\nnv set interface swp1 link mtu 9216\n"
    view, _seen, switch, raw = get_driver("nvue").parse_views(text)
    assert raw["roce"] is on
    assert switch["pfc_priority"] == (3 if on else None) and switch["trust"] == ("both" if on else "pcp")
    assert (view("swp1")["ecn"] is not None) is on


@pytest.mark.parametrize("line", [
    "nv set qos roce state on",
    "nv set qos roce state enable",
    "nv set qos roce enable enabled",
    "nv set qos roce mode lossless-ish",
    "nv set qos mapping default-global trust l4",
    "nv set qos mapping default-global dscp af31 switch-priority 3",
    "nv set qos pfc default-global switch-priority 3 4",
    "nv set qos congestion-control default-global traffic-class 3 min-threshold 150KB",
    "nv set qos pfc default-global rx on",
    "nv set interface swp1 qos pfc prof MYPFC",
])
def test_nvue_unreadable_managed_line_fails_naming_it(line):
    unreadable("nvue", "nv set system hostname leaf7\n%s\n" % line, line)
