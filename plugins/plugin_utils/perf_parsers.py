# -*- coding: utf-8 -*-
"""Parsers for RDMA and NCCL benchmark output, and the pass/fail gate.

* ``parse_all_reduce_perf``: nccl-tests ``*_perf`` output, every release
  format seen in the wild (``error`` column of 2019-2022 releases, the
  ``#wrong`` column with ``redop``/``root`` of current releases, ``N/A``
  when run with ``-c 0``, the ``-Z`` timestamp and ``-I`` per-iteration
  columns, NCCL 1.x's own tests), with CRLF line endings, Open MPI's
  ``--tag-output`` prefix and unrelated lines (kubectl, ssh, mpirun, NCCL
  INFO) mixed in.
* ``nccl_gate``: decide whether a run reached the bus bandwidth the NICs
  should deliver.
* ``parse_ib_write_bw``: perftest ``ib_write_bw`` (and the other ``*_bw``
  tools, which share the report format) on client or server side, or
  both printed into one stream, including ``--run_infinitely`` output that
  has no closing line.

Plain standard-library Python; results are JSON-serialisable; text that is
not output of the expected tool raises ``ValueError``.
"""

from __future__ import annotations

import re

__all__ = [
    "parse_all_reduce_perf",
    "parse_nccl_net",
    "nccl_gate",
    "expected_busbw_gbs",
    "parse_ib_write_bw",
    "perftest_to_gbps",
]


def _lines(text, tool):
    if not isinstance(text, str):
        raise ValueError("%s: output must be a string" % tool)
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _num(tok):
    try:
        return float(tok)
    except ValueError:
        return None


# --------------------------------------------------------------------------
# nccl-tests
# --------------------------------------------------------------------------

_INT_RE = re.compile(r"^-?\d+$")
_NCCL_VERSION_RE = re.compile(r"NCCL version (\d+\.\d+\.\d+)(?:\+cuda(\S+))?")
_TESTS_VERSION_RE = re.compile(r"^#\s*nccl-tests version (\S+)(.*)$")
_RANK_RE = re.compile(
    r"^#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)"
    r"\s+device\s+(?P<dev>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<gpu>.*)$")
_OOB_RE = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d+)\s*(\w*)")
_AVG_RE = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*(\S+)\s*(\w*)")
_NET_USING_RE = re.compile(r"NET/(IB|Socket)\s*:\s*Using\s+(.*)$")
_NET_VIA_RE = re.compile(r"via NET/(IB\w*|Socket)/")
# A channel of a communicator and the transport it uses (NCCL's
# src/transport/net.cc, p2p.cc, shm.cc): "Channel 00/0 : 0[0] -> 1[0] [send]
# via NET/IB/0/GDRDMA". 2.7 prints no "/<connIndex>" and each GPU by its bus
# ID in hex ("0[87000]"), 2.18 on by its NVML index; net.cc's NET part is
# NET/<network>/<dev>[(<PXN proxy rank>)][/GDRDMA][(PCI)][/Shared], where the
# network is IB, Socket or an external plugin's name, printed from the
# plugin's own ``name`` field and so possibly with spaces (HPC-X's IBext_v8,
# Tencent Cloud's "NCCL RDMA Plugin v6"): a NET part runs to the end of the line.
_CHANNEL_RE = re.compile(r"NCCL INFO Channel (?P<ch>\d+)(?:/(?P<conn>\d+))? : (?P<src>\d+)\[(?P<srcdev>[0-9a-fA-F]+)\] -> "
                         r"(?P<dst>\d+)\[(?P<dstdev>[0-9a-fA-F]+)\](?: \[(?P<dir>send|receive)\])? via (?P<via>NET/.*\S|\S+)")
_NET_PATH_RE = re.compile(r"^NET/(?P<net>[^/\s][^/]*?)/(?P<dev>\d+)(?:\((?P<proxy>\d+)\))?(?P<gdr>/GDRDMA)?"
                          r"(?P<pci>\(PCI\))?(?P<shared>/Shared)?$")
# the devices of the IB network, per process (net_ib/init.cc): " [0]mlx5_0:1/RoCE"
# (2.23+ may add ":<rail>" or ":<plane>"), or a merged device
# "[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE}"; the list ends at "[RO]" or "; OOB"
_IB_USING_DEV_RE = re.compile(r"\[(\d+)\](?:=\{([^}]*)\}|([^:\s\]{]+:\d+(?::\d*)*/(?:IB|RoCE|UNSPECIFIED)))")
_IB_NIC_RE = re.compile(r"([^:\s\]{,]+):(\d+)(?::\d*)*/(IB|RoCE|UNSPECIFIED)")
# NCCL's own verdict per NIC (src/graph/topo.cc; 2.7's net_ib.cc adds " (no module)")
_GDR_HCA_RE = re.compile(r"NET/[^:]+? : GPU Direct RDMA (Enabled|Disabled) for HCA (\d+) '([^'\s]*)'?")
_NET_NODEV_RE = re.compile(r"NET/IB\s*:\s*No device found")
# init.cc: "Using network %s", the network's (or plugin's) whole name
_NETWORK_RE = re.compile(r"NCCL INFO Using network (\S(?:.*\S)?)")
# NCCL_DEBUG lines: "<host>:<pid>:<tid> [<cuda dev>] NCCL INFO|WARN <text>"; WARN
# lines carry the source file and line before NCCL ("... [0] misc/socket.cc:441 NCCL WARN ...")
_NCCL_LOG_RE = re.compile(r"^(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+)\s+\[[^\]]*\]\s+(?:\S+:\d+\s+)?"
                          r"NCCL\s+(?P<level>INFO|WARN)\s+(?P<msg>.*)$")
_COLLECTIVE_RE = re.compile(r"^#\s*Collective test (starting|concluded):\s*(\S+)")
_TEST_FAILURE_RE = re.compile(r"Test (?:NCCL |CUDA )?failure\b.*")
# Open MPI's --tag-output (and --timestamp-output) prefix on each line a rank
# printed: "[<jobid>,<rank>]<stdout>:" after an optional ctime() stamp
# (orte/mca/iof/base/iof_base_output.c of Open MPI 1.3-4.1, src/mca/iof/base/
# iof_base_output.c of PRRTE for 5.x; PMIx's own tool prints "[<nspace:rank>]<stdout>:")
_MPI_TAG_RE = re.compile(r"^(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?"
                         r"\[[^\]\s]+\]<(?:stdout|stderr|stddiag)>:")
# Slurm's srun --label (-l): "%*d: " before each line a task printed, the
# task number right-aligned to the width of the largest (src/srun, io.c)
_SRUN_LABEL_RE = re.compile(r"^ *\d+: ")
# a quoted log, as a reply in an issue or a mail quotes it, every line behind "> "
_QUOTE_RE = re.compile(r"^>(?: |$)")
MAX_LOG_LINES = 20
# NET lines kept per host (net_lines_by_host)
MAX_HOST_LINES = 6


class UnreadableRowError(ValueError):
    """A line that starts as an nccl-tests result row (a size and an element
    count) but cannot be read as one; the message quotes it."""


def net_family(name):
    """NCCL's network as the gate speaks of it: ``IB`` for its IB transport
    and the plugins that carry it (HPC-X's nccl-rdma-sharp-plugins:
    ``IBext``, ``IBext_v8``, and ``NCCL RDMA Plugin v6`` where a build of it
    keeps its plugin struct's name, as Tencent Cloud's does), ``Socket`` for
    TCP, else the name as printed."""
    return "IB" if re.match(r"(?:IB(?:ext\w*)?|NCCL RDMA Plugin v\d+)$", name or "") else name


def _channel(line, log):
    """One ``Channel ...`` line as ``{rank, peer, gpu, direction, via, net,
    dev, proxy, gdr, shared, host, pid}`` (``rank`` is the rank that printed
    it: the sender of a ``[send]`` line, the receiver of a ``[receive]``
    one, the first of a P2P or SHM line), or None."""
    m = _CHANNEL_RE.search(line)
    if not m:
        return None
    recv = m.group("dir") == "receive"
    rank, peer = (int(m.group("dst")), int(m.group("src"))) if recv else (int(m.group("src")), int(m.group("dst")))
    out = {"rank": rank, "peer": peer, "gpu": m.group("dstdev") if recv else m.group("srcdev"),
           "channel": int(m.group("ch")), "direction": m.group("dir"), "via": m.group("via"),
           "net": None, "dev": None, "proxy": None, "gdr": None, "shared": False,
           "host": log.group("host") if log else None, "pid": int(log.group("pid")) if log else None}
    net = _NET_PATH_RE.match(m.group("via"))
    if m.group("via").startswith("NET/"):
        if not net:
            out["unreadable"] = True
            return out
        out.update(net=net.group("net"), dev=int(net.group("dev")),
                   proxy=int(net.group("proxy")) if net.group("proxy") else None,
                   gdr=bool(net.group("gdr")), shared=bool(net.group("shared")))
    return out


def ib_devices_of(text):
    """``{index: [{device, port, link}, ...]}`` from what follows ``NET/IB :
    Using`` (a merged device lists each of its NICs)."""
    out = {}
    for d in _IB_USING_DEV_RE.finditer(text):
        out[int(d.group(1))] = [{"device": n.group(1), "port": int(n.group(2)), "link": n.group(3)}
                                for n in _IB_NIC_RE.finditer(d.group(2) if d.group(2) is not None else d.group(3))]
    return out


def rail_text(rail):
    """A rail of ``rank_rails`` as the gate and the doctor name it:
    ``NET/IB/1 (mlx5_1)``."""
    return "NET/%s/%d%s" % (rail["net"], rail["dev"], (" (%s)" % "+".join(rail["nics"])) if rail["nics"] else "")


def _net_line(res, line, log):
    """Adds what an NCCL_DEBUG=INFO line says of the network to ``res``
    (``net_channels``, ``unreadable``, ``ib_devices``, ``ib_devices_by_host``, ``gdr_hca``)."""
    ch = _channel(line, log)
    if ch is not None and ch.get("unreadable"):
        if len(res["unreadable"]) < MAX_LOG_LINES:
            res["unreadable"].append(line)
    elif ch is not None and ch["net"] is not None:
        res["net_channels"].append(ch)
    m = _NET_USING_RE.search(line)
    if m and m.group(1) == "IB":
        devices = ib_devices_of(m.group(2))
        for nics in devices.values():
            for nic in nics:
                if nic not in res["ib_devices"]:
                    res["ib_devices"].append(nic)
        if log:
            res["ib_devices_by_host"].setdefault(log.group("host"), {}).update(
                (i, [n["device"] for n in nics]) for i, nics in devices.items())
    m = _GDR_HCA_RE.search(line)
    if m and log:
        res["gdr_hca"].setdefault(log.group("host"), {})[m.group(3)] = m.group(1) == "Enabled"


def parse_nccl_net(text):
    """The network part of an NCCL_DEBUG=INFO log, alone (an application's
    log, a job's, or nccl-tests'): ``net_channels``, ``unreadable``,
    ``ib_devices_by_host`` (``{host: {index: [device, ...]}}``),
    ``ib_devices`` (as ``parse_all_reduce_perf``'s), ``gdr_hca`` (``{host: {device: enabled}}``, NCCL's own verdict per NIC
    where NCCL_DEBUG_SUBSYS shows NET) and ``rails`` (``rank_rails``)."""
    res = {"net_channels": [], "unreadable": [], "ib_devices": [], "ib_devices_by_host": {}, "gdr_hca": {}}
    for line in _nccl_lines(text, "NCCL"):
        s = line.strip()
        _net_line(res, s, _NCCL_LOG_RE.match(s))
    res["rails"] = rank_rails(res)
    return res


def _nccl_lines(text, tool):
    """The lines of an NCCL or nccl-tests log, each without Open MPI's tag
    or, where every line has one, Slurm's ``srun --label`` task number or
    a quote's ``> `` (a log quoted in a reply)."""
    lines = _lines(text, tool)
    if any(line.strip() for line in lines) and all(_QUOTE_RE.match(line) for line in lines if line.strip()):
        lines = [_QUOTE_RE.sub("", line, count=1) for line in lines]
    if any(line.strip() for line in lines) and all(_SRUN_LABEL_RE.match(line) for line in lines if line.strip()):
        lines = [_SRUN_LABEL_RE.sub("", line, count=1) for line in lines]
    return [_MPI_TAG_RE.sub("", line, count=1) for line in lines]


# the parameter line, nccl-tests src/common.cu (src/util.cu from 2.17): "# nThread %d nGpus %d
# minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d [agg iters: %d] validation: %d
# [graph: %d] [side_work: %d work_sms: %d] [direction: %s] [unalign: %d]": a key is either the
# words before ':' ("warmup iters") or one word before a number ("nThread 1")
_PARAM_RE = re.compile(r"([A-Za-z_]\w*(?: [A-Za-z_]\w*)*):\s*(\S+)|([A-Za-z_]\w*)\s+(-?\d+)(?=\s|$)")


# rccl-tests (and nccl-tests before 2.0) print "# nThread: 1 nGpus: 1 ... warmupIters: 5 iters: 20":
# the same parameter under the name the current line gives it
_OLD_PARAM_NAMES = {"warmupIters": "warmup_iters"}


def _nccl_params(line):
    """Key/value pairs from the '# nThread 1 nGpus 1 minBytes ...' line, a
    key of several words joined by '_' (``warmup_iters``, ``agg_iters``)."""
    out = {}
    for key, val, word, num in _PARAM_RE.findall(line.lstrip("#").strip()):
        k = (key or word).replace(" ", "_")
        k = _OLD_PARAM_NAMES.get(k, k)
        v = val or num
        out[k] = int(v) if _INT_RE.match(v) else v
    return out


def _half(tokens, check_kind, time_scale=1):
    """One out-of-place or in-place group: time, algbw, busbw, check (and
    with -I the per-iteration i_min, i_max, i_p99, i_cv%)."""
    time, algbw, busbw, check = tokens[:4]
    values = [_num(time), _num(algbw), _num(busbw)]
    if None in values:
        return None
    half = {"time_us": round(values[0] * time_scale, 6) if time_scale != 1 else values[0], "algbw": values[1],
            "busbw": values[2], "wrong": None, "error": None}
    if len(tokens) == 8:
        per_iter = [_num(x) for x in tokens[4:]]
        if None in per_iter:
            return None
        half.update(zip(("i_min_us", "i_max_us", "i_p99_us", "i_cv_pct"), per_iter))
    if check == "N/A":
        return half
    err = _num(check)
    if check_kind == "error":
        if err is None:
            return None
        half["error"] = err
    elif _INT_RE.match(check):
        half["wrong"] = int(check)
    elif check_kind == "wrong" and err is not None and err.is_integer() and err >= 0:
        # util.cu prints the count with %6g: 1e+06 wrong values
        half["wrong"] = int(err)
    else:
        if err is None:
            return None
        half["error"] = err
    return half


# the timestamp -Z 1 adds after each row (util.cu writeTimestamp, "%Y-%m-%d %H:%M:%S")
_STAMP_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
# the columns before the figures when no column header was read
_LEAD_COLUMNS = {3: ["size", "count", "type"], 4: ["size", "count", "type", "redop"],
                 5: ["size", "count", "type", "redop", "root"]}


def _read_row(t, header):
    stamp = None
    if len(t) > 2 and _STAMP_RE.match(" ".join(t[-2:])):
        stamp = " ".join(t[-2:])
        t = t[:-2]
    cols = header["columns"] if header else None
    width = 8 if cols and "i_min" in cols else 4
    lead = len(t) - 2 * width
    if cols:
        first = next((i for i, c in enumerate(cols) if c in ("time", "cputime")), None)
        if first is not None and lead != first:
            return None
        names = cols[:lead]
    else:
        names = _LEAD_COLUMNS.get(lead)
    if not names or lead not in _LEAD_COLUMNS:
        return None
    redop = next((t[i] for i, c in enumerate(names) if c in ("redop", "op")), None)
    root = next((t[i] for i, c in enumerate(names) if c == "root"), None)
    if root is not None:
        if not _INT_RE.match(root):
            return None
        root = int(root)
    check_kind = header.get("check") if header else None
    scale = header.get("time_scale", 1) if header else 1
    oop = _half(t[lead:lead + width], check_kind, scale)
    ip = _half(t[lead + width:], check_kind, scale)
    if oop is None or ip is None:
        return None
    row = {"size": int(t[0]), "count": int(t[1]), "type": t[2], "redop": redop,
           "root": root, "oop": oop, "ip": ip}
    if stamp:
        row["timestamp"] = stamp
    return row


def _data_row(line, header):
    """A result row, or None for a line that is none; a line that starts as
    one (a size and an element count) but cannot be read raises ValueError
    quoting it."""
    if line.lstrip().startswith("#"):
        return None
    t = line.split()
    if len(t) < 2 or not _INT_RE.match(t[0]) or not _INT_RE.match(t[1]):
        return None
    row = _read_row(t, header)
    if row is None:
        raise UnreadableRowError("nccl-tests: cannot read the result row %r%s" % (
            line.strip(), (" under the columns %s" % " ".join(header["columns"])) if header else ""))
    return row


def parse_all_reduce_perf(text):
    """Parse nccl-tests output (``all_reduce_perf`` and friends).

    Returns a dict with ``rows`` (each ``{size, count, type, redop, root,
    oop, ip}`` and ``timestamp`` where ``-Z`` printed one, where
    ``oop``/``ip`` are ``{time_us, algbw, busbw, wrong, error}`` and with
    ``-I`` ``i_min_us``, ``i_max_us``, ``i_p99_us``, ``i_cv_pct``; ``wrong``
    is the ``#wrong`` integer, ``None`` for ``N/A``; ``error`` is the
    old-format maximum error), ``format``
    (``'wrong'``/``'error'``), ``avg_busbw`` and ``avg_status`` from ``# Avg
    bus bandwidth``, ``out_of_bounds`` ``{count, status}``,
    ``nccl_version``, ``cuda_version``, ``nccl_tests_version``, ``params``
    (from the ``# nThread`` line), ``ranks``, ``nranks`` (highest rank + 1),
    ``transport`` (``'IB'``, ``'Socket'``, ``'mixed'`` or ``None`` when
    the log has no NCCL_DEBUG=INFO network lines), ``ib_devices``,
    ``transports_by_host`` (``{host: ['IB'|'Socket', ...]}``: what the
    ranks of each host used, from the ``<host>:<pid>:<tid> [d] NCCL INFO``
    prefix of the ``NET/... : Using``, ``Using network`` and ``via NET/``
    lines; NCCL picks its network per process, so the hosts of one job can
    differ), ``net_lines`` (the ``NET/IB : Using`` / ``NET/Socket : Using``
    lines), ``net_lines_by_host`` (``{host: [lines]}``, each host's own
    ``NET/IB : No device found``, ``NET/... : Using`` and ``Using network``
    lines, at most ``MAX_HOST_LINES``),
    ``nccl_warnings`` (``host: text`` of ``NCCL WARN`` lines),
    ``test_failures`` (nccl-tests ``Test NCCL failure`` lines),
    ``collective`` and ``concluded`` (the 2025 ``# Collective test
    starting/concluded`` lines), ``largest`` (the row with the largest
    size), ``complete`` (the footer was printed) and ``cut_row`` (the
    text's last line when the output stops inside a row, else ``None``).
    The log lists are capped at ``MAX_LOG_LINES`` entries.

    Raises ``ValueError`` when the text has neither data rows nor an
    nccl-tests header/footer line, and, quoting it, for a line that starts
    as a row (a size and an element count) but cannot be read as one
    (unless it is the text's last line, the cut row), and, quoting it, for a
    ``# Avg bus bandwidth`` footer without a figure, or a second one: two
    runs in one stream (each process of a build without MPI prints its own
    table).  A log whose every line is behind Slurm's ``srun --label``
    number or a quote's ``> `` is read without them.
    """
    lines = _nccl_lines(text, "nccl-tests")
    res = {
        "nccl_tests_version": None,
        "nccl_version": None,
        "cuda_version": None,
        "params": {},
        "ranks": [],
        "nranks": None,
        "columns": None,
        "format": None,
        "rows": [],
        "out_of_bounds": None,
        "avg_busbw": None,
        "avg_status": None,
        "transport": None,
        "transports_seen": [],
        "ib_devices": [],
        "transports_by_host": {},
        "net_lines": [],
        "net_lines_by_host": {},
        "net_channels": [],
        "unreadable": [],
        "ib_devices_by_host": {},
        "gdr_hca": {},
        "nccl_warnings": [],
        "test_failures": [],
        "collective": None,
        "concluded": False,
        "largest": None,
        "complete": False,
        "cut_row": None,
    }
    header = None
    recognised = False
    networks = []
    last = max([i for i, line in enumerate(lines) if line.strip()] or [-1])
    for i, line in enumerate(lines):
        s = line.strip()
        if not s:
            continue
        m = _TESTS_VERSION_RE.match(s)
        if m:
            res["nccl_tests_version"] = m.group(1)
            recognised = True
            continue
        m = _NCCL_VERSION_RE.search(s)
        if m and res["nccl_version"] is None:
            res["nccl_version"] = m.group(1)
            res["cuda_version"] = m.group(2)
        if s.startswith("#") and "nThread" in s and "minBytes" in s:
            res["params"] = _nccl_params(s)
            recognised = True
            continue
        m = _RANK_RE.match(s)
        if m:
            res["ranks"].append({
                "rank": int(m.group("rank")),
                "group": int(m.group("group")) if m.group("group") is not None else None,
                "pid": int(m.group("pid")), "host": m.group("host"),
                "device": int(m.group("dev")), "bus_id": m.group("bus"),
                "gpu": m.group("gpu").strip(),
            })
            continue
        cols = s.lstrip("#").split() if s.startswith("#") else []
        if "size" in cols and "count" in cols or cols[:2] == ["bytes", "N"]:
            # NCCL 1.x's own tests (test/single/*_test.cu): "bytes N type op time
            # algbw busbw res", the time in milliseconds
            nccl1 = cols[:2] == ["bytes", "N"]
            header = {"columns": cols, "time_scale": 1000 if nccl1 else 1,
                      "check": "error" if "error" in cols or "res" in cols else ("wrong" if "#wrong" in cols else None)}
            res["columns"] = cols
            res["format"] = header["check"]
            recognised = True
            continue
        m = _OOB_RE.match(s)
        if m:
            res["out_of_bounds"] = {"count": int(m.group(1)), "status": m.group(2) or None}
            recognised = True
            continue
        m = _AVG_RE.match(s)
        if m:
            if res["complete"]:
                # each process of a test started without MPI prints its own table and
                # footer into the one stream: rows and averages of two runs, not one
                raise ValueError("nccl-tests: a second '# Avg bus bandwidth' line %r: the output of two runs "
                                 "(processes started without MPI, or two tests) in one stream; read each on its own"
                                 % s)
            res["avg_busbw"] = _num(m.group(1))
            if res["avg_busbw"] is None:
                # nccl-tests prints the average as %g: anything else is not its figure
                raise ValueError("nccl-tests: cannot read the average bus bandwidth in %r" % s)
            res["avg_status"] = m.group(2) or None
            res["complete"] = True
            recognised = True
            continue
        m = _COLLECTIVE_RE.match(s)
        if m:
            res["collective"] = m.group(2)
            res["concluded"] = res["concluded"] or m.group(1) == "concluded"
            recognised = True
            continue
        log = _NCCL_LOG_RE.match(s)
        if log and log.group("level") == "WARN" and len(res["nccl_warnings"]) < MAX_LOG_LINES:
            res["nccl_warnings"].append("%s: %s" % (log.group("host"), log.group("msg").strip()))
        m = _TEST_FAILURE_RE.search(s)
        if m and len(res["test_failures"]) < MAX_LOG_LINES:
            res["test_failures"].append(s)
        _net_line(res, s, log)
        m = _NETWORK_RE.search(s)
        if m:
            family = net_family(m.group(1))
            if family not in networks:
                networks.append(family)
            if log and family in ("IB", "Socket"):
                seen = res["transports_by_host"].setdefault(log.group("host"), [])
                if family not in seen:
                    seen.append(family)
        if log and (m or _NET_NODEV_RE.search(s) or _NET_USING_RE.search(s)):
            own = res["net_lines_by_host"].setdefault(log.group("host"), [])
            if len(own) < MAX_HOST_LINES:
                own.append(s)
        for m in _NET_USING_RE.finditer(s):
            if m.group(1) not in res["transports_seen"]:
                res["transports_seen"].append(m.group(1))
            if len(res["net_lines"]) < MAX_LOG_LINES:
                res["net_lines"].append(s)
            if log:
                seen = res["transports_by_host"].setdefault(log.group("host"), [])
                if m.group(1) not in seen:
                    seen.append(m.group(1))
        for m in _NET_VIA_RE.finditer(s):
            family = net_family(m.group(1))
            if family not in res["transports_seen"]:
                res["transports_seen"].append(family)
            if log:
                seen = res["transports_by_host"].setdefault(log.group("host"), [])
                if family not in seen:
                    seen.append(family)
        try:
            row = _data_row(line, header)
        except ValueError:
            if i != last:
                raise
            # the output stops inside its last row: a killed run's buffer
            # written out mid-line, or the in-place half still running
            res["cut_row"] = s
            continue
        if row is not None:
            res["rows"].append(row)
    if not res["rows"] and not recognised:
        raise ValueError("nccl-tests: no data rows and no nccl-tests header or footer found")
    if res["format"] is None and res["rows"]:
        r = res["rows"][0]["oop"]
        res["format"] = "error" if r["error"] is not None else "wrong"
    # "Using network X" is each process's choice: ranks that chose
    # differently (one node without a usable RDMA device) make a mixed job
    network_choice = networks[-1] if networks else None
    if "Socket" in networks and len(networks) > 1:
        res["transport"] = "mixed"
    elif network_choice in ("IB", "Socket"):
        res["transport"] = network_choice
    elif res["transports_seen"]:
        res["transport"] = res["transports_seen"][0] if len(res["transports_seen"]) == 1 else "mixed"
    elif network_choice:
        res["transport"] = network_choice
    res["rails"] = rank_rails(res)
    if res["ranks"]:
        res["nranks"] = max(r["rank"] for r in res["ranks"]) + 1
    if res["rows"]:
        res["largest"] = max(res["rows"], key=lambda r: r["size"])
    return res


def rank_rails(parsed):
    """What each rank sent and received over the network, from its NET
    channel lines: ``[{rank, host, gpu, net, dev, nics, gdr, channels}]``,
    one entry per rank and NET device it used, ``gdr`` True where every
    channel of it said ``/GDRDMA`` (the NIC read and wrote the GPU's memory),
    False where some did not (the data went through host memory), ``nics``
    the RDMA devices behind the index (from the host's ``NET/IB : Using``
    line; empty where the log has none), sorted by rank and device."""
    by = {}
    devices = parsed.get("ib_devices_by_host") or {}
    for c in parsed.get("net_channels") or []:
        key = (c["rank"], c["net"], c["dev"])
        e = by.get(key)
        if e is None:
            nics = (devices.get(c["host"]) or {}).get(c["dev"], []) if net_family(c["net"]) == "IB" else []
            e = by[key] = {"rank": c["rank"], "host": c["host"], "gpu": c["gpu"], "net": c["net"], "dev": c["dev"],
                           "nics": list(nics), "gdr": True, "channels": 0}
        e["channels"] += 1
        e["gdr"] = e["gdr"] and bool(c["gdr"])
    return [by[k] for k in sorted(by, key=lambda k: (k[0], k[1], k[2]))]


def no_gdr_rails(parsed):
    """The rails of ``rank_rails`` on NCCL's IB network that moved data
    without GPUDirect RDMA."""
    return [r for r in parsed.get("rails") or rank_rails(parsed) if net_family(r["net"]) == "IB" and not r["gdr"]]


def expected_busbw_gbs(link_speed_gbps, nics_per_node):
    """Ideal inter-node all-reduce bus bandwidth in GB/s: one NIC's line
    rate in bytes (``link_speed_gbps / 8``) times the NICs per node (each
    ring/channel of a rail-optimised node crosses its own NIC)."""
    if link_speed_gbps is None or nics_per_node is None:
        raise ValueError("link speed and NIC count are required")
    if float(link_speed_gbps) <= 0 or int(nics_per_node) <= 0:
        raise ValueError("link speed and NIC count must be positive")
    return float(link_speed_gbps) / 8.0 * int(nics_per_node)


# An old-format 'error' column holds the largest relative error; correct
# float sums stay around 1e-6.  Above this value the results were wrong.
MAX_OLD_FORMAT_ERROR = 1e-3

SOCKET_REASON = "NCCL used NET/Socket instead of NET/IB"


def nccl_gate(parsed, expected_busbw_gbs, efficiency=0.85, require_ib=False, timed_out=False,
              timeout_s=None, exit_code=None, require_gdr=False):
    """Pass/fail decision for an all-reduce run.

    The figure gated on is the bus bandwidth of the largest message size,
    taking the **lower** of the out-of-place and in-place values so that a
    single good half cannot hide a bad one.  (The ``# Avg bus bandwidth``
    footer is a mean over every size and is not comparable with line
    rate.)  The run fails, with the reason given, in this order: NCCL used
    its socket transport (``NET/Socket`` on any rank; the run is then
    meaningless whatever else happened); the run was killed by a timeout
    (``timed_out``; ``timeout_s`` names the limit); no data rows were
    printed, or the rows stop before the ``# Avg bus bandwidth`` footer
    (crash, truncated log); with ``require_ib``, a log that does not show
    the transport (no NCCL_DEBUG=INFO lines); with ``require_gdr``, a rank
    whose NET/IB channels lack ``/GDRDMA`` (GPUDirect RDMA expected, the data
    went through host memory); any row reports ``#wrong`` > 0
    (or an old-format error above ``MAX_OLD_FORMAT_ERROR``); the
    out-of-bounds or average-bandwidth footer says FAILED; the busbw is
    below ``expected_busbw_gbs * efficiency``; the launcher exited non-zero
    (``exit_code``) although the output looks complete.

    Returns ``{passed, kind, reason, largest_size, busbw, busbw_oop,
    busbw_ip, threshold, expected_busbw_gbs, efficiency, transport}``;
    ``kind`` is one of ``pass``, ``socket``, ``timeout``, ``no_rows``,
    ``incomplete``, ``unreadable``, ``no_transport``, ``no_gdr``, ``wrong``, ``error``,
    ``out_of_bounds``, ``avg_failed``, ``below``, ``exit_code``.
    """
    try:
        expected = float(expected_busbw_gbs)
        eff = float(efficiency)
    except (TypeError, ValueError):
        raise ValueError("expected_busbw_gbs and efficiency must be numbers")
    if expected <= 0:
        raise ValueError("expected_busbw_gbs must be positive")
    if not 0 < eff <= 1.5:
        raise ValueError("efficiency must be in (0, 1.5]")
    threshold = round(expected * eff, 4)
    out = {
        "passed": False,
        "kind": None,
        "reason": "",
        "largest_size": None,
        "busbw": None,
        "busbw_oop": None,
        "busbw_ip": None,
        "threshold": threshold,
        "expected_busbw_gbs": expected,
        "efficiency": eff,
        "transport": parsed.get("transport"),
    }

    def fail(kind, reason):
        out["kind"] = kind
        out["reason"] = reason
        return out

    rows = parsed.get("rows") or []
    largest = max(rows, key=lambda r: r["size"]) if rows else None
    if largest is not None:
        out["largest_size"] = largest["size"]
        out["busbw_oop"] = largest["oop"]["busbw"]
        out["busbw_ip"] = largest["ip"]["busbw"]
        out["busbw"] = min(out["busbw_oop"], out["busbw_ip"])
    transport = parsed.get("transport")
    if transport in ("Socket", "mixed"):
        return fail("socket", SOCKET_REASON + (" on some ranks" if transport == "mixed" else ""))
    if timed_out:
        limit = (" after %s s" % timeout_s) if timeout_s is not None else ""
        return fail("timeout", "all_reduce_perf timed out%s with %d of its result rows printed" % (limit, len(rows)))
    warn = (parsed.get("nccl_warnings") or [None])[0]
    if not rows:
        return fail("no_rows", "no result rows in the output: the test timed out, crashed "
                               "or the log is truncated" + ((" (NCCL WARN %s)" % warn) if warn else ""))
    if parsed.get("complete") is False:
        return fail("incomplete", "the output stops after %d result rows without the '# Avg bus bandwidth' "
                                  "footer: the test timed out, crashed or the log is truncated" % len(rows))
    if parsed.get("unreadable"):
        return fail("unreadable", "NCCL channel line not understood (its NET part is not "
                                  "NET/<network>/<dev>[(<proxy>)][/GDRDMA][(PCI)][/Shared]): '%s'" % parsed["unreadable"][0])
    if require_ib and transport != "IB":
        return fail("no_transport", "the log does not show which transport NCCL used; run with "
                                    "NCCL_DEBUG=INFO to see the NET/IB lines")
    missing = no_gdr_rails(parsed) if require_gdr else []
    if missing:
        out["no_gdr"] = missing
        named = ["rank %d (%s GPU %s) over %s" % (r["rank"], r["host"] or "host not logged", r["gpu"], rail_text(r))
                 for r in missing]
        return fail("no_gdr", "GPUDirect RDMA not used: %s without /GDRDMA (the data went through host memory)"
                    % "; ".join(named[:4]) + ("; %d more" % (len(named) - 4) if len(named) > 4 else ""))
    for r in rows:
        for half_name, half in (("out-of-place", r["oop"]), ("in-place", r["ip"])):
            if half.get("wrong") not in (None, 0):
                return fail("wrong", "%d wrong values (%s) at size %d" % (half["wrong"], half_name, r["size"]))
            if half.get("error") is not None and half["error"] > MAX_OLD_FORMAT_ERROR:
                return fail("error", "error %g (%s) at size %d exceeds %g" % (
                    half["error"], half_name, r["size"], MAX_OLD_FORMAT_ERROR))
    oob = parsed.get("out_of_bounds")
    if oob and (oob.get("status") == "FAILED" or oob.get("count", 0) > 0):
        return fail("out_of_bounds", "out of bounds values: %d %s" % (oob.get("count", 0), oob.get("status") or ""))
    if parsed.get("avg_status") == "FAILED":
        return fail("avg_failed", "nccl-tests reported the average bus bandwidth as FAILED (NCCL_TESTS_MIN_BW)")
    if out["busbw"] < threshold:
        return fail("below", "busbw %.2f GB/s at %d bytes is below %.2f GB/s (%.0f%% of %.2f GB/s)" % (
            out["busbw"], largest["size"], threshold, eff * 100, expected))
    if exit_code not in (None, 0):
        return fail("exit_code", "the test exited with status %s although its output is complete" % exit_code)
    out["passed"] = True
    out["kind"] = "pass"
    out["reason"] = "busbw %.2f GB/s at %d bytes >= %.2f GB/s (%.0f%% of %.2f GB/s)" % (
        out["busbw"], largest["size"], threshold, eff * 100, expected)
    return out


# --------------------------------------------------------------------------
# perftest ib_write_bw
# --------------------------------------------------------------------------

_DASHES_RE = re.compile(r"^\s*-{20,}\s*$")
_TITLE_RE = re.compile(r"^\s*(\S.*\b(?:BW|Lat) Test)\s*$")
# notices perftest prints before its parameter block, each about a setting it
# changed (src/perftest_parameters.c, src/perftest_resources.c of
# linux-rdma/perftest): the MTU lowered to the port's, inline data turned off
_PERFTEST_NOTICE_RE = re.compile(
    r"^(Requested mtu is higher than active mtu|Changing to active mtu|"
    r"Device not recognized to implement inline feature|Perftest doesn't supports CUDA tests with inline messages)")
_KV_RE = re.compile(r"([A-Za-z][A-Za-z0-9_.*\- ]*?)\s*:\s*(\S+)")
# the result header (perftest_parameters.h RESULT_LINE/RESULT_FMT*), and with
# --cpu_util (duration mode) a sixth column, CPU_Util[%] (RESULT_EXT_CPU_UTIL)
# --report-per-port (a dual-port run for a duration) adds four columns before
# it, each port's average and message rate (RESULT_FMT_PER_PORT, REPORT_FMT_PER_PORT)
_RESULT_HDR_RE = re.compile(r"#bytes\s+#iterations\s+BW peak\[([^\]]+)\]\s+BW average\[([^\]]+)\]\s+MsgRate\[([^\]]+)\]"
                            r"(\s+BW Port1\[[^\]]+\]\s+MsgRate Port1\[[^\]]+\]\s+BW Port2\[[^\]]+\]"
                            r"\s+MsgRate Port2\[[^\]]+\])?(\s+CPU_Util\[%\])?")


def perftest_to_gbps(value, units):
    """Convert a perftest bandwidth figure to Gb/s.  ``Gb/sec`` is already
    10^9 bit/s; ``MB/sec`` and ``MiB/sec`` are 2^20 bytes/s in perftest."""
    u = (units or "").lower()
    if u.startswith("gb"):
        return float(value)
    if u in ("mb/sec", "mib/sec"):
        return float(value) * 1048576 * 8 / 1e9
    raise ValueError("unknown perftest bandwidth unit %r" % units)


def _yes(v):
    return None if v is None else v.upper() == "ON"


def parse_ib_write_bw(text):
    """Parse ``ib_write_bw`` output (client or server side).

    Returns ``{test, header, device, link_type, gid_index, mtu, num_qps,
    transport, connection_type, rdma_cm, units, gbits, rows, complete,
    best, last, warnings}``.  ``header`` holds every ``key : value`` pair of
    the parameter block as printed; ``rows`` are ``{bytes, iterations,
    bw_peak, bw_average, msg_rate_mpps}`` in the printed units (``units`` is
    ``'Gb/sec'``, ``'MB/sec'`` or ``'MiB/sec'``), each with ``cpu_util`` (a
    percentage) where ``--cpu_util`` added that column and ``ports``
    (``[{port, bw_average, msg_rate_mpps}]`` of ports 1 and 2) where
    ``--report-per-port`` added each port's columns; ``complete`` is true when
    the closing dashed line follows the rows (``--run_infinitely`` output
    stopped with Ctrl-C has none); ``best`` is the row with the highest
    average, ``last`` the final row.  Lines printed by CUDA set-up and
    perftest warnings are skipped (warnings, before, inside or after the
    parameter block, are kept in ``warnings``, never as a header entry, as
    are the notices of a setting perftest changed: the MTU lowered to the
    port's, inline data off); a
    line among the rows that starts as a row (size and iterations) but cannot
    be read raises ``ValueError`` quoting it.  ``sides`` is the number of
    parameter blocks read: 2 where a server and a client printed into one
    stream, whose blocks are merged into ``header`` and whose second row of
    a size is kept in ``other_side_rows``.
    """
    lines = _lines(text, "ib_write_bw")
    res = {
        "test": None,
        "header": {},
        "device": None,
        "link_type": None,
        "gid_index": None,
        "mtu": None,
        "num_qps": None,
        "transport": None,
        "connection_type": None,
        "rdma_cm": None,
        "units": None,
        "gbits": None,
        "msg_rate_units": None,
        "rows": [],
        "complete": False,
        "best": None,
        "last": None,
        "warnings": [],
        "sides": 0,
        "other_side_rows": [],
    }
    state = "pre"
    columns = 5
    per_port = False
    # header blocks open: each side prints "dashes, title, key : value lines,
    # dashes" (ctx_print_test_info); a server and a client started into one
    # stream (a loopback run) print theirs interleaved line by line
    blocks = 0
    for i, line in enumerate(lines):
        s = line.strip()
        title = _TITLE_RE.match(line)
        if state == "pre":
            if s.upper().startswith("WARNING") or _PERFTEST_NOTICE_RE.match(s):
                res["warnings"].append(s)
            if title:
                res["test"] = title.group(1).strip()
                res["sides"] = blocks = 1
                state = "header"
            continue
        if title and state in ("header", "mid"):
            # the other side's header, printed into the same stream
            res["sides"] += 1
            blocks += 1
            state = "header"
            continue
        if state in ("header", "mid") and s.upper().startswith("WARNING"):
            # perftest's warnings inside the parameter block (ctx_print_test_info:
            # 'WARNING: CPU is not PCIe relaxed ordering compliant.') or after it
            res["warnings"].append(s)
            continue
        if state == "header":
            if _DASHES_RE.match(line):
                # the dashed line the other side prints before its title opens a block, not closes one
                if not _TITLE_RE.match(next((ln for ln in lines[i + 1:] if ln.strip()), "")):
                    blocks -= 1
                    if blocks == 0:
                        state = "mid"
                continue
            for k, v in _KV_RE.findall(line):
                res["header"][k.strip()] = v
            continue
        if state == "mid":
            m = _RESULT_HDR_RE.search(line)
            if m:
                res["units"] = m.group(1)
                res["gbits"] = m.group(1).lower().startswith("gb")
                res["msg_rate_units"] = m.group(3)
                per_port = bool(m.group(4))
                columns = 5 + (4 if per_port else 0) + (1 if m.group(5) else 0)
                state = "rows"
            continue
        if state == "rows" and _DASHES_RE.match(line):
            res["complete"] = True
            state = "post"
            continue
        if state == "rows" and res["sides"] > 1 and _RESULT_HDR_RE.search(line):
            continue
        if state == "rows" or res["sides"] > 1:
            t = s.split()
            if len(t) >= 2 and _INT_RE.match(t[0]) and _INT_RE.match(t[1]):
                nums = [_num(x) for x in t[2:]]
                if len(t) != columns or None in nums:
                    raise ValueError("perftest: cannot read result row %r (%d columns expected)" % (s, columns))
                row = {"bytes": int(t[0]), "iterations": int(t[1]),
                       "bw_peak": nums[0], "bw_average": nums[1], "msg_rate_mpps": nums[2]}
                if per_port:
                    row["ports"] = [{"port": 1, "bw_average": nums[3], "msg_rate_mpps": nums[4]},
                                    {"port": 2, "bw_average": nums[5], "msg_rate_mpps": nums[6]}]
                if len(nums) in (4, 8):
                    row["cpu_util"] = nums[-1]
                if state == "rows" and (res["sides"] == 1 or all(r["bytes"] != row["bytes"] for r in res["rows"])):
                    res["rows"].append(row)
                else:
                    # the same size again: the other side's row of one stream
                    res["other_side_rows"].append(row)
                continue
            if state == "rows" and s:
                res["warnings"].append(s)
            continue
        # post: teardown noise after the report
    if res["test"] is None:
        figures = [ln.strip() for ln in lines if ln.strip()]
        if len(figures) == 1 and _num(figures[0]) is not None:
            raise ValueError("perftest: %r is a bare figure, as --output=bandwidth (message_rate, latency) prints "
                             "it, not a report: run without --output" % figures[0])
        raise ValueError("perftest: no '... BW Test' title line found")
    if res["units"] is None:
        raise ValueError("perftest: no '#bytes #iterations BW peak[...]' result header found "
                         "(the test did not reach the measurement)")
    h = res["header"]
    res["device"] = h.get("Device")
    res["link_type"] = h.get("Link type")
    if h.get("GID index") is not None and _INT_RE.match(h["GID index"]):
        res["gid_index"] = int(h["GID index"])
    mtu = re.match(r"^(\d+)", h.get("Mtu", ""))
    res["mtu"] = int(mtu.group(1)) if mtu else None
    if h.get("Number of qps", "").isdigit():
        res["num_qps"] = int(h["Number of qps"])
    res["transport"] = h.get("Transport type")
    res["connection_type"] = h.get("Connection type")
    res["rdma_cm"] = _yes(h.get("rdma_cm QPs"))
    if res["rows"]:
        res["best"] = max(res["rows"], key=lambda r: r["bw_average"])
        res["last"] = res["rows"][-1]
    return res


# --------------------------------------------------------------------------
# perftest from GPU memory (--use_cuda, --use_cuda_bus_id, --use_cuda_dmabuf)
# --------------------------------------------------------------------------

# The lines perftest prints while it sets up GPU memory, from its source
# (src/cuda_memory.c, src/rocm_memory.c, src/perftest_resources.c,
# src/perftest_parameters.c of linux-rdma/perftest), older and current
# wordings; real outputs in tests/unit/fixtures/perftest_cuda_real.
_CUDA_LINES = (
    ("device", re.compile(r"^CUDA device (\d+): PCIe address is ([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})$")),
    ("picked", re.compile(r"^Picking device No\. (\d+)$")),
    ("picked", re.compile(r"^Picking GPU number (\d+)$")),
    ("bus_id", re.compile(r"^Finding PCIe BUS (\S+)$")),
    ("name", re.compile(r"^\[pid = \d+, dev = (\d+)\] device name = \[(.*)\]$")),
    ("integrated", re.compile(r"^CUDA device integrated: ([0-9A-Fa-f]+)$")),
    ("alloc", re.compile(r"^cuMemAlloc(?:Host)?\(\) of a (\d+) bytes GPU buffer$")),
    ("alloc", re.compile(r"^Host allocation selected, calling memalign allocator for (\d+) bytes with (\d+) page size$")),
    ("buffer", re.compile(r"^allocated GPU buffer address at (\S+) pointer=(\S+)$")),
    ("buffer_type", re.compile(r"^allocated GPU buffer of a (\d+) address at (\S+) for type (\S+)$")),
    ("buffer", re.compile(r"^allocated GPU buffer address at (\S+)$")),
    ("dmabuf", re.compile(r"^using DMA-BUF for GPU buffer address at (\S+) aligned at (\S+) with aligned size (\d+)$")),
    ("dmabuf_mr", re.compile(r"^Calling ibv_reg_dmabuf_mr\(.*\) for QP #(\d+)$")),
    ("step", re.compile(r"^(initializing CUDA|Listing all CUDA devices in system:|creating CUDA Ctx|"
                        r"making it the current CUDA Ctx|destroying current CUDA Ctx|Starting GPU touching process|"
                        r"stopping CUDA gpu touch running kernel)$")),
    ("step", re.compile(r"^deallocating (?:RX )?GPU buffer (\S+)$")),
    # ROCm (--use_rocm, --use_rocm_dmabuf): the device it uses, its buffer and DMA-BUF export
    ("rocm_device", re.compile(r"^Using ROCm Device with ID: (\d+), Name: (.*), PCI Bus ID: 0x([0-9A-Fa-f]+), "
                               r"GCN Arch: (\S+)$")),
    ("buffer", re.compile(r"^allocated (\d+) bytes of GPU buffer at (\S+)$")),
    ("dmabuf", re.compile(r"^dmabuf export addr (\S+) (\d+) to dmabuf fd (\d+) offset (\d+)$")),
)
# what memory "allocated GPU buffer of a N address at ... for type T" says the buffer is in
_CUDA_MEM_TYPES = {"CUDA_MEM_DEVICE": "gpu", "CUDA_MEM_MANAGED": "managed", "CUDA_MEM_MALLOC": "host"}
# perftest's own failures of the GPU part, each with what it means
_CUDA_ERRORS = (
    (re.compile(r"^Couldn't allocate MR with error=(\d+)$"), "mr"),
    (re.compile(r"^Couldn't allocate MR$"), "mr"),
    (re.compile(r"^DMA-BUF is not supported on this GPU$"), "dmabuf_unsupported"),
    (re.compile(r"^DMABUF requested but not supported in this build$"), "dmabuf_build"),
    (re.compile(r"^(?:support for CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE is missing|"
                r"(?:CUDA driver version \d+\.\d+|The GPU driver) does not support "
                r"CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE)$"), "dmabuf_pcie"),
    (re.compile(r"^CUDA DMA-BUF cannot be used without CUDA$"), "options"),
    (re.compile(r"^invalid CUDA memory type$"), "options"),
    (re.compile(r"^No such device ID \((\d+)\) exists in system$"), "no_device"),
    (re.compile(r"^cuDeviceGetByPCIBusId failed with error: (\d+); Failed to get PCI Bus ID \((.*)\)$"), "no_device"),
    (re.compile(r"^There are no available device\(s\) that support CUDA$"), "no_device"),
    (re.compile(r"^Requested ROCm device (\d+) but found only (\d+) device\(s\)$"), "no_device"),
    (re.compile(r"^cuInit\(0\) returned (\d+)$"), "cuda_init"),
    (re.compile(r"^(?:cuDeviceGetCount|hipDeviceGetCount)\(\) returned (\d+)$"), "cuda_init"),
    (re.compile(r"^Couldn't init GPU context: (-?\d+)$"), "cuda_init"),
    (re.compile(r"^(?:Failed to load CUDA library dynamically|Couldn't initialize ROCm device)$"), "cuda_init"),
    (re.compile(r"^(?:cuMemAlloc|cuMemGetHandleForAddressRange|cuMemAllocHost|cuMemAllocManaged|hipMalloc|memalign)"
                r" error=(\d+)$"), "alloc"),
    (re.compile(r"^(?:cuCtxCreate_v2|cuCtxCreate|cuCtxSetCurrent)\(\) error=(\d+)$"), "cuda_init"),
)
# the start of every GPU line above that names the GPU, its buffer or its DMA-BUF
_CUDA_LINE_START_RE = re.compile(r"^(CUDA device|Picking (device|GPU)|allocated (GPU buffer|\d+ bytes of GPU buffer)|"
                                 r"using DMA-BUF|Using ROCm Device|dmabuf export)\b")


def parse_perftest_cuda(text):
    """The GPU part of a perftest run from GPU memory (CUDA, or ROCm): ``{cuda,
    devices ({index: "BB:DD"}), picked, name, bus_id, buffer (``gpu`` once GPU
    memory is allocated, ``managed`` or ``host`` for --cuda_mem_type's other
    kinds), dmabuf (a DMA-BUF handle was taken for it),
    errors ([{kind, line, code}])}``; ``cuda`` is False when the output has
    no GPU part at all. A line that starts as one of perftest's GPU lines
    but does not read as it fails, quoting it."""
    out = {"cuda": False, "devices": {}, "picked": None, "name": None, "bus_id": None, "buffer": None,
           "dmabuf": False, "errors": []}
    for raw in str(text or "").splitlines():
        s = raw.strip()
        if not s:
            continue
        for kind, rx in _CUDA_LINES:
            m = rx.match(s)
            if not m:
                continue
            out["cuda"] = True
            if kind == "device":
                out["devices"][int(m.group(1))] = "%s:%s" % (m.group(2).upper(), m.group(3).upper())
            elif kind == "picked":
                out["picked"] = int(m.group(1))
            elif kind == "rocm_device":
                out["picked"], out["name"] = int(m.group(1)), m.group(2)
            elif kind == "bus_id":
                out["bus_id"] = m.group(1)
            elif kind == "name":
                out["name"] = m.group(2)
            elif kind == "buffer":
                out["buffer"] = "gpu"
            elif kind == "buffer_type":
                if m.group(3) not in _CUDA_MEM_TYPES:
                    raise ValueError("perftest: cannot read the GPU line %r (memory type %s)" % (s, m.group(3)))
                out["buffer"] = _CUDA_MEM_TYPES[m.group(3)]
            elif kind in ("dmabuf", "dmabuf_mr"):
                out["dmabuf"] = True
            break
        else:
            for rx, kind in _CUDA_ERRORS:
                m = rx.match(s)
                if m:
                    out["cuda"] = True
                    out["errors"].append({"kind": kind, "line": s,
                                          "code": int(m.group(1)) if m.groups() and _INT_RE.match(m.group(1)) else None})
                    break
            else:
                if _CUDA_LINE_START_RE.match(s):
                    raise ValueError("perftest: cannot read the GPU line %r" % s)
    return out


def cuda_error_text(parsed):
    """What a perftest GPU failure means, for a person: None without one."""
    for e in parsed.get("errors") or []:
        if e["kind"] == "mr":
            return ("%s: the NIC cannot register GPU memory (no nvidia-peermem and no DMA-BUF for this run; "
                    "error 14 is EFAULT, 93 EPROTONOSUPPORT)" % e["line"])
        if e["kind"] == "dmabuf_unsupported":
            return "%s: the GPU driver gives no DMA-BUF (the closed kernel modules)" % e["line"]
        return e["line"]
    return None
