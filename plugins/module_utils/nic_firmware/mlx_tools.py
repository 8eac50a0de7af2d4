# -*- coding: utf-8 -*-
"""Parsers for NVIDIA/Mellanox firmware and QoS tool output.

Covers ``mlxconfig``/``mstconfig`` (query and set), ``mstflint``/``flint``
query, and ``mlnx_qos``.  Plain standard-library Python: every function takes
the tool's text output and returns JSON-serialisable dicts and lists, or
raises ``ValueError`` when the text is not output of the expected tool.

Parsing is by whitespace, never by fixed columns: the tools changed their
column widths between releases (MFT 4.14 pads names to 36 characters, MFT
4.30 to 44, mstflint 4.3x to 48) and published outputs are often filtered
through ``grep`` or re-indented.
"""

from __future__ import annotations

import re

__all__ = [
    "split_enum",
    "parse_mlxconfig_query",
    "mlxconfig_pending",
    "parse_mlxconfig_set",
    "parse_mstflint_query",
    "fw_version_tuple",
    "compare_fw_versions",
    "parse_mlnx_qos",
]

# --------------------------------------------------------------------------
# mlxconfig / mstconfig
# --------------------------------------------------------------------------

_COLUMN_KEYS = {
    "default": "default",
    "current": "current",
    "next boot": "next",
    "new": "new",
}
# Every name in mstflint's mlxconfig_host.db has an underscore; a few have
# lower-case letters after it (EXP_ROM_UEFI_x86_ENABLE).
_PARAM_NAME_RE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Za-z0-9]+)+(\[\d+(\.\.\d+)?\])?$")
_GLUED_VALUES_RE = re.compile(r"(?<=\))(?=\S)")
_ENUM_RE = re.compile(r"^(?P<label>.*)\((?P<num>-?\d+)\)$")
_ARRAY_RE = re.compile(r"^Array\[(\d+)\.\.(\d+)\]$")
# "PCI device:" is what MFT/mstflint before 4.6 printed instead of "Device:".
_HEADER_RE = re.compile(r"^(Device type|Name|Description|Device|PCI device):\s*(.*)$")
_DEVICE_IDX_RE = re.compile(r"^Device #(\d+):\s*$")


def split_enum(raw):
    """Split an mlxconfig display value into ``(label, integer)``.

    ``'True(1)'`` -> ``('True', 1)``; ``'16'`` -> ``(None, 16)``;
    ``'0x1f'`` -> ``(None, 31)``; ``'Array[0..7]'`` and ``'N/A'`` ->
    ``(None, None)``.
    """
    if raw is None:
        return None, None
    m = _ENUM_RE.match(raw)
    if m:
        return m.group("label"), int(m.group("num"))
    if re.fullmatch(r"-?\d+", raw):
        return None, int(raw)
    if re.fullmatch(r"0x[0-9a-fA-F]+", raw):
        return None, int(raw, 16)
    return None, None


def _value_fields(prefix, raw):
    label, num = split_enum(raw)
    out = {prefix: raw, prefix + "_int": num}
    if label is not None:
        out[prefix + "_label"] = label
    arr = _ARRAY_RE.match(raw or "")
    if arr:
        out[prefix + "_array"] = [int(arr.group(1)), int(arr.group(2))]
    return out


def _parse_columns(line):
    """Column keys from a ``Configurations:`` header line."""
    rest = line.strip()[len("Configurations:"):].strip()
    if not rest:
        raise ValueError("mlxconfig: 'Configurations:' header has no value columns")
    cols = []
    for part in re.split(r"\s{2,}", rest):
        key = _COLUMN_KEYS.get(part.strip().lower())
        if key is None:
            raise ValueError("mlxconfig: unknown column %r in header %r" % (part, line.strip()))
        cols.append(key)
    return cols


def _parse_param_row(line, columns):
    """One table row, or None when the line is not a parameter row.

    A line that starts with a parameter name (or a '*'/'RO' marker) but does
    not have one value per column raises ``ValueError`` quoting it: a
    parameter is never dropped silently."""
    tokens = line.split()
    if not tokens:
        return None
    modified = False
    read_only = False
    marked = False
    # Marker tokens: '*', 'RO' or '*RO' (printf("%s%s     %-48s", diff, readOnly, name)).
    while tokens and tokens[0] in ("*", "RO", "*RO"):
        marked = True
        if "*" in tokens[0]:
            modified = True
        if "RO" in tokens[0]:
            read_only = True
        tokens = tokens[1:]
    if not tokens or not _PARAM_NAME_RE.match(tokens[0]):
        if marked:
            raise ValueError("mlxconfig: cannot read parameter row %r" % line.strip())
        return None
    # MFT/mstflint 4.6-4.11 printed each value as "%-16s" with no blank
    # after it, so a value of 16 characters or more runs into the next one
    # (PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)PCI_ATOMIC_...); a value
    # ends at its "(N)"
    tokens = tokens[:1] + [v for tok in tokens[1:] for v in _GLUED_VALUES_RE.split(tok) if v]
    if len(tokens) != len(columns) + 1:
        raise ValueError("mlxconfig: parameter row %r has %d value(s), the table has %d column(s) %r"
                         % (line.strip(), len(tokens) - 1, len(columns), columns))
    row = {"name": tokens[0], "modified": modified, "read_only": read_only}
    for key in ("default", "current", "next", "new"):
        row[key] = None
        row[key + "_int"] = None
    for key, raw in zip(columns, tokens[1:]):
        row.update(_value_fields(key, raw))
    return row


def _new_device(index=None):
    return {
        "index": index,
        "device_type": None,
        "name": None,
        "description": None,
        "device": None,
        "columns": [],
        "params": {},
        "param_order": [],
    }


def _parse_mlxconfig_tables(text, tool="mlxconfig"):
    if not isinstance(text, str):
        raise ValueError("%s: output must be a string" % tool)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    devices = []
    dev = None
    columns = None
    errors = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        m = _DEVICE_IDX_RE.match(stripped)
        if m:
            dev = _new_device(int(m.group(1)))
            devices.append(dev)
            columns = None
            continue
        if stripped.startswith("-E-"):
            errors.append(stripped[3:].strip())
            # the table is over; what follows an error (the list of TLVs that
            # failed) is not a parameter row
            columns = None
            continue
        m = _HEADER_RE.match(stripped)
        if m and columns is None:
            if dev is None:
                dev = _new_device()
                devices.append(dev)
            key = {"Device type": "device_type", "Name": "name", "Description": "description",
                   "Device": "device", "PCI device": "device"}[m.group(1)]
            dev[key] = m.group(2).strip()
            continue
        if stripped.startswith("Configurations:"):
            if dev is None:
                dev = _new_device()
                devices.append(dev)
            columns = _parse_columns(stripped)
            if "next" not in columns and "current" in columns:
                # MFT/mstflint before 4.6 had no "Next Boot" column: "Current"
                # was the configuration stored in flash, the value the next
                # boot uses (mstflint effe0354^ mlxconfig/mlxcfg_ui.cpp
                # printConfHeader/printOneParam).
                columns = ["next" if c == "current" else c for c in columns]
            dev["columns"] = list(columns)
            continue
        if columns is not None:
            row = _parse_param_row(line, columns)
            if row is not None:
                if row["name"] not in dev["params"]:
                    dev["param_order"].append(row["name"])
                dev["params"][row["name"]] = row
    return devices, errors, lines


def parse_mlxconfig_query(text):
    """Parse ``mlxconfig -d <dev> q`` or ``mlxconfig -d <dev> -e q``.

    Returns ``{"devices": [...], "errors": [...], <first device's fields>}``.
    Each device has ``device_type``, ``name``, ``description``, ``device``,
    ``columns`` (subset of ``default``/``current``/``next``, in printed
    order), ``param_order`` and ``params``: name -> ``{name, modified,
    read_only, default, default_int, current, current_int, next, next_int}``
    plus ``<col>_label`` for enum values such as ``True(1)`` and
    ``<col>_array`` (``[first, last]``) for ``Array[0..7]``.  Columns not
    printed are ``None``.  The first device's keys are repeated at the top
    level for the common single-device case.  Output of MFT/mstflint before
    4.6 (a ``Current`` column and no ``Next Boot``, ``PCI device:`` instead
    of ``Device:``) is read with that column as ``next``: it showed the
    configuration stored for the next boot.  A row that names a parameter
    but cannot be read raises ``ValueError`` quoting it.
    """
    devices, errors, _ = _parse_mlxconfig_tables(text)
    devices = [d for d in devices if d["columns"] or d["params"]]
    if not devices or not any(d["params"] for d in devices):
        detail = ("; errors: " + "; ".join(errors)) if errors else ""
        raise ValueError("mlxconfig: no 'Configurations:' table with parameters found" + detail)
    for d in devices:
        if "next" not in d["columns"]:
            raise ValueError("mlxconfig: query table has no 'Next Boot' column")
    result = dict(devices[0])
    result["devices"] = devices
    result["errors"] = errors
    return result


def _same_value(a_raw, a_int, b_raw, b_int):
    if a_int is not None and b_int is not None:
        return a_int == b_int
    return a_raw == b_raw


def mlxconfig_pending(parsed):
    """Parameters whose Next Boot value differs from Current.

    ``parsed`` is the result of :func:`parse_mlxconfig_query` for an ``-e``
    query (or one device dict of it).  Returns a list of ``{name, current,
    next, current_int, next_int}`` in table order.  Raises ``ValueError``
    when the query has no Current column (``q`` without ``-e``), because a
    pending change cannot be told from such output.
    """
    if "current" not in parsed.get("columns", []):
        raise ValueError("mlxconfig: no 'Current' column; run the query with -e")
    pending = []
    for name in parsed["param_order"]:
        p = parsed["params"][name]
        if not _same_value(p["current"], p["current_int"], p["next"], p["next_int"]):
            pending.append({
                "name": name,
                "current": p["current"],
                "next": p["next"],
                "current_int": p["current_int"],
                "next_int": p["next_int"],
            })
    return pending


_RESET_RE = re.compile(r"-I-\s+Please\s+(reboot|power cycle)\s+machine", re.IGNORECASE)
# mlxconfig set prints "Applying... " then "Done!"; the --with_default flow
# (mstflint 4.36, mlxcfg_ui.cpp setDevCfgWithParams) prints a bare "Done!"
# when resetting to defaults was all there was to do.
_DONE_RE = re.compile(r"^(?:Applying\.\.\.\s*)?Done!$")
# setDevCfgWithDefault: a parameter already at the asked value is left out
# of the table, with this line instead
_SKIPPED_RE = re.compile(r"^Param (?P<name>\S+) is not going to be set since value matches next value$")
_SET_VALUE_COLUMNS = ("default", "current")


def parse_mlxconfig_set(text):
    """Parse ``mlxconfig -d <dev> -y set NAME=VAL ...`` output.

    Returns ``{changes: [{name, next, next_int, new, new_int}], applied,
    failed, reset_required, message, errors, skipped, nothing_to_set,
    device...}`` where ``reset_required`` is ``'reboot'``, ``'power
    cycle'`` or ``None`` and ``message`` is the ``-I-`` line.  ``applied``
    is true once ``Applying... Done!`` (or, after ``Apply reset and set?``,
    a bare ``Done!``) was printed.  With ``-e`` the table also has
    ``Default``/``Current`` columns; a change then also holds ``default``/
    ``current`` (and ``_int``).  The ``--with_default`` flow of mstflint
    4.36 labels the next-boot column ``Default`` (the values after the
    reset) and lists parameters already at the asked value as ``skipped``;
    ``nothing_to_set`` is true when it printed ``Nothing to set``.
    """
    devices, errors, lines = _parse_mlxconfig_tables(text)
    dev = next((d for d in devices if d["columns"]), None)
    stripped = [line.strip() for line in lines]
    joined = "\n".join(lines)
    applied = any(_DONE_RE.match(s) for s in stripped)
    failed = bool(re.search(r"Applying\.\.\.\s*Failed!", joined))
    m = _RESET_RE.search(joined)
    skipped = []
    for s in stripped:
        sk = _SKIPPED_RE.match(s)
        if sk:
            skipped.append(sk.group("name"))
        elif s.startswith("Param "):
            raise ValueError("mlxconfig set: cannot read line %r" % s)
    nothing_to_set = "Nothing to set" in stripped
    if dev is None and not (applied or failed or errors or skipped or nothing_to_set):
        raise ValueError("mlxconfig set: no 'Configurations:' table, no 'Applying...' line and no -E- error")
    columns = dev["columns"] if dev is not None else []
    if columns == ["default", "new"]:
        # printConfHeader(labelNextAsDefault): the next-boot values, which
        # after the reset to defaults are the defaults
        columns = ["next", "new"]
        for p in dev["params"].values():
            for suffix in ("", "_int", "_label", "_array"):
                if "default" + suffix in p:
                    p["next" + suffix] = p.pop("default" + suffix)
            p["default"] = p["default_int"] = None
    if dev is not None and (columns[-2:] != ["next", "new"]
                            or any(c not in _SET_VALUE_COLUMNS for c in columns[:-2])):
        raise ValueError("mlxconfig set: expected 'Next Boot' and 'New' columns, got %r" % dev["columns"])
    changes = []
    if dev is not None:
        for name in dev["param_order"]:
            p = dev["params"][name]
            change = {"name": name}
            for key in [c for c in _SET_VALUE_COLUMNS if c in columns] + ["next", "new"]:
                change[key] = p[key]
                change[key + "_int"] = p[key + "_int"]
            changes.append(change)
    message = None
    for s in stripped:
        if s.startswith("-I-"):
            message = s
    return {
        "device_type": dev["device_type"] if dev else None,
        "device": dev["device"] if dev else None,
        "changes": changes,
        "applied": applied,
        "failed": failed or bool(errors),
        "reset_required": m.group(1).lower() if (m and applied) else None,
        "message": message,
        "errors": errors,
        "skipped": skipped,
        "nothing_to_set": nothing_to_set,
    }


# --------------------------------------------------------------------------
# mstflint / flint query
# --------------------------------------------------------------------------

_FLINT_LABEL_RE = re.compile(r"^(?P<label>[A-Za-z][A-Za-z0-9 ()/._-]*?):\s*(?P<value>.*)$")


def _snake(label):
    s = label.strip().lower()
    s = s.replace("(running)", " running")
    s = re.sub(r"[^a-z0-9]+", "_", s)
    return s.strip("_")


# flint's displayOneExpRomInfo prints "type=%s version=%s[ port=%d][ proto=%s][ cpu=%s]"
# (or "version_id=%s type=%s") and some type names have spaces ("UEFI Virtio
# net", "PXE Virtio net": FwOperations::expRomType2Str), so a value runs up
# to the next " key=".  A " (-W- ...)" warning may follow the last ROM.
_ROM_KV_RE = re.compile(r"([A-Za-z_]+)=(.*?)(?=\s+[A-Za-z_]+=|$)")
_ROM_WARNING_RE = re.compile(r"\s*\((-W-[^)]*)\)\s*$")


def _rom_entry(text):
    entry = {}
    body = text.strip()
    w = _ROM_WARNING_RE.search(body)
    if w:
        entry["warning"] = w.group(1)
        body = body[:w.start()]
    for k, v in _ROM_KV_RE.findall(body):
        entry[k] = v.strip()
    if "version" not in entry and "version_id" in entry:
        # the "version_id=%s type=%s" form (a CLP ROM) names its version so
        entry["version"] = entry["version_id"]
    entry["raw"] = text.strip()
    return entry


# Labels of the fields flint prints (QuerySubCommand::printInfo); a line that
# starts with one of them but is not "Label:  value" is refused.
_FLINT_FIELDS = ("Image type", "FW ISSU Version", "FW Version", "FW Release Date", "Product Version",
                 "Rom Info", "Description", "Base GUID", "Base MAC", "Orig Base GUID", "Orig Base MAC",
                 "GUIDs", "MACs", "Image VSD", "Device VSD", "VSD", "PSID", "Orig PSID",
                 "Security Attributes", "Device ID")


# what flint prints under "Description:" as the head of its GUID/MAC table
# (FS3 and later; FS2's four columns), not a description of the device
_FLINT_GUID_HEADERS = ("UID GuidsNumber", "Node Port1 Port2 Sys image")


def parse_mstflint_query(text):
    """Parse ``mstflint -d <dev> q`` / ``flint -d <dev> q``.

    Returns ``{image_type, fw_version, fw_version_running, fw_release_date,
    product_version, rom_info: [{type, version, cpu, raw}], base_guid:
    {value, count}, base_mac: {value, count}, image_vsd, device_vsd, psid,
    security_attributes: [..], fields: {label: value}, reset_pending}``.
    ``fw_version_running`` is ``None`` unless the tool printed ``FW
    Version(Running):`` (burned and running firmware differ);
    ``reset_pending`` is true in that case.  A ROM entry holds every
    ``key=value`` of its line (``type`` may have blanks: ``UEFI Virtio
    net``) and ``warning`` when flint appended ``(-W- ...)``;
    ``security_attributes`` is empty for flint's ``N/A``, as a base GUID or
    MAC's ``value`` is None for it (an image file's query); a CLP ROM's
    ``version_id`` is its ``version``; the ``Description:`` line that heads
    the GUID table (``UID  GuidsNumber``) is ``fields['guid_columns']``, the
    device's own (``q full``) ``fields['description']``.  An indented value
    line that follows no field, or a line that starts with a field's label
    but is not ``Label:  value``, raises ``ValueError`` quoting it.
    """
    if not isinstance(text, str):
        raise ValueError("mstflint: output must be a string")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    fields = {}
    order = []
    last = None
    for line in lines:
        if not line.strip():
            # flint prints a blank line after a ROM it cannot name ("0x5 -
            # Unknown ROM product ID") and goes on with the next ROM
            if last != "Rom Info":
                last = None
            continue
        if line[0] in " \t":
            # continuation of a multi-line value (Rom Info)
            if last is None:
                raise ValueError("mstflint: indented line %r follows no field" % line.strip())
            fields[last].append(line.strip())
            continue
        m = _FLINT_LABEL_RE.match(line.rstrip())
        if not m:
            if any(line.startswith(f) for f in _FLINT_FIELDS):
                raise ValueError("mstflint: cannot read field line %r" % line.strip())
            last = None
            continue
        label = m.group("label").strip()
        if label == "Description" and " ".join(m.group("value").split()) in _FLINT_GUID_HEADERS:
            # the head of the GUID/MAC table, printed under the same label
            label = "GUID columns"
        fields.setdefault(label, []).append(m.group("value").strip())
        if label not in order:
            order.append(label)
        last = label
    if "FW Version" not in fields:
        if any(line.strip().startswith("-E-") for line in lines):
            raise ValueError("mstflint: query failed: " + " ".join(
                line.strip() for line in lines if line.strip().startswith("-E-")))
        raise ValueError("mstflint: no 'FW Version:' line in output")

    def one(label):
        vals = fields.get(label)
        return vals[0] if vals else None

    def guid_pair(label):
        val = one(label)
        if val is None:
            return None
        parts = val.split()
        # an image file (mstflint -i <file> q) has no GUIDs of its own: "N/A  4"
        return {"value": parts[0] if parts and parts[0] != "N/A" else None,
                "count": int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None}

    sec = one("Security Attributes")
    running = one("FW Version(Running)")
    fw = one("FW Version")
    result = {
        "image_type": one("Image type"),
        "fw_version": fw,
        "fw_version_running": running,
        "fw_release_date": one("FW Release Date"),
        "product_version": one("Product Version"),
        "rom_info": [_rom_entry(v) for v in fields.get("Rom Info", []) if v],
        "base_guid": guid_pair("Base GUID"),
        "base_mac": guid_pair("Base MAC"),
        "image_vsd": one("Image VSD"),
        "device_vsd": one("Device VSD"),
        "psid": one("PSID"),
        # flint prints "N/A" when the image is neither secure- nor signed-fw
        "security_attributes": [s.strip() for s in sec.split(",")] if sec and sec != "N/A" else [],
        "reset_pending": running is not None and running != fw,
        "fields": {_snake(k): " ".join(fields[k]) for k in order},
    }
    if not re.fullmatch(r"\d+\.\d+\.\d+", fw or ""):
        raise ValueError("mstflint: FW Version %r is not of the form N.N.N" % fw)
    return result


def fw_version_tuple(version):
    """``'28.39.1002'`` -> ``(28, 39, 1002)``.  Also accepts the
    ``ethtool -i`` form ``'28.39.1002 (MT_0000000838)'``."""
    if not isinstance(version, str):
        raise ValueError("firmware version must be a string, got %r" % (version,))
    m = re.match(r"^\s*(\d+(?:\.\d+)*)\b", version)
    if not m:
        raise ValueError("not a firmware version: %r" % version)
    return tuple(int(x) for x in m.group(1).split("."))


def compare_fw_versions(a, b):
    """Return -1, 0 or 1 as firmware version ``a`` is older than, equal to,
    or newer than ``b`` (numeric per component, missing components are 0)."""
    ta, tb = fw_version_tuple(a), fw_version_tuple(b)
    n = max(len(ta), len(tb))
    ta += (0,) * (n - len(ta))
    tb += (0,) * (n - len(tb))
    return (ta > tb) - (ta < tb)


# --------------------------------------------------------------------------
# mlnx_qos
# --------------------------------------------------------------------------

_TC_RE = re.compile(
    r"^tc:\s*(?P<tc>\d+)\s+ratelimit:\s*(?P<rl>unlimited|[\d.]+\s*Gbps)\s*,\s*tsa:\s*(?P<tsa>\w+)"
    r"(?:\s*,\s*bw:\s*(?P<bw>\d+)%)?\s*$")
# "\tprio:%d dscp:" + "%02d," per DSCP, 8 to a line (dcbnetlink.printAppSelector,
# mlnx_qos print_dscp2prio_sysfs); a priority with more than 8 DSCPs gets a
# second "prio:N dscp:" line, or, in OFED 4.2's printAppSelector, a
# continuation line of bare numbers.
_DSCP_ROW_RE = re.compile(r"^prio:\s*(?P<prio>\d+)\s+dscp:\s*(?P<dscps>[\d,\s]*)$")
_DSCP_CONT_RE = re.compile(r"^\d+(?:\s*,\s*\d+)*\s*,?$")
# "default priority:" then "\tprio:%d" (the ETHERTYPE app entry), printed by
# the mlnx-tools releases from 2021 (a60252a) until Nov 2024 (374d9b5).
_DEFAULT_PRIO_RE = re.compile(r"^prio:\s*(\d+)$")
# mlnx_qos's pretty_print builds "tc: N ratelimit: R, " from the rate limits;
# where the driver has none ("Rate limit is not supported on your system!")
# that part is lost and the line is only the TSA ("ets, bw: 50%", "strict")
_TC_NO_RATE_RE = re.compile(r"^(?P<tsa>ets|strict|vendor|unknown)(?:\s*,\s*bw:\s*(?P<bw>\d+)%)?$")
_PRIO_OF_TC_RE = re.compile(r"^priority:\s*(\d+)$")


def _int_row(tokens, what):
    try:
        return [int(t) for t in tokens]
    except ValueError:
        raise ValueError("mlnx_qos: non-numeric %s row: %r" % (what, " ".join(tokens)))


def _prio(value, line):
    prio = int(value)
    if not 0 <= prio <= 7:
        raise ValueError("mlnx_qos: priority %d out of range in %r" % (prio, line))
    return prio


def _dscps(text, line):
    out = []
    for x in text.split(","):
        if not x.strip():
            continue
        d = int(x)
        if not 0 <= d <= 63:
            raise ValueError("mlnx_qos: DSCP %d out of range in %r" % (d, line))
        out.append(d)
    return out


def _is_pfc_header(tokens):
    """The PFC table's header row: ``priority 0 1 2 3 4 5 6 7``."""
    return tokens[0] == "priority" and tokens[1:] == [str(i) for i in range(8)]


def _dscp_row(res, line):
    """Add a ``prio:N dscp:a,b,...`` row to ``res['dscp2prio']`` (made on the
    first row, so a filtered output without the header is read as well) and
    return its priority; ``None`` when the line is not such a row."""
    m = _DSCP_ROW_RE.match(line)
    if not m:
        return None
    prio = _prio(m.group("prio"), line)
    if res["dscp2prio"] is None:
        res["dscp2prio"] = [[] for _ in range(8)]
    res["dscp2prio"][prio].extend(_dscps(m.group("dscps"), line))
    return prio


# mlnx-tools' mlnx_qos, for each part the driver does not offer (trust,
# buffers, rate limit, ETS): "<part> is/are not supported on your system[!]"
_NOT_SUPPORTED_RE = re.compile(r"^(.+?) (?:is|are) not supported on your system!?$", re.I)


def parse_mlnx_qos(text):
    """Parse ``mlnx_qos -i <if>`` output (or a filtered part of it).

    Returns ``{dcbx, trust, dscp2prio, dscp_to_prio, default_priority,
    buffer_sizes, buffer_total_size, cable_len, pfc_enabled, pfc_priorities,
    prio2buffer, buffers_supported, tcs}``.  ``dcbx`` is ``'os'``/``'fw'``;
    ``dscp2prio`` is a list of 8 lists (index = priority) of DSCP values in
    printed order; ``dscp_to_prio`` maps each DSCP 0..63 to its priority
    (``None`` when unmapped, the sorted list of its priorities when the
    output lists it under several); ``default_priority`` is the list of priorities
    under ``default priority:`` (mlnx-tools 2021-2024 print that block; an
    empty list when it is empty, ``None`` when it is not printed); ``tcs`` is
    a list of ``{tc, tsa, bw, ratelimit_gbps, priorities}``; ``unsupported``
    names the parts mlnx_qos printed as ``... not supported on your system``
    (``Rate limit``, ``Buffers commands``, ...), and output made only of those
    lines raises ``ValueError`` quoting them (the netdev has no DCB).  Anything
    absent from a filtered output is ``None`` (or empty).  Lines that are
    not mlnx_qos output are ignored, but a line that names a priority, a TC,
    a DSCP mapping or a PFC row and cannot be read raises ``ValueError``
    quoting it, as does output with none of the trust, DCBX or PFC lines.
    """
    if not isinstance(text, str):
        raise ValueError("mlnx_qos: output must be a string")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    res = {
        "dcbx": None,
        "trust": None,
        "dscp2prio": None,
        "dscp_to_prio": None,
        "default_priority": None,
        "buffer_sizes": None,
        "buffer_total_size": None,
        "cable_len": None,
        "pfc_enabled": None,
        "pfc_priorities": None,
        "prio2buffer": None,
        "buffers_supported": None,
        "tcs": [],
        "unsupported": [],
        "unsupported_lines": [],
    }
    block = None        # 'dscp', 'default', 'pfc' or None
    last_dscp_prio = None
    tc = None
    for raw in lines:
        s = raw.strip()
        if not s:
            continue
        low = s.lower()
        tokens = s.split()
        if block == "dscp":
            prio = _dscp_row(res, s)
            if prio is not None:
                last_dscp_prio = prio
                continue
            if _DSCP_CONT_RE.match(s) and last_dscp_prio is not None:
                res["dscp2prio"][last_dscp_prio].extend(_dscps(s, s))
                continue
            block = None
        elif block == "default":
            m = _DEFAULT_PRIO_RE.match(s)
            if m:
                res["default_priority"].append(_prio(m.group(1), s))
                continue
            block = None
        elif block == "pfc":
            if _is_pfc_header(tokens):
                continue
            if tokens[0] == "enabled":
                res["pfc_enabled"] = _int_row(tokens[1:], "PFC enabled")
                continue
            if tokens[0] == "buffer":
                res["prio2buffer"] = _int_row(tokens[1:], "PFC buffer")
                res["buffers_supported"] = True
                continue
            if tokens[0] == "priority":
                raise ValueError("mlnx_qos: cannot read PFC priority row %r" % s)
            block = None
        if low.startswith("dcbx mode:"):
            val = s.split(":", 1)[1].strip()
            res["dcbx"] = "os" if val.lower().startswith("os") else (
                "fw" if val.lower().startswith("firmware") else val)
            continue
        if low.startswith("priority trust state:"):
            res["trust"] = s.split(":", 1)[1].strip()
            continue
        if low.startswith("dscp2prio mapping:"):
            res["dscp2prio"] = [[] for _ in range(8)]
            block, last_dscp_prio = "dscp", None
            rest = s.split(":", 1)[1].strip()
            if rest:
                raise ValueError("mlnx_qos: cannot read dscp2prio line %r" % s)
            continue
        prio = _dscp_row(res, s)
        if prio is not None:
            # a dscp2prio row whose header a filter left out
            block, last_dscp_prio = "dscp", prio
            continue
        if low.startswith("default priority:"):
            res["default_priority"] = []
            block = "default"
            rest = s.split(":", 1)[1].strip()
            if rest:
                m = _DEFAULT_PRIO_RE.match(rest)
                if not m:
                    raise ValueError("mlnx_qos: cannot read default priority line %r" % s)
                res["default_priority"].append(_prio(m.group(1), s))
            continue
        if low.startswith("prio:"):
            raise ValueError("mlnx_qos: cannot read priority line %r" % s)
        if low.startswith("receive buffer size (bytes):"):
            vals = s.split(":", 1)[1].strip().strip(",").split(",")
            sizes = []
            for v in vals:
                v = v.strip()
                if "=" in v:
                    k, _, num = v.partition("=")
                    if not num.strip().isdigit():
                        raise ValueError("mlnx_qos: cannot read receive buffer size line %r" % s)
                    res["buffer_total_size"] = int(num)
                elif v:
                    if not v.isdigit():
                        raise ValueError("mlnx_qos: cannot read receive buffer size line %r" % s)
                    sizes.append(int(v))
            res["buffer_sizes"] = sizes
            continue
        unsupported = _NOT_SUPPORTED_RE.match(s)
        if unsupported:
            res["unsupported"].append(unsupported.group(1))
            res["unsupported_lines"].append(s)
            if low.startswith("buffers commands are not supported"):
                res["buffers_supported"] = False
            continue
        if low.startswith("cable len:"):
            val = s.split(":", 1)[1].strip()
            if not val.isdigit():
                raise ValueError("mlnx_qos: cannot read cable length line %r" % s)
            res["cable_len"] = int(val)
            continue
        if low.startswith("pfc configuration:"):
            block = "pfc"
            continue
        if _is_pfc_header(tokens):
            # the PFC table header of a filtered output without its title line
            block = "pfc"
            continue
        if low.startswith("tc:"):
            m = _TC_RE.match(s)
            if not m:
                raise ValueError("mlnx_qos: cannot read TC line %r" % s)
            rl = m.group("rl")
            tc = {
                "tc": int(m.group("tc")),
                "tsa": m.group("tsa"),
                "bw": int(m.group("bw")) if m.group("bw") else None,
                "ratelimit_gbps": None if rl == "unlimited" else float(rl.split()[0].replace("Gbps", "")),
                "priorities": [],
            }
            if not 0 <= tc["tc"] <= 7:
                raise ValueError("mlnx_qos: TC %d out of range in %r" % (tc["tc"], s))
            res["tcs"].append(tc)
            continue
        m = _TC_NO_RATE_RE.match(s)
        if m:
            tc = {"tc": None, "tsa": m.group("tsa"), "bw": int(m.group("bw")) if m.group("bw") else None,
                  "ratelimit_gbps": None, "priorities": []}
            res["tcs"].append(tc)
            continue
        if low.startswith("priority:"):
            m = _PRIO_OF_TC_RE.match(s)
            if not m or tc is None:
                raise ValueError("mlnx_qos: cannot read TC priority line %r" % s)
            tc["priorities"].append(_prio(m.group(1), s))
            continue
    if res["trust"] is None and res["dcbx"] is None and res["pfc_enabled"] is None:
        if res["unsupported"]:
            # mlnx_qos on a netdev without the driver's DCB operations (a
            # VLAN, a bond, another vendor's NIC) says so for each part and
            # exits 1 before the PFC table
            raise ValueError("mlnx_qos: the netdev reports no DCB (%s): run it on the PF whose QoS is wanted"
                             % "; ".join(repr(line) for line in res["unsupported_lines"]))
        raise ValueError("mlnx_qos: no 'Priority trust state', 'DCBX mode' or PFC 'enabled' line found")
    del res["unsupported_lines"]
    if res["pfc_enabled"] is not None:
        if len(res["pfc_enabled"]) != 8:
            raise ValueError("mlnx_qos: PFC enabled row has %d values, expected 8" % len(res["pfc_enabled"]))
        res["pfc_priorities"] = [i for i, v in enumerate(res["pfc_enabled"]) if v]
    if res["prio2buffer"] is not None and len(res["prio2buffer"]) != 8:
        raise ValueError("mlnx_qos: PFC buffer row has %d values, expected 8" % len(res["prio2buffer"]))
    if res["dscp2prio"] is not None:
        # mlx5 keeps one priority per DSCP; the kernel's own APP table
        # (drivers without ieee_setapp) can hold several, and mlnx_qos prints
        # them all: such a DSCP maps to the sorted list of its priorities, as
        # iproute_dcb.dscp_to_prio has it, which no intent of one matches
        d2p = [None] * 64
        for prio, dscps in enumerate(res["dscp2prio"]):
            for d in dscps:
                have = d2p[d]
                if have is None or have == prio:
                    d2p[d] = prio
                else:
                    d2p[d] = sorted(set((have if isinstance(have, list) else [have]) + [prio]))
        res["dscp_to_prio"] = d2p
    return res
