"""mlx_tools parsers against more real published outputs of mlnx_qos, mlxconfig
and flint/mstflint (tests/unit/fixtures/mlx_tools_real, sources in its
README.md), and the source-derived cases those outputs showed the parsers had
to handle."""

import json
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware import mlx_tools as M

pytestmark = pytest.mark.layers(4, 8)

REAL = Path(__file__).resolve().parent / "fixtures" / "mlx_tools_real"


def real(name):
    return (REAL / name).read_bytes().decode("utf-8")


def test_every_fixture_is_tested():
    listed = (set(QOS) | set(QOS_NO_DCB) | set(MLXCONFIG) | set(MLXCONFIG_SET) | set(MLXCONFIG_FAILED)
              | set(MLXCONFIG_NO_CURRENT) | set(FLINT) | set(FLINT_FS2) | set(FLINT_MORE))
    on_disk = {p.name for p in REAL.glob("*.txt")}
    assert on_disk == listed


# ---------------------------------------------------------------- mlnx_qos

DEFAULT_MAP = [[7, 6, 5, 4, 3, 2, 1, 0]] + [[p * 8 + 7 - i for i in range(8)] for p in range(1, 8)]
VENDOR_TCS = [(0, "vendor", None, [1]), (1, "vendor", None, [0])] + [(t, "vendor", None, [t]) for t in range(2, 8)]

QOS = {
    "mlnx_qos-nvidia-doc2792-ofed42-dscp-ets-strict.txt": dict(
        dcbx="os", trust="dscp", pfc=[1, 0, 1, 0, 0, 0, 1, 1], cable_len=10, prio2buffer=None,
        buffer_sizes=None, buffer_total=None, default_priority=None, dscp2prio=DEFAULT_MAP,
        tcs=[(0, "ets", 10, [1]), (1, "ets", 10, [0]), (2, "ets", 10, [2]), (3, "ets", 10, [3]),
             (4, "ets", 10, [4]), (5, "ets", 10, [5]), (6, "strict", None, [6]), (7, "ets", 40, [7])]),
    "mlnx_qos-cx5-doca-fw-dcbx-ets-three-tcs.txt": dict(
        dcbx="fw", trust="dscp", pfc=[0, 0, 0, 1, 0, 0, 0, 0], cable_len=7, prio2buffer=[0, 0, 0, 1, 0, 0, 0, 0],
        buffer_sizes=[130944, 130944, 0, 0, 0, 0, 0, 0], buffer_total=262016, default_priority=None,
        dscp2prio=DEFAULT_MAP,
        tcs=[(0, "ets", 50, [0, 1, 2, 4, 5, 7]), (3, "ets", 50, [3]), (6, "vendor", None, [6])]),
    "mlnx_qos-cx7-ofed2310-default-priority-ets-strict-pfc5.txt": dict(
        dcbx="os", trust="dscp", pfc=[0, 0, 0, 0, 0, 1, 0, 0], cable_len=30, prio2buffer=[0, 0, 0, 0, 0, 1, 0, 0],
        buffer_sizes=[19872, 220896, 0, 0, 0, 0, 0, 0], buffer_total=4151520, default_priority=[],
        dscp2prio=DEFAULT_MAP[:5] + [[40, 47, 46, 45, 44, 43, 42, 41], [48, 55, 54, 53, 52, 51, 50, 49],
                                     DEFAULT_MAP[7]],
        tcs=[(0, "ets", 9, [0]), (1, "ets", 1, [1]), (2, "ets", 80, [2]), (3, "ets", 10, [3])]
        + [(t, "strict", None, [t]) for t in range(4, 8)]),
    "mlnx_qos-ofed-dscp30-moved-to-prio6-wrapped-row.txt": dict(
        dcbx="os", trust="dscp", pfc=[0, 0, 0, 1, 0, 0, 0, 0], cable_len=7, prio2buffer=[0, 2, 5, 7, 1, 2, 3, 6],
        buffer_sizes=[80256, 80256, 896, 80256, 896, 896, 896, 896], buffer_total=None, default_priority=None,
        dscp2prio=DEFAULT_MAP[:3] + [[31, 29, 28, 27, 26, 25, 24]] + DEFAULT_MAP[4:6]
        + [[30, 55, 54, 53, 52, 51, 50, 49, 48], DEFAULT_MAP[7]],
        tcs=VENDOR_TCS),
    "mlnx_qos-ofed-trust-pcp-prio2buffer-map.txt": dict(
        dcbx="os", trust="pcp", pfc=[0, 0, 0, 1, 0, 0, 0, 0], cable_len=7, prio2buffer=[0, 2, 5, 7, 1, 2, 3, 6],
        buffer_sizes=[80256, 80256, 896, 80256, 896, 896, 896, 896], buffer_total=None, default_priority=None,
        dscp2prio=None, tcs=VENDOR_TCS),
    "mlnx_qos-magnate3-roce-diag-ratelimit-gbps-pcp.txt": dict(
        dcbx="os", trust="pcp", pfc=[0] * 8, cable_len=7, prio2buffer=[1] * 8,
        buffer_sizes=[0, 156096, 0, 0, 0, 0, 0, 0], buffer_total=None, default_priority=[],
        dscp2prio=None, tcs=[(t, "vendor", None, [t]) for t in range(8)],
        ratelimits=[25.0, 5.0, 10.0, 25.0, 25.0, 25.0, 25.0, 25.0]),
}
# mlnx_qos on a netdev without DCB: each part's "not supported" line, quoted in the error
QOS_NO_DCB = {
    "mlnx_qos-netdev-list-cx5ex-vlan-not-supported.txt": [
        "Priority trust state is not supported on your system", "Buffers commands are not supported on your system",
        "Rate limit is not supported on your system!", "ETS features are not supported on your system"],
}


@pytest.mark.parametrize("name", sorted(QOS))
def test_mlnx_qos_real(name):
    want = QOS[name]
    p = M.parse_mlnx_qos(real(name))
    assert p["dcbx"] == want["dcbx"] and p["trust"] == want["trust"]
    assert p["pfc_enabled"] == want["pfc"]
    assert p["pfc_priorities"] == [i for i, v in enumerate(want["pfc"]) if v]
    assert p["cable_len"] == want["cable_len"]
    assert p["prio2buffer"] == want["prio2buffer"]
    assert p["buffers_supported"] is (True if want["prio2buffer"] is not None else None)
    assert p["buffer_sizes"] == want["buffer_sizes"] and p["buffer_total_size"] == want["buffer_total"]
    assert p["default_priority"] == want["default_priority"]
    assert p["dscp2prio"] == want["dscp2prio"]
    assert [(t["tc"], t["tsa"], t["bw"], t["priorities"]) for t in p["tcs"]] == want["tcs"]
    assert [t["ratelimit_gbps"] for t in p["tcs"]] == want.get("ratelimits", [None] * len(p["tcs"]))
    assert p["unsupported"] == []
    # every priority sits in exactly one TC
    assert sorted(u for t in p["tcs"] for u in t["priorities"]) == list(range(8))
    json.dumps(p)


def test_mlnx_qos_real_dscp_to_prio():
    moved = M.parse_mlnx_qos(real("mlnx_qos-ofed-dscp30-moved-to-prio6-wrapped-row.txt"))["dscp_to_prio"]
    assert moved[30] == 6 and moved[48] == 6 and moved[26] == 3 and moved[31] == 3
    assert moved == [6 if d == 30 else d >> 3 for d in range(64)]
    cx7 = M.parse_mlnx_qos(real("mlnx_qos-cx7-ofed2310-default-priority-ets-strict-pfc5.txt"))["dscp_to_prio"]
    assert cx7 == [d >> 3 for d in range(64)]       # 40 -> 5 and 48 -> 6 re-set to their defaults
    assert M.parse_mlnx_qos(real("mlnx_qos-ofed-trust-pcp-prio2buffer-map.txt"))["dscp_to_prio"] is None


# OFED 4.2's dcbnetlink.printAppSelector (mlnx-tools d1b0709) wrapped a
# priority's 9th DSCP onto a continuation line of bare numbers.
OLD_WRAP = ("DCBX mode: OS controlled\nPriority trust state: dscp\ndscp2prio mapping:\n"
            "\tprio:0 dscp:07,06,05,04,03,02,01,00,\n"
            "\tprio:3 dscp:31,30,29,28,27,26,25,24,\n\t            46,\n"
            "Cable len: 7\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n"
            "\tenabled     0   0   0   1   0   0   0   0   \n\n"
            "tc: 0 ratelimit: unlimited, tsa: vendor\n\t priority:  1\n")


def test_mlnx_qos_old_continuation_row_and_default_priority():
    p = M.parse_mlnx_qos(OLD_WRAP)
    assert p["dscp2prio"][3] == [31, 30, 29, 28, 27, 26, 25, 24, 46] and p["dscp_to_prio"][46] == 3
    with_default = OLD_WRAP.replace("Cable len: 7", "default priority:\n\tprio:3\nCable len: 7")
    assert M.parse_mlnx_qos(with_default)["default_priority"] == [3]


@pytest.mark.parametrize("name", sorted(QOS_NO_DCB))
def test_mlnx_qos_on_a_netdev_without_dcb_is_refused_quoting_its_lines(name):
    with pytest.raises(ValueError, match="the netdev reports no DCB") as e:
        M.parse_mlnx_qos(real(name))
    assert all(repr(line) in str(e.value) for line in QOS_NO_DCB[name])


def test_mlnx_qos_parts_not_supported_are_named_beside_what_was_read():
    """A device without buffer commands or rate limits (mlnx_qos prints the
    line for that part and goes on): the parts are named, the rest read."""
    text = real("mlnx_qos-ofed-trust-pcp-prio2buffer-map.txt")
    text = text.replace("Cable len", "Rate limit is not supported on your system!\nCable len")
    p = M.parse_mlnx_qos(text)
    assert p["unsupported"] == ["Rate limit"] and p["trust"] == "pcp" and p["pfc_priorities"] == [3]
    assert "unsupported_lines" not in p


@pytest.mark.parametrize("bad,words", [
    ("tc: 0 ratelimit: unlimited, tsa: ets, bw: 10", "TC line"),
    ("tc: 9 ratelimit: unlimited, tsa: strict", "TC 9"),
    ("\t priority:  x", "TC priority line"),
    ("\tprio:9 dscp:01,", "priority 9"),
    ("\tprio:2 dscp:71,", "DSCP 71"),
    ("default priority:\n\tprio:", "priority line"),
    ("Cable len: seven", "cable length"),
])
def test_mlnx_qos_refuses_unreadable_rows_quoting_them(bad, words):
    text = real("mlnx_qos-cx5-doca-fw-dcbx-ets-three-tcs.txt") + bad + "\n"
    with pytest.raises(ValueError, match=words):
        M.parse_mlnx_qos(text)


def test_mlnx_qos_priority_before_any_tc_and_short_pfc_header_refused():
    with pytest.raises(ValueError, match="TC priority line"):
        M.parse_mlnx_qos("Priority trust state: pcp\n\t priority:  3\n")
    with pytest.raises(ValueError, match="PFC priority row"):
        M.parse_mlnx_qos("PFC configuration:\n\tpriority    0   1   2   3\n\tenabled     0   0   0   1\n")


# ---------------------------------------------------------------- mlxconfig

MLXCONFIG = {
    "mlxconfig-ucx5749-mft450-cx4-current-column.txt": dict(
        device_type="ConnectX4", name=None, device="/dev/mst/mt4115_pciconf0", columns=["next"], count=11,
        rows={"NUM_OF_VFS": (None, None, "8", 8), "SRIOV_EN": (None, None, "False(0)", 0),
              "FPP_EN": (None, None, "True(1)", 1), "CQE_COMPRESSION": (None, None, "BALANCED(0)", 0),
              "LRO_LOG_TIMEOUT0": (None, None, "6", 6)}, modified=[]),
    "mlxconfig-openshift-sriov48-cx5-mstconfig-e-q-head.txt": dict(
        device_type="ConnectX5", name="MCX556A-ECA_Ax", device="0000:02:00.1",
        columns=["default", "current", "next"], count=3,
        rows={"MEMIC_BAR_SIZE": ("0", "0", "0", 0), "MEMIC_SIZE_LIMIT": ("_256KB(1)", "_256KB(1)", "_256KB(1)", 1),
              "HOST_CHAINING_MODE": ("DISABLED(0)", "DISABLED(0)", "DISABLED(0)", 0)}, modified=[]),
    "mlxconfig-mstflint830-bf2-e-q-head-mstflint425.txt": dict(
        device_type="BlueField2", name="MBF2H512C-AECO_Ax", device="ca:00.0",
        columns=["default", "current", "next"], count=7,
        rows={"HOST_CHAINING_DESCRIPTORS": ("Array[0..7]", "Array[0..7]", "Array[0..7]", None),
              "INTERNAL_CPU_MODEL": ("EMBEDDED_CPU(1)", "EMBEDDED_CPU(1)", "EMBEDDED_CPU(1)", 1)}, modified=[]),
    "mlxconfig-hpe-slingshot-cx5-e-q-star-author-elided.txt": dict(
        device_type="ConnectX5", name="MCX515A-CCA_Ax_Bx", device="/dev/mst/mt4119_pciconf0",
        columns=["default", "current", "next"], count=5,
        rows={"ADVANCED_PCI_SETTINGS": ("False(0)", "True(1)", "True(1)", 1),
              "SAFE_MODE_THRESHOLD": ("10", "10", "10", 10), "SAFE_MODE_ENABLE": ("True(1)", "True(1)", "True(1)", 1)},
        modified=["ADVANCED_PCI_SETTINGS"]),
    "mlxconfig-sriovdp601-cx7-next-boot-arrays.txt": dict(
        device_type=None, name=None, device=None, columns=["next"], count=17,
        rows={"MODULE_SPLIT_M0": (None, None, "Array[0..15]", None),
              "MEMIC_ATOMIC": (None, None, "MEMIC_ATOMIC_ENABLE(2)", 2),
              "MEMIC_ATOMIC_ENDIANESS": (None, None, "DEVICE_DEFAULT(0)", 0),
              "DPA_AUTHENTICATION": (None, None, "True(1)", 1), "PF_BAR2_SIZE": (None, None, "0", 0)}, modified=[]),
    "mlxconfig-sriovop968-cx6lx-e-q-head-20-wide.txt": dict(
        device_type="ConnectX6LX", name="MCX631102AC-ADA_Ax", device="0108:00:00.0",
        columns=["default", "current", "next"], count=7,
        rows={"CRYPTO_POLICY": ("UNRESTRICTED(1)", "UNRESTRICTED(1)", "UNRESTRICTED(1)", 1),
              "LARGE_MTU_TWEAK_64": ("False(0)", "False(0)", "False(0)", 0),
              "PORT_OWNER": ("True(1)", "True(1)", "True(1)", 1),
              "TRACER_ENABLE": ("True(1)", "True(1)", "True(1)", 1)}, modified=[]),
    "mlxconfig-qhn-cx5-mft411-query-full-x86-row.txt": dict(
        device_type="ConnectX5", name="N/A", device="/dev/mst/mt4119_pciconf0", columns=["next"], count=89,
        rows={"SRIOV_EN": (None, None, "True(1)", 1), "NUM_OF_VFS": (None, None, "0", 0),
              "EXP_ROM_UEFI_x86_ENABLE": (None, None, "False(0)", 0),
              "PCI_ATOMIC_MODE": (None, None, "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)", 0),
              "PCI_WR_ORDERING": (None, None, "per_mkey(0)", 0), "ROCE_CC_PRIO_MASK_P1": (None, None, "255", 255),
              "CNP_DSCP_P1": (None, None, "48", 48), "LLDP_NB_DCBX_P1": (None, None, "False(0)", 0),
              "SAFE_MODE_ENABLE": (None, None, "True(1)", 1)}, modified=[]),
}


@pytest.mark.parametrize("name", sorted(MLXCONFIG))
def test_mlxconfig_query_real(name):
    want = MLXCONFIG[name]
    p = M.parse_mlxconfig_query(real(name))
    assert (p["device_type"], p["name"], p["device"]) == (want["device_type"], want["name"], want["device"])
    assert p["columns"] == want["columns"] and len(p["devices"]) == 1 and p["errors"] == []
    assert len(p["params"]) == want["count"] and len(p["param_order"]) == want["count"]
    for pname, (default, current, nxt, next_int) in want["rows"].items():
        row = p["params"][pname]
        assert (row["default"], row["current"], row["next"], row["next_int"]) == (default, current, nxt, next_int)
    assert [n for n in p["param_order"] if p["params"][n]["modified"]] == want["modified"]
    assert not any(p["params"][n]["read_only"] for n in p["param_order"])
    json.dumps(p)


def test_mlxconfig_real_pending_and_enum_labels():
    star = M.parse_mlxconfig_query(real("mlxconfig-hpe-slingshot-cx5-e-q-star-author-elided.txt"))
    assert M.mlxconfig_pending(star) == []            # '*' is next != default; current is already True(1)
    assert star["params"]["ADVANCED_PCI_SETTINGS"]["default_int"] == 0
    assert star["params"]["ADVANCED_PCI_SETTINGS"]["current_label"] == "True"
    cx7 = M.parse_mlxconfig_query(real("mlxconfig-sriovdp601-cx7-next-boot-arrays.txt"))
    assert cx7["params"]["MODULE_SPLIT_M0"]["next_array"] == [0, 15]
    assert cx7["params"]["MEMIC_ATOMIC"]["next_label"] == "MEMIC_ATOMIC_ENABLE"
    old = M.parse_mlxconfig_query(real("mlxconfig-ucx5749-mft450-cx4-current-column.txt"))
    with pytest.raises(ValueError, match="-e"):
        M.mlxconfig_pending(old)                      # no running values before MFT 4.6


def test_mlxconfig_real_e_query_20_wide_has_nothing_pending():
    p = M.parse_mlxconfig_query(real("mlxconfig-sriovop968-cx6lx-e-q-head-20-wide.txt"))
    assert M.mlxconfig_pending(p) == []
    assert p["description"] == ("ConnectX-6 Lx EN adapter card; 25GbE ; Dual-port SFP28; PCIe 4.0 x8; "
                                "Crypto and Secure Boot")
    assert p["params"]["CRYPTO_POLICY"]["default_label"] == "UNRESTRICTED"


# mlxconfig set: (device_type, device, [(name, next, next_int, new, new_int)], message)
MLXCONFIG_SET = {
    "mlxconfig-set-mstflint551-cx5-sriov-vfs8-reboot.txt": (
        "ConnectX5", "5e:00.0",
        [("SRIOV_EN", "True(1)", 1, "True(1)", 1), ("NUM_OF_VFS", "8", 8, "8", 8)]),
    "mlxconfig-set-maas2-cx6-mft4261-boot-options-part.txt": (
        "ConnectX6", "c2:00.0",
        [("BOOT_VLAN", "1", 1, "0", 0), ("BOOT_LACP_DIS", "True(1)", 1, "True(1)", 1),
         ("BOOT_VLAN_EN", "False(0)", 0, "False(0)", 0), ("BOOT_UNDI_NETWORK_WAIT", "0", 0, "30", 30)]),
}


@pytest.mark.parametrize("name", sorted(MLXCONFIG_SET))
def test_mlxconfig_set_real(name):
    device_type, device, changes = MLXCONFIG_SET[name]
    p = M.parse_mlxconfig_set(real(name))
    assert (p["device_type"], p["device"]) == (device_type, device)
    assert [(c["name"], c["next"], c["next_int"], c["new"], c["new_int"]) for c in p["changes"]] == changes
    assert all(set(c) == {"name", "next", "next_int", "new", "new_int"} for c in p["changes"])
    assert p["applied"] and not p["failed"] and p["errors"] == []
    assert p["reset_required"] == "reboot"
    assert p["message"] == "-I- Please reboot machine to load new configurations."
    assert p["skipped"] == [] and p["nothing_to_set"] is False
    json.dumps(p)


def test_mlxconfig_set_real_changes_only_where_new_differs():
    """mstflint issue #551: set prints every asked parameter, changed or
    not, and asks for a reboot anyway; what actually changes is next != new."""
    same = M.parse_mlxconfig_set(real("mlxconfig-set-mstflint551-cx5-sriov-vfs8-reboot.txt"))
    assert [c["name"] for c in same["changes"] if c["next_int"] != c["new_int"]] == []
    boot = M.parse_mlxconfig_set(real("mlxconfig-set-maas2-cx6-mft4261-boot-options-part.txt"))
    assert [c["name"] for c in boot["changes"] if c["next_int"] != c["new_int"]] == [
        "BOOT_VLAN", "BOOT_UNDI_NETWORK_WAIT"]


# a query that fails after its header: the error, not an empty table
MLXCONFIG_FAILED = {
    "mlxconfig-y0ug-cx3-query-failed-current-config.txt": "Failed to query device current configuration",
}


# -e queries whose firmware reports no Current column: the row the author cut
MLXCONFIG_NO_CURRENT = {
    "mstconfig-e-q-cx3pro-default-next-boot-no-current-cut.txt": "BOOT_RETRY_CNT_P1",
}


@pytest.mark.parametrize("name", sorted(MLXCONFIG_NO_CURRENT))
def test_an_e_query_without_current_fails_the_device_not_the_run(name):
    """ConnectX-3 firmware answers -e q with Default and Next Boot only: the
    parser reads them; the mlx_config module cannot tell a pending change and
    fails that device with the columns it got, where it used to stop the run."""
    from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware import mlx_config
    text = real(name)
    cut = MLXCONFIG_NO_CURRENT[name]
    with pytest.raises(ValueError, match=cut):
        M.parse_mlxconfig_query(text)
    whole = "".join(line for line in text.splitlines(True) if cut not in line)
    d = M.parse_mlxconfig_query(whole)["devices"][0]
    assert d["device_type"] == "ConnectX3Pro" and d["columns"] == ["default", "next"]
    assert (d["params"]["SRIOV_EN"]["next_int"], d["params"]["NUM_OF_VFS"]["next_int"]) == (1, 16)
    reading = {"device": "0000:20:00.0", "tool": "mstconfig", "query": whole, "flint": None}

    def converge(device, wanted, entry):
        entry.update(mlx_config.check_reading(reading, wanted))
    got = mlx_config.run_devices([("0000:20:00.0", {"SRIOV_EN": 1, "NUM_OF_VFS": 16})], converge)
    assert got["failed"] and got["devices"][0]["failed"]
    assert "0000:20:00.0: mlxconfig -e q printed the columns default, next and no Current" in got["msg"]


@pytest.mark.parametrize("name", sorted(MLXCONFIG_FAILED))
def test_mlxconfig_query_real_failure_raises_with_the_tools_error(name):
    with pytest.raises(ValueError, match="errors: " + MLXCONFIG_FAILED[name]):
        M.parse_mlxconfig_query(real(name))
    devices, errors, _ = M._parse_mlxconfig_tables(real(name))
    assert [(d["device_type"], d["device"], d["columns"], d["params"]) for d in devices] == [
        ("ConnectX3", "/dev/mst/mt4099_pciconf0", ["next"], {})]
    assert errors == [MLXCONFIG_FAILED[name]]


@pytest.mark.parametrize("row,words", [
    ("         SRIOV_EN                            True(1)         True(1)", "1 column"),
    ("*        NUM_OF_VFS", "0 value"),
    ("*        ???", "cannot read parameter row"),
])
def test_mlxconfig_row_naming_a_parameter_is_never_dropped(row, words):
    text = real("mlxconfig-qhn-cx5-mft411-query-full-x86-row.txt") + row + "\n"
    with pytest.raises(ValueError, match=words):
        M.parse_mlxconfig_query(text)


def test_mlxconfig_failed_tlv_list_after_error_ends_the_table():
    # mlxcfg_ui.cpp queryDevCfg: "-E- Failed to query some of the TLVs:" then the TLV names
    text = (real("mlxconfig-sriovdp601-cx7-next-boot-arrays.txt")
            + "-E- Failed to query some of the TLVs:\n    Failed to query the next values of the following TLVs:\n"
            + "    NV_ROM_ROOT_CA_FINGERPRINT nv_global_pci_conf \n")
    p = M.parse_mlxconfig_query(text)
    assert len(p["params"]) == 17 and p["errors"] == ["Failed to query some of the TLVs:"]


# ---------------------------------------------------------------- flint / mstflint

FLINT = {
    "mstflint-terrencemiao-cx4-fs3-flint-query-12.28.2006.txt": dict(
        image_type="FS3", fw="12.28.2006", date="15.9.2020", psid="LNV2180110032",
        guid=("ec0d9a030076eae2", 4), mac=("ec0d9a76eae2", 4), security=[],
        roms=[("UEFI", "14.21.17", "AMD64"), ("PXE", "3.6.102", "AMD64")]),
    "mstflint-lshca54-bluefield-fs4-virtio-roms-24.33.1048.txt": dict(
        image_type="FS4", fw="24.33.1048", date="29.4.2022", psid="MT_0000000723",
        guid=("08c0eb030053eaec", 16), mac=("08c0eb53eaec", 16), security=["secure-fw"],
        roms=[("UEFI Virtio net", "21.2.10", "AMD64"), ("UEFI Virtio blk", "22.2.10", "AMD64"),
              ("UEFI", "14.26.17", "AMD64,AARCH64"), ("PXE", "3.6.502", "AMD64")]),
    "mstflint-niccfg97-bluefield3-q-32.41.1000-to-psid.txt": dict(
        image_type="FS4", fw="32.41.1000", date="28.4.2024", psid="MT_0000000998",
        guid=("946dae03004f296a", 38), mac=("946dae4f296a", 38), security=[],
        roms=[("UEFI Virtio net", "21.4.13", "AMD64,AARCH64"), ("UEFI Virtio blk", "22.4.13", "AMD64,AARCH64"),
              ("UEFI", "14.34.12", "AMD64,AARCH64"), ("PXE", "3.7.400", "AMD64")]),
}


@pytest.mark.parametrize("name", sorted(FLINT))
def test_mstflint_query_real(name):
    want = FLINT[name]
    p = M.parse_mstflint_query(real(name))
    assert p["image_type"] == want["image_type"]
    assert p["fw_version"] == want["fw"] and p["product_version"] == want["fw"]
    assert p["fw_version_running"] is None and p["reset_pending"] is False
    assert p["fw_release_date"] == want["date"] and p["psid"] == want["psid"]
    assert p["base_guid"] == {"value": want["guid"][0], "count": want["guid"][1]}
    assert p["base_mac"] == {"value": want["mac"][0], "count": want["mac"][1]}
    assert p["security_attributes"] == want["security"]
    assert p["image_vsd"] == "N/A" and p["device_vsd"] == "N/A"
    assert [(r["type"], r["version"], r["cpu"]) for r in p["rom_info"]] == want["roms"]
    assert p["fields"]["guid_columns"] == "UID                GuidsNumber" and "description" not in p["fields"]
    assert M.fw_version_tuple(p["fw_version"])[0] in (12, 24, 32)
    json.dumps(p)


FLINT_FS2 = {
    "mstflint-y0ug-cx3-fs2-flint-query-full-running-2.42.5000.txt": dict(
        fw="2.42.5000", running="2.35.5100", date="5.9.2017", product="02.42.50.00", psid="MT_1170110023",
        roms=[("PXE", "3.4.752", None)],
        fields={"mic_version": "2.0.0", "config_sectors": "1", "prs_name": "cx3-1_MCX311A.prs", "device_id": "4099",
                "guids": "ffffffffffffffff ffffffffffffffff ffffffffffffffff ffffffffffffffff",
                "macs": "e41d2ddd7850     e41d2ddd7851", "vsd": ""}),
}


@pytest.mark.parametrize("name", sorted(FLINT_FS2))
def test_flint_fs2_query_full_real(name):
    """ConnectX-3 (FS2) `flint query full` after a burn, before the cold
    boot: FW Version(Running) differs, GUIDs/MACs instead of Base GUID/MAC,
    an empty VSD and no Security Attributes line."""
    want = FLINT_FS2[name]
    p = M.parse_mstflint_query(real(name))
    assert p["image_type"] == "FS2"
    assert (p["fw_version"], p["fw_version_running"], p["reset_pending"]) == (want["fw"], want["running"], True)
    assert (p["fw_release_date"], p["product_version"], p["psid"]) == (want["date"], want["product"], want["psid"])
    assert [(r["type"], r["version"], r.get("cpu")) for r in p["rom_info"]] == want["roms"]
    assert p["base_guid"] is None and p["base_mac"] is None and p["security_attributes"] == []
    assert {k: p["fields"][k] for k in want["fields"]} == want["fields"]
    assert M.compare_fw_versions(p["fw_version"], p["fw_version_running"]) == 1
    json.dumps(p)


def test_mstflint_rom_warning_and_orphan_value_line():
    # displayExpRomInfo: " (-W- msg)" after the last ROM
    text = real("mstflint-terrencemiao-cx4-fs3-flint-query-12.28.2006.txt").replace(
        "cpu=AMD64\nDescription", "cpu=AMD64 (-W- ROM info is not compatible)\nDescription")
    roms = M.parse_mstflint_query(text)["rom_info"]
    assert roms[1] == {"type": "PXE", "version": "3.6.102", "cpu": "AMD64", "warning": "-W- ROM info is not compatible",
                       "raw": "type=PXE version=3.6.102 cpu=AMD64 (-W- ROM info is not compatible)"}
    orphan = real("mstflint-terrencemiao-cx4-fs3-flint-query-12.28.2006.txt") + "\n                       type=PXE\n"
    with pytest.raises(ValueError, match="follows no field"):
        M.parse_mstflint_query(orphan)
    with pytest.raises(ValueError, match="PSID"):
        M.parse_mstflint_query("FW Version:            28.39.1002\nPSID MT_0000000838\n")


# ---------------------------------------------------------------- source-derived variants
# Forms the tools' source prints that no published output here shows; each
# was accepted before the parsers were made strict, and must still be.

def test_mlxconfig_glued_values_of_mft_4_6_to_4_11_are_split():
    """mstflint 4.11 mlxconfig/mlxcfg_ui.cpp printValue: printf("%-16s")
    with no blank after it (015de1f4 added one), so a value of 16
    characters or more runs into the next; every ConnectX-5 query has one
    (PCI_ATOMIC_MODE)."""
    long = "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"
    text = "\n".join([
        "", "Device #1:", "----------", "",
        "%-16s%-16s" % ("Device type:", "ConnectX5"),
        "%-16s%-16s" % ("Device:", "/dev/mst/mt4119_pciconf0"), "",
        "%-16s%36s%16s%18s" % ("Configurations:", "Default", "Current", "Next Boot"),
        "         %-36s" % "SRIOV_EN" + "%-16s%-16s%-16s" % ("False(0)", "True(1)", "True(1)"),
        "         %-36s" % "PCI_ATOMIC_MODE" + "%-16s" % long * 3,
        "         %-36s" % "NUM_OF_VFS" + "%-16s%-16s%-16s" % ("0", "8", "16"), ""])
    p = M.parse_mlxconfig_query(text)
    assert p["param_order"] == ["SRIOV_EN", "PCI_ATOMIC_MODE", "NUM_OF_VFS"]
    atomic = p["params"]["PCI_ATOMIC_MODE"]
    assert (atomic["default"], atomic["current"], atomic["next"]) == (long, long, long)
    assert (atomic["next_int"], p["params"]["NUM_OF_VFS"]["next_int"]) == (0, 16)


def test_mlnx_qos_tc_lines_without_a_rate_limit():
    """mlnx-tools python/mlnx_qos: where the driver reports no rate limits
    ("Rate limit is not supported on your system!"), pretty_print's
    "tc: N ratelimit: R, " part is lost and the line is the TSA alone."""
    text = ("Rate limit is not supported on your system!\nDCBX mode: OS controlled\n"
            "Priority trust state: pcp\nCable len: 7\nPFC configuration:\n"
            "\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   0   0\n"
            "ets, bw: 50%\n\t priority:  0\n\t priority:  1\nets, bw: 40%\n\t priority:  3\nstrict\n\t priority:  6\n")
    p = M.parse_mlnx_qos(text)
    assert [(t["tc"], t["tsa"], t["bw"], t["ratelimit_gbps"], t["priorities"]) for t in p["tcs"]] == [
        (None, "ets", 50, None, [0, 1]), (None, "ets", 40, None, [3]), (None, "strict", None, None, [6])]
    assert p["pfc_priorities"] == [3]


def test_mlnx_qos_dscp_under_two_priorities_is_both_not_one():
    """The kernel's own APP table (drivers without ieee_setapp) keeps a DSCP
    with several priorities and mlnx_qos prints each; the map holds the
    list, as iproute_dcb.dscp_to_prio does, which no intent of one matches."""
    text = ("DCBX mode: OS controlled\nPriority trust state: dscp\ndscp2prio mapping:\n"
            "\tprio:0 dscp:07,06,05,04,03,02,01,00,\n\tprio:3 dscp:24,\n\tprio:4 dscp:24,\n"
            "PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n"
            "\tenabled     0   0   0   1   0   0   0   0\n")
    p = M.parse_mlnx_qos(text)
    assert p["dscp_to_prio"][24] == [3, 4] and p["dscp_to_prio"][7] == 0 and p["dscp_to_prio"][8] is None


# (image type, FW version, PSID, ROMs as (type, version), base GUID (value, count), fields read)
FLINT_MORE = {
    "mstflint-mstflint1157-hp-cx3pro-fs2-clp-rom.txt": (
        "FS2", "2.42.5044", "HP_1370110017", [("CLP", "8025"), ("UEFI", "14.11.48"), ("PXE", "3.4.754")], None,
        {"guid_columns": "Node             Port1            Port2            Sys image",
         "ini_revision": "0x5506ff89", "geographical_address": "ASIC c8"}),
    "mstflint-i-image-file-cx4lx-base-guid-na-14.32.1912.txt": (
        "FS3", "14.32.1912", "MT_0000000267", [("UEFI", "14.25.17"), ("PXE", "3.6.502")], (None, 4),
        {"product_version": "rel-14_32_1912"}),
    "flint-q-full-hpe-640sfp28-cx4lx-14.32.1908.txt": (
        "FS3", "14.32.1908", "HP_2420110034", [("UEFI", "14.25.17"), ("PXE", "3.6.502")], ("9440c9ffffc367fa", 16),
        {"description": "HPE Ethernet 10/25Gb 2-port 640SFP28 Adapter", "part_number": "817753-B21_Ax",
         "default_update_method": "fw_ctrl"}),
}


@pytest.mark.parametrize("name", sorted(FLINT_MORE))
def test_flint_query_real_roms_image_files_and_full(name):
    """A CLP ROM's version_id, an image file's N/A base GUID, and the GUID
    table's head that flint prints under Description: as the device's own."""
    image_type, fw, psid, roms, guid, fields = FLINT_MORE[name]
    p = M.parse_mstflint_query(real(name))
    assert (p["image_type"], p["fw_version"], p["psid"], p["reset_pending"]) == (image_type, fw, psid, False)
    assert [(r["type"], r["version"]) for r in p["rom_info"]] == roms
    assert (None if p["base_guid"] is None else (p["base_guid"]["value"], p["base_guid"]["count"])) == guid
    assert {k: p["fields"].get(k) for k in fields} == fields
    json.dumps(p)


def test_flint_roms_after_an_unknown_rom_are_kept():
    """mstflint flint/subcommands.cpp: displayOneExpRomInfo prints "0x%x -
    Unknown ROM product ID" and displayExpRomInfo a newline after it, so a
    blank line comes before the next ROM."""
    text = ("Image type:            FS4\nFW Version:            16.35.2000\nFW Release Date:       18.10.2022\n"
            "Rom Info:              0x1a - Unknown ROM product ID\n\n"
            "                       type=UEFI version=14.28.15 cpu=AMD64,AARCH64\n"
            "                       type=PXE version=3.6.804 cpu=AMD64\n"
            "Description:           UID                GuidsNumber\n"
            "Base GUID:             b8cef60300a1b2c3        4\nBase MAC:              b8cef6a1b2c3            4\n"
            "PSID:                  MT_0000000008\nSecurity Attributes:   N/A\n")
    p = M.parse_mstflint_query(text)
    assert p["fw_version"] == "16.35.2000" and p["psid"] == "MT_0000000008"
    assert [r.get("type") for r in p["rom_info"]] == [None, "UEFI", "PXE"]
    assert p["rom_info"][2]["version"] == "3.6.804"


def _set_table_4_36(columns, rows, star=()):
    """mlxconfig set output as mstflint 01aa3604 (4.36) mlxcfg_ui.cpp prints it:
    printOpening, printConfHeader ("%-*s" 56, values "%-*s " 33) and
    printSingleParam ("%s%s     %-48s", a blank after a full-width value)."""
    out = "\nDevice #1:\n----------\n\n" + "".join("%-20s%-20s\n" % kv for kv in [
        ("Device type:", "ConnectX7"), ("Name:", "N/A"), ("Description:", "N/A"), ("Device:", "3b:00.0")]) + "\n"
    out += "%-56s" % "Configurations:" + " ".join("%-33s" % c for c in columns) + "\n"
    for name, values in rows:
        out += "%s%s     %-48s" % ("*" if name in star else " ", "  ", name) + " ".join("%-33s" % v for v in values) + "\n"
    return out


def test_mlxconfig_set_with_e_shows_default_and_current():
    """`mlxconfig -e -d <dev> set`: enableVerbosity also widens the set
    table (queryDevCfg prints Default/Current before Next Boot/New, and a
    '*' where next differs from them)."""
    text = _set_table_4_36(["Default", "Current", "Next Boot", "New"],
                           [("SRIOV_EN", ["False(0)", "False(0)", "False(0)", "True(1)"]),
                            ("NUM_OF_VFS", ["0", "8", "16", "16"])], star=("NUM_OF_VFS",))
    text += " Apply new Configuration? (y/n) [n] : y\nApplying... Done!\n-I- Please reboot machine to load new configurations.\n"
    p = M.parse_mlxconfig_set(text)
    assert p["applied"] and p["reset_required"] == "reboot"
    assert p["changes"] == [
        {"name": "SRIOV_EN", "default": "False(0)", "default_int": 0, "current": "False(0)", "current_int": 0,
         "next": "False(0)", "next_int": 0, "new": "True(1)", "new_int": 1},
        {"name": "NUM_OF_VFS", "default": "0", "default_int": 0, "current": "8", "current_int": 8,
         "next": "16", "next_int": 16, "new": "16", "new_int": 16}]


def test_mlxconfig_set_with_default_flow_of_4_36():
    """mstflint 4.36 `set --with_default` (mlxcfg_ui.cpp setDevCfgWithDefault,
    handlecompleteSetWithDefault): 'Param X is not going to be set ...' for
    a value already next, 'Nothing to set' when nothing is, and the table's
    next-boot column labelled 'Default' (printConfHeader labelNextAsDefault)."""
    skip = "Param NUM_OF_VFS is not going to be set since value matches next value\n"
    nothing = M.parse_mlxconfig_set(skip + "Nothing to set\n")
    assert nothing["nothing_to_set"] and nothing["skipped"] == ["NUM_OF_VFS"]
    assert not nothing["applied"] and not nothing["failed"] and nothing["changes"] == []
    # only a reset to defaults to do: a bare Done! after the question
    reset_only = M.parse_mlxconfig_set(
        " Apply reset and set? (y/n) [n] : y\nDone!\n-I- Please reboot machine to load new configurations.\n")
    assert reset_only["applied"] and reset_only["reset_required"] == "reboot" and reset_only["changes"] == []
    text = skip + " Apply reset and set? (y/n) [n] : y\n" + _set_table_4_36(
        ["Default", "New"], [("SRIOV_EN", ["False(0)", "True(1)"])])
    text += "Applying... Done!\n-I- Please power cycle machine to load new configurations.\n"
    p = M.parse_mlxconfig_set(text)
    assert p["changes"] == [{"name": "SRIOV_EN", "next": "False(0)", "next_int": 0, "new": "True(1)", "new_int": 1}]
    assert p["skipped"] == ["NUM_OF_VFS"] and p["applied"] and p["reset_required"] == "power cycle"
    with pytest.raises(ValueError, match="Param SRIOV_EN will"):
        M.parse_mlxconfig_set("Param SRIOV_EN will not be set\nNothing to set\n")
    with pytest.raises(ValueError, match="'Next Boot' and 'New'"):
        M.parse_mlxconfig_set(_set_table_4_36(["New", "Next Boot"], [("SRIOV_EN", ["True(1)", "False(0)"])]))
