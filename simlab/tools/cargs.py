"""How the C tools the twins stand in for read a word of their command line.

The twins answer a bad argument as the real tool does, and that depends on
libc: ``strtol``/``strtoul`` with base 0 (rdma-core's ``ibv_devinfo -i``,
iproute2's ``get_integer``/``get_unsigned``) and ``sscanf("%x")``
(iproute2's ``ll_addr_a2n``).
"""

from __future__ import annotations

import re

_NUMBER_RE = re.compile(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_HEX_RE = re.compile(r"\s*([+-]?)(?:0[xX](?=[0-9a-fA-F]))?([0-9a-fA-F]+)")
INT_MAX = 2 ** 31 - 1
UINT_MAX = 2 ** 32 - 1


def strtol(text: str) -> tuple[int, str]:
    """C's ``strtol(text, &end, 0)``: the leading number (base 16 after
    ``0x``, 8 after a leading ``0``, else 10) and the text after it; ``(0,
    text)`` when there is none."""
    m = _NUMBER_RE.match(text)
    if not m:
        return 0, text
    digits = m.group(2)
    value = int(digits, 16) if digits[:2].lower() == "0x" else int(digits, 8) if digits.startswith("0") else int(digits)
    return (-value if m.group(1) == "-" else value), text[m.end():]


def whole_int(text: str) -> int | None:
    """iproute2's ``get_integer(.., 0)``: the whole word as an int, else None."""
    value, rest = strtol(text)
    if not text or rest or not -INT_MAX - 1 <= value <= INT_MAX:
        return None
    return value


def whole_unsigned(text: str) -> int | None:
    """iproute2's ``get_unsigned(.., 0)``: strtoul takes a sign and wraps a
    negative number around 2**64, which is then out of an unsigned int's
    range (``-0`` stays 0); a number past 64 bits is ERANGE."""
    value, rest = strtol(text)
    if not text or rest or abs(value) >= 2 ** 64:     # beyond an unsigned long: ERANGE
        return None
    value %= 2 ** 64
    return value if value <= UINT_MAX else None


def _leading_hex(text: str) -> tuple[int | None, str]:
    m = _HEX_RE.match(text)
    if not m:
        return None, text
    value = int(m.group(2), 16)
    return (-value if m.group(1) == "-" else value), text[m.end():]


def scan_hex(text: str) -> int | None:
    """``sscanf(text, "%x", &v)``: the leading hex number, the rest of the
    word ignored; None when it has none."""
    return _leading_hex(text)[0]


def ipv4_address(text: str) -> bool:
    """iproute2's get_addr_ipv4(): one to four ``.``-separated parts, each
    read by strtoul (base 0) and at most 255 (``10.8`` and ``0x1.2.3.4``
    are addresses)."""
    part = text
    for i in range(4):
        value, rest = strtol(part)
        if rest == part or abs(value) >= 2 ** 64 or value % 2 ** 64 > 255:
            return False
        if rest == "":
            return True
        if i == 3 or not rest.startswith("."):
            return False
        part = rest[1:]
    return False


def strtoul16(text: str) -> tuple[int, str]:
    """C's ``strtoul(text, &end, 16)``: the leading hex number (a sign and
    ``0x`` allowed, a negative one wrapped around 2**64) and the text after
    it; ``(0, text)`` when there is none."""
    value, rest = _leading_hex(text)
    return (0, text) if value is None else (value % 2 ** 64, rest)
