"""Every filter the collection's FilterModules return is documented by a
sidecar plugins/filter/<name>.yml, the file ansible-doc reads for it, and the
sidecar agrees with the function: its options are the function's parameters
(the first one is ``_input``), its positional names follow their order, a
parameter without a default is required and a default is the function's.

A filter file keeps no DOCUMENTATION of its own: ansible-doc reads the
DOCUMENTATION of the .py file first and shows it for every filter of that
file, so the sidecars would not be seen. Filter files import their
module_utils plainly, not through module_utils.deferred."""

import ast
import importlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.tooling

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / ".build"
FILTER_DIR = REPO / "plugins" / "filter"
PACKAGE = "ansible_collections.gpufabric.stack.plugins.filter."
FILES = sorted(p.stem for p in FILTER_DIR.glob("*.py") if p.stem != "__init__")


def _filters():
    out = {}
    for stem in FILES:
        module = importlib.import_module(PACKAGE + stem)
        for name, func in module.FilterModule().filters().items():
            assert name not in out, "filter %s is returned by %s and %s" % (name, out[name][0], stem)
            out[name] = (stem, func)
    return dict(sorted(out.items()))


FILTERS = _filters()


def _sidecar(name):
    path = FILTER_DIR / (name + ".yml")
    assert path.is_file(), "filter %s (plugins/filter/%s.py) has no sidecar documentation %s" % (
        name, FILTERS[name][0], path.relative_to(REPO))
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _parameters(name):
    params = list(inspect.signature(FILTERS[name][1]).parameters.values())
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    assert params and all(p.kind in kinds for p in params), (
        "%s: the filter's parameters must be named ones, not %s" % (name, [str(p) for p in params]))
    return params


def test_the_collection_has_filters():
    # the parametrized tests below would pass vacuously on an empty list
    assert len(FILTERS) >= 40


@pytest.mark.parametrize("name", FILTERS)
def test_sidecar_documents_the_filter(name):
    doc = _sidecar(name)
    assert sorted(doc) == ["DOCUMENTATION", "EXAMPLES", "RETURN"]
    d = doc["DOCUMENTATION"]
    assert d["name"] == name
    assert isinstance(d["short_description"], str) and d["short_description"].strip()
    assert d["description"] and all(isinstance(x, str) and x.strip() for x in (
        d["description"] if isinstance(d["description"], list) else [d["description"]]))
    assert "gpufabric.stack.%s" % name in doc["EXAMPLES"]
    value = doc["RETURN"]["_value"]
    assert value["description"] and value["type"]


@pytest.mark.parametrize("name", FILTERS)
def test_sidecar_options_are_the_parameters(name):
    d = _sidecar(name)["DOCUMENTATION"]
    params = _parameters(name)
    names = ["_input"] + [p.name for p in params[1:]]
    options = d.get("options") or {}
    assert sorted(options) == sorted(names)
    positional = [x.strip() for x in str(d.get("positional") or "").split(",") if x.strip()]
    assert positional == names[:len(positional)] and positional[:1] == ["_input"], (
        "positional %s must name the parameters in their order, from _input: %s" % (positional, names))
    for option, param in zip(names, params):
        spec = options[option]
        where = "%s option %s (parameter %s)" % (name, option, param.name)
        assert spec.get("description") and spec.get("type"), where + ": needs description and type"
        if param.default is inspect.Parameter.empty:
            assert spec.get("required") is True, where + ": has no default, so it is required"
            continue
        assert not spec.get("required"), where + ": has a default, so it is not required"
        if param.default is None:
            assert spec.get("default") is None, where + ": the function's default is None"
        else:
            assert "default" in spec and spec["default"] == param.default, (
                where + ": default %r, the function's is %r" % (spec.get("default"), param.default))


def test_every_sidecar_documents_a_filter():
    orphans = sorted(p.name for p in FILTER_DIR.glob("*.yml") if p.stem not in FILTERS)
    assert orphans == []


def _top_level_names(stem):
    tree = ast.parse((FILTER_DIR / (stem + ".py")).read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


@pytest.mark.parametrize("stem", FILES)
def test_filter_file_has_no_documentation_of_its_own(stem):
    assert _top_level_names(stem) & {"DOCUMENTATION", "EXAMPLES", "RETURN"} == set()


@pytest.mark.parametrize("stem", FILES)
def test_filter_file_does_not_import_deferred(stem):
    tree = ast.parse((FILTER_DIR / (stem + ".py")).read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            modules = ["%s.%s" % (node.module or "", a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        else:
            continue
        found += [m for m in modules if m.endswith("module_utils.deferred") or ".deferred." in m]
    assert found == []


def test_ansible_doc_reads_every_sidecar():
    names = ["gpufabric.stack." + name for name in FILTERS]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(BUILD), ANSIBLE_NOCOLOR="1")
    run = subprocess.run([sys.executable, "-m", "ansible.cli.doc", "-t", "filter", "--json"] + names,
                         capture_output=True, text=True, env=env, cwd=str(REPO))
    assert run.returncode == 0 and run.stderr.strip() == "", run.stderr
    docs = json.loads(run.stdout)
    assert sorted(docs) == sorted(names)
    read = dict((fqcn, Path(entry["doc"]["filename"]).name) for fqcn, entry in docs.items())
    assert read == dict((fqcn, fqcn.split(".")[-1] + ".yml") for fqcn in names)
