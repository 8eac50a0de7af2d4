"""The actions that call the doctor's checks (doctor, nic_facts) import every
layer's check file when ansible loads them. The strategy loads an action's
class in the controller's main process before it forks a worker per host, so
the checks are compiled there once and every worker inherits them; a check
imported only inside run() is compiled again in each host's worker (the
collection loader keeps no compiled code)."""

import importlib
import pathlib
import sys

import pytest
import yaml

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


class _NoLoader(object):
    """A loader that fails the test if a role file is parsed through it."""

    def load_from_file(self, path, **_kwargs):
        raise AssertionError("parsed again in the worker: %s" % path)


@pytest.mark.parametrize("action", ["doctor", "nic_facts", "role_arguments"])
def test_loading_the_action_parses_every_layers_role_files_once(action, monkeypatch):
    """The roles' defaults, vars and argument specs are parsed where the
    action is loaded (the main process) and read from there by every host's
    worker: RoleIntents does not parse them again."""
    monkeypatch.setattr(role_intent, "_PARSED", {})
    importlib.reload(importlib.import_module("ansible_collections.gpufabric.stack.plugins.action." + action))
    intents = role_intent.RoleIntents(_NoLoader(), None)
    for layer in layers.REGISTRY:
        for name, trusted in role_intent.ROLE_FILES:
            path = "%s/roles/%s/%s" % (role_intent.COLLECTION, layer.role, name)
            assert (path, trusted) in role_intent._PARSED, path
            assert intents.load(path, trusted) is role_intent._PARSED[(path, trusted)]
    defaults = intents.load("%s/roles/kernel/defaults/main.yml" % role_intent.COLLECTION, True)
    assert "kernel_sysfs_root" in defaults


def test_role_arguments_reads_the_preloaded_specs_and_defaults(monkeypatch):
    """site.yml's one check of every layer's variables (role_arguments)
    reads each role's argument spec and defaults as parsed where it was
    loaded, not through the task's loader in each host's worker."""
    monkeypatch.setattr(role_intent, "_PARSED", {})
    module = importlib.reload(importlib.import_module("ansible_collections.gpufabric.stack.plugins.action.role_arguments"))
    action = module.ActionModule.__new__(module.ActionModule)
    action._intents = role_intent.RoleIntents(_NoLoader(), None)
    for layer in layers.REGISTRY:
        for name, trusted in role_intent.ROLE_FILES:
            if name == "vars/main.yml":
                continue
            got = action._load(layer.role, name)
            assert got is role_intent._PARSED[("%s/roles/%s/%s" % (role_intent.COLLECTION, layer.role, name), trusted)]
    assert "kernel_sysfs_root" in action._load("kernel", "meta/argument_specs.yml")["argument_specs"]["main"]["options"]


def test_a_file_not_preloaded_is_parsed_by_the_tasks_loader_once(tmp_path, monkeypatch):
    monkeypatch.setattr(role_intent, "_PARSED", {})
    calls = []

    class Loader(object):
        def load_from_file(self, path, **kwargs):
            calls.append((path, kwargs["trusted_as_template"]))
            return {"a": 1}

    path = tmp_path / "defaults.yml"
    path.write_text("a: 1\n")
    intents = role_intent.RoleIntents(Loader(), None)
    assert intents.load(str(path), True) == {"a": 1}
    assert intents.load(str(path), True) == {"a": 1}
    assert intents.load(str(tmp_path / "absent.yml")) == {}
    assert calls == [(str(path), True)]


def test_a_role_file_a_plain_loader_cannot_parse_is_left_to_the_tasks_loader(tmp_path, monkeypatch):
    """A YAML error (or a whole file encrypted with vault) in a role's file does not stop the
    action from loading: the file is not preloaded, and the task's loader
    parses it (or names the error) in the host's task."""
    monkeypatch.setattr(role_intent, "_PARSED", {})
    monkeypatch.setattr(role_intent, "COLLECTION", str(tmp_path))
    (tmp_path / "roles" / "broken" / "defaults").mkdir(parents=True)
    (tmp_path / "roles" / "broken" / "defaults" / "main.yml").write_text("a: [1\n")
    (tmp_path / "roles" / "fine" / "defaults").mkdir(parents=True)
    (tmp_path / "roles" / "fine" / "defaults" / "main.yml").write_text("a: 1\n")
    role_intent.preload(["broken", "fine"])
    broken = (str(tmp_path / "roles" / "broken" / "defaults" / "main.yml"), True)
    fine = (str(tmp_path / "roles" / "fine" / "defaults" / "main.yml"), True)
    assert broken not in role_intent._PARSED
    assert role_intent._PARSED[fine] == {"a": 1}
    with pytest.raises(AssertionError, match="parsed again in the worker"):
        role_intent.RoleIntents(_NoLoader(), None).load(*broken)


def _defaults_with_sub_options(options, where):
    """The options under ``options`` (recursively) whose type is dict or
    list with sub-options and that have a default that is not empty."""
    found = []
    for name, spec in (options or {}).items():
        spec = spec or {}
        here = "%s.%s" % (where, name)
        if spec.get("options"):
            if spec.get("type") in ("dict", "list") and spec.get("default") not in (None, {}, []):
                found.append(here)
            found.extend(_defaults_with_sub_options(spec["options"], here))
    return found


def test_no_role_spec_has_a_container_default_the_validator_would_fill_in():
    """The argument specs role_intent.preload parses are one object that
    every worker's validation reads (role_arguments, the doctor). ansible's
    ArgumentSpecValidator copies the values it is given but not a spec's
    default: for a dict (or list of dicts) option with sub-options it writes
    the sub-options' defaults and aliases into that default, which would be
    the shared spec's. No role has such a default."""
    paths = sorted(pathlib.Path(role_intent.COLLECTION, "roles").glob("*/meta/argument_specs.yml"))
    assert {layer.role for layer in layers.REGISTRY} <= {p.parts[-3] for p in paths}
    assert _defaults_with_sub_options({"a": {"type": "dict", "default": {"x": 1}, "options": {"x": {}}}}, "r") == ["r.a"]
    found = []
    for path in paths:
        specs = (yaml.safe_load(path.read_text()) or {}).get("argument_specs") or {}
        for entry, spec in specs.items():
            found.extend(_defaults_with_sub_options((spec or {}).get("options"),
                                                    "%s:%s" % (path.parts[-3], entry)))
    assert found == []
