"""mlx_tools parsers against the real published outputs and edge cases."""

import json

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware import mlx_tools as M

pytestmark = pytest.mark.layers(4, 8)


# ---------------------------------------------------------------- mlxconfig query

def test_cx3_next_boot_only(real_output):
    p = M.parse_mlxconfig_query(real_output("mlxconfig/ptr727-cx3-query-sriov-linktype.txt"))
    assert p["device_type"] == "ConnectX3"
    assert p["device"] == "/dev/mst/mt4099_pciconf0"
    assert p["name"] is None and p["description"] is None   # 4th-gen devices print neither
    assert p["columns"] == ["next"]
    assert p["param_order"][:4] == ["SRIOV_EN", "NUM_OF_VFS", "LINK_TYPE_P1", "LINK_TYPE_P2"]
    assert len(p["params"]) == 20
    sriov = p["params"]["SRIOV_EN"]
    assert (sriov["next"], sriov["next_int"], sriov["next_label"]) == ("True(1)", 1, "True")
    assert sriov["current"] is None and sriov["default"] is None
    assert p["params"]["NUM_OF_VFS"]["next_int"] == 8
    assert p["params"]["LINK_TYPE_P1"]["next"] == "ETH(2)" and p["params"]["LINK_TYPE_P1"]["next_int"] == 2
    assert p["params"]["LINK_TYPE_P2"]["next_int"] == 2
    assert p["params"]["IP_VER_P1"]["next_label"] == "IPv4"
    json.dumps(p)


def test_cx7_egrep_fragment_with_trailing_spaces(real_output):
    p = M.parse_mlxconfig_query(real_output("mlxconfig/schmaustech-cx7-query-egrep-sriov.txt"))
    assert p["device_type"] == "ConnectX7"
    assert p["name"] == "MCX715105AS-WEAT_Ax"
    assert p["description"].startswith("NVIDIA ConnectX-7 HHHL Adapter Card; 400GbE")
    assert p["device"] is None
    assert p["param_order"] == ["NUM_OF_VFS", "SRIOV_EN", "LINK_TYPE_P1"]
    assert p["params"]["NUM_OF_VFS"]["next_int"] == 8
    assert p["params"]["SRIOV_EN"]["next"] == "True(1)"
    assert p["params"]["LINK_TYPE_P1"]["next"] == "ETH(2)"
    with pytest.raises(ValueError, match="-e"):
        M.mlxconfig_pending(p)


EXTENDED = """
Device #1:
----------

Device type:        ConnectX7
Name:               MCX75310AAS-NEAT
Description:        NVIDIA ConnectX-7 HHHL Adapter card; 400GbE
Device:             0000:3b:00.0

Configurations:                                         Default             Current             Next Boot
*        NUM_OF_VFS                                     8                   8                   16
*        SRIOV_EN                                       False(0)            False(0)            True(1)
 RO      PF_NUM_OF_VF_VALID                             False(0)            False(0)            False(0)
         LINK_TYPE_P1                                   ETH(2)              ETH(2)              ETH(2)
         ESWITCH_HAIRPIN_DESCRIPTORS                    Array[0..7]         Array[0..7]         Array[0..7]
*RO      NUM_VF_MSIX                                    0x0b                11                  12
The '*' shows parameters with next value different from default/current value.

The 'RO' shows parameters which are for read only and cannot be changed
"""


def test_extended_query_markers_and_pending():
    p = M.parse_mlxconfig_query(EXTENDED)
    assert p["columns"] == ["default", "current", "next"]
    assert p["params"]["NUM_OF_VFS"]["modified"] is True
    assert p["params"]["PF_NUM_OF_VF_VALID"]["read_only"] is True
    assert p["params"]["PF_NUM_OF_VF_VALID"]["modified"] is False
    assert p["params"]["NUM_VF_MSIX"]["read_only"] and p["params"]["NUM_VF_MSIX"]["modified"]
    assert p["params"]["NUM_VF_MSIX"]["default_int"] == 11
    arr = p["params"]["ESWITCH_HAIRPIN_DESCRIPTORS"]
    assert arr["next"] == "Array[0..7]" and arr["next_int"] is None and arr["next_array"] == [0, 7]
    pending = M.mlxconfig_pending(p)
    assert [x["name"] for x in pending] == ["NUM_OF_VFS", "SRIOV_EN", "NUM_VF_MSIX"]
    assert pending[1] == {"name": "SRIOV_EN", "current": "False(0)", "next": "True(1)",
                          "current_int": 0, "next_int": 1}


def test_two_devices():
    text = EXTENDED + EXTENDED.replace("Device #1:", "Device #2:").replace("0000:3b:00.0", "0000:3b:00.1")
    p = M.parse_mlxconfig_query(text)
    assert [d["device"] for d in p["devices"]] == ["0000:3b:00.0", "0000:3b:00.1"]
    assert p["devices"][1]["index"] == 2


@pytest.mark.parametrize("text", ["", "garbage\nmore garbage\n",
                                  "-E- Failed to open device: 0000:3b:00.0. No such file or directory\n"])
def test_query_rejects_non_mlxconfig(text):
    with pytest.raises(ValueError):
        M.parse_mlxconfig_query(text)


def test_split_enum():
    assert M.split_enum("True(1)") == ("True", 1)
    assert M.split_enum("DEVICE_DEFAULT(0)") == ("DEVICE_DEFAULT", 0)
    assert M.split_enum("16") == (None, 16)
    assert M.split_enum("Array[0..7]") == (None, None)
    assert M.split_enum("N/A") == (None, None)


# ---------------------------------------------------------------- mlxconfig set

SET_OUT = """
Device #1:
----------

Device type:        ConnectX7
Name:               N/A
Description:        N/A
Device:             0000:3b:00.0

Configurations:                                         Next Boot           New
         SRIOV_EN                                       False(0)            True(1)
         NUM_OF_VFS                                     0                   16

 Apply new Configuration? (y/n) [n] : y
Applying... Done!
-I- Please power cycle machine to load new configurations.
"""


def test_set_output_power_cycle():
    p = M.parse_mlxconfig_set(SET_OUT)
    assert p["applied"] and not p["failed"]
    assert p["reset_required"] == "power cycle"
    assert p["changes"] == [
        {"name": "SRIOV_EN", "next": "False(0)", "next_int": 0, "new": "True(1)", "new_int": 1},
        {"name": "NUM_OF_VFS", "next": "0", "next_int": 0, "new": "16", "new_int": 16}]
    reboot = M.parse_mlxconfig_set(SET_OUT.replace("power cycle", "reboot"))
    assert reboot["reset_required"] == "reboot"


def test_set_output_failed_and_not_set():
    failed = SET_OUT.replace("Applying... Done!\n-I- Please power cycle machine to load new configurations.\n",
                             "Applying... Failed!\n-E- Failed to set configuration: bad parameter\n")
    p = M.parse_mlxconfig_set(failed)
    assert p["failed"] and not p["applied"] and p["reset_required"] is None
    assert p["errors"] == ["Failed to set configuration: bad parameter"]
    with pytest.raises(ValueError):
        M.parse_mlxconfig_set("hello world\n")


# ---------------------------------------------------------------- mstflint

@pytest.mark.parametrize("relpath,fw,psid,mac,count", [
    ("mstflint/empovit-cx6lx-mstflint-q-26.33.1048.txt", "26.33.1048", "MT_0000000575", "e8ebd370cf12", 4),
    ("mstflint/schmaustech-cx7-flint-query-28.42.1000.txt", "28.42.1000", "MT_0000001244", "e09d73126474", 16),
    ("mstflint/schmaustech-cx7-flint-query-28.43.1014.txt", "28.43.1014", "MT_0000001244", "e09d73126744", 16),
])
def test_mstflint_real(real_output, relpath, fw, psid, mac, count):
    p = M.parse_mstflint_query(real_output(relpath))
    assert p["fw_version"] == fw and p["psid"] == psid
    assert p["base_mac"] == {"value": mac, "count": count}
    assert p["image_type"] == "FS4"
    assert p["security_attributes"] == ["secure-fw"]
    assert p["fw_version_running"] is None and p["reset_pending"] is False
    assert [r["type"] for r in p["rom_info"]] == ["UEFI", "PXE"]
    assert p["rom_info"][0]["cpu"] == "AMD64,AARCH64"
    json.dumps(p)


def test_mstflint_running_differs():
    text = ("Image type:            FS4\nFW Version:            28.39.1002\n"
            "FW Version(Running):   28.38.1002\nPSID:                  MT_0000000838\n")
    p = M.parse_mstflint_query(text)
    assert p["fw_version_running"] == "28.38.1002" and p["reset_pending"] is True
    assert p["rom_info"] == [] and p["base_mac"] is None


@pytest.mark.parametrize("text", ["", "Image type: FS4\n",
                                  "-E- Cannot open Device: 0000:3b:00.0. No such file or directory. MFE_CR_ERROR\n",
                                  "FW Version:            unknown\n"])
def test_mstflint_rejects(text):
    with pytest.raises(ValueError):
        M.parse_mstflint_query(text)


def test_fw_versions():
    assert M.fw_version_tuple("28.39.1002") == (28, 39, 1002)
    assert M.fw_version_tuple("28.39.1002 (MT_0000000838)") == (28, 39, 1002)
    assert M.compare_fw_versions("28.39.1002", "28.39.1002") == 0
    assert M.compare_fw_versions("28.9.1002", "28.39.1002") == -1      # numeric, not string order
    assert M.compare_fw_versions("28.43.1014", "28.42.1000") == 1
    assert M.compare_fw_versions("28.43", "28.43.0") == 0
    with pytest.raises(ValueError):
        M.fw_version_tuple("latest")


# ---------------------------------------------------------------- mlnx_qos

def test_mlnx_qos_full_real(real_output):
    p = M.parse_mlnx_qos(real_output("mlnx_qos/att-netarbiter-cx-dscp-pfc3.txt"))
    assert p["dcbx"] == "os" and p["trust"] == "dscp" and p["cable_len"] == 7
    assert p["pfc_enabled"] == [0, 0, 0, 1, 0, 0, 0, 0] and p["pfc_priorities"] == [3]
    assert p["dscp2prio"][3] == [31, 30, 29, 28, 27, 26, 25, 24]
    assert p["dscp_to_prio"] == [d >> 3 for d in range(64)]
    assert len(p["tcs"]) == 8 and {t["tsa"] for t in p["tcs"]} == {"vendor"}
    assert p["tcs"][0]["priorities"] == [1] and p["tcs"][1]["priorities"] == [0]
    assert p["prio2buffer"] is None


def test_mlnx_qos_filtered_real(real_output):
    p = M.parse_mlnx_qos(real_output("mlnx_qos/spiderpool-rdma-qos-q-filtered-prio5.txt"))
    assert p["trust"] == "dscp" and p["dcbx"] is None and p["dscp2prio"] is None
    assert p["pfc_priorities"] == [5]
    assert p["prio2buffer"] == [0, 0, 0, 0, 0, 1, 0, 0]
    assert p["tcs"] == []


def test_mlnx_qos_rejects():
    with pytest.raises(ValueError):
        M.parse_mlnx_qos("ECN Enabled for priority 0: /sys/class/net/eth0/ecn/roce_np/enable/0 = 1\n")
    with pytest.raises(ValueError, match="8"):
        M.parse_mlnx_qos("PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   1\n")
