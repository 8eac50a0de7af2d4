"""The collection's action plugins load ansible's Jinja filters and tests and
the collection's filters when ansible loads them, in the strategy's main
process, so that the worker it forks for each host finds them loaded instead
of loading them on its first template (plugin_utils/main_process.py); and
the Jinja lexer of ansible's default template settings, which each worker
built for its first condition or template.

Each case runs in a process of its own with the collection loader set up as
ansible-playbook sets it up (the test process imports the collection from
its path, without it)."""

import json
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.layers("all")

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = ROOT / ".build"
ACTIONS = sorted(p.stem for p in (ROOT / "plugins" / "action").glob("*.py") if p.stem != "__init__")

PROBE = r"""
import importlib, json, sys
from ansible.plugins.loader import filter_loader, init_plugin_loader, test_loader
init_plugin_loader([sys.argv[1]])
from ansible._internal._templating._jinja_bits import AnsibleEnvironment
FILTERS = "ansible_collections.gpufabric.stack.plugins.filter."
def state():
    return {"filters": "ansible.builtin.to_json" in filter_loader._cached_non_collection_wrappers,
            "tests": "ansible.builtin.match" in test_loader._cached_non_collection_wrappers,
            "lexers": len(AnsibleEnvironment._lexer_cache),
            "collection": sorted(n[len(FILTERS):] for n in sys.modules if n.startswith(FILTERS))}
before = state()
importlib.import_module("ansible_collections.gpufabric.stack.plugins.action." + sys.argv[2])
after = state()
from ansible_collections.gpufabric.stack.plugins.plugin_utils import main_process
filter_loader._cached_non_collection_wrappers.clear()
main_process.load_jinja_plugins()
# a worker's first condition finds its lexer built
lexers = len(AnsibleEnvironment._lexer_cache)
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
Templar(loader=DataLoader()).evaluate_conditional(trust_as_template("inventory_hostname is defined"))
after["same_lexer"] = len(AnsibleEnvironment._lexer_cache) == lexers
print(json.dumps({"before": before, "after": after,
                  "again": "ansible.builtin.to_json" in filter_loader._cached_non_collection_wrappers}))
"""


@pytest.mark.parametrize("action", ACTIONS)
def test_loading_each_action_loads_the_jinja_plugins_once(action):
    out = subprocess.run([sys.executable, "-c", PROBE, str(BUILD), action], check=True, capture_output=True,
                         text=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got["before"] == {"filters": False, "tests": False, "lexers": 0, "collection": []}
    assert got["after"]["filters"] and got["after"]["tests"]
    assert got["after"]["lexers"] == 1 and got["after"]["same_lexer"]
    # one lookup of the collection's filters loads every filter file of it
    files = sorted(p.stem for p in (ROOT / "plugins" / "filter").glob("*.py") if p.stem != "__init__")
    assert got["after"]["collection"] == files
    # a second call loads nothing again
    assert got["again"] is False
