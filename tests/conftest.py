"""Test set-up shared by every test: make the collection importable as
ansible_collections.gpufabric.stack (the Makefile links .build/ansible_collections/
gpufabric/stack to this checkout) and locate ../shared."""

import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / ".build"
_link = BUILD / "ansible_collections" / "gpufabric" / "stack"
if not _link.exists():
    _link.parent.mkdir(parents=True, exist_ok=True)
    _link.symlink_to(Path("../../.."))
if str(BUILD) not in sys.path:
    sys.path.insert(0, str(BUILD))
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.reference import REAL_OUTPUTS, read_real_output  # noqa: E402 - after the path set-up


@pytest.fixture
def real_output():
    if not REAL_OUTPUTS.is_dir():
        pytest.skip(f"shared reference outputs not found at {REAL_OUTPUTS}")
    return read_real_output


# --- the map: every test carries its tier and the layers it covers ------------
# A test module (or a test) says which layers it covers with
# ``pytest.mark.layers(6, 8)`` (numbers or role names, "all" for the doctor's
# and the reports' tests that walk every layer), or that it tests the project's
# own tooling and no layer with ``pytest.mark.tooling``.  From that and the
# layer registry each test gets one ``layerNN`` marker per layer, and a tier
# marker from its directory: ``pytest -m layer08`` runs everything that covers
# layer 8, ``pytest -m "layer08 and unit"`` the quick part of it.
TIER_DIRS = {"unit": "unit", "integration": "twin", "vm": "vm"}


def _registry():
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import layers
    return layers


def pytest_configure(config):
    layers = _registry()
    config.addinivalue_line("markers", "layers(*layers): the layers a test covers (numbers, role names or 'all'); "
                                       "each becomes a layerNN marker")
    config.addinivalue_line("markers", "tooling: a test of the project's own tooling (bench, lab, packaging), of no layer")
    for tier in layers.TIERS:
        config.addinivalue_line("markers", f"{tier}: a test of the {tier} tier (from its directory under tests/)")
    for layer in layers.REGISTRY:
        config.addinivalue_line("markers", f"{layers.tag(layer.number)}: covers layer {layer.number}, {layer.title}")


def layers_of(item):
    """The layer numbers an item's ``layers`` markers name; ValueError naming
    the test and the value for one the registry does not know."""
    layers = _registry()
    numbers = set()
    for mark in item.iter_markers("layers"):
        if not mark.args:
            raise ValueError(f"{item.nodeid}: pytest.mark.layers() names no layer")
        for arg in mark.args:
            if arg == "all":
                numbers.update(layer.number for layer in layers.REGISTRY)
                continue
            try:
                numbers.add(layers.get(arg).number)
            except ValueError as e:
                raise ValueError(f"{item.nodeid}: pytest.mark.layers({arg!r}): {e}")
    return numbers


def tier_of(item):
    try:
        rel = Path(str(item.path)).resolve().relative_to(REPO / "tests")
    except ValueError:
        return None
    return TIER_DIRS.get(rel.parts[0]) if len(rel.parts) > 1 else None


def pytest_collection_modifyitems(config, items):
    layers = _registry()
    unmapped, errors = [], []
    for item in items:
        tier = tier_of(item)
        if tier:
            item.add_marker(getattr(pytest.mark, tier))
        try:
            numbers = layers_of(item)
        except ValueError as e:
            errors.append(str(e))
            continue
        if not numbers and item.get_closest_marker("tooling") is None:
            unmapped.append(item.nodeid.split("::")[0])
        for n in sorted(numbers):
            item.add_marker(getattr(pytest.mark, layers.tag(n)))
    if os.environ.get("GPUFABRIC_TEST_MAP") and not errors:
        # the map as collected, for tests/unit/test_layer_registry.py
        Path(os.environ["GPUFABRIC_TEST_MAP"]).write_text(json.dumps(
            {item.nodeid: {"tier": tier_of(item), "layers": sorted(layers_of(item))} for item in items}))
    if errors or unmapped:
        lines = errors + [f"{path}: no pytest.mark.layers(...) or pytest.mark.tooling" for path in sorted(set(unmapped))]
        raise pytest.UsageError("tests without a layer map:\n  " + "\n  ".join(lines))
