"""The node's LLDP reader (module_utils/rdma_check/lldp.py) against lldpd's
real JSON output, json0 and json, and its answers when lldpd is missing or
silent. Sources: tests/unit/fixtures/lldp_real/host/README.md."""

import json
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check import lldp

pytestmark = pytest.mark.layers(9)

REAL = Path(__file__).parent / "fixtures" / "lldp_real" / "host"

# per file: how many neighbours, and some (local, sysname, port ID type, port ID, chassis ID) they must give
WANT = {
    "cumulus43_internet_net-show-lldp-json.json0.json": (2, [("swp1", "exit01", "ifname", "swp6", "52:54:00:7f:7a:90"),
                                                          ("swp2", "exit02", "ifname", "swp6", "52:54:00:cf:36:be")]),
    "cumulus43_leaf01_net-show-lldp-json.json0.json": (4, [("swp1", "spine01", "ifname", "swp1", "52:54:00:83:72:c9"),
                                                        ("swp3", "leaf02", "ifname", "swp3", "52:54:00:a5:d3:9f")]),
    "unifabric_testJSON1_json0.json": (3, [("enp129s0f0", "DaoCloud_ShangPu_H3C_D01_AccessSwitch", "ifname",
                                            "GigabitEthernet1/0/17", "58:c7:ac:5f:2d:2c"),
                                           ("enp5s0f0np0", "10-20-1-50", "mac", "e8:eb:d3:93:ae:10",
                                            "ac:1f:6b:25:86:64")]),
    "unifabric_testJSON2_json0.json": (5, [("ens1np0", "StorageSW", "local", "Ethernet120", "70:06:92:6e:32:64"),
                                           ("ens842np0", "LEAF04", "local", "Ethernet184", "70:06:92:6e:34:5c")]),
    "sonic-dbsyncd_lldpctl.json": (33, [("eth0", "switch218ad08", "ifname", "ge-0/0/17", "00:11:22:33:44:55"),
                                        ("Ethernet100", "switch13", "ifname", "Ethernet26", "00:11:22:33:44:55")]),
    "sonic-dbsyncd_lldpctl_mgmt_only.json": (1, [("eth0", "switchad11", "local", "535", "00:11:22:33:44:55")]),
    "sonic-dbsyncd_interface_only.json": (2, [("Ethernet0", None, "ifname", "Ethernet1", "00:11:22:33:44:55")]),
    "sonic-dbsyncd_short_short.json": (0, []),
    "writer-1.0.16-none.json": (0, []),
    "writer-1.0.16-one.json": (1, [("enp1s0f0np0", "leaf01", "ifname", "swp1", "1c:34:da:aa:bb:01")]),
    "writer-1.0.16-two.json": (2, [("enp1s0f1np1", "leaf02", "local", "Ethernet8", "1c:34:da:aa:bb:02")]),
    "writer-1.0.16-sameif.json": (2, [("enp1s0f0np0", "leaf01", "ifname", "swp1", "1c:34:da:aa:bb:01"),
                                      ("enp1s0f0np0", "leaf02", "local", "Ethernet8", "1c:34:da:aa:bb:02")]),
    "writer-1.0.16-nosysname.json": (1, [("enp2s0f0np0", None, "local", "34", "a4:8c:db:6a:09:00")]),
    "writer-1.0.16-quote.json0.json": (1, [("eth0", 'sw"1', "ifname", "Eth1/1", 'id"x')]),
}
# the json0 twin of each writer file gives the same neighbours
for _name in [n for n in WANT if n.startswith("writer-") and n.endswith(".json") and "quote" not in n]:
    WANT[_name.replace(".json", ".json0.json")] = WANT[_name]


def test_every_real_file_is_held_to_figures():
    assert sorted(p.name for p in REAL.glob("*.json")) == sorted(list(WANT) + ["writer-1.0.16-quote.json"])


@pytest.mark.parametrize("name", sorted(WANT))
def test_real_output_gives_its_neighbours(name):
    count, some = WANT[name]
    got = lldp.parse((REAL / name).read_text())
    assert len(got) == count
    tuples = [(n["local"], n["sysname"], n["port_id_type"], n["port_id"], n["chassis_id"]) for n in got]
    for t in some:
        assert t in tuples


def test_the_folded_and_the_regular_form_read_the_same():
    for case in ("one", "two", "sameif", "nosysname", "none"):
        a = lldp.parse((REAL / ("writer-1.0.16-%s.json" % case)).read_text())
        b = lldp.parse((REAL / ("writer-1.0.16-%s.json0.json" % case)).read_text())
        assert a == b, case


def test_a_system_name_with_a_quote_breaks_the_folded_form_and_fails_quoting_it():
    text = (REAL / "writer-1.0.16-quote.json").read_text()
    with pytest.raises(lldp.LldpError, match=r"""lldpcli did not print JSON \(Expecting ':' delimiter\): '"sw"1": \{'"""):
        lldp.parse(text)


def test_an_entry_of_a_managed_pf_without_a_port_id_fails_quoting_it():
    doc = json.loads((REAL / "writer-1.0.16-one.json0.json").read_text())
    del doc["lldp"][0]["interface"][0]["port"]
    text = json.dumps(doc)
    with pytest.raises(lldp.LldpError, match=r"the neighbour of enp1s0f0np0 has no port ID: .*leaf01"):
        lldp.parse(text, managed=["enp1s0f0np0"])
    assert lldp.parse(text, managed=["enp9s0"]) == []     # not a PF of ours: read as far as it goes


def test_read_names_a_missing_lldpd_and_one_that_does_not_answer():
    assert lldp.read(lambda argv: (0, "", ""), lambda tool: None)["error"] == (
        "lldpcli not found: lldpd is not installed on the node")
    stderr = "[WARN/control] unable to connect to socket /run/lldpd/lldpd.socket: No such file or directory\n"
    got = lldp.read(lambda argv: (1, "", stderr), lambda tool: "/usr/sbin/lldpcli")
    assert got == {"neighbors": [], "error": "lldpcli failed (rc 1): [WARN/control] unable to connect to socket "
                                            "/run/lldpd/lldpd.socket: No such file or directory; is lldpd running?"}
    calls = []
    ok = lldp.read(lambda argv: (calls.append(argv), (0, '{"lldp": [{}]}', ""))[1], lambda tool: "/usr/sbin/lldpcli")
    assert ok == {"neighbors": [], "error": ""}
    assert calls == [["/usr/sbin/lldpcli", "-f", "json0", "show", "neighbors"]]
