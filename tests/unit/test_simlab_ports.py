"""simlab.lab.free_ports: the ports a lab's servers bind after the call are
outside the kernel's ephemeral range (where any process's outgoing
connection can take a port between the call and the bind), bindable at the
call, and not handed to two labs at once."""

import random
import socket

import pytest

from simlab import lab

pytestmark = pytest.mark.tooling


def test_outside_the_ephemeral_range_and_distinct(tmp_path):
    lo, hi = lab.ephemeral_range()
    if max(lo - lab.PORT_FLOOR, 65535 - hi) < 160:
        pytest.skip("this kernel's ephemeral range (%d-%d) leaves no room outside it" % (lo, hi))
    ports = lab.free_ports(40, home=tmp_path)
    assert len(set(ports)) == 40
    assert all(not lo <= p <= hi for p in ports), (lo, hi, ports)
    assert all(p >= lab.PORT_FLOOR for p in ports)


def test_the_ephemeral_range_read_from_the_kernel_file(tmp_path):
    f = tmp_path / "ip_local_port_range"
    f.write_text("20000\t50000\n")
    assert lab.ephemeral_range(str(f)) == (20000, 50000)
    assert lab.ephemeral_range(str(tmp_path / "missing")) == (32768, 60999)


def _bound_span(n):
    """n consecutive ports below the ephemeral range (no outgoing connection
    takes them meanwhile), all free now, of which the first is then bound by
    a listener here."""
    lo, _hi = lab.ephemeral_range()
    if lo - n - lab.PORT_FLOOR < 200:
        pytest.skip("no room below this kernel's ephemeral range (%d)" % lo)
    for first in random.sample(range(lab.PORT_FLOOR, lo - n), 200):
        if all(lab._bindable(p) for p in range(first, first + n)):
            s = socket.socket()
            s.bind(("127.0.0.1", first))
            s.listen(1)
            return s, (first, first + n - 1)
    pytest.skip("no span of %d free ports" % n)


def test_a_port_in_use_is_not_handed_out(tmp_path):
    listener, span = _bound_span(6)
    with listener:
        for _ in range(5):
            ports = lab.free_ports(3, span=span, home=tmp_path / str(_))
            assert span[0] not in ports


def test_a_port_handed_to_one_lab_is_held_from_the_next(tmp_path):
    listener, span = _bound_span(5)
    listener.close()
    clock = [1000.0]
    first = lab.free_ports(3, span=span, home=tmp_path, now=lambda: clock[0])
    # the first lab has not bound its ports yet: the second gets the other two or none
    second = lab.free_ports(2, span=span, home=tmp_path, now=lambda: clock[0] + 5)
    assert not set(first) & set(second)
    with pytest.raises(RuntimeError, match="only 0 of 1 free ports"):
        lab.free_ports(1, span=span, home=tmp_path, now=lambda: clock[0] + 10)
    # once the hold is over, the ports are handed out again
    again = lab.free_ports(5, span=span, home=tmp_path, now=lambda: clock[0] + 10 + lab.PORT_HOLD)
    assert sorted(again) == list(range(span[0], span[1] + 1))


def test_a_record_that_is_not_one_is_read_as_empty(tmp_path):
    (tmp_path / ".ports.json").write_text('{"20000": "soon", "x": 1}')
    assert len(lab.free_ports(2, home=tmp_path)) == 2
    (tmp_path / ".ports.json").write_text('[1, 2]')
    assert len(lab.free_ports(2, home=tmp_path)) == 2
