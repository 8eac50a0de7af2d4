"""Real published switch output recorded under tests/unit/fixtures/switch_real
(its README names each file's source), read by the roce_switch tests."""

from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import model as M
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import get_driver

REAL = Path(__file__).resolve().parent / "fixtures" / "switch_real"


def recorded(relpath):
    """Body of a recording: everything after its '# ---' header line."""
    text = (REAL / relpath).read_text()
    head, sep, body = text.partition("# ---\n")
    assert sep and head.startswith("# source: "), relpath
    return body


def unreadable(nos, text, needle, **kw):
    """Parsing ``text`` fails, naming the switch (leaf7) and containing ``needle``."""
    with pytest.raises(M.RoceSwitchError) as e:
        get_driver(nos, switch="leaf7").parse(text, **kw)
    msg = str(e.value)
    assert msg.startswith("leaf7: ") and needle in msg, msg
    return msg
