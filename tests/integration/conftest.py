"""Fixtures for tests against a live twin rack (podman nodes, BMCs, switches).

One twin rack per test session (2 nodes, 2 switches), brought up from the
node image that `make image` builds; tests that change a node put it back or
use their own lab.  What the tests share besides fixtures is in twinlab.py."""

import pytest

from tests.integration.twinlab import SessionTwin, labs_of, require_twin


# The modules by the time they take (make test's per-test durations,
# summed per module), longest first; a module not named here runs after
# them. The two workers of `--dist loadfile --no-loadscope-reorder` (the
# Makefile's twin-test) take modules in this order, each the next one when
# its own has two tests left, so the short modules fill in at the end.
# Measured at faca7bc (per-test durations of the whole tier, 1,970 s in
# all): xdist's own order (modules with the most tests first) left the two
# workers 120 s apart (1,045 and 925 s of tests); this order, replayed on
# those durations by xdist's rule, 4 s (987 and 983), and with each test's
# time moved at random by up to a quarter, the later worker's end 994 s
# (median of 500) against 1,030.
LONGEST_FIRST = ("test_host_faults_twin.py", "test_roce_host_twin.py", "test_doctor_faults_twin.py",
                 "test_rdma_check_twin.py", "test_rollout_twin.py", "test_host_layers_twin.py",
                 "test_layer06_twin.py", "test_switch_layer_twin.py", "test_nccl_twin.py",
                 "test_container_runtime_twin.py", "test_bad_input_twin.py", "test_sriov_policy_twin.py",
                 "test_fabric_twin.py", "test_sysfs_entries_twin.py", "test_tool_twins_live.py")


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
