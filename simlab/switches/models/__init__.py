"""The switch twins' NOS models, one module per NOS; ``by_nos()`` finds them
by their ``nos`` attribute (the names come from the collection's
plugins/module_utils/roce_switch/nos.py, simlab/nos.py)."""

from __future__ import annotations

import importlib
import pkgutil


def by_nos() -> dict:
    """{nos: model class} of every model module of this package."""
    from .base import SwitchModel
    out = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, SwitchModel) and obj is not SwitchModel \
                    and obj.__module__ == mod.__name__:
                out[obj.nos] = obj
    return out
