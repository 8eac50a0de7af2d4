"""The test map of tests/conftest.py: the layers a test's ``layers`` markers
name, held to the layer registry, and the refusal of a test without a map."""

from types import SimpleNamespace

import pytest

from tests import conftest

pytestmark = pytest.mark.tooling


def item(*marks, nodeid="tests/unit/test_x.py::test_y", tooling=False):
    marks = list(marks)
    return SimpleNamespace(
        nodeid=nodeid, path=conftest.REPO / nodeid.split("::")[0],
        iter_markers=lambda name: [m for m in marks if m.name == name],
        get_closest_marker=lambda name: pytest.mark.tooling.mark if name == "tooling" and tooling else None,
        added=[], add_marker=lambda m: None)


def test_numbers_role_names_and_all_map_to_registry_layers():
    assert conftest.layers_of(item(pytest.mark.layers(6, "roce_host").mark)) == {6, 8}
    assert conftest.layers_of(item(pytest.mark.layers("layer07").mark, pytest.mark.layers(15).mark)) == {7, 15}
    assert conftest.layers_of(item(pytest.mark.layers("all").mark)) == set(range(1, 16))
    assert conftest.layers_of(item()) == set()


@pytest.mark.parametrize("args, words", [((16,), "16"), (("sriov",), "'sriov'"), ((), "names no layer")])
def test_a_layer_the_registry_does_not_know_is_refused_naming_the_test(args, words):
    with pytest.raises(ValueError) as e:
        conftest.layers_of(item(pytest.mark.layers(*args).mark))
    assert str(e.value).startswith("tests/unit/test_x.py::test_y: ") and words in str(e.value)


def test_the_tier_is_the_directory_under_tests():
    assert [conftest.tier_of(item(nodeid=n)) for n in (
        "tests/unit/test_a.py::t", "tests/integration/test_b.py::t", "tests/vm/test_c.py::t", "molecule/x/test_d.py::t")] \
        == ["unit", "twin", "vm", None]


def test_a_test_without_a_map_stops_the_collection_naming_its_file():
    with pytest.raises(pytest.UsageError) as e:
        conftest.pytest_collection_modifyitems(None, [item(pytest.mark.layers(3).mark),
                                                      item(nodeid="tests/unit/test_z.py::test_q"),
                                                      item(nodeid="tests/unit/test_t.py::test_r", tooling=True)])
    assert str(e.value).splitlines()[1:] == ["  tests/unit/test_z.py: no pytest.mark.layers(...) or pytest.mark.tooling"]
