# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a node keeps its NIC settings across a reboot: the unit-file
state of the boot units (layers 6 and 8) and whether their files (the
NM_UNMANAGED udev rule) are in place, read in one pass so that the doctor
asks systemd once per node instead of once per layer.

Plain Python: `run(argv) -> (rc, stdout, stderr)` runs a command."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os

from ansible_collections.gpufabric.stack.plugins.module_utils.container_runtime.runtime_facts import last_line, parse_systemctl_show


def unit_file_states(run, units, systemctl="systemctl", active=None):
    """{unit: UnitFileState} for the given units, from one `systemctl show`.

    A unit systemd does not know has the state '' (as its UnitFileState is
    empty). Returns ({}, error) when systemctl fails or its answer cannot be
    matched to the units asked for; the caller then asks per unit. With a
    dict as ``active``, the same call fills it with each unit's ActiveState
    (``active``, ``inactive``, ``failed``: a oneshot whose script failed at
    boot is ``failed``)."""
    units = list(dict.fromkeys(u for u in units if u))
    if not units:
        return {}, ""
    props = ["-p", "Id", "-p", "UnitFileState"] + (["-p", "ActiveState"] if active is not None else [])
    rc, out, err = run([systemctl, "show"] + props + ["--"] + units)
    if rc != 0:
        return {}, "systemctl show: %s" % last_line(err, "rc %d" % rc)
    # systemctl prints one block per unit, in the order asked, blocks
    # separated by an empty line
    blocks = [parse_systemctl_show(block) for block in (out or "").strip("\n").split("\n\n")]
    if len(blocks) != len(units) or any("Id" not in block for block in blocks):
        return {}, "systemctl show: %d answers for %d units" % (len(blocks), len(units))
    if active is not None:
        active.update((unit, block.get("ActiveState", "")) for unit, block in zip(units, blocks))
    return dict((unit, block.get("UnitFileState", "")) for unit, block in zip(units, blocks)), ""


def files_present(paths):
    """{path: exists} for the given absolute paths."""
    return dict((path, os.path.exists(path)) for path in paths if path)


CONTENTS_LIMIT = 1 << 20


def file_contents(paths, limit=CONTENTS_LIMIT):
    """{path: text} for small text files (a kubelet configuration): None for
    a path that does not exist, ``{"error": why}`` for one that cannot be
    read as UTF-8 text of at most ``limit`` bytes."""
    out = {}
    for path in paths:
        if not path:
            continue
        try:
            with open(path, "rb") as f:
                data = f.read(limit + 1)
        except (IOError, OSError) as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                out[path] = None
                continue
            out[path] = {"error": "%s: %s" % (path, exc.strerror or exc)}
            continue
        if len(data) > limit:
            out[path] = {"error": "%s: larger than %d bytes" % (path, limit)}
            continue
        try:
            out[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            out[path] = {"error": "%s: not UTF-8 text" % path}
    return out
