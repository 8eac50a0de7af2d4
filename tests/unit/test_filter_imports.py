"""Looking up one filter of the collection loads every filter file (Ansible's
Jinja plugin loader does, in each worker process); those files must not import
the module_utils behind them until a filter that needs them is called (each
filter function imports what it uses). Run in a
fresh interpreter through Ansible's own filter loader, as a worker does."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tooling

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / ".build"
FILTER_FILES = sorted(p.stem for p in (REPO / "plugins" / "filter").glob("*.py") if p.stem != "__init__")

WORKER = r"""
import json, sys
from ansible.plugins.loader import filter_loader, init_plugin_loader
init_plugin_loader([sys.argv[1]])
PKG = "ansible_collections.gpufabric.stack.plugins."
def ours(kind):
    return sorted(m[len(PKG + kind) + 1:] for m in sys.modules if m.startswith(PKG + kind + "."))
before = set(sys.modules)
filter_loader.get("gpufabric.stack.nic_reading")
loaded = {"filters": ours("filter"), "module_utils": ours("module_utils") + ours("plugin_utils"),
          "new": sorted(set(sys.modules) - before)}
vfio = filter_loader.get("gpufabric.stack.pcie_vfio")
answer = [vfio.j2_function([{"vf_drivers": [{"range": "0-1", "driver": "vfio-pci"}]}]), vfio.j2_function([])]
loaded["after_call"] = ours("module_utils") + ours("plugin_utils")
loaded["answer"] = answer
print(json.dumps(loaded))
"""


@pytest.fixture(scope="module")
def worker():
    out = subprocess.run([sys.executable, "-c", WORKER, str(BUILD)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_one_lookup_loads_every_filter_file(worker):
    # The premise: the loader reads the whole filter directory for one name.
    assert worker["filters"] == FILTER_FILES


def test_filter_files_import_no_module_utils_until_called(worker):
    assert worker["module_utils"] == []
    assert "ansible.module_utils.urls" not in worker["new"]


def test_a_filter_call_imports_only_what_it_uses(worker):
    assert worker["answer"] == [True, False]
    assert worker["after_call"] == ["host", "host.pcie"]
