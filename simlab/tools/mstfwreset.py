"""Twin of ``mstfwreset`` (mstflint) and ``mlxfwreset`` (MFT).

``-d <dev> [-l 0|1|3|4] [-t 0|1] [--sync N] [-y] [--skip_driver] q|query|r|reset|s|status``

* ``query`` prints the reset levels, types and syncs as
  ``CmdRegMfrl.query_text`` does, with what the card supports now: the
  live-patch level 0 only while no mlxconfig change is pending.
* ``reset`` at level 3 (the default when a configuration change is pending)
  resets the firmware: next-boot values become current, the burned image
  runs, the driver re-probes and every VF of the card is gone (the agent's
  ``fw_reset``).  Level 0 only activates a burned image.  Level 4 asks the
  machine to reboot, as the tool does.
* ``status`` lists the pending firmware and NV configuration changes.

Output lines, prompts (``Continue with reset?[y/N]``) and errors (``-E- ...``,
exit 1) follow ``small_utils/mstfwreset.py``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from simlab.tools.agentclient import call, summary
from simlab.tools.twin import pf_by_device

LEVELS = [
    (0, 'Driver, PCI link, network link will remain up ("live-Patch")'),
    (1, 'Only ARM side will not remain up ("Immediate reset").'),
    (3, "Driver restart and PCI reset"),
    (4, "Warm Reboot"),
]
TYPES = [
    (0, "Full chip reset", True),
    (1, "Phy-less reset (keep network port active during reset)", True),
    (2, "NIC only reset (for SoC devices)", False),
    (3, "ARM only reset", False),
    (4, "ARM OS shut down", False),
]


class Aborted(Exception):
    pass


def _row(num, description, supported, default):
    return "{0}: {1:<62}-{2:<14}{3}\n".format(num, description, supported, default)


def supported_levels(pf: dict) -> set[int]:
    fw = pf["firmware"]
    levels = {3, 4}
    if fw["next"] == fw["current"]:
        levels.add(0)
    return levels


def default_level(pf: dict) -> int:
    sup = supported_levels(pf)
    return next(lvl for lvl in (0, 3, 4) if lvl in sup)


def query_text(pf: dict) -> str:
    sup = supported_levels(pf)
    dflt = default_level(pf)
    out = "Reset-levels:\n"
    for lvl, desc in LEVELS:
        out += _row(lvl, desc, "Supported" if lvl in sup else "Not Supported", "(default)" if lvl == dflt else "")
    out += "\nReset-types (relevant only for reset-levels 1,3,4):\n"
    for typ, desc, ok in TYPES:
        out += _row(typ, desc, "Supported" if ok else "Not Supported", "(default)" if typ == 0 else "")
    return out


def sync_text() -> str:
    out = "Reset-sync (relevant only for reset-level 3):\n"
    out += _row(0, "Tool is the owner", "Supported", "(default)")
    out += _row(1, "Driver is the owner", "Supported", "")
    return out


def _step(label: str, result: str = "Done") -> None:
    print("-I- %-40s-" % label + result)
    sys.stdout.flush()


def _ask(question: str, yes: bool) -> None:
    q = question + "?[y/N] "
    if yes:
        print(q + "y")
        return
    sys.stdout.write(q)
    sys.stdout.flush()
    ans = sys.stdin.readline().strip()
    if ans.lower() not in ("y", "yes"):
        raise Aborted("Aborted by user")


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, add_help=False)
    p.add_argument("--device", "-d", required=True)
    p.add_argument("--level", "-l", type=int, choices=[0, 1, 3, 4], dest="reset_level")
    p.add_argument("--type", "-t", type=int, choices=[0, 1, 2, 3, 4], dest="reset_type")
    p.add_argument("--method", "-p", type=int, choices=[0, 1], dest="request_method")
    p.add_argument("--sync", type=int, choices=[0, 1, 2], dest="reset_sync")
    p.add_argument("--yes", "-y", action="store_true")
    p.add_argument("--skip_driver", "-s", action="store_true")
    p.add_argument("--mst_flags", "-m")
    p.add_argument("--help", "-h", action="help")
    p.add_argument("--ignore_list", nargs="*", default=[])
    p.add_argument("--no_mst_restart", action="store_true")
    p.add_argument("--skip_fsm_sync", action="store_true")
    p.add_argument("--skip_socket_direct", action="store_true")
    p.add_argument("--log")
    p.add_argument("command", nargs=1, choices=["q", "query", "r", "reset", "reset_fsm_register", "s", "status"])
    return p


def _reset(pf: dict, device: str, args, prog: str) -> int:
    level = default_level(pf) if args.reset_level is None else args.reset_level
    rtype = 0 if args.reset_type is None else args.reset_type
    if level not in supported_levels(pf):
        raise RuntimeError(f"Reset-level '{level}' is not supported in the current state of this device")
    if not dict((t, ok) for t, _d, ok in TYPES)[rtype]:
        raise RuntimeError(f"Reset-type '{rtype}' is not supported in the current state of this device")
    sync = 0 if args.reset_sync is None else args.reset_sync
    if sync == 2 and (args.request_method or 0) == 0:
        raise RuntimeError("Sync 2 is not supported with method 0")
    print(f"The reset level for device, {device} is:\n")
    print(f"{level}: {dict(LEVELS)[level]}")
    _ask("Continue with reset", args.yes)
    print(f"Reset level: {level}, Reset type: {rtype}, Reset sync: {sync}, Reset method: {args.request_method or 0}")
    driver_loaded = pf["bound"] and not args.skip_driver
    if level == 4:
        _step("Sending Reset Command To Fw")
        sys.stdout.write("-I- %-40s-" % "Sending reboot command to machine")
        sys.stdout.flush()
        try:
            rc = subprocess.run(["reboot"], capture_output=True).returncode
        except OSError:
            rc = 1
        if rc != 0:
            print("Failed")
            raise RuntimeError("Failed to reboot machine please reboot machine manually")
        print("Done")
        return 0
    if level == 0:
        _step("Sending Reset Command To Fw")
        reply = call({"op": "fw_activate", "bdf": pf["bdf"]}, prog)
    else:
        _step("Sending Reset Command To Fw")
        if driver_loaded:
            _step("Stopping Driver")
        reply = call({"op": "fw_reset", "bdf": pf["bdf"]}, prog)
        _step("Resetting PCI")
        if driver_loaded:
            _step("Starting Driver")
    if not reply.get("ok"):
        print("-E- Firmware reset failed, retry operation or reboot machine.")
        return 1
    if prog == "mlxfwreset" and not args.no_mst_restart:
        _step("Restarting MST")
    print("-I- FW was loaded successfully.")
    return 0


def _status(pf: dict) -> None:
    fw = pf["firmware"]
    fw_pending = fw.get("running_fw_version", fw["fw_version"]) != fw["fw_version"]
    nv_pending = fw["next"] != fw["current"]
    print("FW pending: " + ("Yes" if fw_pending else "No"))
    print("NVCONFIG pending: " + ("Yes" if nv_pending else "No"))
    if fw_pending or nv_pending:
        print(f"Minimal reset level required: {default_level(pf) if not nv_pending else 3}")


def main(argv: list[str], prog: str = "mstfwreset") -> int:
    args = _parser(prog).parse_args(argv)
    command = {"q": "query", "r": "reset", "s": "status"}.get(args.command[0], args.command[0])
    s = summary(prog)
    pf = pf_by_device(s, args.device, allow_mst=(prog == "mlxfwreset"))
    try:
        if pf is None:
            raise RuntimeError(f"Failed to re-open device ({args.device}): No such file or directory")
        print("")
        if command == "query":
            print(query_text(pf))
            print(sync_text())
        elif command == "status":
            _status(pf)
        elif command == "reset":
            return _reset(pf, args.device, args, prog)
        elif command == "reset_fsm_register":
            print("-I- FSM register was reset successfully.")
        return 0
    except Aborted as exc:
        print(f"-E- {exc}.")
        return 1
    except RuntimeError as exc:
        print(f"-E- {exc}.")
        return 1
