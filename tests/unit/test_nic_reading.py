"""The play's shared NIC reading as a layer sees it (filter nic_reading)."""

import pytest

from ansible_collections.gpufabric.stack.plugins.filter.nic_reading import nic_reading

pytestmark = pytest.mark.layers(3, 4, 5, 6, 8)

# a nic_facts result, as registered
READING = {"changed": False, "sysfs_root": "/sys", "proc_root": "/proc", "iommus": ["dmar0"], "iommu_active": True,
           "modules": ["mlx5_core"], "cmdline": "ro intel_iommu=on",
           "nics": [{"pci_address": "0000:3b:00.0", "vendor": "15b3"},
                    {"pci_address": "0000:18:00.0", "vendor": "8086"}]}


def test_no_reading_means_read_again():
    assert nic_reading(None, "/sys") is None
    assert nic_reading({}, "/sys") is None
    # a skipped nic_facts task registers no nics
    assert nic_reading({"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}, "/sys") is None


def test_reading_under_another_root_is_not_used():
    assert nic_reading(dict(READING, sysfs_root="/run/simlab/sys"), "/sys") is None


def test_vendor_keeps_only_its_nics_and_leaves_the_reading_alone():
    got = nic_reading(READING, "/sys", "0x15B3")
    assert [n["pci_address"] for n in got["nics"]] == ["0000:3b:00.0"]
    assert got["iommus"] == ["dmar0"] and got["cmdline"] == "ro intel_iommu=on"
    assert len(READING["nics"]) == 2
    assert [n["pci_address"] for n in nic_reading(READING, "/sys")["nics"]] == ["0000:3b:00.0", "0000:18:00.0"]
