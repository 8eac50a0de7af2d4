"""Each NOS driver's LLDP table reader (Driver.parse_lldp, lldp_text.py)
against real published outputs (tests/unit/fixtures/lldp_real/<nos>/, each
with its source), and its failure on a line naming a managed port that it
cannot read."""

from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.model import RoceSwitchError

pytestmark = pytest.mark.layers(9)

REAL = Path(__file__).parent / "fixtures" / "lldp_real"
NOS = {"eos": "eos", "nxos": "nxos", "onyx": "onyx", "nvue": "nvue", "sonic_dell": "sonic-dell",
       "sonic_community": "sonic-community"}

# per file: the neighbours as (local port in the driver's spelling, system name, port ID), in order
WANT = {
    "eos/show-lldp-neighbors-ntc-1.txt": [
        ("Ethernet1", "localhost", "Ethernet1"), ("Ethernet2", "localhost", "Ethernet2"),
        ("Ethernet3/1", "tg104.sjc.aristanetworks.com", "Ethernet3/2"), ("Ma1/1", "dc1-rack11-tor1.sjc", "1/1")],
    # a modular chassis's slot/port/lane ports and a fixed switch's lane ports, cabled to each other (Et3/2/1-Et49/1)
    "eos/show-lldp-neighbors-cmp308-7804-modular.txt": [
        ("Ethernet3/1/1", "R1-smv462.sjc.aristanetworks.com", "Ethernet1/1"),
        ("Ethernet3/2/1", "R3-ta366.sjc.aristanetworks.com", "Ethernet49/1"),
        ("Ethernet3/4/1", "R5-ta368.sjc.aristanetworks.com", "Ethernet51/1"),
        ("Ethernet3/5/1", "R6-ta373.sjc.aristanetworks.com", "Ethernet50/1"),
        ("Ma1/1", "r161-rack3-tor42.sjc.aristanetworks.com", "Ethernet10")],
    "eos/show-lldp-neighbors-ta366-7280sr2k-lanes.txt": [
        ("Ethernet49/1", "R2-cmp308.sjc.aristanetworks.com", "Ethernet3/2/1"),
        ("Ethernet50/1", "R5-ta368.sjc.aristanetworks.com", "Ethernet52/1"),
        ("Ethernet51/1", "R6-ta373.sjc.aristanetworks.com", "Ethernet51/1"),
        ("Ma1", "r161-rack3-tor42.sjc.aristanetworks.com", "Ethernet15")],
    "eos/show-lldp-neighbors-ntc-2.txt": [("Ethernet%d" % n, "arista2", "Ethernet%d" % n) for n in range(2, 8)],
    "nvue/nv-show-interface-lldp-doc.txt": [
        ("eth0", "oob-mgmt-switch", "swp10"), ("swp1", "server01", "48:b0:2d:76:ee:8e"),
        ("swp2", "server02", "48:b0:2d:86:c1:f8"), ("swp3", "server03", "48:b0:2d:08:de:37"),
        ("swp49", "leaf02", "swp49"), ("swp50", "leaf02", "swp50"), ("swp51", "spine01", "swp1"),
        ("swp52", "spine02", "swp1"), ("swp53", "spine03", "swp1"), ("swp54", "spine04", "swp1")],
    # Cumulus Linux 5.16 VX: the Speed column empty on every row, two ports hearing the same system name
    "nvue/nv-show-interface-lldp-cl516-netlabbuilder.txt": [
        ("swp1", "cumulus", "swp1"), ("swp2", "cumulus", "swp1"), ("swp65", "ubuntu", "48:b0:2d:27:5f:50")],
    # Cumulus Linux 5.14 on NVIDIA Air: 2x breakout ports on both ends, wider columns
    "nvue/nv-show-interface-lldp-cl514-air-metalsoft.txt": [("eth0", "oob-mgmt-switch-leaf-1", "swp10")] + [
        ("swp%ds%d" % (33 + 8 * spine + n, half), "spine-s%02d" % spine, "swp%ds%d" % (n + 1, half))
        for spine in range(4) for n in range(8) for half in (0, 1)],
    "nxos/show-lldp-neighbors-detail-genie-indented.txt": [
        ("Ethernet1/14", None, "PCI-E Slot 1, Port 2"), ("Ethernet1/38", "VPN-1", "0"), ("Ethernet1/40", "MX-L0", "1"),
        ("Ethernet1/42", "CAT2960-CED1", "Te2/0/2"), ("Ethernet1/43", "RCAT2960", "Te1/0/1"),
        ("Ethernet1/46", "NX1-2", "Ethernet1/46"), ("Ethernet1/54", "NX2-2", "Ethernet1/54")],
    "nxos/show-lldp-neighbors-detail-napalm-nxosv.txt": [
        ("Ethernet2/1", "nxos2.madeupdomain.com", "Eth2/1"), ("Ethernet2/2", "nxos2.madeupdomain.com", "Eth2/2"),
        ("Ethernet2/3", "nxos2.madeupdomain.com", "Eth2/3"), ("Ethernet2/4", "nxos2.madeupdomain.com", "Eth2/4"),
        ("Ethernet1/6", "bigip.example.com", "1/2.1"), ("Ethernet1/1", "leaf01", "Ethernet1/1"),
        ("Ethernet1/2", "leaf02", "Ethernet1/1")],
    "nxos/show-lldp-neighbors-detail-ntc-1.txt": [
        ("mgmt0", "Switch.cisco.com", "Fa1/0/9"), ("Ethernet1/1", "n9k2.company.com", "Ethernet1/1"),
        ("Ethernet1/2", "n9k2.company.com", "Ethernet1/2"), ("Ethernet2/2", "N3K.cisconxapi.com", "Ethernet1/49")],
    "nxos/show-lldp-neighbors-detail-ntc-2.txt": [
        ("Ethernet1/52", "SW-NEXUS", "Ethernet1/52"), ("Eth101/1/10", "pure-storage", "1a51.4800.0001")],
    "onyx/show-lldp-remote-intel-mfd.txt": [
        ("Eth1/5/1", None, "3c:fd:aa:bb:cc:f0"), ("Eth1/5/2", None, "3c:fd:aa:bb:cc:f1"),
        ("ethernet 1/31", "LIN-ND3-DS5000", "fortyGigE 0/52")],
    "sonic_community/show-lldp-table-cmdref.txt": [
        ("Ethernet112", "T1-1", "hundredGigE1/2"), ("Ethernet116", "T1-2", "hundredGigE1/2"),
        ("eth0", "swtor-b2lab2-1610", "GigabitEthernet 0/2")],
    "sonic_community/show-lldp-table-issue11645-partial.txt": [
        ("Ethernet0", "ARISTA01T1", "fortyGigE0/0"), ("Ethernet1", "ARISTA01T1", "fortyGigE0/4"),
        ("Ethernet4", None, "fortyGigE0/0"), ("Ethernet5", None, "fortyGigE0/4"),
        ("Ethernet16", "ARISTA03T1", "fortyGigE0/0"), ("Ethernet17", "ARISTA03T1", "fortyGigE0/4"),
        ("Ethernet20", "ARISTA04T1", "fortyGigE0/0"), ("Ethernet21", "ARISTA04T1", "fortyGigE0/4")],
    "sonic_community/show-lldp-table-issue18871.txt": [
        ("Ethernet104", "sw0", "FortyGigabitEthernet 1/0/49"), ("Ethernet108", "sw0", "FortyGigabitEthernet 1/0/50"),
        ("Ethernet116", None, "48:df:37:e0:24:e0"), ("Ethernet117", None, "48:df:37:e0:24:e1"),
        ("Ethernet118", None, "48:df:37:e0:24:e2"), ("Ethernet119", None, "48:df:37:e0:24:e3"),
        ("Ethernet125", None, "te1/0/2")],
    "sonic_community/show-lldp-table-issue19209-error-line.txt": [
        ("Ethernet32", "ARISTA01T3", "Ethernet1"), ("Ethernet40", "ARISTA01T3", "Ethernet2"),
        ("Ethernet64", "ARISTA03T3", "Ethernet1"), ("Ethernet224", "ARISTA04T3", "Ethernet1"),
        ("Ethernet232", "ARISTA04T3", "Ethernet2"), ("Ethernet256", "ARISTA06T3", "Ethernet1")],
    "sonic_community/show-lldp-table-pr5698.txt": [
        ("Ethernet224", "ARISTA01T1", "Ethernet1"), ("Ethernet232", "ARISTA02T1", "Ethernet1"),
        ("Ethernet240", "ARISTA03T1", "Ethernet1"), ("Ethernet248", "ARISTA04T1", "Ethernet1"),
        ("eth0", "MTR-F-1-S-LAB-R2-5-SW01", "35")],
    "sonic_community/show-lldp-table-test-2macs.txt": [
        ("Ethernet0", "dummy", "00:00:00:00:00:01"), ("Ethernet0", "dummy", "00:00:00:00:00:02")],
    "sonic_dell/show-lldp-neighbor-bcm-hld.txt": [("Ethernet60", "sonic", "Ethernet32")],
    "sonic_dell/show-lldp-neighbor-bcm-hld-power.txt": [("Ethernet60", "sonic", "Ethernet32")],
    "sonic_dell/show-lldp-neighbor-s5248f-3.4.0-border.txt": [
        ("Ethernet1", "spine-1-1", "Ethernet5"), ("Ethernet2", "spine-1-2", "Ethernet5"),
        ("Ethernet8", "int-router-1", "Ethernet1"), ("Ethernet9", "ext-router-1", "Ethernet1")],
    "sonic_dell/show-lldp-neighbor-s5248f-3.4.0.txt": [
        ("Ethernet1", "spine-1-1", "Ethernet1"), ("Ethernet2", "spine-1-2", "Ethernet1"),
        ("Ethernet4", "leaf-1-2", "Ethernet4"), ("Ethernet5", "leaf-1-2", "Ethernet5"),
        ("Ethernet8", "CRM-Master", "Ethernet1")],
    "eos/show-lldp-neighbors-ceos-4.32-evpn-lab.txt": [
        ("Ethernet1", "dc2-spine1", "Ethernet6"), ("Ethernet2", "dc2-spine2", "Ethernet6"),
        ("Ethernet3", "dc2-border-leaf1", "Ethernet3"), ("Ethernet4", "dc2-border-leaf1", "Ethernet4"),
        ("Ethernet5", "wan", "Ethernet4")] + [("Ma0", dev, pid) for dev, pid in (
            ("dc1-border-leaf2", "Management0"), ("dc2-client1", "0242.ac64.6483"), ("dc2-leaf1a", "Management0"),
            ("dc2-leaf1b", "Management0"), ("dc1-client2", "0242.ac64.6470"), ("dc1-client1", "0242.ac64.646f"),
            ("dc2-client2", "0242.ac64.6484"), ("dc2-client3", "0242.ac64.6485"), ("dc2-client4", "0242.ac64.6486"),
            ("dc1-leaf1a", "Management0"), ("dc1-client3", "0242.ac64.6471"), ("dc1-client4", "0242.ac64.6472"),
            ("dc1-leaf2a", "Management0"), ("dc1-spine1", "Management0"), ("wan", "Management0"),
            ("dc2-leaf2a", "Management0"))],
}


def body(rel):
    return (REAL / rel).read_text().split("# ---\n", 1)[1]


def driver(rel):
    return get_driver(NOS[rel.split("/")[0]], switch="leaf1")


def test_every_file_is_held_to_figures():
    assert sorted(str(p.relative_to(REAL)) for p in REAL.glob("*/*.txt")) == sorted(WANT)


@pytest.mark.parametrize("rel", sorted(WANT))
def test_real_lldp_table(rel):
    got = driver(rel).parse_lldp(body(rel))
    assert [(n["local"], n["sysname"], n["port_id"]) for n in got] == WANT[rel]


def test_the_fields_beyond_the_table():
    nx = driver("nxos/x").parse_lldp(body("nxos/show-lldp-neighbors-detail-ntc-1.txt"))
    assert (nx[1]["chassis_id"], nx[1]["port_descr"]) == ("5087.89a1.d8d6", "Ethernet1/1")
    dell = driver("sonic_dell/x").parse_lldp(body("sonic_dell/show-lldp-neighbor-bcm-hld.txt"))[0]
    assert (dell["chassis_id"], dell["port_descr"]) == ("3c:2c:99:2d:87:35", "Eth1/9")
    dell = driver("sonic_dell/x").parse_lldp(body("sonic_dell/show-lldp-neighbor-s5248f-3.4.0.txt"))[4]
    assert (dell["chassis_id"], dell["port_descr"]) == ("00:00:00:11:11:11", "Eth1/2")
    # the 802.3at power sub-block after PortDescr is not read as the port's
    dell = driver("sonic_dell/x").parse_lldp(body("sonic_dell/show-lldp-neighbor-bcm-hld-power.txt"))[0]
    assert (dell["chassis_id"], dell["port_descr"]) == ("3c:2c:99:2d:87:35", "Eth1/9")
    nvue = driver("nvue/x").parse_lldp(body("nvue/nv-show-interface-lldp-cl516-netlabbuilder.txt"))
    assert [n["port_id_type"] for n in nvue] == [None, None, "mac"]
    eos = driver("eos/x").parse_lldp(body("eos/show-lldp-neighbors-ceos-4.32-evpn-lab.txt"))[6]
    assert eos["port_id_type"] == "mac"
    sonic = driver("sonic_community/x").parse_lldp(body("sonic_community/show-lldp-table-test-2macs.txt"))
    assert [(n["port_id_type"], n["port_descr"]) for n in sonic] == [("mac", "First MAC"), ("mac", "Second MAC")]
    onyx = driver("onyx/x").parse_lldp(body("onyx/show-lldp-remote-intel-mfd.txt"))[2]
    assert onyx["chassis_id"] == "f8:bc:aa:bb:cc:e0"


def test_eos_slotted_and_laned_ports_are_named_alike_on_both_ends():
    """EOS abbreviates the local port (``Et3/2/1``, ``Et49/1``) and spells the
    neighbour's port in full (``Ethernet49/1``): the two cabled switches of
    the recordings name each end of their link the same way, and as the
    running config and the inventory do (before, slashed local ports were
    kept as printed and matched nothing)."""
    eos = driver("eos/x")
    cmp308 = eos.parse_lldp(body("eos/show-lldp-neighbors-cmp308-7804-modular.txt"), managed=["Ethernet3/2/1"])
    ta366 = eos.parse_lldp(body("eos/show-lldp-neighbors-ta366-7280sr2k-lanes.txt"), managed=["Ethernet49/1"])
    a = next(n for n in cmp308 if n["sysname"].startswith("R3-ta366"))
    b = next(n for n in ta366 if n["sysname"].startswith("R2-cmp308"))
    assert (a["local"], eos.canon_port(a["port_id"])) == ("Ethernet3/2/1", "Ethernet49/1")
    assert (b["local"], eos.canon_port(b["port_id"])) == ("Ethernet49/1", "Ethernet3/2/1")
    assert eos.canon_port("Et3/2/1") == eos.canon_port("ethernet 3/2/1") == "Ethernet3/2/1"
    # the management ports stay as printed: no front-panel port of the collection's
    assert [n["local"] for n in ta366 if n["local"].startswith("Ma")] == ["Ma1"]


def test_onyx_columns_are_the_fields_of_its_json_form():
    """The Onyx table rests on one published capture; the same command's JSON
    form (`show lldp remote | json-print`, recorded by napalm-onyx) names the
    same fields per neighbour, which the table's reader returns as they were
    given."""
    import json
    doc = json.loads((REAL / "onyx" / "show-lldp-remote-json-print-napalm.json").read_text())
    onyx = driver("onyx/x")
    fields = {tuple(sorted(n)) for ns in doc.values() for n in ns}
    assert fields == {("Device ID", "Port ID", "System Name")}
    rows = ["%-20s %-20s %-20s %s" % (port, n["Device ID"], n["Port ID"], n["System Name"])
            for port, ns in doc.items() for n in ns]
    table = "\n".join(["-" * 80, "%-20s %-20s %-20s %s" % ("Local Interface", "Device ID", "Port ID", "System Name"),
                       "-" * 80] + rows)
    got = onyx.parse_lldp(table)
    # breakout ports are kept as printed (the collection names no Onyx breakout port)
    assert [(n["local"], n["chassis_id"], n["port_id"], n["sysname"]) for n in got] == [
        ("Eth1/15/3", "00:aa:bb:cc:dd:ff", "swp0", "mgmt1.dc"), ("Eth1/15/2", "01:aa:bb:cc:dd:ff", "swp0", "mgmt2.dc")]


@pytest.mark.parametrize("rel, line, managed", [
    ("eos/show-lldp-neighbors-ntc-2.txt", "Et3           arista2                  Ethernet3           120", "Ethernet3"),
    ("eos/show-lldp-neighbors-ta366-7280sr2k-lanes.txt",
     "Et49/1       R2-cmp308.sjc.aristanetworks.com            Ethernet3/2/1      120", "Ethernet49/1"),
    ("sonic_community/show-lldp-table-pr5698.txt", "Ethernet240  ARISTA03T1               Ethernet1       BR",
     "Ethernet240"),
    ("onyx/show-lldp-remote-intel-mfd.txt", "Eth1/31              f8:bc:aa:bb:cc:e0    fortyGigE 0/52       LIN-ND3-DS5000",
     "ethernet 1/31"),
    ("nvue/nv-show-interface-lldp-cl516-netlabbuilder.txt", "swp65             swp   ubuntu       48:b0:2d:27:5f:50",
     "swp65"),
])
def test_a_managed_row_cut_short_fails_quoting_it(rel, line, managed):
    text = body(rel)
    assert line in text
    short = line[:12]
    bad = text.replace(line, short)
    with pytest.raises(RoceSwitchError, match=r"LLDP neighbour line not understood .*'%s'" % short.strip()):
        driver(rel).parse_lldp(bad, managed=[managed])
    # the same row on a port the collection does not manage is left as it is
    driver(rel).parse_lldp(bad, managed=[])


def test_an_nxos_block_without_its_local_port_fails_quoting_it():
    text = body("nxos/show-lldp-neighbors-detail-ntc-1.txt").replace("Local Port id: Eth1/2\n", "", 1)
    with pytest.raises(RoceSwitchError, match=r"without 'Local Port id:'.*'Chassis id: 5087.89a1.d8d7'"):
        driver("nxos/x").parse_lldp(text)


def test_no_table_where_one_is_expected_fails_quoting_the_text():
    with pytest.raises(RoceSwitchError, match=r"no header like .*% Invalid input"):
        get_driver("eos").parse_lldp("% Invalid input (at token 1: 'lldp')")
    assert get_driver("eos").parse_lldp("") == []
