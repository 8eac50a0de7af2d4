"""The actions that call the doctor's checks (doctor, nic_facts) import every
layer's check file when ansible loads them. The strategy loads an action's
class in the controller's main process before it forks a worker per host, so
the checks are compiled there once and every worker inherits them; a check
imported only inside run() is compiled again in each host's worker (the
collection loader keeps no compiled code)."""

import importlib
import sys

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils import layers, role_intent

pytestmark = pytest.mark.layers("all")


def _forget_checks():
    for name in [n for n in sys.modules if n.startswith(role_intent.CHECKS)]:
        del sys.modules[name]


@pytest.mark.parametrize("action", ["doctor", "nic_facts"])
def test_loading_the_action_imports_every_layers_check(action):
    _forget_checks()
    assert not [n for n in sys.modules if n.startswith(role_intent.CHECKS)]
    importlib.reload(importlib.import_module("ansible_collections.gpufabric.stack.plugins.action." + action))
    missing = [layer.role for layer in layers.REGISTRY if role_intent.CHECKS + layer.role not in sys.modules]
    assert missing == []


def test_check_is_the_check_file_of_the_role():
    module = role_intent.check("kernel")
    assert module.__name__ == role_intent.CHECKS + "kernel"
    assert callable(module.check) and callable(module.reads) and module.INTENT
