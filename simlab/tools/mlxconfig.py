"""Twin of ``mlxconfig`` (MFT) and ``mstconfig`` (mstflint): the same UI.

* ``-d <dev> [-e] q|query [PARAM...]``: the device's non-volatile
  configuration; ``-e`` adds the Default and Current columns and the ``*``
  marker where Next Boot differs.
* ``-d <dev> [-y] set NAME=VAL ...``: stores next-boot values (the firmware
  reads them at the next reset or reboot).  Without ``-y`` it asks "Apply new
  Configuration? (y/n) [n] :" and reads the answer from stdin.
* ``-d <dev> [-y] reset``: next-boot values back to the defaults.

``<dev>`` is a PCI address (``0000:3b:00.0`` or ``3b:00.0``) or, for
mlxconfig, an MST device (``/dev/mst/mt4129_pciconf0``).  Messages, their
order and the exit codes follow mstflint's ``mlxconfig/mlxcfg_ui.cpp``:
``-E-`` lines on stdout, 0 on success, 2 when aborted, 3 on errors.
"""

from __future__ import annotations

import re
import sys

from simlab.tools import formats
from simlab.tools.agentclient import call, summary
from simlab.tools.twin import pf_by_device

OK, ABORTED, ERROR = 0, 2, 3

# name -> (kind, bits, enum labels); the kinds print as the tool does:
# enums as LABEL(n), plain integers as n.
BOOL = {"False": 0, "True": 1}
PARAMS = {
    "NUM_OF_VFS": ("int", 16, None),
    "SRIOV_EN": ("enum", 1, BOOL),
    "LINK_TYPE_P1": ("enum", 2, {"IB": 1, "ETH": 2, "VPI": 3}),
    "ROCE_CC_PRIO_MASK_P1": ("int", 8, None),
    "CNP_DSCP_P1": ("int", 6, None),
    "CNP_802P_PRIO_P1": ("int", 3, None),
    "ATS_ENABLED": ("enum", 1, BOOL),
}
ORDER = list(PARAMS)
MAX_NUM_OF_VFS = 127
MAX_PORT = 2

DESCRIPTIONS = {
    "cx5ex": "ConnectX-5 Ex EN network interface card; 100GbE dual-port QSFP28; PCIe4.0 x16; tall bracket; ROHS R6",
    "cx6dx": "ConnectX-6 Dx EN adapter card; 100GbE; Dual-port QSFP56; PCIe 4.0/3.0 x16;",
    "cx7": "NVIDIA ConnectX-7 HHHL Adapter card; 400GbE / NDR IB (default mode); Single-port OSFP; PCIe 5.0 x16; "
           "Crypto Disabled; Secure Boot Enabled",
    "cx8": "NVIDIA ConnectX-8 C8180 HHHL SuperNIC; 800Gbs XDR IB (default mode) / 2x400GbE; Single-cage OSFP; "
           "PCIe 6.0 x16; Crypto Disabled; Secure Boot Enabled",
}


class MlxcfgError(Exception):
    pass


def _ordered(fw_state: dict) -> list[str]:
    names = [n for n in ORDER if n in fw_state["next"]]
    return names + sorted(n for n in fw_state["next"] if n not in PARAMS)


def display(name: str, value: int) -> str:
    kind, _bits, labels = PARAMS.get(name, ("int", 32, None))
    if kind == "enum":
        for label, num in labels.items():
            if num == value:
                return f"{label}({value})"
    return str(value)


def _str_to_num(text: str) -> int | None:
    """strToNum(str, num, 0): decimal, 0x hex or 0 octal, whole string."""
    try:
        if re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
            return int(text, 16)
        if re.fullmatch(r"0[0-7]+", text):
            return int(text, 8)
        if re.fullmatch(r"\d+", text):
            return int(text)
    except ValueError:
        pass
    return None


def parse_value(name: str, text: str) -> tuple[int, str]:
    """The (value, display) a ``NAME=VAL`` sets, or MlxcfgError with the
    tool's text (``EnumParamValue``/``UnsignedParamValue::parseValue``)."""
    kind, bits, labels = PARAMS.get(name, ("int", 32, None))
    if kind == "enum":
        num = _str_to_num(text)
        if num is not None:
            for label, v in labels.items():
                if v == num:
                    return num, f"{label}({num})"
        else:
            for label, v in labels.items():
                if label.lower() == text.lower():
                    return v, f"{label}({v})"
        raise MlxcfgError(f"Unknown value {text}")
    num = _str_to_num(text)
    if num is None:
        raise MlxcfgError("Cannot parse the value")
    if bits != 32 and num > (1 << bits) - 1:
        raise MlxcfgError(f"The value {text} is not valid,  as its size is {bits} bits")
    shown = text if (text == str(num)) else f"{text}({num})"
    return num, shown


def _unknown(name: str) -> MlxcfgError:
    port, module = 0, -1
    m = re.match(r"^(.*)_P(\d+)$", name)
    if m and 0 < int(m.group(2)) <= MAX_PORT:
        port = int(m.group(2))
    return MlxcfgError(f"Failed to find Param / TLV with name '{name}' port {port} module {module}")


def _check_name(name: str, fw_state: dict) -> None:
    if name not in fw_state["next"]:
        raise _unknown(name)


def _layout(s: dict) -> str:
    layout = s.get("hw", {}).get("mlxconfig_layout", "doc")
    return layout if layout in formats.MLXCFG_LAYOUTS else "doc"


def _ident(pf: dict) -> dict:
    return {"device_type": pf["device_type"], "name": pf["part"] + "_Ax",
            "description": DESCRIPTIONS.get(pf["model"], "N/A")}


def _opening_and_header(pf: dict, device: str, layout: str, new: bool, extended: bool = False) -> str:
    ident = _ident(pf)
    if new:
        text = formats.mlxconfig_set([], device=device, layout=layout, **ident)
        return text[:text.index("\n Apply new Configuration?")]
    return formats.mlxconfig_query(params=[], device=device, extended=extended, layout=layout, **ident)


# ---------------------------------------------------------------- commands
def query(s: dict, pf: dict, device: str, extended: bool, names: list[str]) -> int:
    fw = pf["firmware"]
    layout = _layout(s)
    if names:
        for n in names:
            if n not in fw["next"]:
                sys.stdout.write(_opening_and_header(pf, device, layout, False, extended))
                print(f"-E- {_unknown(n)}")
                return ERROR
    params = [{"name": n, "default": display(n, fw["default"].get(n, 0)),
               "current": display(n, fw["current"].get(n, 0)), "next": display(n, fw["next"][n])}
              for n in (names or _ordered(fw))]
    sys.stdout.write(formats.mlxconfig_query(params=params, device=device, extended=extended,
                                             layout=layout, **_ident(pf)))
    return OK


def _ask(question: str, yes: bool) -> bool:
    sys.stdout.write(f"\n {question} (y/n) [n] : ")
    if yes:
        sys.stdout.write("y\n")
        return True
    sys.stdout.flush()
    answer = sys.stdin.readline().rstrip("\n")
    if answer.lower() not in ("y", "yes"):
        print("-E- Aborted by user.")
        return False
    return True


def set_params(s: dict, pf: dict, device: str, assignments: list[str], yes: bool, prog: str) -> int:
    fw = pf["firmware"]
    layout = _layout(s)
    parsed = []
    for a in assignments:
        name, _, val = a.partition("=")
        parsed.append((name, val))
    changes, values = [], {}
    try:
        for name, val in parsed:
            _check_name(name, fw)
            num, shown = parse_value(name, val)
            values[name] = num
            changes.append((name, display(name, fw["next"][name]), shown))
    except MlxcfgError as exc:
        sys.stdout.write(_opening_and_header(pf, device, layout, True))
        print(f"-E- {exc}")
        return ERROR
    text = formats.mlxconfig_set(changes, device=device, layout=layout, **_ident(pf))
    sys.stdout.write(text[:text.index("\n Apply new Configuration?")])
    if not _ask("Apply new Configuration?", yes):
        return ABORTED
    sys.stdout.write("Applying... ")
    # the firmware's rules, checked by setCfg before anything is written
    if values.get("NUM_OF_VFS", 0) > MAX_NUM_OF_VFS:
        print("Failed!")
        print(f"-E- Parameter NUM_OF_VFS' value is larger than maximum allowed {MAX_NUM_OF_VFS}")
        return ERROR
    reply = call({"op": "fw_set", "bdf": pf["bdf"], "params": values}, prog)
    if not reply.get("ok"):
        print("Failed!")
        print(f"-E- {reply.get('error', 'Failed to set configuration')}")
        return ERROR
    print("Done!")
    print("-I- Please reboot machine to load new configurations.")
    return OK


def reset(pf: dict, device: str, yes: bool, prog: str) -> int:
    if not _ask(f"Reset configuration for device {device}?", yes):
        return ABORTED
    sys.stdout.write("Applying... ")
    reply = call({"op": "fw_set", "bdf": pf["bdf"], "params": dict(pf["firmware"]["default"])}, prog)
    if not reply.get("ok"):
        print("Failed!")
        print(f"-E- {reply.get('error')}")
        return ERROR
    print("Done!")
    print("-I- Please reboot machine to load new configurations.")
    return OK


COMMANDS = {"q": "query", "query": "query", "s": "set", "set": "set", "r": "reset", "reset": "reset"}


def main(argv: list[str], prog: str = "mlxconfig") -> int:
    device, extended, yes = None, False, False
    i = 0
    cmd = None
    while i < len(argv):
        a = argv[i]
        if a in ("-d", "--dev"):
            if i + 1 >= len(argv):
                print("-E- missing device name")
                return ERROR
            device = argv[i + 1]
            i += 2
            continue
        if a in ("-e", "--enable_verbosity"):
            extended = True
        elif a in ("-y", "--yes"):
            yes = True
        elif a in COMMANDS:
            cmd = COMMANDS[a]
            i += 1
            break
        elif a in ("-h", "--help"):
            print(f"    NAME\n        {prog}\n    SYNOPSIS\n        {prog} [-d <device>] [-y] [-e] <q[uery]|set|reset>")
            return OK
        else:
            print(f"-E- invalid argument: {a}")
            return ERROR
        i += 1
    rest = argv[i:]
    if cmd is None:
        print("-E- No command found. For more information please read the help message:")
        return ERROR
    if cmd == "set" and not rest:
        print(f"-E- missing configuration arguments. For more information please run {prog} -h|--help.")
        return ERROR
    if cmd == "set":
        seen = set()
        for a in rest:
            if not re.fullmatch(r"[^=\s]+=[^=\s]+", a):
                print(f"-E- Invalid Configuration argument {a}")
                return ERROR
            tag = a.split("=", 1)[0]
            if tag in seen:
                print(f"-E- Duplicate parameter, {tag}.")
                return ERROR
            seen.add(tag)
    if device is None:
        if cmd == "set":
            print("-E- set command expects device to be specified.")
            return ERROR
    s = summary(prog)
    if device is None:
        # every device, numbered as the tool does
        pfs = sorted(s["pfs"], key=lambda p: p["bdf"])
        if cmd == "reset":
            if not _ask("Reset configuration for all devices?", yes):
                return ABORTED
            sys.stdout.write("Applying... ")
            for pf in pfs:
                call({"op": "fw_set", "bdf": pf["bdf"], "params": dict(pf["firmware"]["default"])}, prog)
            print("Done!")
            print("-I- Please reboot machine to load new configurations.")
            return OK
        for n, pf in enumerate(pfs, 1):
            fw = pf["firmware"]
            params = [{"name": p, "default": display(p, fw["default"].get(p, 0)),
                       "current": display(p, fw["current"].get(p, 0)), "next": display(p, fw["next"][p])}
                      for p in _ordered(fw)]
            sys.stdout.write(formats.mlxconfig_query(params=params, device=pf["bdf"], extended=extended,
                                                     index=n, layout=_layout(s), **_ident(pf)))
        return OK
    pf = pf_by_device(s, device, allow_mst=(prog == "mlxconfig"))
    if pf is None:
        print("-E- Failed to open the device")
        if cmd == "query":
            # queryDevsCfg reports the failed device once more
            print("-E- Failed to open the device")
        return ERROR
    if cmd == "query":
        return query(s, pf, device, extended, rest)
    if cmd == "set":
        return set_params(s, pf, device, rest, yes, prog)
    return reset(pf, device, yes, prog)
