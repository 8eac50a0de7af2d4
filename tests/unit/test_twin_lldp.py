"""The rack twin's LLDP against the real formats: every switch model's table
reads back through its driver's parser and keeps the real output's header,
rule and field names (tests/unit/fixtures/lldp_real/<nos>/); the node twin's
lldpcli prints lldpd's json0 and json shapes (fixtures/lldp_real/host/); the
cable faults change the cables as found, and both ends see the same cable.
A difference from the real outputs is a twin bug."""

import json
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check import lldp
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver
from simlab.fabric import cables
from simlab.nos import NOS, port_name
from simlab.switches.models import by_nos
from simlab.tools import lldpcli

pytestmark = pytest.mark.layers(9)

REAL = Path(__file__).parent / "fixtures" / "lldp_real"
FIXTURE_DIR = {"eos": "eos", "nxos": "nxos", "onyx": "onyx", "nvue": "nvue", "sonic-dell": "sonic_dell",
               "sonic-community": "sonic_community"}


def neighbors(nos, count=3):
    return [{"local": port_name(nos, n), "sysname": "node%02d" % n, "chassis_id": cables.chassis_mac("node%02d" % n),
             "port_id_type": "ifname", "port_id": "enp59s0f0np0", "port_descr": "enp59s0f0np0", "ttl": 120}
            for n in range(1, count + 1)]


def real_lines(nos):
    out = []
    for p in sorted((REAL / FIXTURE_DIR[nos]).glob("*.txt")):
        out += p.read_text().split("# ---\n", 1)[1].splitlines()
    return [line.rstrip() for line in out]


@pytest.mark.parametrize("nos", NOS)
def test_every_switch_twin_reads_back_through_its_driver(nos):
    model = by_nos()[nos]("leaf1", None)
    text = model.render_lldp(neighbors(nos))
    got = get_driver(nos, switch="leaf1").parse_lldp(text, managed=[port_name(nos, n) for n in (1, 2, 3)])
    assert [(n["local"], n["sysname"], n["port_id"]) for n in got] == [
        (port_name(nos, n), "node%02d" % n, "enp59s0f0np0") for n in (1, 2, 3)]
    assert get_driver(nos).parse_lldp(model.render_lldp([])) == []


@pytest.mark.parametrize("nos", NOS)
def test_every_switch_twin_keeps_the_real_header_and_field_names(nos):
    text = by_nos()[nos]("leaf1", None).render_lldp(neighbors(nos, 2))
    real = real_lines(nos)
    mine = [line.rstrip() for line in text.splitlines()]
    if nos in ("nxos", "sonic-dell"):
        # block formats: every key the twin prints is one the real output prints
        key = lambda line: line.strip().split(":", 1)[0] if ":" in line else None
        real_keys = set(filter(None, map(key, real)))
        assert set(filter(None, map(key, mine))) <= real_keys, mine
    else:
        # table formats: the twin's header line is a real one, word for word
        header = next(line for line in mine if line.split() and line.split()[0] in
                      ("Port", "Local", "Interface", "LocalPort"))
        assert header.split() in [line.split() for line in real], header
    # the tables' footers and rules as the real ones
    if nos == "sonic-community":
        assert mine[-2:] == ["-" * 50, "Total entries displayed:  2"]
    if nos == "onyx":
        assert mine[0] == mine[2] == real[0]


def test_the_node_twin_prints_lldpd_json0_and_json():
    nbs = [{"local": "enp59s0f0np0", "sysname": "leaf1", "chassis_id": cables.chassis_mac("leaf1"),
            "port_id_type": "ifname", "port_id": "Ethernet1", "port_descr": "", "ttl": 120},
           {"local": "enp134s0f0np0", "sysname": "leaf2", "chassis_id": cables.chassis_mac("leaf2"),
            "port_id_type": "local", "port_id": "Eth1/1", "port_descr": "Eth1/1", "ttl": 120}]
    for fmt in ("json0", "json"):
        got = lldp.parse(lldpcli.render(nbs, fmt))
        assert [(n["local"], n["sysname"], n["port_id_type"], n["port_id"], n["port_descr"]) for n in got] == [
            ("enp59s0f0np0", "leaf1", "ifname", "Ethernet1", None), ("enp134s0f0np0", "leaf2", "local", "Eth1/1", "Eth1/1")]
    # the shapes are lldpd's: no neighbour, one (folded), and the keys of an entry
    assert json.loads(lldpcli.render([], "json0")) == json.loads((REAL / "host" / "writer-1.0.16-none.json0.json").read_text())
    assert json.loads(lldpcli.render([], "json")) == json.loads((REAL / "host" / "writer-1.0.16-none.json").read_text())
    one = json.loads(lldpcli.render(nbs[:1], "json"))["lldp"]["interface"]
    real = json.loads((REAL / "host" / "writer-1.0.16-one.json").read_text())["lldp"]["interface"]
    assert set(one) == {"enp59s0f0np0"} and set(one["enp59s0f0np0"]) == set(real["enp1s0f0np0"])
    entry = json.loads(lldpcli.render(nbs, "json0"))["lldp"][0]["interface"][0]
    real0 = json.loads((REAL / "host" / "writer-1.0.16-one.json0.json").read_text())["lldp"][0]["interface"][0]
    assert set(entry) == set(real0) and set(entry["port"][0]) <= set(real0["port"][0])
    assert set(entry["chassis"][0]) <= set(real0["chassis"][0])


@pytest.fixture
def rack(tmp_path):
    doc = {"nodes": [{"name": "node01"}, {"name": "node02"}],
           "switches": [{"name": "leaf1", "nos": "eos", "ports": ["Ethernet1", "Ethernet2"]},
                        {"name": "leaf2", "nos": "nxos", "ports": ["Ethernet1/1", "Ethernet1/2"]}],
           "cabling": [{"node": "node01", "pf": "p0", "switch": "leaf1", "port": "Ethernet1"},
                       {"node": "node01", "pf": "p1", "switch": "leaf2", "port": "Ethernet1/1"},
                       {"node": "node02", "pf": "p0", "switch": "leaf1", "port": "Ethernet2"},
                       {"node": "node02", "pf": "p1", "switch": "leaf2", "port": "Ethernet1/2"}]}
    (tmp_path / "lab.json").write_text(json.dumps(doc))
    return tmp_path


def ends(rack, node):
    host = dict((n["local"], (n["sysname"], n["port_id"])) for n in cables.node_neighbors(rack, node))
    sw = dict(((s, n["local"]), (n["sysname"], n["port_id"])) for s in ("leaf1", "leaf2")
              for n in cables.switch_neighbors(rack, s))
    return host, sw


def free(switch, taken):
    return next(p for p in ("Ethernet%d" % n if switch == "leaf1" else "Ethernet1/%d" % n for n in range(1, 9))
                if (switch, p) not in taken)


def test_both_ends_see_the_cables_as_found(rack):
    assert ends(rack, "node01") == ({"p0": ("leaf1", "Ethernet1"), "p1": ("leaf2", "Ethernet1/1")},
                                    {("leaf1", "Ethernet1"): ("node01", "p0"), ("leaf2", "Ethernet1/1"): ("node01", "p1"),
                                     ("leaf1", "Ethernet2"): ("node02", "p0"), ("leaf2", "Ethernet1/2"): ("node02", "p1")})
    assert cables.apply(rack, "cable-swap", "node01", free) == "node01: the cables of p0 and p1 swapped"
    host, sw = ends(rack, "node01")
    assert host == {"p0": ("leaf2", "Ethernet1/1"), "p1": ("leaf1", "Ethernet1")}
    assert sw[("leaf2", "Ethernet1/1")] == ("node01", "p0") and sw[("leaf1", "Ethernet1")] == ("node01", "p1")
    assert cables.apply(rack, "cable-move", "node02", free) == (
        "node02: the cable of p1 moved from leaf2 Ethernet1/2 to leaf2 Ethernet1/3")
    host, sw = ends(rack, "node02")
    assert host["p1"] == ("leaf2", "Ethernet1/3") and ("leaf2", "Ethernet1/2") not in sw
    assert cables.apply(rack, "cable-unplug", "node02", free) == "node02: the cable of p0 unplugged from leaf1 Ethernet2"
    host, sw = ends(rack, "node02")
    assert "p0" not in host and ("leaf1", "Ethernet2") not in sw
    cables.restore(rack)
    assert ends(rack, "node02")[0] == {"p0": ("leaf1", "Ethernet2"), "p1": ("leaf2", "Ethernet1/2")}


def test_simlab_draws_the_cabling_as_found_against_the_plan(rack):
    cables.apply(rack, "cable-swap", "node01", free)
    cables.apply(rack, "cable-unplug", "node02", free)
    assert cables.draw(rack).splitlines() == [
        "PF         cable              against the plan",
        "node01 p0  leaf2 Ethernet1/1  differs from the plan: leaf1 Ethernet1",
        "node01 p1  leaf1 Ethernet1    differs from the plan: leaf2 Ethernet1/1",
        "node02 p0  (unplugged)        differs from the plan: leaf1 Ethernet2",
        "node02 p1  leaf2 Ethernet1/2  as planned"]
