# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which driver stack a node runs: the distribution's inbox driver with
upstream rdma-core, or NVIDIA's DOCA-OFED / MLNX_OFED; and a mix of the two.

Evidence, strongest first (loaded beats on disk beats userspace):

- the loaded module (sysfs ``module/<name>/``): OFED's modules all depend on
  its compat layer, so ``mlx_compat`` is loaded with them, and carry a
  ``version`` in OFED's release form (``24.10-2.1.8``); the inbox mlx5 has no
  version since Linux 5.11 (upstream commit 17a7612b) and never loads
  ``mlx_compat``;
- the file modprobe would load (``modinfo <name>``): OFED's under
  ``/lib/modules/<release>/updates/`` (DKMS) or ``extra/mlnx-ofa_kernel/``
  (RPM kmods), with ``basedon:`` and ``depends: ...mlx_compat``; the inbox one
  under ``kernel/drivers/`` with ``intree: Y``; ``vermagic:`` names the
  kernel it was built for and ``srcversion:`` tells whether the loaded module
  is that file;
- the userspace: ``ofed_info -s`` prints ``MLNX_OFED_LINUX-<ver>:`` (the
  bundle) or ``OFED-internal-<ver>:`` (DOCA-OFED); it alone never decides
  the kernel stack.

Real outputs with their sources: tests/unit/fixtures/driver_stack_real/.
Plain standard-library Python; ``read`` takes a runner and file readers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

# an OFED release: 24.10-2.1.8, 5.4-3.0.3, 4.9-6.0.6 (an old in-tree string is
# 5.0-0 or 3.0-1 (January 2015): no three-part build after the dash)
OFED_RELEASE = re.compile(r"^\d+\.\d+-\d+\.\d+\.\d+")
OFED_INFO = re.compile(r"^(?P<name>MLNX_OFED_LINUX|OFED-internal)-(?P<version>[0-9][^\s:]*)(?:\s*\(.*\))?\s*:?\s*$")
# the modules NVIDIA's OFED replaces; another PF driver (igb) is inbox by nature
OFED_MODULES = ("mlx5_core", "mlx4_core", "mlx5_ib", "ib_core")
FLAVORS = ("inbox", "doca")


class DriverStackError(ValueError):
    """An output that cannot be read; the message quotes the line."""


def parse_modinfo(text, name):
    """``modinfo <name>`` -> {field: value}; repeated fields (alias, parm)
    as lists, continuation lines (the signature) joined.  None when modinfo
    says the module does not exist."""
    out = {}
    last = None
    for raw in (text or "").splitlines():
        if not raw.strip():
            continue
        if raw.startswith("modinfo: ERROR:"):
            if "not found" in raw:
                return None
            raise DriverStackError("modinfo %s: %s" % (name, raw.strip()))
        if raw[0] in " \t":
            if last is None:
                raise DriverStackError("modinfo %s: a continuation line before any field: %r" % (name, raw))
            # the signature's further lines (kmod prints them after two tabs)
            if isinstance(out[last], list):
                out[last][-1] += raw.strip()
            else:
                out[last] += raw.strip()
            continue
        key, sep, value = raw.partition(":")
        if not sep or not re.match(r"^[A-Za-z0-9_.]+$", key):
            raise DriverStackError("modinfo %s: cannot read the line %r" % (name, raw))
        value = value.strip()
        last = key
        if key in ("alias", "parm", "firmware", "softdep", "import_ns"):
            out.setdefault(key, []).append(value)
        else:
            out[key] = value
    if "filename" not in out:
        raise DriverStackError("modinfo %s: no filename line in %r" % (name, (text or "")[:200]))
    return out


def parse_ofed_info(text):
    """``ofed_info -s`` -> {'name': 'MLNX_OFED_LINUX'|'OFED-internal',
    'version'}; None for no output."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return None
    m = OFED_INFO.match(lines[0])
    if not m:
        raise DriverStackError("ofed_info -s: cannot read the line %r" % lines[0])
    return {"name": m.group("name"), "version": m.group("version")}


def disk_stack(info):
    """'ofed' / 'inbox' / None for a parsed modinfo."""
    if info is None:
        return None
    filename = info.get("filename", "")
    depends = [d for d in info.get("depends", "").split(",") if d]
    if ("/updates/" in filename or "/extra/mlnx-ofa_kernel/" in filename or "/extra/mlnx-" in filename
            or "mlx_compat" in depends or "basedon" in info):
        return "ofed"
    if filename.startswith("(builtin)") or "/kernel/" in filename or info.get("intree") == "Y":
        return "inbox"
    return None


def loaded_stack(module, loaded, version):
    """'ofed' / 'inbox' for a loaded module (None when it is not loaded)."""
    if module not in loaded:
        return None
    if "mlx_compat" in loaded or OFED_RELEASE.match(version or ""):
        return "ofed"
    return "inbox"


def classify(module, loaded, version=None, srcversion=None, modinfo=None, ofed_info=None, release=None,
             flavor=None):
    """The stack of ``module`` (the PF driver: mlx5_core) and what is wrong
    with it.  ``loaded``: the modules sysfs lists; ``version`` and
    ``srcversion``: sysfs ``module/<name>/`` files (None when absent);
    ``modinfo``: parse_modinfo's answer; ``ofed_info``: parse_ofed_info's;
    ``release``: the running kernel; ``flavor``: the intent (inbox|doca).
    Returns {module, stack, version, userspace, file, file_stack, release,
    problems: [{status, reason, fix}]}; ``stack`` is 'inbox', 'ofed' or None
    (not loaded)."""
    stack = loaded_stack(module, loaded, version)
    fstack = disk_stack(modinfo)
    filename = (modinfo or {}).get("filename")
    built_for = ((modinfo or {}).get("vermagic") or "").split(" ")[0] or None
    userspace = None
    if ofed_info:
        userspace = "%s-%s" % (ofed_info["name"], ofed_info["version"])
    problems = []
    ofed_kind = module in OFED_MODULES

    def add(status, reason, fix):
        problems.append({"status": status, "reason": reason, "fix": fix})

    reinstall = ("install the DOCA-OFED kernel modules for %s (doca-ofed, or dkms autoinstall -k %s for "
                 "mlnx-ofed-kernel-dkms)" % (release or "the running kernel", release or "$(uname -r)"))
    if built_for and release and built_for != release:
        add("fail", "%s on disk (%s) was built for kernel %s, the running kernel is %s"
            % (module, filename, built_for, release),
            "%s; or boot kernel %s." % (_cap(reinstall), built_for))
    if stack == "inbox" and fstack == "ofed":
        add("fail", "the OFED %s is installed (%s%s) but the inbox %s is loaded"
            % (module, filename, ", version %s" % modinfo["version"] if modinfo.get("version") else "", module),
            "Restart openibd (/etc/init.d/openibd restart) or reboot so the OFED modules load; if the inbox ones "
            "still win, check the module search order in /etc/depmod.d and run depmod -a.")
    elif stack == "ofed" and fstack == "inbox":
        add("fail", "the loaded %s is OFED's (version %s) but modprobe would load the inbox %s at the next boot"
            % (module, version or "unknown", filename),
            "%s before the next reboot." % _cap(reinstall))
    elif (stack and fstack == stack and srcversion and (modinfo or {}).get("srcversion")
          and srcversion != modinfo["srcversion"]):
        add("warn", "the loaded %s (srcversion %s) is not %s (srcversion %s): the modules were replaced "
            "without a reload" % (module, srcversion, filename, modinfo["srcversion"]),
            "Restart openibd (/etc/init.d/openibd restart) or reboot in a maintenance window.")
    if ofed_kind and stack == "inbox" and userspace and fstack != "ofed":
        add("fail", "OFED userspace (ofed_info: %s) over the inbox %s: its kernel modules are missing"
            % (userspace, module),
            "%s, then restart openibd; or remove the OFED userspace (ofed-scripts, mlnx-ofed-*) and use the "
            "distribution's rdma-core." % _cap(reinstall))
    if ofed_kind and flavor == "doca" and stack == "inbox":
        add("fail", "rdma_drivers_flavor is doca but the inbox %s is loaded" % module,
            "Run rdma_drivers with rdma_drivers_install_packages: true (it installs doca-ofed), then restart "
            "openibd or reboot.")
    elif ofed_kind and flavor == "inbox" and stack == "ofed":
        add("warn", "OFED's %s %s is loaded where rdma_drivers_flavor is inbox" % (module, version or ""),
            "Set rdma_drivers_flavor: doca for this host, or remove DOCA-OFED (doca-ofed, mlnx-ofed-kernel-dkms) "
            "and reboot onto the inbox driver.")
    return {"module": module, "stack": stack, "version": version if stack == "ofed" else None,
            "userspace": userspace, "file": filename, "file_stack": fstack, "built_for": built_for,
            "release": release, "problems": problems}


def _cap(text):
    return text[0].upper() + text[1:]


def describe(found):
    """One line for the report: 'inbox mlx5_core (in-tree, kernel 6.1.0-20-amd64)'
    or 'DOCA-OFED mlx5_core 24.10-2.1.8 (ofed_info OFED-internal-24.10-1.1.4)'."""
    module = found["module"]
    if found["stack"] is None:
        return "%s not loaded (on disk: %s)" % (module, found.get("file") or "none")
    if found["stack"] == "ofed":
        text = "OFED %s %s" % (module, found.get("version") or "(no version)")
        if found.get("userspace"):
            text += " (ofed_info %s)" % found["userspace"]
        return text
    text = "inbox %s (%s, kernel %s)" % (module, found.get("file") or "file unknown", found.get("release") or "?")
    if found.get("userspace"):
        text += " with OFED userspace %s" % found["userspace"]
    return text


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except (IOError, OSError):
        return None


def read(run, which, module, loaded, sysfs_root="/sys", proc_root="/proc", flavor=None):
    """Read the evidence on the node and classify it.  ``run(argv)`` ->
    (rc, stdout, stderr); ``which(tool)`` -> a path or None; ``loaded``: the
    modules sysfs lists (read by the caller)."""
    base = os.path.join(sysfs_root, "module", module)
    version, srcversion = _read(os.path.join(base, "version")), _read(os.path.join(base, "srcversion"))
    release = _read(os.path.join(proc_root, "sys", "kernel", "osrelease"))
    modinfo = None
    tool = which("modinfo")
    if tool:
        rc, out, err = run([tool, module])
        text = out if rc == 0 else (err or out)
        if rc == 0 or "not found" in text:
            modinfo = parse_modinfo(text, module)
        else:
            raise DriverStackError("modinfo %s failed (rc %s): %s" % (module, rc, (err or out).strip()))
    ofed = None
    tool = which("ofed_info")
    if tool:
        rc, out, err = run([tool, "-s"])
        if rc == 0:
            ofed = parse_ofed_info(out)
    return classify(module, loaded, version, srcversion, modinfo, ofed, release, flavor)
