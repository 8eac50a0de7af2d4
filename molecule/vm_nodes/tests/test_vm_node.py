"""The VM node after converge, read over SSH on its real kernel: what layers
1-6 and 10 leave on a node, with the expected values taken from the
inventory simlab wrote (gpufabric_nics) where the inventory sets them."""

import json

import pytest


def vf_driver(entry, index):
    """The driver the inventory wants VF ``index`` of an entry on: vfio-pci
    for a range of its vf_drivers, else the kernel's (igbvf)."""
    for rng in entry.get("vf_drivers") or []:
        for part in str(rng["vfs"]).split(","):
            low, _, high = part.partition("-")
            if int(low) <= index <= int(high or low) and rng["driver"] == "vfio-pci":
                return "vfio-pci"
    return "igbvf"


@pytest.fixture(scope="module")
def nics(host):
    """(PF netdev, its sysfs device dir, num_vfs, entry) for each entry of gpufabric_nics."""
    hostvars = host.ansible.get_variables()
    out = []
    for entry in hostvars["gpufabric_nics"]:
        vendor, device = entry["match"]["vendor_device"].split(":")
        for pci in host.check_output("ls /sys/bus/pci/devices").split():
            d = f"/sys/bus/pci/devices/{pci}"
            ids = host.check_output(f"cat {d}/vendor {d}/device").split()
            if ids == [f"0x{vendor}", f"0x{device}"] and host.file(f"{d}/sriov_totalvfs").exists:
                netdev = host.check_output(f"ls {d}/net").split()[0]
                out.append((netdev, d, entry["num_vfs"], entry))
    assert out, hostvars["gpufabric_nics"]
    return out


def vfs(host, pf_dir):
    """PCI addresses of the PF's VFs, by index."""
    links = host.check_output(f"cd {pf_dir} && for v in virtfn*; do echo $v $(basename $(readlink $v)); done")
    pairs = sorted((int(name[len("virtfn"):]), addr) for name, addr in (line.split() for line in links.splitlines()))
    return [addr for _i, addr in pairs]


def test_iommu_on_the_command_line_and_in_sysfs(host):
    cmdline = host.file("/proc/cmdline").content_string.split()
    assert "intel_iommu=on" in cmdline and "iommu=pt" in cmdline, cmdline
    assert host.file("/sys/class/iommu/dmar0").exists
    assert "intel_iommu=on" in host.file("/etc/default/grub.d/gpufabric.cfg").content_string


def test_the_vfs_the_inventory_wants_on_igbvf_or_vfio_pci_each_in_its_own_iommu_group(host, nics):
    for _netdev, pf_dir, num_vfs, entry in nics:
        assert host.file(f"{pf_dir}/sriov_numvfs").content_string.strip() == str(num_vfs)
        addrs = vfs(host, pf_dir)
        assert len(addrs) == num_vfs
        drivers = [host.check_output(f"basename $(readlink /sys/bus/pci/devices/{a}/driver)") for a in addrs]
        groups = [host.check_output(f"basename $(readlink /sys/bus/pci/devices/{a}/iommu_group)") for a in addrs]
        assert drivers == [vf_driver(entry, i) for i in range(num_vfs)]
        assert "vfio-pci" in drivers  # the lab's inventory hands VFs 2-3 to VMs
        assert len(set(groups)) == num_vfs, groups
        for addr, group in zip(addrs, groups):
            members = host.check_output(f"ls /sys/kernel/iommu_groups/{group}/devices").split()
            assert members == [addr], (addr, members)


def test_the_hypervisor_reads_the_passthrough_vfs(host, nics):
    read = json.loads(host.file("/var/lib/gpufabric/passthrough/vfs.json").content_string)
    want = sorted(a for _n, pf_dir, num_vfs, entry in nics
                  for i, a in enumerate(vfs(host, pf_dir)) if vf_driver(entry, i) == "vfio-pci")
    assert [v["pci_address"] for v in read["vfs"]] == want
    assert all(v["driver"] == "vfio-pci" and v["iommu_group_devices"] == [v["pci_address"]] for v in read["vfs"])


def test_tenant_safe_defaults_through_the_pf(host, nics):
    for netdev, _pf_dir, num_vfs, _entry in nics:
        link = json.loads(host.check_output(f"ip -j link show dev {netdev}"))[0]
        vfinfo = link["vfinfo_list"]
        assert len(vfinfo) == num_vfs
        assert all(v["spoofchk"] is True and v["trust"] is False for v in vfinfo), vfinfo


def test_networkmanager_leaves_the_vfs_alone(host, nics):
    rule = host.file("/etc/udev/rules.d/70-gpufabric-nm-unmanaged.rules").content_string
    states = dict(line.rsplit(":", 1) for line in host.check_output("nmcli -t -f DEVICE,STATE device").splitlines())
    for netdev, pf_dir, _num_vfs, entry in nics:
        for i, addr in enumerate(vfs(host, pf_dir)):
            assert f'KERNELS=="{addr}", ENV{{NM_UNMANAGED}}="1"' in rule
            if vf_driver(entry, i) == "vfio-pci":
                continue  # no netdev: the VF is vfio-pci's
            vf_netdev = host.check_output(f"ls /sys/bus/pci/devices/{addr}/net")
            assert states[vf_netdev] == "unmanaged", (vf_netdev, states)
        assert states[netdev] == "connected", (netdev, states)


def test_the_vfs_come_back_at_boot(host):
    unit = host.service("gpufabric-sriov")
    assert unit.is_enabled
    assert "Before=network.target NetworkManager.service" in host.file(
        "/etc/systemd/system/gpufabric-sriov.service").content_string


def test_soft_roce_over_each_pf_with_a_roce_v2_gid(host, nics):
    assert host.file("/sys/module/rdma_rxe").exists
    assert host.service("gpufabric-soft-roce").is_enabled
    links = host.check_output("rdma link show")
    for netdev, _pf_dir, _num_vfs, _entry in nics:
        assert f"rxe_{netdev}/1 state ACTIVE" in links, links
        types = host.check_output(f"cat /sys/class/infiniband/rxe_{netdev}/ports/1/gid_attrs/types/* 2>/dev/null || true")
        assert "RoCE v2" in types, types


def test_containerd_runs_and_starts_at_boot(host):
    containerd = host.service("containerd")
    assert containerd.is_running and containerd.is_enabled
