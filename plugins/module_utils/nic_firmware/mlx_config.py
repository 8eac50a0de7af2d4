# -*- coding: utf-8 -*-
"""Logic of the ``mlx_config`` module: check wanted NIC firmware parameters,
compare them with an ``mlxconfig``/``mstconfig -e q`` query, build the
``set`` command and judge the firmware version.

Plain standard-library Python; the module runs the tools and passes their
output here.  Every error is a ``MlxConfigError`` whose text names the
device, the parameter and the value.
"""

from __future__ import annotations

import re

from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware.mlx_tools import (
    compare_fw_versions,
    mlxconfig_pending,
    parse_mlxconfig_query,
    parse_mlxconfig_set,
    parse_mstflint_query,
)

__all__ = [
    "MlxConfigError",
    "MAX_NUM_OF_VFS",
    "normalize_params",
    "plan_changes",
    "set_command",
    "query_command",
    "param_values",
    "check_set_output",
    "predicted_pending",
    "pending",
    "parse_query",
    "check_fw_version",
    "read_device",
    "check_reading",
    "plan_devices",
    "with_present",
    "run_devices",
]

#: Upper bound of NUM_OF_VFS that the firmware accepts on every ConnectX.
MAX_NUM_OF_VFS = 127

_LINK_TYPES = {"IB": 1, "ETH": 2, "VPI": 3}
_BOOL_PARAMS = ("SRIOV_EN", "ATS_ENABLED")
_TRUE = ("1", "true", "yes", "on", "True(1)")
_FALSE = ("0", "false", "no", "off", "False(0)")
_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")


class MlxConfigError(Exception):
    """A wanted value is invalid, or a tool's answer cannot be used."""


def _as_int(device, name, value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if re.fullmatch(r"\d+", text):
        return int(text)
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
        return int(text, 16)
    raise MlxConfigError("%s: %s=%r is not a number" % (device, name, value))


def _normalize_one(device, name, value, max_num_of_vfs):
    if name == "NUM_OF_VFS":
        num = _as_int(device, name, value)
        if not 0 <= num <= max_num_of_vfs:
            raise MlxConfigError("%s: NUM_OF_VFS=%s is out of range 0..%d"
                                 % (device, value, max_num_of_vfs))
        return num
    if name in _BOOL_PARAMS:
        if isinstance(value, bool):
            return int(value)
        text = str(value).strip()
        if text.lower() in _TRUE or text in _TRUE:
            return 1
        if text.lower() in _FALSE or text in _FALSE:
            return 0
        raise MlxConfigError("%s: %s=%r is not a boolean (true/false, 1/0)" % (device, name, value))
    if re.fullmatch(r"LINK_TYPE_P\d+", name):
        text = str(value).strip()
        if text.upper() in _LINK_TYPES:
            return _LINK_TYPES[text.upper()]
        if text in ("1", "2", "3"):
            return int(text)
        raise MlxConfigError("%s: %s=%r is not a link type (ETH, IB, VPI or 1, 2, 3)"
                             % (device, name, value))
    num = _as_int(device, name, value)
    if num < 0:
        raise MlxConfigError("%s: %s=%s is negative" % (device, name, value))
    return num


def normalize_params(device, params, max_num_of_vfs=MAX_NUM_OF_VFS):
    """Wanted ``{NAME: value}`` -> ``{NAME: int}``, checked before any change.

    NUM_OF_VFS is 0..``max_num_of_vfs`` (at most 127), LINK_TYPE_Pn is
    ETH/IB/VPI or 1/2/3, SRIOV_EN and ATS_ENABLED are booleans, anything
    else a non-negative integer.
    """
    if not params:
        raise MlxConfigError("%s: no parameters given" % device)
    if not 0 <= max_num_of_vfs <= MAX_NUM_OF_VFS:
        raise MlxConfigError("%s: max_num_of_vfs=%s is out of range 0..%d"
                             % (device, max_num_of_vfs, MAX_NUM_OF_VFS))
    out = {}
    for name, value in params.items():
        if not _NAME_RE.match(str(name)):
            raise MlxConfigError("%s: %r is not an mlxconfig parameter name" % (device, name))
        if value is None:
            raise MlxConfigError("%s: %s has no value" % (device, name))
        out[name] = _normalize_one(device, name, value, max_num_of_vfs)
    return out


def param_values(parsed, column):
    """``{NAME: raw string}`` of one column (``default``, ``current``, ``next``)."""
    return {name: parsed["params"][name][column] for name in parsed["param_order"]}


def plan_changes(device, parsed, wanted, at_least=()):
    """Parameters whose Next Boot value is not the wanted one.

    ``parsed`` is ``parse_mlxconfig_query`` of an ``-e`` query, ``wanted``
    the result of :func:`normalize_params`.  A name in ``at_least`` is
    satisfied by a Next Boot value at least as large (NUM_OF_VFS 16 covers
    8 wanted VFs).  Returns ``[{name, next, next_int, want}]``.
    """
    missing = [n for n in wanted if n not in parsed["params"]]
    if missing:
        raise MlxConfigError("%s: the firmware has no parameter %s" % (device, ", ".join(sorted(missing))))
    changes = []
    for name, want in wanted.items():
        p = parsed["params"][name]
        if p.get("read_only"):
            if p["next_int"] != want:
                raise MlxConfigError("%s: %s is read-only (next boot %s, wanted %s)"
                                     % (device, name, p["next"], want))
            continue
        have = p["next_int"]
        if have is None:
            raise MlxConfigError("%s: %s has no numeric next-boot value (%r)" % (device, name, p["next"]))
        if have == want or (name in at_least and have >= want):
            continue
        changes.append({"name": name, "next": p["next"], "next_int": have, "want": want})
    return changes


def query_command(tool, device):
    return [tool, "-d", device, "-e", "q"]


def set_command(tool, device, changes):
    return [tool, "-d", device, "-y", "set"] + ["%s=%d" % (c["name"], c["want"]) for c in changes]


def parse_query(device, text):
    try:
        return parse_mlxconfig_query(text)
    except ValueError as exc:
        raise MlxConfigError("%s: %s" % (device, exc))


def pending(parsed, device=None):
    """The parameters whose Next Boot value is not the one in use
    (mlx_tools.mlxconfig_pending). A query with no Current column, as
    ConnectX-3 firmware answers ``-e q`` (Default and Next Boot only: it
    cannot report the values in use), raises ``MlxConfigError`` naming the
    device and the columns: whether a change waits for a reboot cannot be
    told, and the module fails that device, not the run."""
    if "current" not in parsed.get("columns", []):
        raise MlxConfigError(
            "%s: mlxconfig -e q printed the columns %s and no Current: the firmware does not report the values "
            "in use (ConnectX-3 and older), so whether a change waits for a reboot cannot be read; "
            "this collection manages ConnectX-4 and later"
            % (device or parsed.get("device") or "the device", ", ".join(parsed.get("columns") or []) or "none"))
    return mlxconfig_pending(parsed)


def predicted_pending(parsed, changes):
    """What :func:`pending` would return once ``changes`` are set: the
    check-mode answer to whether a reboot will be needed."""
    wanted = {c["name"]: c["want"] for c in changes}
    out = []
    for name in parsed["param_order"]:
        p = parsed["params"][name]
        nxt_int = wanted.get(name, p["next_int"])
        nxt = str(wanted[name]) if name in wanted else p["next"]
        same = (nxt_int == p["current_int"]) if (nxt_int is not None and p["current_int"] is not None) \
            else nxt == p["current"]
        if not same:
            out.append({"name": name, "current": p["current"], "next": nxt,
                        "current_int": p["current_int"], "next_int": nxt_int})
    return out


def check_set_output(device, text, rc):
    """Parsed ``set`` output; raises with the tool's ``-E-`` text on failure.
    ``Nothing to set`` (the tool found every value already at its next-boot
    value) is no failure: the caller's query after the set says whether the
    device holds what was wanted."""
    try:
        res = parse_mlxconfig_set(text)
    except ValueError as exc:
        raise MlxConfigError("%s: set failed (rc %s): %s" % (device, rc, exc))
    if rc != 0 or res["failed"] or not (res["applied"] or res["nothing_to_set"]):
        lines = text.strip().splitlines()
        detail = "; ".join(res["errors"]) or (lines[-1].strip() if lines else "no output")
        raise MlxConfigError("%s: set failed (rc %s): %s" % (device, rc, detail))
    return res


def check_fw_version(device, text, min_fw_version=None):
    """``{fw_version, fw_version_running, psid, ...}`` from ``mstflint q``;
    raises when the burned version is older than ``min_fw_version``."""
    try:
        q = parse_mstflint_query(text)
    except ValueError as exc:
        raise MlxConfigError("%s: %s" % (device, exc))
    out = {"fw_version": q["fw_version"], "fw_version_running": q["fw_version_running"] or q["fw_version"],
           "psid": q["psid"], "fw_reset_pending": q["reset_pending"]}
    if min_fw_version:
        try:
            older = compare_fw_versions(q["fw_version"], min_fw_version) < 0
        except ValueError as exc:
            raise MlxConfigError("%s: min_fw_version: %s" % (device, exc))
        if older:
            raise MlxConfigError("%s: firmware %s is older than the minimum %s"
                                 % (device, q["fw_version"], min_fw_version))
    return out


def read_device(run, tool, flint_tool, device):
    """Run the read-only queries of one device: ``flint_tool -d <dev> q`` (when
    ``flint_tool`` is not empty) and ``tool -d <dev> -e q``.

    ``run(argv) -> (rc, stdout, stderr)``.  Returns ``{device, tool,
    flint_tool, flint, query}`` with what the tools printed (``flint`` None
    without a flint tool), for :func:`check_reading`; raises ``MlxConfigError`` naming the
    device and the tool when a query fails.
    """
    flint = None
    if flint_tool:
        rc, out, err = run([flint_tool, "-d", device, "q"])
        if rc != 0:
            raise MlxConfigError("%s: %s query failed (rc %d): %s" % (device, flint_tool, rc, (out + err).strip()))
        flint = out
    rc, out, err = run(query_command(tool, device))
    if rc != 0:
        detail = (out + err).strip().splitlines()
        raise MlxConfigError("%s: %s query failed (rc %d): %s"
                             % (device, tool, rc, detail[-1] if detail else "no output"))
    return {"device": device, "tool": tool, "flint_tool": flint_tool, "flint": flint, "query": out}


def check_reading(reading, wanted, at_least=(), min_fw_version=None):
    """What setting ``wanted`` would do to the device of ``reading`` (a
    :func:`read_device` answer): the check-mode answer of the mlx_config
    module for that device, ``{device, changed, command, fw_version,
    fw_version_running, current, next_boot, changed_params, pending,
    reboot_required}`` plus ``parsed`` (the query) for a caller that sets.
    Raises ``MlxConfigError`` as the module fails."""
    device = reading["device"]
    out = {"device": device, "changed": False, "command": [], "fw_version": None, "fw_version_running": None}
    if reading.get("flint") is not None:
        fw = check_fw_version(device, reading["flint"], min_fw_version)
        out.update(fw_version=fw["fw_version"], fw_version_running=fw["fw_version_running"])
    parsed = parse_query(device, reading["query"])
    changes = plan_changes(device, parsed, wanted, at_least=at_least)
    if changes:
        out.update(changed=True, command=set_command(reading["tool"], device, changes))
    out.update(current=param_values(parsed, "current"), next_boot=param_values(parsed, "next"),
               changed_params=changes, pending=pending(parsed, device),
               reboot_required=bool(predicted_pending(parsed, changes)), parsed=parsed)
    return out


def with_present(device, wanted, reading, present):
    """``wanted`` and those of ``present`` (normalized values) that the
    device's firmware has: the parameters its query (a :func:`read_device`
    answer) lists. Given values of ``wanted`` stay as given."""
    if not present:
        return wanted
    params = parse_query(device, reading["query"])["params"]
    out = dict(wanted)
    for name, value in present.items():
        if name in params and name not in out:
            out[name] = value
    return out


def plan_devices(devices, max_num_of_vfs=MAX_NUM_OF_VFS):
    """``[(device, wanted)]`` for the module's ``devices`` ([{device,
    params}]); raises on the first bad value, before any device is read."""
    return [(e["device"], normalize_params(e["device"], e["params"], max_num_of_vfs)) for e in devices or []]


def run_devices(plan, converge, stop_on_error=False):
    """The module's answer for several devices: ``converge(device, wanted,
    entry)`` fills each device's entry or raises ``MlxConfigError``, which
    marks that entry failed. Returns ``{changed, reboot_required, command,
    devices}``, plus ``failed`` and ``msg`` (every device's error) when a
    device failed; with ``stop_on_error``, no device after a failed one is
    tried."""
    devices, errors = [], []
    for device, wanted in plan:
        entry = {"device": device, "changed": False, "command": [], "fw_version": None, "fw_version_running": None}
        try:
            converge(device, wanted, entry)
        except MlxConfigError as exc:
            entry.update(failed=True, msg=str(exc))
            errors.append(str(exc))
        devices.append(entry)
        if errors and stop_on_error:
            break
    result = {"changed": any(d["changed"] for d in devices),
              "reboot_required": any(d.get("reboot_required", False) for d in devices),
              "command": [d["command"] for d in devices if d["command"]], "devices": devices}
    if errors:
        result.update(failed=True, msg="; ".join(errors))
    return result
