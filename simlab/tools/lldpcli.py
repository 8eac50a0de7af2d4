"""Twin of lldpd's ``lldpcli`` (Debian 12: lldpd 1.0.16): the node's LLDP
neighbours from the twin rack's cables as they are (simlab/fabric/cables.py).

    lldpcli [-f json0|json] show neighbors [details]
    lldpctl [-f json0|json]

The JSON is lldpd's: ``json0`` keeps every list and puts each name in a
``name`` key (``{"lldp": [{"interface": [{"name": ..., "chassis": [...],
"port": [...]}]}]}``; ``{"lldp": [{}]}`` with no neighbour); ``json`` folds a
list of one into its element and keys an object by its name
(``{"lldp": {"interface": {"<if>": {...}}}}``, ``{"lldp": {}}``), as
src/client/json_writer.c does. A TLV the neighbour does not send is an
absent key. Other output formats, and commands other than showing the
neighbours, answer as lldpcli does to an unknown one (exit 1). The shapes are
held to lldpd's own outputs in tests/unit/fixtures/lldp_real/host/ by
tests/unit/test_twin_lldp.py, and to a real lldpd between two VM nodes by
tests/vm/test_vm_lldp.py.
"""

from __future__ import annotations

import json
import os
import sys

from simlab.fabric import cables

RACK = os.environ.get("SIMLAB_RACK_DIR", "/var/lib/simlab/rack")
AGE = "0 day, 00:10:00"


def entry_json0(nb: dict, rid: int) -> dict:
    chassis = {"id": [{"type": "mac", "value": nb["chassis_id"]}]}
    if nb.get("sysname"):
        chassis["name"] = [{"value": nb["sysname"]}]
    port = {"id": [{"type": nb["port_id_type"], "value": nb["port_id"]}]}
    if nb.get("port_descr"):
        port["descr"] = [{"value": nb["port_descr"]}]
    port["ttl"] = [{"value": str(nb.get("ttl") or cables.TTL)}]
    return {"name": nb["local"], "via": "LLDP", "rid": str(rid), "age": AGE, "chassis": [chassis], "port": [port]}


def render(neighbors: list[dict], fmt: str) -> str:
    entries = [entry_json0(nb, i) for i, nb in enumerate(neighbors, start=1)]
    if fmt == "json0":
        return json.dumps({"lldp": [{"interface": entries} if entries else {}]}, indent=2)
    folded = []
    for e in entries:
        chassis = e["chassis"][0]
        body = {"id": chassis["id"][0]}
        ch = {chassis["name"][0]["value"]: body} if "name" in chassis else body
        port = {"id": e["port"][0]["id"][0]}
        if "descr" in e["port"][0]:
            port["descr"] = e["port"][0]["descr"][0]["value"]
        port["ttl"] = e["port"][0]["ttl"][0]["value"]
        folded.append({e["name"]: {"via": e["via"], "rid": e["rid"], "age": e["age"], "chassis": ch, "port": port}})
    if not folded:
        return json.dumps({"lldp": {}}, indent=2)
    return json.dumps({"lldp": {"interface": folded[0] if len(folded) == 1 else folded}}, indent=2)


def node_name() -> str:
    from simlab.tools.agentclient import summary
    return summary("lldpcli")["name"]


def main(argv: list[str]) -> int:
    fmt = "plain"
    args = list(argv)
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt == "-f" and args:
            fmt = args.pop(0)
        elif opt.startswith("-f") and len(opt) > 2:
            fmt = opt[2:]
        elif opt in ("-u",) and args:
            args.pop(0)
    words = [a for a in args if a not in ("details", "summary")]
    if words not in ([], ["show", "neighbors"], ["show", "neighbours"]):
        print(f"[WARN/lldpctl] unknown command from argument {len(argv) - len(args) + 1}: `{' '.join(args)}`",
              file=sys.stderr)
        return 1
    if fmt not in ("json", "json0"):
        print(f"[WARN/lldpctl] the twin lldpcli prints json and json0 only, not {fmt}", file=sys.stderr)
        return 1
    print(render(cables.node_neighbors(RACK, node_name()), fmt))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
