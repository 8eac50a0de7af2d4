#!/usr/bin/env python3
"""Write the "Code:" line of every docs/layers page from the layer registry's
index (plugins/plugin_utils/layers.py, code_line()); with --check, exit 1
naming the pages whose line differs instead."""

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def registry():
    spec = importlib.util.spec_from_file_location("_layers", REPO / "plugins/plugin_utils/layers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv):
    layers = registry()
    stale = []
    for layer in layers.REGISTRY:
        page = next((REPO / "docs/layers").glob("%02d-*.md" % layer.number))
        lines = page.read_text().split("\n")
        at = next(i for i, line in enumerate(lines) if line.startswith("Code: "))
        want = layers.code_line(layer.number)
        if lines[at] != want:
            stale.append(str(page.relative_to(REPO)))
            lines[at] = want
            if "--check" not in argv:
                page.write_text("\n".join(lines))
    if stale and "--check" in argv:
        print("stale Code: lines (run scripts/layer-docs.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
