"""Talk to the node agent from a tool twin."""

from __future__ import annotations

import sys

from simlab.node.wire import request


def call(req: dict, prog: str = "simlab") -> dict:
    try:
        reply = request(req)
    except OSError as exc:
        print(f"{prog}: twin hardware agent not reachable ({exc})", file=sys.stderr)
        raise SystemExit(1) from None
    return reply


def summary(prog: str = "simlab") -> dict:
    return call({"op": "summary"}, prog)
