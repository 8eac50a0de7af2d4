"""The layer registry (plugins/plugin_utils/layers.py) is the one list of
layers: every place that names layers agrees with it, so a layer is added or
renumbered in the registry, one check file, one role and one docs page.

Held here: the roles and their check (a checks/<role>.py file of one shape
for every layer, no role's tasks/check.yml, a tasks/doctor.yml for a layer
read across nodes and only for one), site.yml's tags, validate.yml and the rollout's health gate taking
the layers from the registry, the rollout's default layer lists, the
README's table, the report's titles, make bench's layer tags and the docs
pages (one per layer, one template)."""

import glob
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.stack.plugins.filter import doctor as doctor_filters
from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor, doctor_report, layers
from bench import stats

pytestmark = pytest.mark.layers("all")

REPO = Path(__file__).resolve().parents[2]
REGISTRY = layers.REGISTRY
TEMPLATE = ["What it does", "Variables", "What the doctor checks", "How it fails", "Faults that show it"]


def test_numbers_run_from_one_without_gaps_and_roles_are_unique():
    assert [layer.number for layer in REGISTRY] == list(range(1, len(REGISTRY) + 1))
    assert len({layer.role for layer in REGISTRY}) == len(REGISTRY)
    assert all(layer.scope in layers.SCOPES and layer.hosts and layer.reads and layer.title for layer in REGISTRY)
    assert doctor.LAYERS == layers.NAMES and doctor_report.TITLES == layers.TITLES


@pytest.mark.parametrize("layer", REGISTRY, ids=lambda layer: layer.role)
def test_each_layer_has_a_role_and_one_check(layer):
    role = REPO / "roles" / layer.role
    assert (role / "tasks" / "main.yml").is_file() and (role / "meta" / "argument_specs.yml").is_file()
    check_file = REPO / "plugins" / "plugin_utils" / "checks" / ("%s.py" % layer.role)
    assert check_file.is_file() and not (role / "tasks" / "check.yml").exists(), layer
    # only a layer read across nodes has coordination of its own for the doctor
    assert (role / "tasks" / "doctor.yml").is_file() == (layer.scope == "fabric"), layer
    module = importlib.import_module("ansible_collections.gpufabric.stack.plugins.plugin_utils.checks." + layer.role)
    assert module.LAYER == layer.number
    assert callable(module.check) and callable(module.reads) and module.INTENT
    # every variable a check judges is one its role knows (defaults, vars or argument_specs)
    known = set()
    for path in (role / "defaults" / "main.yml", role / "vars" / "main.yml"):
        if path.exists():
            known |= set(yaml.safe_load(path.read_text()) or {})
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    known |= set(specs["main"].get("options") or {})
    unknown = [n for n in module.INTENT if n not in known and not n.startswith("gpufabric_")]
    assert not unknown, (layer.role, unknown)


def test_no_role_has_a_check_yml_and_no_check_file_lacks_a_layer():
    assert sorted((REPO / "roles").glob("*/tasks/check.yml")) == []
    doctor_tasks = {p.parent.parent.name for p in (REPO / "roles").glob("*/tasks/doctor.yml")}
    assert doctor_tasks == {layer.role for layer in REGISTRY if layer.scope == "fabric"}
    check_files = {Path(p).stem for p in glob.glob(str(REPO / "plugins/plugin_utils/checks/*.py"))} - {"__init__"}
    assert check_files == {layer.role for layer in REGISTRY}


def test_no_layer_hands_its_result_over_in_a_fact_of_its_own():
    """The records come from the doctor action alone: no <role>_doctor_result
    fact, no gpufabric_doctor_nics, anywhere in the roles or playbooks."""
    found = []
    for path in sorted(list((REPO / "roles").rglob("*.yml")) + list((REPO / "playbooks").rglob("*.yml"))):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\w+_doctor_result\b|gpufabric_doctor_nics", line):
                found.append("%s:%d: %s" % (path.relative_to(REPO), n, line.strip()))
    assert not found, "\n".join(found)


def _site_roles():
    """{role: tags} of the roles site.yml applies: listed under roles:,
    imported whole (import_role with no tasks_from, whose tags its tasks
    inherit), or included whole (include_role with no tasks_from), whose tags
    must reach the role's tasks through apply as well."""
    out = {}
    for play in yaml.safe_load((REPO / "playbooks" / "site.yml").read_text()):
        for entry in play.get("roles") or []:
            name = entry["role"].split(".")[-1]
            out.setdefault(name, set()).update(entry.get("tags") or [])
        for task in play.get("tasks") or []:
            imported = task.get("ansible.builtin.import_role")
            if imported and "tasks_from" not in imported:
                out.setdefault(imported["name"].split(".")[-1], set()).update(task.get("tags") or [])
                continue
            include = task.get("ansible.builtin.include_role")
            if not include or "tasks_from" in include:
                continue
            tags = set(task.get("tags") or [])
            assert tags <= set((include.get("apply") or {}).get("tags") or []), (task["name"], include)
            out.setdefault(include["name"].split(".")[-1], set()).update(tags)
    return out


def test_site_yml_tags_each_layer_by_number_and_role():
    site = _site_roles()
    for layer in REGISTRY:
        assert layer.role in site, layer.role
        assert {layers.tag(layer.number), layer.role} <= site[layer.role], (layer.role, site[layer.role])
    tagged = {t for tags in site.values() for t in tags if re.match(r"layer\d\d$", t)}
    assert tagged == {layers.tag(layer.number) for layer in REGISTRY}


def test_validate_yml_and_the_gate_take_the_layers_from_the_registry():
    text = (REPO / "playbooks" / "validate.yml").read_text()
    assert not re.search(r"\{\s*layer:\s*\d", text), "validate.yml lists layers by hand"
    groups = set(re.findall(r"'(\w+)' \| gpufabric\.stack\.doctor_layers", text))
    assert groups == {g for layer in REGISTRY for g in layer.hosts} | {"leaf_switches"}
    for group in groups:
        listed = doctor_filters.doctor_layers(group)
        assert listed == [{"layer": layer.number, "role": layer.role} for layer in REGISTRY if group in layer.hosts]
    gate = (REPO / "roles" / "doctor" / "tasks" / "gate.yml").read_text()
    assert "gpufabric.stack.doctor_layers('node')" in gate
    # the cluster layers of whatever list layers.yml is given, by their scope in the registry
    walk = yaml.safe_load((REPO / "roles" / "doctor" / "tasks" / "layers.yml").read_text())
    reads = [t for t in walk[0]["block"] if "gpufabric.stack.doctor" in t]
    assert [t["gpufabric.stack.doctor"].get("scope") for t in reads] == ["cluster"], reads


def test_the_rollout_lists_name_each_layer_with_its_role():
    defaults = yaml.safe_load((REPO / "roles" / "rollout" / "defaults" / "main.yml").read_text())
    lists = [k for k, v in defaults.items() if k.endswith("layers") and isinstance(v, list)]
    assert lists, "no layer list in the rollout's defaults"
    for key in lists:
        for entry in defaults[key]:
            assert layers.get(entry["layer"]).role == entry["role"], (key, entry)
    # the layers a rollout applies to a node and drains it for are the registry's drain layers
    node = [e["layer"] for e in defaults["rollout_layers"]]
    assert all(layers.get(n).drain for n in node), node


def test_the_readme_table_is_the_registry():
    rows = re.findall(r"^\| (\d+) \| [^|]+ \| `(\w+)`", (REPO / "README.md").read_text(), re.M)
    assert [(int(n), r) for n, r in rows] == [(layer.number, layer.role) for layer in REGISTRY]


def test_bench_asks_for_existing_layers():
    assert set(stats.REQUESTED_LAYERS) <= set(layers.NAMES)


def test_one_docs_page_per_layer_in_one_template():
    pages = sorted(Path(p).name for p in glob.glob(str(REPO / "docs" / "layers" / "*.md")))
    assert pages == ["%02d-%s.md" % (layer.number, layer.role.replace("_", "-")) for layer in REGISTRY]
    for layer in REGISTRY:
        text = (REPO / "docs" / "layers" / ("%02d-%s.md" % (layer.number, layer.role.replace("_", "-")))).read_text()
        heads = [h.strip() for h in re.findall(r"^## (.+)$", text, re.M)]
        at = [heads.index(h) if h in heads else -1 for h in TEMPLATE]
        assert -1 not in at and at == sorted(at), (layer.role, heads)
        assert "roles/%s/" % layer.role in text


def test_a_string_for_the_evidence_list_is_refused_not_split():
    with pytest.raises(TypeError, match="layer 1: evidence must be a list of strings"):
        doctor.result(1, "fail", "power off", "Redfish PowerState of node01 is Off")
    with pytest.raises(ValueError, match="^node01: layer 2: evidence must be a list of strings, one per line, not str"):
        doctor_report.junit_xml({"node01": {"verdict": {"status": "fail", "layer": 2}, "layers": [
            {"layer": 2, "status": "fail", "reason": "VT-d disabled", "evidence": "current {}", "remediation": ""}]}})
    with pytest.raises(ValueError, match="unknown field"):
        doctor.record({"layer": 3, "status": "pass", "reason": "ok", "evidence": [], "remediation": "", "x": 1})
    with pytest.raises(ValueError, match="not a layer"):
        doctor.result(16, "pass", "ok")


def test_every_layer_has_tests_at_every_tier_the_registry_names(tmp_path):
    """The test map (tests/conftest.py): a collection of the whole suite from
    the repository's root, each test's tier and layers; every layer has at
    least one test at each tier its registry entry names, and no tier runs a
    layer its entry leaves out (the VM nodes have no switch, cluster or GPU)."""
    out = tmp_path / "map.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, GPUFABRIC_TEST_MAP=str(out)))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    collected = json.loads(out.read_text())
    assert {t["tier"] for t in collected.values()} == set(layers.TIERS)
    held = {(t["tier"], n) for t in collected.values() for n in t["layers"]}
    missing = ["layer %d (%s): no %s test" % (layer.number, layer.role, tier)
               for layer in REGISTRY for tier in layer.tiers if (tier, layer.number) not in held]
    assert not missing, "\n".join(missing)
    # a VM test of a layer the VM nodes cannot have is a map error, unless it walks every layer
    beyond = sorted(nodeid for nodeid, t in collected.items() if t["tier"] == "vm" and len(t["layers"]) < len(REGISTRY)
                    and any("vm" not in layers.BY_NUMBER[n].tiers for n in t["layers"]))
    assert not beyond, beyond


def test_the_vm_make_targets_run_the_layers_the_registry_gives_the_vm_tier():
    makefile = (REPO / "Makefile").read_text()
    listed = re.search(r"^VM_LAYERS\s*:=\s*(\S+)", makefile, re.M).group(1).split(",")
    assert listed == [layers.tag(layer.number) for layer in REGISTRY if "vm" in layer.tiers]


def test_each_docs_page_says_how_to_run_its_layers_tests():
    for layer in REGISTRY:
        (page,) = (REPO / "docs" / "layers").glob("%02d-*.md" % layer.number)
        line = ("Tests: `pytest -m %s` runs every test of this layer (tiers: %s; see [testing](../testing.md))."
                % (layers.tag(layer.number), ", ".join(layer.tiers)))
        assert line in page.read_text().splitlines(), (page.name, line)


def test_the_registry_indexes_every_file_of_every_layer():
    """Every file the index names exists; every module, action, filter file,
    module_utils file, tool twin and role belongs to a layer or to SHARED."""
    named = set(layers.SHARED)
    for layer in layers.REGISTRY:
        for kind, paths in layers.files(layer.number).items():
            for path in paths:
                assert (REPO / path).exists(), "layer %d %s: %s does not exist" % (layer.number, kind, path)
                named.add(path)
    for path in layers.SHARED:
        assert (REPO / path).exists(), "SHARED: %s does not exist" % path
    orphans = []
    for pattern in layers.INDEXED:
        for path in sorted(REPO.glob(pattern)):
            rel = str(path.relative_to(REPO))
            if path.name == "__init__.py" and rel != "plugins/module_utils/roce_switch/__init__.py":
                continue
            if rel not in named:
                orphans.append(rel)
    assert orphans == [], "files of no layer (add them to layers.FILES or layers.SHARED): %s" % orphans


def test_the_docs_pages_code_lines_are_the_index():
    proc = subprocess.run([sys.executable, str(REPO / "scripts/layer-docs.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
