"""Twin of ``grubby`` for the RHEL-family flow of editing kernel arguments.

* ``grubby --update-kernel=ALL|DEFAULT|0|<kernel> --args="a=b c"``: adds the
  arguments (an existing ``a=...`` is replaced);
* ``--remove-args="a c=d"``: removes them (a bare name removes it with any
  value);
* ``--info=ALL|DEFAULT|0|<kernel>``, ``--default-kernel``, ``--default-index``.

The arguments live in ``/etc/kernel/cmdline`` (the store ``grubby`` and
``kernel-install`` keep on current RHEL), created from the boot entry the
first time; every change rewrites the ``linux`` line of /boot/grub/grub.cfg,
which is the line the node boots.  Errors are grubby's texts, exit 1.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from simlab.tools.grub import GRUB_CFG, INITRD, KERNEL, ROOT

CMDLINE = Path("/etc/kernel/cmdline")
TITLE = "Debian GNU/Linux"


def _linux_args(cfg: str) -> str | None:
    for line in cfg.splitlines():
        m = re.match(r"\s*linux\s+(\S+)\s*(.*)$", line)
        if m:
            return m.group(2).strip()
    return None


def current_args() -> list[str]:
    if CMDLINE.exists():
        return CMDLINE.read_text().split()
    cfg = GRUB_CFG.read_text() if GRUB_CFG.exists() else ""
    found = _linux_args(cfg)
    return (found if found is not None else ROOT).split()


def _key(arg: str) -> str:
    return arg.split("=", 1)[0]


def add_args(args: list[str], new: list[str]) -> list[str]:
    out = list(args)
    for a in new:
        idx = next((i for i, x in enumerate(out) if _key(x) == _key(a)), None)
        if idx is None:
            out.append(a)
        else:
            out[idx] = a
    return out


def remove_args(args: list[str], gone: list[str]) -> list[str]:
    out = []
    for x in args:
        if any(x == g or ("=" not in g and _key(x) == g) for g in gone):
            continue
        out.append(x)
    return out


def write(args: list[str]) -> None:
    CMDLINE.parent.mkdir(parents=True, exist_ok=True)
    CMDLINE.write_text(" ".join(args) + "\n")
    GRUB_CFG.parent.mkdir(parents=True, exist_ok=True)
    if GRUB_CFG.exists():
        lines = GRUB_CFG.read_text().splitlines(keepends=True)
        for i, line in enumerate(lines):
            m = re.match(r"(\s*linux\s+)(\S+)", line)
            if m:
                lines[i] = f"{m.group(1)}{m.group(2)} {' '.join(args)}\n"
                break
        GRUB_CFG.write_text("".join(lines))
    else:
        GRUB_CFG.write_text(
            f"menuentry '{TITLE}' --class debian --class gnu-linux --class gnu --class os {{\n"
            f"\tlinux\t{KERNEL} {' '.join(args)}\n\tinitrd\t{INITRD}\n}}\n")


def _kernel_ok(spec: str) -> bool:
    return spec in ("ALL", "DEFAULT", "0", KERNEL)


def info(args: list[str]) -> str:
    root = next((a.split("=", 1)[1] for a in args if a.startswith("root=")), "")
    rest = [a for a in args if not a.startswith("root=")]
    return (f"index=0\nkernel=\"{KERNEL}\"\nargs=\"{' '.join(rest)}\"\nroot=\"{root}\"\n"
            f"initrd=\"{INITRD}\"\ntitle=\"{TITLE}, with Linux {KERNEL.split('vmlinuz-')[1]}\"\n")


def main(argv: list[str]) -> int:
    opts: dict[str, str] = {}
    it = iter(argv)
    for a in it:
        if a.startswith("--") and "=" in a:
            k, v = a[2:].split("=", 1)
            opts[k] = v
        elif a in ("--update-kernel", "--args", "--remove-args", "--info"):
            try:
                opts[a[2:]] = next(it)
            except StopIteration:
                print(f"grubby: {a} requires an argument", file=sys.stderr)
                return 1
        elif a in ("--default-kernel", "--default-index", "--default-title"):
            opts[a[2:]] = ""
        elif a in ("-h", "--help", "--usage"):
            print("Usage: grubby [OPTION...]")
            return 0
        else:
            print(f"grubby: bad argument {a}: unknown option", file=sys.stderr)
            return 1
    if "default-kernel" in opts:
        print(KERNEL)
        return 0
    if "default-index" in opts:
        print(0)
        return 0
    if "default-title" in opts:
        print(f"{TITLE}, with Linux {KERNEL.split('vmlinuz-')[1]}")
        return 0
    if "info" in opts:
        if not _kernel_ok(opts["info"]):
            print(f"The param {opts['info']} is incorrect", file=sys.stderr)
            return 1
        sys.stdout.write(info(current_args()))
        return 0
    if "args" in opts or "remove-args" in opts:
        target = opts.get("update-kernel")
        if target is None:
            print("grubby: no action specified", file=sys.stderr)
            return 1
        if not _kernel_ok(target):
            print(f"The param {target} is incorrect", file=sys.stderr)
            return 1
        args = current_args()
        if "remove-args" in opts:
            args = remove_args(args, opts["remove-args"].split())
        if "args" in opts:
            args = add_args(args, opts["args"].split())
        write(args)
        return 0
    print("grubby: no action specified", file=sys.stderr)
    return 1
