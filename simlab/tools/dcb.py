"""Twin of iproute2's ``dcb`` for the twin's netdevs, as the mlx5 driver
answers it (``drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c``).

``dcb [-N] [-j] [-p] [-s] OBJECT COMMAND dev DEV [ARGS]`` with the objects
the collection and a platform engineer use on a ConnectX host:

- ``pfc show [pfc-cap|macsec-bypass|delay|prio-pfc|requests|indications]``,
  ``pfc set dev DEV prio-pfc P:on|off ...``: mlx5 reports ``pfc-cap 8``,
  ``macsec-bypass off`` and the cable length as ``delay``;
- ``ets show``: the driver's ETS state (``mlx5e_ets_init``: vendor TSA, priority
  0 on TC 1);
- ``app show [dscp-prio]``, ``app add|del|replace dev DEV dscp-prio K:P ...``,
  ``app flush dev DEV dscp-prio``: mlx5 takes DSCP entries only (any other
  selector is EINVAL); the first entry switches the port to DSCP trust, the
  last one deleted back to PCP, a deleted DSCP maps to priority 0 again;
- ``apptrust show|set``: mlx5 has no apptrust ops, so ``show`` prints
  ``Attribute not found: Success`` and ``set`` ``Attribute write: Operation
  not supported``.

Layouts follow iproute2's ``dcb/`` sources: an array line is its name then
``I:V`` tokens each followed by a space; the APP table is sorted by key; DSCP
keys print as rt_dsfield names unless ``-N`` (DSCP 0 prints as ``0``); ``-j``
is one object through iproute2's JSON writer (dcb opens no array), ``-p``
its pretty layout (the writer's layout is held to real ``ip`` and ``rdma``
output; no real ``dcb -j`` capture is recorded).  A VF
or a device without DCB reads ``Attribute read: Operation not supported``, a
missing device ``Attribute read: No such device``; both exit 1.  Sources and
captures: tests/unit/fixtures/dcb_real/README.md.
"""

from __future__ import annotations

import sys

from simlab.tools import formats
from simlab.tools.agentclient import call, summary
from simlab.tools.twin import netdevs

USAGE = """Usage: dcb [ OPTIONS ] OBJECT { COMMAND | help }
       dcb [ -f | --force ] { -b | --batch } filename [ -n | --netns ] netnsname
where  OBJECT := { app | apptrust | buffer | dcbx | ets | maxrate | pfc | rewr }
       OPTIONS := [ -V | --Version | -i | --iec | -j | --json
                  | -N | --Numeric | -p | --pretty
                  | -s | --statistics | -v | --verbose]"""

# etc/iproute2/rt_dsfield, keyed by DSCP; slot 0 is seeded with "0" (lib/rt_names.c)
DSCP_NAMES = {0: "0", 8: "CS1", 10: "AF11", 12: "AF12", 14: "AF13", 16: "CS2", 18: "AF21", 20: "AF22",
              22: "AF23", 24: "CS3", 26: "AF31", 28: "AF32", 30: "AF33", 32: "CS4", 34: "AF41", 36: "AF42",
              38: "AF43", 40: "CS5", 46: "EF", 48: "CS6", 56: "CS7"}
NAME_DSCP = {name: d for d, name in DSCP_NAMES.items() if d}
NAME_DSCP["default"] = 0


class Exit(Exception):
    def __init__(self, code: int, msg: str = ""):
        super().__init__(code)
        self.code, self.msg = code, msg


def _arr(name: str, values) -> str:
    return name + " " + "".join(f"{i}:{v} " for i, v in enumerate(values))


def _dev(args: list[str], s: dict, obj: str) -> tuple[str, dict, list[str]]:
    if not args or not "dev".startswith(args[0]) or args[0] == "":
        raise Exit(1, f"Expected `dev DEV', not `{args[0] if args else ''}'")
    if len(args) < 2:
        raise Exit(255, 'Command line is not complete. Try option "help"')
    name = args[1]
    devs = {n: (pf, vf) for n, pf, vf in netdevs(s)}
    if name not in devs:
        raise Exit(1, "Attribute read: No such device")
    pf, vf = devs[name]
    if vf is not None:
        # a VF has no vport_group_manager: mlx5 gives it no dcbnl ops
        raise Exit(1, "Attribute read: Operation not supported")
    return name, pf, args[2:]


def _write(req: dict) -> None:
    reply = call(req, "dcb")
    if not reply.get("ok"):
        raise Exit(1, f"Attribute write: {reply.get('error')}")


def _onoff(v) -> str:
    return "on" if v else "off"


def pfc(cmd: str, args: list[str], s: dict, opts: dict) -> str:
    name, pf, rest = _dev(args, s, "pfc")
    if cmd == "set":
        want = list(pf["pfc"])
        i = 0
        while i < len(rest):
            key = rest[i]
            if key == "prio-pfc":
                i += 1
                while i < len(rest) and ":" in rest[i]:
                    p, v = rest[i].split(":", 1)
                    if p == "all":
                        prios = range(8)
                    elif p.isdigit() and int(p) < 8:
                        prios = [int(p)]
                    else:
                        raise Exit(255, f'Error: argument "{p}" is wrong: invalid priority')
                    if v not in ("on", "off"):
                        raise Exit(255, f'Error: argument "{v}" is wrong: expected "on" or "off"')
                    for q in prios:
                        want[q] = 1 if v == "on" else 0
                    i += 1
            elif key in ("delay", "macsec-bypass"):
                # mlx5 stores delay (cable length, 0 < delay < 1000) and ignores mbc
                i += 2
            else:
                raise Exit(1, f'What is "{key}"?')
        _write({"op": "set_qos", "dev": name, "pfc": want})
        return ""
    if cmd != "show":
        raise Exit(1, f'What is "{cmd}"?')
    stats = opts["s"]
    if opts["j"]:
        out = {"pfc_cap": 8, "macsec_bypass": False, "delay": pf["cable_len"],
               "prio_pfc": [bool(v) for v in pf["pfc"]]}
        if stats:
            out.update(requests=[0] * 8, indications=[0] * 8)
        return formats.iproute2_json(out, opts["p"]) + "\n"
    lines = {"pfc-cap": "pfc-cap 8 ", "macsec-bypass": "macsec-bypass off ", "delay": f"delay {pf['cable_len']} ",
             "prio-pfc": _arr("prio-pfc", [_onoff(v) for v in pf["pfc"]]),
             "requests": _arr("requests", [0] * 8), "indications": _arr("indications", [0] * 8)}
    if not rest:
        text = f"pfc-cap 8 macsec-bypass off delay {pf['cable_len']} \n" + lines["prio-pfc"] + "\n"
        if stats:
            text += lines["requests"] + "\n" + lines["indications"] + "\n"
        return text
    out = []
    for key in rest:
        full = next((k for k in lines if k.startswith(key)), None)
        if full is None:
            raise Exit(1, f'What is "{key}"?')
        out.append(lines[full])
    return "\n".join(out) + "\n"


def ets(cmd: str, args: list[str], s: dict, opts: dict) -> str:
    name, pf, rest = _dev(args, s, "ets")
    if cmd != "show":
        raise Exit(1, f'What is "{cmd}"? (this twin sets ETS through mlnx_qos)')
    d = call({"op": "dcb", "dev": name}, "dcb")["dcb"]
    tsa = [t if t in ("strict", "ets", "vendor") else "???" for t in d["tsa"]]
    if opts["j"]:
        return formats.iproute2_json({"willing": False, "ets_cap": 8, "cbs": False, "tc_bw": d["tcbw"],
                                      "pg_bw": [0] * 8, "tc_tsa": tsa, "prio_tc": d["prio_tc"], "reco_tc_bw": [0] * 8,
                                      "reco_tc_tsa": ["strict"] * 8, "reco_prio_tc": [0] * 8}, opts["p"]) + "\n"
    lines = {"willing": "willing off ", "ets-cap": "ets-cap 8 ", "cbs": "cbs off ",
             "tc-bw": _arr("tc-bw", d["tcbw"]), "pg-bw": _arr("pg-bw", [0] * 8), "tc-tsa": _arr("tc-tsa", tsa),
             "prio-tc": _arr("prio-tc", d["prio_tc"]), "reco-tc-bw": _arr("reco-tc-bw", [0] * 8),
             "reco-tc-tsa": _arr("reco-tc-tsa", ["strict"] * 8), "reco-prio-tc": _arr("reco-prio-tc", [0] * 8)}
    if not rest:
        body = ["willing off ets-cap 8 cbs off "] + [lines[k] for k in ("tc-bw", "pg-bw", "tc-tsa", "prio-tc",
                                                                        "reco-tc-bw", "reco-tc-tsa", "reco-prio-tc")]
        return "\n".join(body) + "\n"
    out = []
    for key in rest:
        if key not in lines:
            raise Exit(1, f'What is "{key}"?')
        out.append(lines[key])
    return "\n".join(out) + "\n"


def _dscp_key(text: str) -> int:
    if text.isdigit():
        value = int(text)
    elif text in NAME_DSCP:
        value = NAME_DSCP[text]
    else:
        raise Exit(255, f'Error: argument "{text}" is wrong: Invalid DSCP')
    if value > 63:
        raise Exit(255, f'Error: argument "{text}" is wrong: Invalid DSCP')
    return value


def _entries(rest: list[str]) -> list[tuple[int, int]]:
    """``dscp-prio K:P ...`` -> [(dscp, prio)]; any other selector group is
    parsed as dcb does and refused by mlx5 (EINVAL)."""
    out, i = [], 0
    while i < len(rest):
        group = rest[i]
        i += 1
        tokens = []
        while i < len(rest) and ":" in rest[i]:
            tokens.append(rest[i])
            i += 1
        if group not in ("dscp-prio", "default-prio", "ethtype-prio", "pcp-prio", "port-prio",
                         "stream-port-prio", "dgram-port-prio"):
            raise Exit(1, f'What is "{group}"?')
        if group != "dscp-prio":
            raise Exit(1, "Attribute write: Invalid argument")
        for t in tokens:
            k, p = t.split(":", 1)
            if not p.isdigit() or int(p) > 7:
                raise Exit(255, f'Error: argument "{p}" is wrong: Invalid priority')
            out.append((_dscp_key(k), int(p)))
    return out


def app(cmd: str, args: list[str], s: dict, opts: dict) -> str:
    name, pf, rest = _dev(args, s, "app")
    table = sorted((d, int(pf["dscp2prio"][str(d)])) for d in pf.get("app_dscp", []))
    if cmd == "show":
        for key in rest:
            if key not in ("default-prio", "ethtype-prio", "stream-port-prio", "dgram-port-prio", "port-prio",
                           "dscp-prio", "pcp-prio"):
                raise Exit(1, f'What is "{key}"?')
        if rest and "dscp-prio" not in rest:
            return "{}\n" if opts["j"] else ""
        if opts["j"]:
            return formats.iproute2_json({"dscp_prio": [[d, p, " "] for d, p in table]} if table else {},
                                         opts["p"]) + "\n"
        if not table:
            return ""
        key = (lambda d: str(d)) if opts["N"] else (lambda d: DSCP_NAMES.get(d, str(d)))
        return "dscp-prio " + "".join(f"{key(d)}:{p} " for d, p in table) + "\n"
    if cmd == "flush":
        groups = rest or ["dscp-prio"]
        if any(g != "dscp-prio" for g in groups):
            return ""        # mlx5 keeps no entries of other selectors: nothing to delete
        if table:
            _write({"op": "dcb_app", "dev": name, "del": table})
        return ""
    entries = _entries(rest)
    have = dict(table)
    if cmd == "add":
        _write({"op": "dcb_app", "dev": name, "add": entries})
    elif cmd == "del":
        _write({"op": "dcb_app", "dev": name, "del": entries})
    elif cmd == "replace":
        # dcb deletes the key's other priorities and adds the new ones; mlx5's
        # setapp replaces in place, so only entries that differ are sent
        _write({"op": "dcb_app", "dev": name, "add": [(d, p) for d, p in entries if have.get(d) != p]})
    else:
        raise Exit(1, f'What is "{cmd}"?')
    return ""


def apptrust(cmd: str, args: list[str], s: dict, opts: dict) -> str:
    _dev(args, s, "apptrust")
    if cmd == "show":
        raise Exit(1, "Attribute not found: Success")
    if cmd == "set":
        raise Exit(1, "Attribute write: Operation not supported")
    raise Exit(1, f'What is "{cmd}"?')


OBJECTS = {"pfc": pfc, "ets": ets, "app": app, "apptrust": apptrust}


def run(argv: list[str]) -> str:
    opts = {"N": False, "j": False, "p": False, "s": False}
    rest = []
    longs = {"--Numeric": "N", "--json": "j", "--pretty": "p", "--statistics": "s"}
    for a in argv:
        if a in longs:
            opts[longs[a]] = True
        elif a == "-V" or a == "--Version":
            return "dcb utility, iproute2-6.1.0\n"
        elif a.startswith("-") and len(a) > 1 and not rest[-1:] == ["dev"]:
            for c in a[1:]:
                if c not in opts:
                    raise Exit(255, "Unknown option.\n" + USAGE)
                opts[c] = True
        else:
            rest.append(a)
    if not rest or rest[0] == "help":
        raise Exit(0 if rest else 255, USAGE)
    obj = next((o for o in OBJECTS if o.startswith(rest[0])), None)
    if obj is None:
        raise Exit(1, f'Object "{rest[0]}" is unknown, try "dcb help".')
    if len(rest) < 2:
        rest.append("show")
    return OBJECTS[obj](rest[1], rest[2:], summary("dcb"), opts)


def main(argv: list[str]) -> int:
    try:
        sys.stdout.write(run(argv))
        return 0
    except Exit as e:
        if e.msg:
            print(e.msg, file=sys.stderr if e.code else sys.stdout)
        return e.code
