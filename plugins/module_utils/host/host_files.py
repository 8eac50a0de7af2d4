# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Boot-time files of a layer (scripts, systemd units, udev rules) compared
and written in one pass, plain Python with a root prefix.

``plan()`` reads what is on disk and says, per file, what would change
(content, mode, owner, group, missing parent directories). ``apply()``
carries a plan out: parents first (0755 unless told, owned by the caller), then each file through
a temporary file in the same directory and ``os.replace``, so that a reader
never sees half a script. Which follow-up a change needs (``systemctl
daemon-reload``, ``udevadm control --reload``) is derived from the paths
that changed, by ``reloads_needed()``.

``inspect()`` and ``pending()`` let a module that already runs on the host
report its layer's boot files (digest, mode, owner, group) in the same call,
so that the role learns on the controller whether the files it renders would
change anything, and sends them only when they would.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import hashlib
import os
import pwd
import re
import stat
import tempfile

_MODE_RE = re.compile(r"^0?[0-7]{3,4}$")

SYSTEMD_DIRS = ("/etc/systemd/system/", "/usr/lib/systemd/system/", "/lib/systemd/system/")
UDEV_DIRS = ("/etc/udev/rules.d/", "/usr/lib/udev/rules.d/", "/lib/udev/rules.d/", "/run/udev/rules.d/")


class HostFilesError(Exception):
    """A wanted file that cannot be planned; the message names the file and the value."""


def parse_mode(value, what):
    """Octal string ('0644', '755') or int to an int; names ``what`` on error."""
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value <= 0o7777:
            return value
    elif isinstance(value, str) and _MODE_RE.match(value.strip()):
        return int(value.strip(), 8)
    raise HostFilesError("%s: mode must be an octal string such as '0644' (is %r)" % (what, value))


def wanted_owner(f, key):
    """The owner or group (``key``) a file entry wants: "root" when not given,
    None when given as null (which the module's argument spec hands over as
    ''), meaning left as it is."""
    return f.get(key, "root") or None


def _uid(owner, what):
    if owner is None:
        return None
    try:
        return pwd.getpwnam(owner).pw_uid
    except KeyError:
        raise HostFilesError("%s: owner %r does not exist on this host" % (what, owner))


def _gid(group, what):
    if group is None:
        return None
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        raise HostFilesError("%s: group %r does not exist on this host" % (what, group))


def rooted(root, path):
    """``path`` (absolute) under ``root``."""
    if not root or root == "/":
        return path
    return os.path.join(root, path.lstrip("/"))


def normalize(files):
    """Check every wanted file before anything is read or written.

    ``files``: list of dicts {path, content, mode, owner, group}. Returns the
    list with ``mode`` as an int; raises HostFilesError naming the file.
    """
    out = []
    seen = set()
    for i, f in enumerate(files or []):
        path = f.get("path")
        what = "files[%d]" % i
        if not isinstance(path, str) or not path.startswith("/") or path.endswith("/"):
            raise HostFilesError("%s: path must be an absolute file path (is %r)" % (what, path))
        what = "files[%d] (%s)" % (i, path)
        if os.path.normpath(path) != path:
            raise HostFilesError("%s: path must be normalized (no '..', '.' or '//')" % what)
        if path in seen:
            raise HostFilesError("%s: path given twice" % what)
        seen.add(path)
        content = f.get("content")
        if content is None:
            raise HostFilesError("%s: no content (give content, or a template that host_files' action renders)" % what)
        if not isinstance(content, str):
            raise HostFilesError("%s: content must be a string (is %s)" % (what, type(content).__name__))
        mode = parse_mode(f.get("mode", "0644"), what)
        owner = wanted_owner(f, "owner")
        group = wanted_owner(f, "group")
        out.append({"path": path, "content": content, "mode": mode, "owner": owner, "group": group,
                    "uid": _uid(owner, what), "gid": _gid(group, what)})
    return out


def _missing_parents(real_path):
    parents = []
    d = os.path.dirname(real_path)
    while d and not os.path.isdir(d):
        if os.path.lexists(d):
            raise HostFilesError("%s exists and is not a directory" % d)
        parents.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return list(reversed(parents))


def plan(files, root="/"):
    """What writing ``files`` (normalized) under ``root`` would change.

    Returns a list of dicts {path, real_path, state: created|updated|unchanged,
    changes: [content, mode, owner, group], before, after, parents}.
    """
    out = []
    for f in files:
        real = rooted(root, f["path"])
        entry = {"path": f["path"], "real_path": real, "changes": [], "before": "", "after": f["content"],
                 "parents": _missing_parents(real)}
        if os.path.lexists(real):
            st = os.lstat(real)
            if not stat.S_ISREG(st.st_mode):
                raise HostFilesError("%s exists and is not a regular file" % real)
            with open(real, "rb") as fh:
                data = fh.read()
            try:
                entry["before"] = data.decode("utf-8")
            except UnicodeDecodeError:
                entry["before"] = "<binary, %d bytes>" % len(data)
            if data != f["content"].encode("utf-8"):
                entry["changes"].append("content")
            if stat.S_IMODE(st.st_mode) != f["mode"]:
                entry["changes"].append("mode")
            if f["uid"] is not None and st.st_uid != f["uid"]:
                entry["changes"].append("owner")
            if f["gid"] is not None and st.st_gid != f["gid"]:
                entry["changes"].append("group")
            entry["state"] = "updated" if entry["changes"] else "unchanged"
        else:
            entry["state"] = "created"
            entry["changes"] = ["content"]
        out.append(entry)
    return out


def _chown(path, uid, gid):
    if uid is None and gid is None:
        return
    os.chown(path, -1 if uid is None else uid, -1 if gid is None else gid)


def apply(files, planned, directory_mode=0o755):
    """Carry out ``planned`` (from ``plan``) for ``files`` (normalized, same order).

    Only entries whose state is not ``unchanged`` are touched. Returns the
    paths written.
    """
    written = []
    for f, p in zip(files, planned):
        if p["state"] == "unchanged":
            continue
        # parents belong to whoever runs this (root), not to the file's owner
        for d in p["parents"]:
            if not os.path.isdir(d):
                try:
                    os.mkdir(d, directory_mode)
                except FileExistsError:
                    # made meanwhile by another process (mkdir -p's race): it
                    # is a directory now, and its mode is its maker's
                    if not os.path.isdir(d):
                        raise
                    continue
                os.chmod(d, directory_mode)
        real = p["real_path"]
        if "content" in p["changes"]:
            fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(real), dir=os.path.dirname(real))
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(f["content"].encode("utf-8"))
                os.chmod(tmp, f["mode"])
                _chown(tmp, f["uid"], f["gid"])
                os.replace(tmp, real)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        else:
            os.chmod(real, f["mode"])
            _chown(real, f["uid"], f["gid"])
        written.append(p["path"])
    return written


def reloads_needed(changed_paths):
    """Which reloads the changed paths call for: {'systemd': bool, 'udev': bool}."""
    return {
        "systemd": any(p.startswith(SYSTEMD_DIRS) for p in changed_paths),
        "udev": any(p.startswith(UDEV_DIRS) and p.endswith(".rules") for p in changed_paths),
    }


def diffs(planned):
    """Ansible diff entries (one per file that changes content or is created)."""
    out = []
    for p in planned:
        if p["state"] == "unchanged":
            continue
        if p["state"] == "created":
            out.append({"before_header": "%s (absent)" % p["path"], "after_header": p["path"],
                        "before": "", "after": p["after"]})
        elif "content" in p["changes"]:
            out.append({"before_header": p["path"], "after_header": p["path"],
                        "before": p["before"], "after": p["after"]})
        else:
            out.append({"before_header": p["path"], "after_header": p["path"],
                        "before": "%s: %s\n" % (p["path"], ", ".join(p["changes"])),
                        "after": "%s: %s set\n" % (p["path"], ", ".join(p["changes"]))})
    return out


# Answers of ``systemctl is-enabled`` that do not mean the unit starts at boot
# through its own [Install] section ("indirect" even exits 0).
_NOT_ENABLED = ("indirect", "disabled", "masked", "")


def is_enabled(run, systemctl, unit):
    """Whether ``unit`` starts at boot: ``systemctl is-enabled`` exits 0 and
    says neither indirect, disabled nor masked. ``run(argv)`` returns
    ``(rc, stdout, stderr)``."""
    rc, out, _err = run([systemctl, "is-enabled", unit])
    return rc == 0 and out.strip() not in _NOT_ENABLED


def _name(lookup, ident):
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def inspect(paths, root="/"):
    """What is on disk at each of ``paths`` (absolute) under ``root``:
    ``{path: None}`` when absent, else ``{path: {sha256, mode, owner, group}}``
    with ``mode`` as a four-digit octal string and owner and group as names
    (the number as a string when the host has no name for it). A path that
    exists and is not a regular file reports ``{"type": "other"}``."""
    out = {}
    for path in paths or []:
        if not isinstance(path, str) or not path.startswith("/"):
            raise HostFilesError("inspect: %r is not an absolute path" % (path,))
        real = rooted(root, path)
        if not os.path.lexists(real):
            out[path] = None
            continue
        st = os.lstat(real)
        if not stat.S_ISREG(st.st_mode):
            out[path] = {"type": "other"}
            continue
        digest = hashlib.sha256()
        with open(real, "rb") as fh:
            for block in iter(lambda: fh.read(65536), b""):
                digest.update(block)
        out[path] = {"sha256": digest.hexdigest(), "mode": "%04o" % stat.S_IMODE(st.st_mode),
                     "owner": _name(pwd.getpwuid, st.st_uid), "group": _name(grp.getgrgid, st.st_gid)}
    return out


def inspect_dir(directory, suffix=".conf", root="/"):
    """inspect() of every file named ``*<suffix>`` in ``directory`` (absolute)
    under ``root``, keyed by path; ``{}`` when the directory does not exist.
    A path that is not listed was not there: pending() counts it as not read."""
    if not isinstance(directory, str) or not directory.startswith("/"):
        raise HostFilesError("inspect: %r is not an absolute directory" % (directory,))
    try:
        names = sorted(n for n in os.listdir(rooted(root, directory)) if n.endswith(suffix))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    return inspect([directory.rstrip("/") + "/" + n for n in names], root)


def pending(files, states, enable_units=None, units=None):
    """What installing ``files`` and enabling ``enable_units`` would change,
    judged from an earlier ``inspect()`` (``states``) and ``is_enabled()``
    answers (``units``: {unit: bool}); plain data, no host access.

    Returns a list of strings, one per file or unit that would change, empty
    when nothing would. A file or unit the answers do not cover counts as a
    change: only what was read can be called unchanged.
    """
    out = []
    states = states or {}
    units = units or {}
    for i, f in enumerate(files or []):
        path = f.get("path")
        what = "files[%d] (%s)" % (i, path)
        state = states.get(path)
        if path not in states:
            out.append("%s: not read" % path)
            continue
        if state is None:
            out.append("%s: absent" % path)
            continue
        if "sha256" not in state:
            out.append("%s: not a regular file" % path)
            continue
        content = f.get("content")
        if not isinstance(content, str):
            raise HostFilesError("%s: content must be a string (is %s)" % (what, type(content).__name__))
        changes = []
        if hashlib.sha256(content.encode("utf-8")).hexdigest() != state["sha256"]:
            changes.append("content")
        if parse_mode(f.get("mode", "0644"), what) != int(state["mode"], 8):
            changes.append("mode")
        for key in ("owner", "group"):
            if wanted_owner(f, key) not in (None, state[key]):
                changes.append(key)
        if changes:
            out.append("%s: %s" % (path, ", ".join(changes)))
    for unit in enable_units or []:
        if units.get(unit) is not True:
            out.append("%s: %s" % (unit, "not read" if unit not in units else "not enabled"))
    return out


# The options behind the gpufabric.stack.boot_files documentation fragment.
INSPECT_ARGS = dict(
    inspect_files=dict(type="list", elements="path", default=[]),
    inspect_units=dict(type="list", elements="str", default=[]),
)


# The UnitFileStates for which ``systemctl is-enabled`` exits 0 and says
# neither indirect, disabled nor masked (systemctl(1), is-enabled's table).
_ENABLED_STATES = ("enabled", "enabled-runtime", "alias", "static", "generated", "transient")


def state_enabled(state):
    """is_enabled's answer from a unit's UnitFileState (``systemctl show``)."""
    return state in _ENABLED_STATES


def inspected(module, unit_states=None):
    """``{"files": inspect(...), "units": {unit: enabled}}`` for a module with
    INSPECT_ARGS among its options; raises HostFilesError on a relative path.
    A unit whose UnitFileState the caller already read (``unit_states``,
    boot_state.unit_file_states) is not asked again."""
    p = module.params
    relative = [path for path in p["inspect_files"] if not path.startswith("/")]
    if relative:
        raise HostFilesError("inspect_files: %r is not an absolute path" % relative[0])
    units = {}
    if p["inspect_units"]:
        systemctl = module.get_bin_path("systemctl")
        for unit in p["inspect_units"]:
            if unit in (unit_states or {}):
                units[unit] = state_enabled(unit_states[unit])
            else:
                units[unit] = bool(systemctl) and is_enabled(module.run_command, systemctl, unit)
    return {"files": inspect(p["inspect_files"]), "units": units}
