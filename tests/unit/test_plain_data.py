"""plain_data: what the collection's plain-Python code and ansible's argument
validator get from ansible's lazy containers and tagged values. A tagged
value (a string a role's YAML or a template gave, carrying its origin and
trust) is deep-copied by the validator through its __reduce_ex__; plain()
hands it over as the base type, and validate_args gives the validator plain
copies while leaving the task's own arguments as they were."""

import copy

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.template import trust_as_template

from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data

pytestmark = pytest.mark.tooling


class _Int(int):
    pass


class _Float(float):
    pass


def test_tagged_strings_and_subclassed_numbers_become_the_base_type():
    tagged = trust_as_template("enp1s0f0")
    assert type(tagged) is not str  # ansible tags it: the case plain() is for
    for given, kind in ((tagged, str), (_Int(7), int), (_Float(2.5), float)):
        got = plain_data.plain(given)
        assert type(got) is kind and got == given


def test_containers_are_rebuilt_all_the_way_down_and_other_values_kept():
    marker = object()
    given = {trust_as_template("nics"): [{"name": trust_as_template("p0"), "vfs": _Int(8)}, (True, None)],
             1: marker}
    got = plain_data.plain(given)
    assert got == {"nics": [{"name": "p0", "vfs": 8}, [True, None]], 1: marker}
    key = next(k for k in got if k == "nics")
    assert type(key) is str
    assert type(got["nics"][0]["name"]) is str and type(got["nics"][0]["vfs"]) is int
    assert got["nics"][1][0] is True and got[1] is marker
    # a tuple key stays a key
    assert plain_data.plain({("a", 1): [1]}) == {("a", 1): [1]}


def _reduced(value):
    """How many objects copy.deepcopy rebuilds through __reduce_ex__."""
    count = [0]
    real = copy._reconstruct

    def counting(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    copy._reconstruct = counting
    try:
        copy.deepcopy(value)
    finally:
        copy._reconstruct = real
    return count[0]


def test_what_the_validator_deep_copies_is_rebuilt_without_reduce():
    cabling = [{"node": trust_as_template("node%02d" % n), "port": trust_as_template("swp%d" % n)} for n in range(32)]
    assert _reduced(cabling) >= 64
    assert _reduced(plain_data.plain(cabling)) == 0
    checked = ArgumentSpecValidator({"cabling": {"type": "list", "elements": "dict"}}).validate(
        {"cabling": plain_data.plain(cabling)})
    assert not checked.error_messages and checked.validated_parameters["cabling"] == cabling


class _Task(object):
    def __init__(self, args):
        self.args = args


class _Action(object):
    """ansible's ActionBase.validate_argument_spec reads self._task.args."""

    def __init__(self, args, fail=False):
        self._task = _Task(args)
        self.fail = fail
        self.seen = None

    def validate_argument_spec(self, **spec):
        self.seen = (self._task.args, spec)
        if self.fail:
            raise ValueError("bad arguments")
        return "result", dict(self._task.args)


def test_validate_args_hands_the_validator_plain_copies_and_keeps_the_tasks_own():
    given = {"phase": trust_as_template("links"), "nics": [trust_as_template("p0")]}
    action = _Action(given)
    result, args = plain_data.validate_args(action, argument_spec={"phase": {"type": "str"}})
    assert result == "result" and args == {"phase": "links", "nics": ["p0"]}
    seen, spec = action.seen
    assert spec == {"argument_spec": {"phase": {"type": "str"}}}
    assert type(seen["phase"]) is str and type(seen["nics"][0]) is str
    assert action._task.args is given


def test_validate_args_gives_the_tasks_arguments_back_when_validation_fails():
    given = {"phase": trust_as_template("nope")}
    action = _Action(given, fail=True)
    with pytest.raises(ValueError, match="bad arguments"):
        plain_data.validate_args(action, argument_spec={})
    assert action._task.args is given
