"""The NX-OS and Onyx twins' answers compared in shape with the real outputs in
../shared/reference/real-outputs/switch_configs (EOS and NVUE: see
test_switch_real_eos.py and test_switch_real_nvue.py)."""

import re

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver
from simlab.switches import make_model


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
