"""Community SONiC: the show parsers (the read side of its future driver) on real
published formats (tests/unit/fixtures/switch_real/sonic_community); a row of a table
they read is understood or the parse fails naming the switch and the row."""

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import model as M
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.sonic_community import \
    CommunitySonicShows
from switch_real import recorded

pytestmark = pytest.mark.layers(7)

P = CommunitySonicShows("leaf7")


def fails(fn, text, what):
    with pytest.raises(M.RoceSwitchError, match="leaf7: %s line not understood by the community SONiC parser"
                       % what):
        fn(text)


def test_pfc_counters_doc_rx_and_tx():
    out = P.parse_pfc_counters(recorded("sonic_community/show-pfc-counters-doc.txt"))
    assert sorted(out) == ["rx", "tx"]
    assert list(out["rx"]) == ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"] == list(out["tx"])
    assert out["tx"]["Ethernet12"] == [0] * 8


def test_pfc_counters_real_z9332_thousands_separators():
    out = P.parse_pfc_counters(recorded("sonic_community/show-pfc-counters-z9332-rx-grep.txt"))
    assert out["tx"] == {} and len(out["rx"]) == 9
    assert out["rx"]["Ethernet6"] == [0, 0, 0, 93845, 93844, 0, 0, 0]
    assert out["rx"]["Ethernet16"] == [0] * 8


@pytest.mark.parametrize("row", ["  Ethernet6       0       0       0  93.845  93,844       0       0       0",
                                 "  Ethernet6       0       0       0       0       0       0       0",
                                 "  Ethernet6       0       0       0    lots       0       0       0       0"])
def test_pfc_counters_row_not_read_fails(row):
    text = recorded("sonic_community/show-pfc-counters-z9332-rx-grep.txt").replace(
        "  Ethernet6       0       0       0  93,845  93,844       0       0       0", row)
    fails(P.parse_pfc_counters, text, "show pfc counters")


def test_pfc_counters_na():
    text = recorded("sonic_community/show-pfc-counters-doc.txt").replace(
        "Ethernet0       0       0", "Ethernet0     N/A       0", 1)
    assert P.parse_pfc_counters(text)["rx"]["Ethernet0"][0] is None


def test_pfc_priority_doc():
    out = P.parse_pfc_priority(recorded("sonic_community/show-pfc-priority-doc.txt"))
    assert out == dict((p, [3, 4]) for p in ("Ethernet0", "Ethernet2", "Ethernet8", "Ethernet10", "Ethernet16"))
    text = recorded("sonic_community/show-pfc-priority-doc.txt").replace("Ethernet2    3,4", "Ethernet2")
    assert P.parse_pfc_priority(text)["Ethernet2"] == []
    fails(P.parse_pfc_priority, text.replace("Ethernet8    3,4", "Ethernet8    3;4"), "show pfc priority")


def test_ecn_profiles():
    out = P.parse_ecn(recorded("sonic_community/show-ecn-ecnconfig-test-vector.txt"))
    assert sorted(out) == ["AZURE_LOSSLESS", "AZURE_LOSSY"]
    lossless = out["AZURE_LOSSLESS"]
    assert lossless["ecn"] == "ecn_all" and lossless["green_min_threshold"] == 1048576
    assert out["AZURE_LOSSY"]["green_min_threshold"] == 4095  # right-aligned number
    assert P.ecn_of(lossless, "AZURE_LOSSLESS") == {"min_bytes": 1048576, "max_bytes": 2097152, "probability": 5,
                                                    "mode": "ecn_all"}
    # the Command Reference prints the name in markdown bold: read the same
    bold = recorded("sonic_community/show-ecn-ecnconfig-test-vector.txt").replace("Profile: AZURE_LOSSLESS",
                                                                        "Profile: **AZURE_LOSSLESS**")
    assert P.parse_ecn(bold) == out


def test_ecn_unreadable():
    text = recorded("sonic_community/show-ecn-ecnconfig-test-vector.txt")
    fails(P.parse_ecn, text.replace("green_min_threshold      1048576", "green min threshold  1048576", 1),
          "show ecn")
    with pytest.raises(M.RoceSwitchError, match="leaf7: WRED profile W has ecn 'ecn_purple'"):
        P.ecn_of({"ecn": "ecn_purple"}, "W")
    assert P.ecn_of({"ecn": "ecn_none"}) is None


def test_pfcwd_stats():
    out = P.parse_pfcwd_stats(recorded("sonic_community/show-pfcwd-stats-test-vector.txt"))
    assert sorted(out) == ["Ethernet-BP0", "Ethernet-BP260", "Ethernet0", "Ethernet4"]
    assert out["Ethernet0"][3] == {"status": "N/A", "storm_detected": 0, "storm_restored": 1, "tx_ok": 8814,
                                   "tx_drop": 0, "rx_ok": 1757, "rx_drop": 49, "tx_last_ok": 470,
                                   "tx_last_drop": 5, "rx_last_ok": 9734, "rx_last_drop": 35}
    fails(P.parse_pfcwd_stats, recorded("sonic_community/show-pfcwd-stats-test-vector.txt").replace("8814/0", "8814"),
          "show pfcwd stats")


def test_pfcwd_config():
    out = P.parse_pfcwd_config(recorded("sonic_community/show-pfcwd-config-test-vector.txt"))
    assert out["polling_ms"] == 600 and out["big_red_switch"] is None
    assert out["ports"]["Ethernet4"] == {"action": "drop", "detection_ms": 600, "restoration_ms": 600,
                                         "history": "disable"}
    fails(P.parse_pfcwd_config, recorded("sonic_community/show-pfcwd-config-test-vector.txt").replace(
        "Ethernet8      drop", "Ethernet8     shout"), "show pfcwd config")
