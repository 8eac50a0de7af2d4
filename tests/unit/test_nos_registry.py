"""The NOS names live in one place, plugins/module_utils/roce_switch/nos.py:
the drivers, the switch twins' models, the fabric model and the lab take
them from there, and no other code spells them (each driver and each switch
model names its own NOS once, in its ``nos`` attribute)."""

import re
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import drivers, nos

pytestmark = [pytest.mark.layers(7)]

REPO = Path(__file__).resolve().parents[2]


def test_drivers_twins_fabric_model_and_lab_have_the_one_list():
    from simlab import lab
    from simlab import nos as simlab_nos
    from simlab.fabric import model as fabric_model
    from simlab.switches import server
    assert set(drivers.DRIVERS) == set(nos.NOS)
    assert simlab_nos.NOS == nos.NOS and lab.NOS_KINDS == list(nos.NOS)
    assert set(server.MODELS) == set(nos.NOS)
    assert dict((n, fabric_model._switch_class(n).__name__) for n in nos.NOS) == dict(
        (n, server.MODELS[n].__name__) for n in nos.NOS)
    assert [lab.switch_port_name(n, 2) for n in nos.NOS] == [
        "ethernet 1/2", "swp2", "Ethernet2", "Ethernet1/2", "Eth1/2", "Ethernet4"]
    with pytest.raises(ValueError, match="unknown NOS 'junos'"):
        nos.port_name("junos", 1)


def test_no_other_code_spells_a_nos_name():
    names = "|".join(re.escape(n) for n in nos.NOS)
    quoted = re.compile(r"""["'](%s)["']""" % names)
    own = re.compile(r"""^\s+nos = ["'](%s)["']\s*$""" % names)
    found = []
    for top in ("plugins", "simlab"):
        for path in (REPO / top).rglob("*.py"):
            if path == REPO / "plugins/module_utils/roce_switch/nos.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if quoted.search(line) and not own.match(line) and "ALIASES" not in line:
                    found.append("%s:%d: %s" % (path.relative_to(REPO), number, line.strip()))
    assert found == []
