"""Fixtures for tests against a live twin rack (podman nodes, BMCs, switches).

One twin rack per test session (2 nodes, 2 switches), brought up from the
node image that `make image` builds; tests that change a node put it back or
use their own lab.  What the tests share besides fixtures is in twinlab.py."""

import pytest

from tests.integration.twinlab import SessionTwin, labs_of, require_twin


# The modules that take longest (make test's --durations), first. The two
# workers of `--dist loadfile` take modules in xdist's order: by number of
# tests, most first (its --loadscope-reorder, on by default), and in
# collection order among modules with as many tests; this order decides
# those ties. Measured at a737386 (per-test durations of the whole tier,
# 2221 s in all): xdist's order leaves the two workers 31 s apart, this
# collection order alone (--no-loadscope-reorder) 108 s, the longest module
# first 61 s.
LONGEST_FIRST = ("test_switch_layer_twin.py", "test_host_layers_twin.py", "test_host_faults_twin.py",
                 "test_rollout_twin.py", "test_nccl_twin.py", "test_doctor_faults_twin.py", "test_roce_host_twin.py")


def pytest_collection_modifyitems(items):
    """Collection order: LONGEST_FIRST's modules, then the rest as found
    (the order of tests within a module is kept)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that fails marks the labs it used as broken by it."""
    report = yield
    if report.failed and report.when in ("setup", "call"):
        for lab in labs_of(item):
            lab.broken_by = lab.broken_by or item.nodeid
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Before a test runs on a lab an earlier test left broken: the lab's
    repair() puts it right; a repair that fails fails this test naming both."""
    for lab in labs_of(item):
        if lab.broken_by and lab.repair is not None:
            try:
                lab.repair()
            except Exception as e:
                pytest.fail(f"lab {lab.name}, left broken by {lab.broken_by}, could not be repaired: {e}")
            lab.broken_by = None
    return (yield)


@pytest.fixture(scope="session")
def twin(tmp_path_factory):
    require_twin()
    t = SessionTwin.up(tmp_path_factory, "it", "--nodes", "2", "--switches", "2")
    yield t
    t.down()
