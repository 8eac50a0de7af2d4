"""Twins of the RDMA inspection tools: rdma-core's ``ibv_devinfo``,
mlnx-tools' ``show_gids`` and iproute2's ``rdma`` (``link``, ``dev``,
``system``), over the RDMA devices the twin kernel has now: one per bound PF
and one per probed VF, and none at all while ``mlx5_ib`` is unloaded.

* ``ibv_devinfo [-d dev] [-i port] [-l] [-v]``: ``-v`` adds the port
  attributes and the GID table (``GID[  3]: ::ffff:172.30.0.1, RoCE v2``);
  the device-wide capability block of ``-v`` is not reproduced.
* ``show_gids [dev]``
* ``rdma [-j] [-p] [-d] link [show [dev/port]]``, ``rdma [-j] [-p] [-d] dev [show [dev]]``,
  ``rdma system [show]``, as iproute2 6.1 prints them.
"""

from __future__ import annotations

import socket
import sys

from simlab.node.hardware import MODELS
from simlab.tools import formats
from simlab.tools.agentclient import summary
from simlab.tools.cargs import strtol
from simlab.tools.twin import gids, node_guid, port_up, rdma_devices

_WIDTH_SPEED = {  # port speed (Mb/s) -> (active_width, active_speed) as devinfo prints them
    800000: ("4X (2)", "200.0 Gbps (256)"),
    400000: ("4X (2)", "100.0 Gbps (128)"),
    200000: ("4X (2)", "50.0 Gbps (64)"),
    100000: ("4X (2)", "25.0 Gbps (32)"),
    50000: ("2X (16)", "25.0 Gbps (32)"),
    25000: ("1X (1)", "25.0 Gbps (32)"),
}


def _iboe_mtu(mtu: int) -> int:
    """iboe_get_mtu(): the largest IB MTU that fits the netdev MTU less the
    RoCE headers."""
    room = mtu - (40 + 8 + 12 + 4 + 28 + 4)
    for m in (4096, 2048, 1024, 512, 256):
        if room >= m:
            return m
    return 256


def _device(name: str, pf: dict, vf: dict | None, lid: int) -> dict:
    ids = MODELS[pf["model"]]
    eth = pf["link_type"] == "ETH"
    mtu = (vf or pf)["mtu"]
    up = port_up(pf, vf)
    return {
        "hca_id": name,
        "fw_ver": pf["firmware"].get("running_fw_version", pf["firmware"]["fw_version"]),
        "node_guid": node_guid(pf, vf),
        "sys_image_guid": pf["node_guid"],
        "vendor_part_id": ids["vf_device"] if vf else ids["device"],
        "hw_ver": 0,
        "board_id": pf["psid"],
        "ports": [{
            "port": 1,
            "state": "PORT_ACTIVE" if up else "PORT_DOWN",
            "max_mtu": 4096,
            "active_mtu": _iboe_mtu(mtu) if eth else 4096,
            "sm_lid": 0 if eth else 1,
            "port_lid": 0 if eth else lid,
            "port_lmc": 0,
            "link_layer": "Ethernet" if eth else "InfiniBand",
        }],
    }


def _gid_line(index: int, gid: str, gtype: str, eth: bool) -> str:
    suffix = f", {gtype}" if eth else ""
    if gtype == "RoCE v2":
        text = socket.inet_ntop(socket.AF_INET6, bytes.fromhex(gid.replace(":", "")))
        return "\t\t\tGID[%3d]:\t\t%s%s\n" % (index, text, suffix)
    return "\t\t\tGID[%3d]:\t\t%s%s\n" % (index, gid, suffix)


def _verbose_port(pf: dict, vf: dict | None, port_state: str) -> str:
    eth = pf["link_type"] == "ETH"
    width, speed = _WIDTH_SPEED.get(pf["speed_mbps"], ("4X (2)", "25.0 Gbps (32)"))
    out = "\t\t\tmax_msg_sz:\t\t0x40000000\n"
    out += "\t\t\tport_cap_flags:\t\t0x%08x\n" % (0x04010000 if eth else 0x2259e848)
    out += "\t\t\tport_cap_flags2:\t0x%04x\n" % 0
    out += "\t\t\tmax_vl_num:\t\t%s\n" % ("invalid value (0)" if eth else "4 (3)")
    out += "\t\t\tbad_pkey_cntr:\t\t0x0\n"
    out += "\t\t\tqkey_viol_cntr:\t\t0x0\n"
    out += "\t\t\tsm_sl:\t\t\t0\n"
    out += "\t\t\tpkey_tbl_len:\t\t%d\n" % (1 if eth else 128)
    out += "\t\t\tgid_tbl_len:\t\t%d\n" % (255 if eth else 8)
    out += "\t\t\tsubnet_timeout:\t\t%d\n" % (0 if eth else 18)
    out += "\t\t\tinit_type_reply:\t0\n"
    out += "\t\t\tactive_width:\t\t%s\n" % width
    out += "\t\t\tactive_speed:\t\t%s\n" % speed
    phys = "LINK_UP (5)" if port_state == "PORT_ACTIVE" else "DISABLED (3)"
    out += "\t\t\tphys_state:\t\t%s\n" % phys
    for index, gid, gtype, _ndev in gids(pf, vf):
        out += _gid_line(index, gid, gtype, eth)
    return out


_DEVINFO_USAGE = ("Usage: ibv_devinfo             print the ca attributes\n"
                  "\n"
                  "Options:\n"
                  "  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n"
                  "  -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n"
                  "  -l, --list             print only the IB devices names\n"
                  "  -v, --verbose          print all the attributes of the IB device(s)")


def _getopt_error(prog: str, err) -> str:
    """glibc getopt_long's message for what Python's getopt refused."""
    long_form = f"--{err.opt}" in err.msg
    if "requires argument" in err.msg:
        return (f"{prog}: option '--{err.opt}' requires an argument" if long_form
                else f"{prog}: option requires an argument -- '{err.opt}'")
    return f"{prog}: unrecognized option '--{err.opt}'" if long_form else f"{prog}: invalid option -- '{err.opt}'"


def ibv_devinfo(argv: list[str]) -> int:
    """rdma-core's libibverbs/examples/devinfo.c, as a VM node's real one
    answers (tests/vm/test_vm_twin_faithful.py): the usage and exit status 1
    for a port that is not a positive number, -1 (255) for an unknown option
    (after getopt's message), 4 for a port the device does not have."""
    import getopt
    try:
        opts, _ = getopt.gnu_getopt(argv, "d:i:lv", ["ib-dev=", "ib-port=", "list", "verbose"])
    except getopt.GetoptError as err:
        print(_getopt_error("ibv_devinfo", err), file=sys.stderr)
        print(_DEVINFO_USAGE)
        return 255
    dev_name, port, listing, verbose = None, None, False, False
    for flag, arg in opts:
        if flag in ("-d", "--ib-dev"):
            dev_name = arg
        elif flag in ("-i", "--ib-port"):
            port = strtol(arg)[0]
            if port <= 0:
                print(_DEVINFO_USAGE)
                return 1
        elif flag in ("-l", "--list"):
            listing = True
            break
        else:
            verbose = True
    s = summary("ibv_devinfo")
    devs = rdma_devices(s)
    if listing:
        print("%d HCA%s found:" % (len(devs), "s" if len(devs) != 1 else ""))
        for name, _pf, _vf in devs:
            print("\t" + name)
        print()
        return 0
    if dev_name is not None:
        devs = [d for d in devs if d[0] == dev_name]
        if not devs:
            print(f"IB device '{dev_name}' wasn't found", file=sys.stderr)
            return 255
    elif not devs:
        print("No IB devices found", file=sys.stderr)
        return 255
    out = ""
    rc = 0
    for lid, (name, pf, vf) in enumerate(devs, 1):
        d = _device(name, pf, vf, lid)
        if port is not None and port != 1:
            sys.stdout.write(out)
            out = ""
            print("Invalid port requested for device", file=sys.stderr)
            rc |= 4
            continue
        text = formats.ibv_devinfo([d])
        if verbose:
            # the port block ends the device; -v adds its attributes and GIDs
            text = text[:-1] + _verbose_port(pf, vf, d["ports"][0]["state"]) + "\n"
        out += text
    sys.stdout.write(out)
    return rc


def show_gids(argv: list[str]) -> int:
    s = summary("show_gids")
    devs = {name: (pf, vf) for name, pf, vf in rdma_devices(s)}
    names = [argv[0]] if argv else sorted(devs)
    rows = []
    for name in names:
        if name not in devs:
            print(f"ls: cannot access '/sys/class/infiniband/{name}/ports/': No such file or directory",
                  file=sys.stderr)
            continue
        pf, vf = devs[name]
        entries = gids(pf, vf)
        for index, gid, gtype, ndev in sorted(entries, key=lambda e: str(e[0])):
            ver = gtype[gtype.find("v"):] if "v" in gtype else ""
            rows.append({"dev": name, "port": 1, "index": index, "gid": gid, "ver": ver, "ndev": ndev})
    sys.stdout.write(formats.show_gids(rows))
    return 0


def _link_rows(s: dict) -> list[dict]:
    rows = []
    for lid, (name, pf, vf) in enumerate(rdma_devices(s), 1):
        up = port_up(pf, vf)
        row = {"dev": name, "port": 1, "state": "ACTIVE" if up else "DOWN",
               "physical_state": "LINK_UP" if up else "DISABLED", "index": lid - 1}
        if pf["link_type"] == "ETH":
            row["netdev"] = vf["netdev"] if vf else pf["netdev"]
        else:
            row.update(subnet_prefix="fe80:0000:0000:0000", lid=lid, sm_lid=1, lmc=0)
        rows.append(row)
    return rows


def _netdev_index(s: dict, netdev: str) -> int:
    for pf in s["pfs"]:
        for function in [pf, *pf["vfs"]]:
            if function["netdev"] == netdev:
                return function["ifindex"]
    return 0


# what mlx5 reports through RDMA_NLDEV_ATTR_CAP_FLAGS, in iproute2's names
_MLX5_CAPS = ["BAD_PKEY_CNTR", "BAD_QKEY_CNTR", "CHANGE_PHY_PORT", "PORT_ACTIVE_EVENT", "SYS_IMAGE_GUID",
              "RC_RNR_NAK_GEN", "MEM_WINDOW", "UD_IP_CSUM", "XRC", "MEM_MGT_EXTENSIONS", "MEM_WINDOW_TYPE_2B",
              "RAW_IP_CSUM", "MANAGED_FLOW_STEERING", "RESIZE_MAX_WR"]

_USAGE = ("Usage: rdma [ OPTIONS ] OBJECT { COMMAND | help }\n"
          "       rdma [ -f[orce] ] -b[atch] filename\n"
          "where  OBJECT := { dev | link | resource | system | statistic | help }\n"
          "       OPTIONS := { -V[ersion] | -d[etails] | -j[son] | -p[retty] -r[aw]}")


def _not_found(as_json: bool, pretty: bool, message: str) -> int:
    """iproute2 6.1: with -j the (empty) array is printed before the error."""
    if as_json:
        print(formats.iproute2_json([], pretty))
    print(message, file=sys.stderr)
    return 1


def rdma(argv: list[str]) -> int:
    """iproute2 6.1's rdma (Debian 12's), as a VM node's Soft-RoCE device
    answers it (tests/vm/test_vm_twin_faithful.py): ``link show`` of a
    device needs its port (``dev/1``); an unknown object, command or
    parameter is named on stderr with exit status 0; ``system`` prints its
    text line under -j as well, without privileged-qkey (iproute2 6.6)."""
    as_json, pretty, details = False, False, False
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        a = argv[i]
        if a in ("-j", "-json", "--json"):
            as_json = True
        elif a in ("-p", "-pretty", "--pretty"):
            pretty = True
        elif a in ("-d", "-details", "--details"):
            details = True
        elif a in ("-V", "-Version", "--Version"):
            print("rdma utility, iproute2-6.1.0")
            return 0
        else:
            print(_USAGE)
            print("Unknown option.", file=sys.stderr)
            return 1
        i += 1
    rest = argv[i:]
    obj = rest[0] if rest else "help"
    args = rest[1:]
    if obj in ("help", "-h"):
        print(_USAGE)
        return 0
    s = summary("rdma")
    if obj in ("link", "l", "li", "lin"):
        if args and args[0] not in ("show", "list"):
            print(f"Unknown link command '{args[0]}'.", file=sys.stderr)
            return 0
        args = args[1:]
        rows = _link_rows(s)
        if args:
            dev, _, port = args[0].partition("/")
            rows = [r for r in rows if r["dev"] == dev and port == "1"]
            if not rows:
                return _not_found(as_json, pretty, "Wrong device name")
            if len(args) > 1:
                print(f"Unknown parameter '{args[1]}'.", file=sys.stderr)
                return 0
        if as_json:
            out = []
            for r in rows:
                e = {"ifindex": r["index"], "ifname": r["dev"], "port": 1}
                if r.get("subnet_prefix"):
                    e.update(subnet_prefix=r["subnet_prefix"], lid=r["lid"], sm_lid=r["sm_lid"], lmc=r["lmc"])
                e.update(state=r["state"], physical_state=r["physical_state"])
                if r.get("netdev"):
                    e.update(netdev=r["netdev"], netdev_index=_netdev_index(s, r["netdev"]))
                out.append(e)
            print(formats.iproute2_json(out, pretty))
            return 0
        if details:
            rows = [dict(r, netdev_index=_netdev_index(s, r["netdev"])) if r.get("netdev") else r for r in rows]
        sys.stdout.write(formats.rdma_link(rows))
        return 0
    if obj in ("dev", "d", "de"):
        if args and args[0] not in ("show", "list"):
            print(f"Unknown dev command '{args[0]}'.", file=sys.stderr)
            return 0
        args = args[1:]
        devs = rdma_devices(s)
        index = {name: n for n, (name, _p, _v) in enumerate(devs)}
        if args:
            devs = [d for d in devs if d[0] == args[0]]
            if not devs:
                return _not_found(as_json, pretty, f"Wrong device name - {args[0]}")
        out_json = []
        for name, pf, vf in devs:
            fw = pf["firmware"].get("running_fw_version", pf["firmware"]["fw_version"])
            if as_json:
                e = {"ifindex": index[name], "ifname": name, "node_type": "ca", "fw": fw,
                     "node_guid": node_guid(pf, vf), "sys_image_guid": pf["node_guid"]}
                if details:    # mlx5 sets use_cq_dim: adaptive moderation on
                    e.update({"adaptive-moderation": True, "caps": _MLX5_CAPS})
                out_json.append(e)
            else:
                line = (f"{index[name]}: {name}: node_type ca fw {fw} node_guid {node_guid(pf, vf)} "
                        f"sys_image_guid {pf['node_guid']} ")
                if details:
                    line += "adaptive-moderation on "
                print(line)
                if details:
                    print("    caps: <%s>" % ", ".join(_MLX5_CAPS))
        if as_json:
            print(formats.iproute2_json(out_json, pretty))
        return 0
    if obj in ("system", "sys", "s"):
        if args and args[0] == "set":
            print("rdma system set: not modelled by this twin node", file=sys.stderr)
            return 255
        print("netns shared copy-on-fork on")
        return 0
    print(f"Unknown object '{obj}'.", file=sys.stderr)
    return 0


def main(argv: list[str], prog: str = "rdma") -> int:
    if prog == "ibv_devinfo":
        return ibv_devinfo(argv)
    if prog == "show_gids":
        return show_gids(argv)
    return rdma(argv)
