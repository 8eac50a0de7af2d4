"""NVIDIA Onyx (MLNX-OS) CLI prompts as real switches print them
(tests/unit/fixtures/switch_real/onyx): what the switch transport reads up
to after login (the Onyx driver's prompt_pattern) ends every one of them, and
the twin's Onyx prints the same prompts in the same modes."""

import re

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver
from simlab.switches import make_model
from switch_real import recorded

pytestmark = pytest.mark.layers(7)

SESSION = "onyx/cli-session-native-vlan.txt"
PROMPTS = "onyx/cli-prompts-docs-csm.txt"
# the one recorded line with no '#' before its command (the recording's header says why)
SLIP = "[standalone: master] (config vlan 3) exit"

# an Onyx prompt as recorded: [host ]'[' cluster ': ' role '] '['(' mode ') ']('>'|'#')' ', then the command
PROMPT = re.compile(r"^(?P<prompt>(?:(?P<host>[^\s\[]+) )?\[(?P<cluster>[^\]:]+): (?P<role>master|standby)\] "
                    r"(?:\((?P<mode>config[^)]*)\) )?(?P<end>[>#]) )(?P<cmd>\S.*)$")


def _lines(relpath):
    return [line for line in recorded(relpath).split("\n") if line]


def _prompted(relpath):
    """(prompt, command) of each recorded line, the slip aside."""
    out = []
    for line in _lines(relpath):
        if line == SLIP:
            continue
        m = PROMPT.match(line)
        assert m, "not an Onyx prompt and command: %r" % line
        out.append(m)
    return out


def test_every_recorded_line_is_a_prompt_and_a_command():
    session = _prompted(SESSION)
    assert [m["end"] for m in session] == [">", "#", "#", "#", "#", "#"]
    assert [m["mode"] for m in session] == [None, None, "config", "config", "config interface ethernet 1/1",
                                            "config interface ethernet 1/1"]
    assert SLIP in _lines(SESSION) and not PROMPT.match(SLIP)
    others = _prompted(PROMPTS)
    assert len(others) == len(_lines(PROMPTS)) == 9
    assert {m["cluster"] for m in others} == {"standalone", "mlag-domain"}
    assert {m["role"] for m in others} == {"master", "standby"}


def test_the_transport_reads_exactly_up_to_the_end_of_each_real_prompt():
    """The session reads after login until the driver's pattern matches:
    on every real prompt (Standard, Enable, Config, a port's mode, an MLAG
    pair's master and standby) the first match is the prompt's last
    character, so the read stops neither inside the prompt nor after it."""
    pattern = re.compile(get_driver("onyx").prompt_pattern)
    for m in _prompted(SESSION) + _prompted(PROMPTS):
        prompt = m["prompt"].rstrip()
        first = pattern.search(prompt)
        assert first and first.end() == len(prompt), (prompt, first)


def test_the_twins_prompts_are_the_real_ones():
    """The twin's Onyx, walked through the recorded session's mode changes
    (enable, configure terminal, interface ethernet 1/1), shows the
    recorded prompt before every command; its other commands (VLANs,
    switchport) the twin does not model and is not given. The page left the
    host name out: the twin's prompt is compared after its own."""
    twin = make_model("onyx", "leaf1", ["1/1", "1/2"]).session()
    modelled = ("enable", "configure terminal", "interface ethernet 1/1")
    for m in _prompted(SESSION):
        assert twin.prompt() == "leaf1 " + m["prompt"], (twin.prompt(), m.group(0))
        if m["cmd"] in modelled:
            assert twin.handle(m["cmd"]) == "", m["cmd"]


def test_the_twins_prompts_with_the_host_name_are_the_real_ones():
    """The recorded standalone switches' prompts in Enable and Config mode,
    host name included, from a twin of the same name (the twin plays a
    standalone switch: the MLAG pair's prompts are the transport's test's)."""
    checked = 0
    for m in _prompted(PROMPTS):
        if m["cluster"] != "standalone":
            continue
        twin = make_model("onyx", m["host"], ["1/1"]).session()
        twin.handle("enable")
        if m["mode"] == "config":
            twin.handle("configure terminal")
        assert twin.prompt() == m["prompt"], (twin.prompt(), m.group(0))
        checked += 1
    assert checked == 5
