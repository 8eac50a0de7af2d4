"""execution-environment.yml (ansible-builder 3) and the files it names:
every file exists, and its pins are the versions the tests run with."""

import re
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.tooling

REPO = Path(__file__).resolve().parents[2]


def load(path):
    return yaml.safe_load((REPO / path).read_text())


def pins(path):
    rows = [line.split("#")[0].strip() for line in (REPO / path).read_text().splitlines()]
    return dict(re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[^]]*\])?==(\S+)", row).groups() for row in rows if row)


def test_builder_file_names_existing_files():
    ee = load("execution-environment.yml")
    assert ee["version"] == 3
    deps = ee["dependencies"]
    for key in ("galaxy", "python", "system"):
        assert (REPO / deps[key]).is_file(), deps[key]
    collection_ee = load("meta/execution-environment.yml")
    for key in ("python", "system"):
        assert collection_ee["dependencies"][key] == deps[key]


def test_python_and_core_pins_match_the_tested_versions():
    tested = pins("requirements.txt")
    ee = load("execution-environment.yml")
    assert ee["dependencies"]["ansible_core"]["package_pip"] == f"ansible-core=={tested['ansible-core']}"
    for name, version in pins("meta/ee-requirements.txt").items():
        if name in tested:
            assert version == tested[name], name
    assert {"netmiko", "kubernetes"} <= set(pins("meta/ee-requirements.txt"))


def test_collections_are_galaxy_dependencies_pinned():
    galaxy = load("galaxy.yml")
    wanted = load("meta/ee-requirements.yml")["collections"]
    assert {c["name"] for c in wanted} == set(galaxy["dependencies"])
    for c in wanted:
        assert re.fullmatch(r"\d+\.\d+\.\d+", c["version"]), c
