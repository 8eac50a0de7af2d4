"""The mlx_config module's logic against the twin's byte-exact mlxconfig
formats (both table layouts) and published real outputs."""

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware import mlx_config as C
from simlab.tools import formats

pytestmark = pytest.mark.layers(4)

DEV = "0000:3b:00.0"
IDENT = dict(device_type="ConnectX7", name="MCX75310AAS-NEAT_Ax", description="N/A", device=DEV)


def _query(values, layout="doc"):
    """An -e query; values: name -> (default, current, next)."""
    params = [{"name": n, "default": d, "current": c, "next": x} for n, (d, c, x) in values.items()]
    return formats.mlxconfig_query(params=params, extended=True, layout=layout, **IDENT)


FACTORY = {
    "NUM_OF_VFS": ("0", "0", "0"),
    "SRIOV_EN": ("False(0)", "False(0)", "False(0)"),
    "LINK_TYPE_P1": ("ETH(2)", "ETH(2)", "ETH(2)"),
}


@pytest.mark.parametrize("value,expected", [(True, 1), (False, 0), ("true", 1), ("1", 1), (0, 0),
                                            ("True(1)", 1), ("off", 0)])
def test_sriov_en_booleans(value, expected):
    assert C.normalize_params(DEV, {"SRIOV_EN": value}) == {"SRIOV_EN": expected}


@pytest.mark.parametrize("value,expected", [("ETH", 2), ("eth", 2), ("IB", 1), ("VPI", 3), (1, 1), ("3", 3)])
def test_link_types(value, expected):
    assert C.normalize_params(DEV, {"LINK_TYPE_P1": value}) == {"LINK_TYPE_P1": expected}


@pytest.mark.parametrize("params,words", [
    ({"NUM_OF_VFS": 128}, ["NUM_OF_VFS=128", "0..127"]),
    ({"NUM_OF_VFS": -1}, ["NUM_OF_VFS"]),
    ({"NUM_OF_VFS": "many"}, ["NUM_OF_VFS", "many"]),
    ({"LINK_TYPE_P1": "ROCE"}, ["LINK_TYPE_P1", "ROCE", "ETH, IB, VPI"]),
    ({"LINK_TYPE_P2": 4}, ["LINK_TYPE_P2", "4"]),
    ({"SRIOV_EN": "maybe"}, ["SRIOV_EN", "maybe"]),
    ({"sriov_en": 1}, ["sriov_en"]),
    ({}, ["no parameters"]),
])
def test_invalid_values_name_device_and_value(params, words):
    with pytest.raises(C.MlxConfigError) as exc:
        C.normalize_params(DEV, params)
    assert DEV in str(exc.value)
    for w in words:
        assert w in str(exc.value)


def test_device_max_num_of_vfs():
    assert C.normalize_params(DEV, {"NUM_OF_VFS": 32}, max_num_of_vfs=32) == {"NUM_OF_VFS": 32}
    with pytest.raises(C.MlxConfigError, match="NUM_OF_VFS=33 is out of range 0..32"):
        C.normalize_params(DEV, {"NUM_OF_VFS": 33}, max_num_of_vfs=32)


@pytest.mark.parametrize("layout", formats.MLXCFG_LAYOUTS)
def test_factory_plan_set_command_and_predicted_reboot(layout):
    parsed = C.parse_query(DEV, _query(FACTORY, layout))
    wanted = C.normalize_params(DEV, {"SRIOV_EN": True, "NUM_OF_VFS": 16, "LINK_TYPE_P1": "ETH"})
    changes = C.plan_changes(DEV, parsed, wanted, at_least=["NUM_OF_VFS"])
    assert [(c["name"], c["next"], c["want"]) for c in changes] == [("SRIOV_EN", "False(0)", 1),
                                                                     ("NUM_OF_VFS", "0", 16)]
    assert C.set_command("mstconfig", DEV, changes) == ["mstconfig", "-d", DEV, "-y", "set",
                                                        "SRIOV_EN=1", "NUM_OF_VFS=16"]
    assert C.pending(parsed) == []
    assert [p["name"] for p in C.predicted_pending(parsed, changes)] == ["NUM_OF_VFS", "SRIOV_EN"]


def test_at_least_keeps_more_vfs_and_exact_lowers_them():
    parsed = C.parse_query(DEV, _query({"NUM_OF_VFS": ("0", "32", "32"),
                                        "SRIOV_EN": ("False(0)", "True(1)", "True(1)")}))
    wanted = {"NUM_OF_VFS": 16, "SRIOV_EN": 1}
    assert C.plan_changes(DEV, parsed, wanted, at_least=["NUM_OF_VFS"]) == []
    assert [c["name"] for c in C.plan_changes(DEV, parsed, wanted)] == ["NUM_OF_VFS"]


def test_change_staged_before_the_call_still_requires_a_reboot():
    # fw-pending-reboot: NUM_OF_VFS 8 running, 16 at next boot
    parsed = C.parse_query(DEV, _query({"NUM_OF_VFS": ("0", "8", "16"),
                                        "SRIOV_EN": ("False(0)", "True(1)", "True(1)")}))
    assert C.plan_changes(DEV, parsed, {"NUM_OF_VFS": 16, "SRIOV_EN": 1}) == []
    pend = C.pending(parsed)
    assert [(p["name"], p["current"], p["next"]) for p in pend] == [("NUM_OF_VFS", "8", "16")]
    assert C.predicted_pending(parsed, []) == pend


def test_reverting_a_staged_value_needs_no_reboot():
    parsed = C.parse_query(DEV, _query({"NUM_OF_VFS": ("0", "8", "16")}))
    changes = C.plan_changes(DEV, parsed, {"NUM_OF_VFS": 8})
    assert C.predicted_pending(parsed, changes) == []


def test_unknown_parameter_named():
    parsed = C.parse_query(DEV, _query(FACTORY))
    with pytest.raises(C.MlxConfigError, match=r"0000:3b:00.0: the firmware has no parameter PF_LOG_BAR_SIZE"):
        C.plan_changes(DEV, parsed, {"PF_LOG_BAR_SIZE": 5})


def test_real_cx3_next_boot_only(real_output):
    parsed = C.parse_query(DEV, real_output("mlxconfig/ptr727-cx3-query-sriov-linktype.txt"))
    wanted = C.normalize_params(DEV, {"SRIOV_EN": 1, "NUM_OF_VFS": 8, "LINK_TYPE_P1": "ETH", "LINK_TYPE_P2": "IB"})
    changes = C.plan_changes(DEV, parsed, wanted)
    assert [(c["name"], c["next"], c["want"]) for c in changes] == [("LINK_TYPE_P2", "ETH(2)", 1)]
    assert C.param_values(parsed, "next")["NUM_OF_VFS"] == "8"


def test_real_cx7_filtered_query(real_output):
    parsed = C.parse_query(DEV, real_output("mlxconfig/schmaustech-cx7-query-egrep-sriov.txt"))
    assert C.plan_changes(DEV, parsed, {"SRIOV_EN": 1, "NUM_OF_VFS": 4}, at_least=["NUM_OF_VFS"]) == []
    assert C.plan_changes(DEV, parsed, {"NUM_OF_VFS": 16}, at_least=["NUM_OF_VFS"])[0]["next_int"] == 8


def test_query_that_is_not_mlxconfig_output():
    with pytest.raises(C.MlxConfigError, match=DEV):
        C.parse_query(DEV, "-E- Failed to open the device\n")


def test_set_output_success_and_failure():
    ok = formats.mlxconfig_set([("NUM_OF_VFS", "0", "16")], device=DEV)
    assert C.check_set_output(DEV, ok, 0)["reset_required"] == "reboot"
    bad = ("\nDevice #1:\n----------\n\nDevice type:        ConnectX7\n\nConfigurations:"
           "                                         Next Boot           New\n"
           "-E- Failed to find Param / TLV with name 'FOO' port 0 module -1\n")
    with pytest.raises(C.MlxConfigError, match=r"0000:3b:00.0: set failed \(rc 3\): Failed to find Param"):
        C.check_set_output(DEV, bad, 3)
    # every value already at its next-boot value: mstflint's mlxcfg_ui.cpp prints "Nothing to set"
    assert C.check_set_output(DEV, "Nothing to set\n", 0)["nothing_to_set"]
    with pytest.raises(C.MlxConfigError, match=r"set failed \(rc 1\)"):
        C.check_set_output(DEV, "Nothing to set\n", 1)


@pytest.mark.parametrize("relpath,version", [
    ("mstflint/schmaustech-cx7-flint-query-28.42.1000.txt", "28.42.1000"),
    ("mstflint/schmaustech-cx7-flint-query-28.43.1014.txt", "28.43.1014"),
])
def test_fw_version_real(real_output, relpath, version):
    text = real_output(relpath)
    assert C.check_fw_version(DEV, text)["fw_version"] == version
    assert C.check_fw_version(DEV, text, "28.42")["fw_version"] == version
    with pytest.raises(C.MlxConfigError) as exc:
        C.check_fw_version(DEV, text, "28.44.1000")
    assert str(exc.value) == "%s: firmware %s is older than the minimum 28.44.1000" % (DEV, version)


def test_fw_version_twin_format():
    text = formats.mstflint_query({"fw_version": "28.38.1002", "psid": "MT_0000000838"})
    with pytest.raises(C.MlxConfigError, match="firmware 28.38.1002 is older than the minimum 28.39"):
        C.check_fw_version(DEV, text, "28.39")
