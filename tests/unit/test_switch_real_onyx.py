"""NVIDIA Onyx (MLNX-OS) as real switches print it
(tests/unit/fixtures/switch_real/onyx): the CLI prompts, which what the
switch transport reads up to after login (the Onyx driver's prompt_pattern)
ends, and which the twin's Onyx prints in the same modes; the configuration
files and ``configuration switch-to``, which asks to reboot the switch (so
the driver undoes a failed push by commands), as the twin answers them."""

import re

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver
from simlab.switches import make_model
from switch_real import recorded

pytestmark = pytest.mark.layers(7)

SESSION = "onyx/cli-session-native-vlan.txt"
PROMPTS = "onyx/cli-prompts-docs-csm.txt"
FILES = "onyx/configuration-switch-to-docs-csm.txt"
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


def _files_recording():
    lines = recorded(FILES).split("\n")
    at = next(i for i, x in enumerate(lines) if x.startswith("configuration switch-to "))
    return lines[:at], lines[at], lines[at + 1:at + 3]


def test_the_twins_configuration_files_are_shown_as_the_real_switch_shows_them():
    shown, _cmd, _answer = _files_recording()
    real = re.compile(r"^(?P<files>(?:\S+(?: \(active\))?\n)+)\nActive configuration: (?P<active>\S+)\n"
                      r"Unsaved changes     : (?P<unsaved>yes|no)$")
    m = real.match("\n".join(shown))
    assert m and m["active"] == "csm1.0.canu1.1.21" and m["unsaved"] == "yes", shown
    assert m["files"].count("(active)") == 1 and "%s (active)" % m["active"] in m["files"]
    twin = make_model("onyx", "leaf1", ["1/1"]).session()
    for line in ("enable", "configure terminal", "configuration write to before no-switch",
                 "interface ethernet 1/1 mtu 9216 force"):
        assert twin.handle(line) == "", line
    t = real.match(twin.handle("show configuration files"))
    assert t and t["active"] == "initial" and t["unsaved"] == "yes", twin.handle("show configuration files")
    assert t["files"] == "before\ninitial (active)\n"


def test_the_twins_switch_to_asks_to_reboot_as_the_real_switch_does():
    _shown, cmd, answer = _files_recording()
    assert cmd == "configuration switch-to csm1.2.upgrade_canu1.1.21"
    question = "\n".join(answer)[:-len("yes")]
    assert question == "This requires a reboot.\nType 'yes' to confirm: "
    twin = make_model("onyx", "leaf1", ["1/1"]).session()
    for line in ("enable", "configure terminal", "configuration write to before no-switch"):
        twin.handle(line)
    assert twin.handle("configuration switch-to before") == question
    assert twin.handle("yes") == "" and twin.closed

