"""Bad inventory input for layers 1-4 on a converged one-node twin: an unknown
BMC or CPU vendor, a NIC firmware value out of range, missing BMC
credentials. site.yml fails on the node before any change, with a message
naming the host and the variable (and the value where there is one); the
node, its BIOS and its NIC firmware are exactly as before, and the BMC
password never shows in the output."""

import json

import pytest
import yaml

from tests.integration.twinlab import require_twin
from tests.integration.host_lab import SYSFS, HostLab, green
from simlab.lab import lab_dir

pytestmark = [pytest.mark.twin, pytest.mark.layers(1, 2, 3, 4)]

NODE = "node01"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    require_twin()
    lab = HostLab.up(tmp_path_factory, "bi", nodes=1)
    try:
        proc, rc = lab.site()
        assert rc.get(NODE, {}).get("failed") == 0, proc.stdout[-4000:]
        layers, _ = lab.validate()
        assert green(layers[NODE]) == {}
        yield lab
    finally:
        lab.down()


def state(lab):
    """What a change would show: BIOS current and pending values at the BMC,
    NIC firmware current and next-boot values, the booted command line, the
    GRUB drop-in, VF counts and per-VF settings, the boot time."""
    nd = lab_dir(lab.name) / "nodes" / NODE
    node = lab.sh(NODE, "cat /run/simlab/proc/cmdline /etc/default/grub.d/gpufabric.cfg; "
                        f"cat {SYSFS}/bus/pci/devices/*/sriov_numvfs; ip link show; "
                        "cut -d' ' -f22 /proc/1/stat").stdout
    return {"bios": json.loads((nd / "bios.json").read_text()),
            "firmware": json.loads((nd / "firmware.json").read_text()),
            "node": node}


CASES = {
    "unknown BMC vendor": ({"bmc_vendor": "fujitsu"}, (),
                           ["value of bmc_vendor must be one of: auto, dell, hpe, supermicro, lenovo, got: fujitsu"]),
    "unknown BMC vendor, BIOS role alone": ({"bmc_vendor": "fujitsu"}, ("--tags", "layer02"),
                                            ["value of bmc_vendor must be one of: auto, dell, hpe, supermicro, lenovo, got: fujitsu"]),
    "unknown CPU vendor of the BIOS": ({"cpu_vendor": "arm"}, (),
                                       ["value of bios_cpu_vendor must be one of: intel, amd, got: arm"]),
    # every GPU node layer's argument spec is checked at the start of site.yml
    # (role_arguments) whatever --tags says; the BIOS reads cpu_vendor too,
    # so the kernel's own variable is the one set here
    "unknown CPU vendor of the kernel": ({"kernel_cpu_vendor": "arm"}, ("--tags", "layer03"),
                                         ["value of kernel_cpu_vendor must be one of: intel, amd, got: arm"]),
    "NUM_OF_VFS above the firmware's maximum": (
        {"gpufabric_nics": [{"match": {"pci_address": "0000:3b:00.0"}, "num_vfs": 8},
                            {"match": {"pci_address": "0000:86:00.0"}, "num_vfs": 200}]}, (),
        ["node01: gpufabric_nics[1].num_vfs (nic_firmware_nics) is 200: above 127, the largest NUM_OF_VFS"]),
    "firmware default VF count above the maximum": (
        {"nic_firmware_num_vfs": 500}, (), ["node01: nic_firmware_num_vfs is 500: above 127"]),
    "firmware parameter value unknown": (
        {"nic_firmware_extra_params": {"LINK_TYPE_P1": "ROCE"}}, (), ["LINK_TYPE_P1", "ROCE"]),
    "empty BMC password": ({"bmc_password": ""}, (), ["node01: bmc_password must not be empty"]),
    "empty BMC user, BIOS role alone": ({"bmc_username": ""}, ("--tags", "layer02"),
                                        ["node01: bmc_username must not be empty"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_fails_before_any_change(lab, case):
    values, args, words = CASES[case]
    before = state(lab)
    lab.host_vars(NODE, yaml.safe_dump(values))
    try:
        proc, rc = lab.site(*args)
    finally:
        lab.host_vars(NODE, None)
    check_failed_unchanged(lab, proc, rc, words, before)


def test_missing_bmc_password_fails_before_any_change(lab):
    creds = lab.inventory / "group_vars" / "all" / "credentials.yml"
    saved = creds.read_text()
    data = yaml.safe_load(saved)
    password = data.pop("bmc_password")
    before = state(lab)
    creds.write_text(yaml.safe_dump(data))
    try:
        proc, rc = lab.site()
    finally:
        creds.write_text(saved)
    check_failed_unchanged(lab, proc, rc, ["missing required arguments: bmc_password"], before)
    assert password not in proc.stdout + proc.stderr


def check_failed_unchanged(lab, proc, rc, words, before):
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert rc[NODE]["failed"] == 1 and rc[NODE]["changed"] == 0, text[-4000:]
    assert f"fatal: [{NODE}]" in text or f"failed: [{NODE}]" in text
    flat = " ".join(text.split())
    for w in words:
        assert w in flat, (w, text[-4000:])
    password = yaml.safe_load((lab.inventory / "group_vars" / "all" / "credentials.yml").read_text())["bmc_password"]
    assert password not in text
    assert state(lab) == before
