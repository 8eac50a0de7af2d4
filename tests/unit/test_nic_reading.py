"""The play's shared NIC reading as a layer sees it (filter nic_reading)."""

from ansible_collections.gpufabric.stack.plugins.filter.nic_reading import nic_reading

RESULT = {"changed": False, "iommus": ["dmar0"], "iommu_active": True,
          "nics": [{"pci_address": "0000:3b:00.0", "vendor": "15b3"},
                   {"pci_address": "0000:18:00.0", "vendor": "8086"}]}


def test_no_reading_means_read_again():
    assert nic_reading(None, "/sys") is None
    assert nic_reading({}, "/sys") is None
    assert nic_reading({"sysfs_root": "/sys", "result": None}, "/sys") is None


def test_reading_under_another_root_is_not_used():
    assert nic_reading({"sysfs_root": "/srv/twin/sys", "result": RESULT}, "/sys") is None


def test_vendor_keeps_only_its_nics_and_leaves_the_reading_alone():
    reading = {"sysfs_root": "/sys", "result": RESULT}
    got = nic_reading(reading, "/sys", "0x15B3")
    assert [n["pci_address"] for n in got["nics"]] == ["0000:3b:00.0"]
    assert got["iommus"] == ["dmar0"]
    assert len(RESULT["nics"]) == 2
    assert [n["pci_address"] for n in nic_reading(reading, "/sys")["nics"]] == ["0000:3b:00.0", "0000:18:00.0"]
