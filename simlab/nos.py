"""The NOS list and port names of the collection
(plugins/module_utils/roce_switch/nos.py), read by path so that simlab needs
neither Ansible nor the collection's package on its path: the lab, the
switch twins and the fabric model take the names from here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_PATH = Path(__file__).resolve().parents[1] / "plugins" / "module_utils" / "roce_switch" / "nos.py"
_spec = importlib.util.spec_from_file_location("_gpufabric_roce_switch_nos", _PATH)
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)

NOS: tuple[str, ...] = _mod.NOS
DESCRIPTIONS: dict[str, str] = _mod.DESCRIPTIONS
port_name = _mod.port_name
