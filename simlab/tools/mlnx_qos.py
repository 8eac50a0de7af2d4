"""Twin of mlnx-tools' ``mlnx_qos`` for the twin's PF netdevs.

``-i <if> [--trust pcp|dscp] [-f|--pfc 0,0,0,1,0,0,0,0] [-F x,..] [-P prio]
[--dscp2prio set,26,3|del,26,3|flush] [--cable_len N] [-p prio_tc]
[-s tsa] [-t tcbw] [-r ratelimit] [--prio2buffer L] [--buffer_size L] [-a]``

Settings go to the node agent (``set_qos`` for trust, PFC, DSCP map and
cable length; ``dcb`` for ETS, rate limits and buffers); the resulting state
is printed with ``pretty_print``'s layout.  The option checks and their
messages are the script's.  An interface without DCB support (a VF, a
non-mlx5 or unknown interface) gets the script's "not supported" lines and
exit 1.  With the inbox driver trust is carried by the DSCP APP table, so a
``--dscp2prio set`` switches trust to dscp and a ``flush`` back to pcp, as
mlx5's dcbnl does; with OFED trust is the ``qos/trust`` sysfs file.
"""

from __future__ import annotations

import optparse
import subprocess
import sys

from simlab.tools import formats
from simlab.tools.agentclient import call, summary
from simlab.tools.twin import netdevs

TSA_NAMES = ("strict", "ets", "vendor")


def _parser() -> optparse.OptionParser:
    p = optparse.OptionParser(usage="%prog -i <interface> [options]", version="%prog 1.2", prog="mlnx_qos")
    p.add_option("-f", "--pfc", dest="pfc", metavar="LIST")
    p.add_option("-F", "--specific_pfc", dest="specific_pfc", metavar="LIST")
    p.add_option("-P", "--get_pfc", dest="get_pfc")
    p.add_option("-p", "--prio_tc", dest="prio_tc", metavar="LIST")
    p.add_option("-s", "--tsa", dest="tsa", metavar="LIST")
    p.add_option("-t", "--tcbw", dest="tc_bw", metavar="LIST")
    p.add_option("-r", "--ratelimit", dest="ratelimit", metavar="LIST")
    p.add_option("-d", "--dcbx", dest="dcbx")
    p.add_option("--trust", dest="trust")
    p.add_option("--dscp2prio", dest="dscp2prio", action="append")
    p.add_option("--cable_len", dest="cable_len")
    p.add_option("--prio2buffer", dest="prio2buffer", metavar="LIST")
    p.add_option("--buffer_size", dest="buffer_size", metavar="LIST")
    p.add_option("-i", "--interface", dest="intf")
    p.add_option("-a", action="store_true", dest="printall", default=False)
    return p


class Exit(Exception):
    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def _fail(msg: str, parser=None) -> Exit:
    print(msg)
    if parser is not None:
        parser.print_usage(sys.stdout)
    return Exit(1)


def parse_int(parser, text, lo, hi, description) -> int:
    try:
        v = int(text)
        if v < lo or v > hi:
            raise ValueError("%d is not in the range %d..%d" % (v, lo, hi))
        return v
    except ValueError as e:
        raise _fail("Bad value for %s: %s" % (description, e), parser)


def _list8(parser, text, lo, hi, what, too_many, must):
    vals = []
    for t in text.split(","):
        if len(vals) >= 8:
            raise _fail(too_many)
        vals.append(parse_int(parser, t, lo, hi, what))
    if len(vals) != 8:
        raise _fail(must)
    return vals


def _unsupported(opts) -> int:
    """The script's path when no DCB netlink ops answer for the interface."""
    print("Priority trust state is not supported on your system")
    if opts.trust:
        return 1
    print("Buffers commands are not supported on your system")
    if opts.buffer_size or opts.prio2buffer:
        return 1
    print("Rate limit is not supported on your system!")
    if opts.ratelimit:
        return 1
    print("ETS features are not supported on your system")
    return 1


def _lldpad_running() -> bool:
    try:
        out = subprocess.run(["ps", "-e"], capture_output=True).stdout
    except OSError:
        return False
    return b"lldpad" in out


def _dscp_map(pf: dict, ofed: bool) -> dict:
    by_prio = {p: [] for p in range(8)}
    for d in range(64):
        by_prio[int(pf["dscp2prio"][str(d)])].append(d)
    if ofed:
        # qos/dscp2prio lists the highest DSCP first within a priority
        return {p: sorted(ds, reverse=True) for p, ds in by_prio.items()}
    return by_prio


def _buffers(pf: dict, dcb: dict):
    if dcb.get("prio2buffer") is not None:
        prio2buffer = dcb["prio2buffer"]
    else:
        # lossless priorities get their own receive buffer (mlx5 port buffer)
        prio2buffer = [1 if e else 0 for e in pf["pfc"]]
    if dcb.get("buffer_size") is not None:
        sizes = dcb["buffer_size"]
    elif any(pf["pfc"]):
        sizes = [130944, 130944, 0, 0, 0, 0, 0, 0]
    else:
        sizes = [261888, 0, 0, 0, 0, 0, 0, 0]
    return prio2buffer, sizes


def run(argv: list[str]) -> int:
    parser = _parser()
    opts, args = parser.parse_args(argv)
    if args:
        raise _fail("Bad arguments", parser)
    if opts.intf is None:
        raise _fail("Interface name is required", parser)
    if _lldpad_running():
        print("****** WARNING: lldpad service is running and may overwrite your settings ******\n")
    s = summary("mlnx_qos")
    devs = {name: (pf, vf) for name, pf, vf in netdevs(s)}
    if opts.dcbx is not None and opts.dcbx not in ("os", "fw", "get"):
        raise _fail("Invalid dcbx mode command. Refer to the help.")
    if opts.intf not in devs or devs[opts.intf][1] is not None:
        return _unsupported(opts)
    dev = opts.intf
    pf = devs[dev][0]
    ofed = bool(s.get("ofed"))
    qos: dict = {"op": "set_qos", "dev": dev}
    pfc = list(pf["pfc"])

    if opts.cable_len:
        qos["cable_len"] = parse_int(parser, opts.cable_len, 0, 0xffff, "cable_len")
    if opts.get_pfc:
        index = int(opts.get_pfc)
        if index not in range(0, 8):
            raise _fail("pfc index must be in range of 0-7")
        print(pfc[index])
        return 0
    if opts.specific_pfc:
        items = opts.specific_pfc.split(",")
        if len(items) != 8:
            raise _fail("pfc list must have 8 items")
        for i, t in enumerate(items):
            if t != "x":
                if t not in ("0", "1"):
                    raise _fail("Bad value for 'PFC': %s" % t)
                pfc[i] = int(t)
        qos["pfc"] = pfc
        _apply(qos)
        return 0
    if opts.pfc:
        qos["pfc"] = _list8(parser, opts.pfc, 0, 1, "PFC", "Too many items for PFC", "pfc list must have 8 items")

    if opts.dscp2prio and opts.trust:
        raise _fail("trust and dscp2prio commands cannot be used at the same time.")
    mapping, trust = {}, None
    try:
        for opt in opts.dscp2prio or []:
            if opt == "flush":
                mapping.update({str(d): d >> 3 for d in range(64)})
                if not ofed:
                    trust = "pcp"
                continue
            action, dscp, prio = opt.split(",")
            dscp, prio = int(dscp), int(prio)
            if action not in ("set", "del") or dscp > 63 or prio > 7:
                raise ValueError(opt)
            if action == "set":
                mapping[str(dscp)] = prio
                if not ofed:
                    trust = "dscp"
            else:
                mapping[str(dscp)] = dscp >> 3
    except ValueError:
        raise _fail("Invalid dscp2prio command. Refer to the help.")
    if mapping:
        qos["dscp2prio"] = mapping
    if opts.trust:
        if opts.trust not in ("dscp", "pcp"):
            raise _fail("Invalid trust state command. Refer to the help.")
        trust = opts.trust
    if trust is not None:
        qos["trust"] = trust
    dcb_set = {}
    if opts.dcbx in ("os", "fw"):
        dcb_set["dcbx"] = opts.dcbx
    if opts.prio2buffer:
        dcb_set["prio2buffer"] = _list8(parser, opts.prio2buffer, 0, 7, "prio2buffer",
                                        "Too many items for prio2buffer", "prio2buffer list must have 8 items")
    if opts.buffer_size:
        dcb_set["buffer_size"] = _list8(parser, opts.buffer_size, 0, 0x7fffffff, "buffer_size",
                                        "Too many items for buffer_size", "buffer_size list must have 8 items")
    if opts.ratelimit:
        dcb_set["ratelimit"] = [r * 1000 * 1000 for r in _list8(
            parser, opts.ratelimit, 0, 1000000, "ratelimit", "Too many items for ratelimit",
            "ratelimit must have 8 items")]
    if opts.tsa:
        tsa = []
        for t in opts.tsa.split(","):
            if len(tsa) >= 8:
                raise _fail("Too many items for TSA")
            if t not in TSA_NAMES:
                print(("Bad TSA value: ", t))
                parser.print_usage(sys.stdout)
                raise Exit(1)
            tsa.append(t)
        if len(tsa) != 8:
            raise _fail("tsa list must have 8 items")
        dcb_set["tsa"] = tsa
    if opts.tc_bw:
        bw = []
        for t in opts.tc_bw.split(","):
            if len(bw) >= 8:
                raise _fail("Too many items for ETS BW")
            bw.append(parse_int(parser, t, 0, 100, "ETS BW"))
        if len(bw) != 8:
            raise _fail("tcbw list must have 8 items")
        dcb_set["tcbw"] = bw
    if opts.prio_tc:
        ptc = []
        for t in opts.prio_tc.split(","):
            if len(ptc) >= 8:
                raise _fail("Too many items in UP => TC mapping")
            ptc.append(parse_int(parser, t, 0, 7, "UP => TC mapping"))
        if len(ptc) != 8:
            raise _fail("prio_tc list must have 8 items")
        dcb_set["prio_tc"] = ptc
    if "tsa" in dcb_set or "tcbw" in dcb_set:
        cur = call({"op": "dcb", "dev": dev}, "mlnx_qos")["dcb"]
        tsa = dcb_set.get("tsa", cur["tsa"])
        bw = dcb_set.get("tcbw", cur["tcbw"])
        for t, b in zip(tsa, bw):
            if t != "ets" and b != 0:
                raise _fail("ETS BW for a strict/vendor TC must be 0", parser)
        if "ets" in tsa and sum(b for t, b in zip(tsa, bw) if t == "ets") != 100:
            print("[Errno 22] Invalid argument")
            raise Exit(1)

    if len(qos) > 2:
        _apply(qos)
    reply = call({"op": "dcb", "dev": dev, "set": dcb_set}, "mlnx_qos")
    dcb = reply["dcb"]
    s = summary("mlnx_qos")
    pf = next(p for p in s["pfs"] if p["netdev"] == dev)
    prio2buffer, sizes = _buffers(pf, dcb)
    tc2up: dict[int, list[int]] = {}
    if opts.printall:
        tc2up = {i: [] for i in range(8)}
    for up, tc in enumerate(dcb["prio_tc"]):
        tc2up.setdefault(int(tc), []).append(up)
    tcs = [{"tc": tc, "tsa": dcb["tsa"][tc], "bw": dcb["tcbw"][tc],
            "ratelimit": (dcb["ratelimit"][tc] / 1000 / 1000) if dcb["ratelimit"][tc] else None,
            "priorities": tc2up[tc]} for tc in sorted(tc2up)]
    state = {
        "dcbx": dcb.get("dcbx", "os"),
        "trust": pf["trust"],
        "dscp2prio": _dscp_map(pf, ofed),
        "buffer_sizes": sizes,
        "buffer_total_size": None if ofed else 1048320,
        "cable_len": pf["cable_len"],
        "pfc": pf["pfc"],
        "buffer": prio2buffer,
        "tcs": tcs,
    }
    sys.stdout.write(formats.mlnx_qos(state))
    return 0


def _apply(qos: dict) -> None:
    reply = call(qos, "mlnx_qos")
    if not reply.get("ok"):
        what = "pfc" if "pfc" in qos else "pfc delay" if "cable_len" in qos else "trust"
        print(f"mlnx_qos: Error setting {what}:{reply.get('error')}")
        raise Exit(1)


def main(argv: list[str]) -> int:
    try:
        return run(argv)
    except Exit as e:
        return e.code
