"""nic_facts' discovery and sriov_vf's selection on the sysfs layout of a real
kernel, with NICs that are not ConnectX: the QEMU VM nodes' virtio-net
management NIC and emulated Intel 82576 (igb, 8086:10c9) SR-IOV PFs.

The layout is the kernel's, as tests/unit/real_sysfs.py sets it out with
its sources: virtio_net hangs its netdev under the virtio device
(drivers/net/virtio_net.c ``virtnet_probe``: ``SET_NETDEV_DEV(dev,
&vdev->dev)``), named ``virtio<N>`` (drivers/virtio/virtio.c
``register_virtio_device``) and a child of the PCI function
(drivers/virtio/virtio_pci_common.c ``virtio_pci_probe``:
``vp_dev->vdev.dev.parent = &pci_dev->dev``), so a real /sys has
``/sys/bus/pci/devices/0000:00:03.0/virtio2/net/eth0`` and
``/sys/class/net/eth0/device -> ../../../virtio2``, and no ``net/`` under
the PCI function itself.
"""

import os

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov
from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic
from real_sysfs import RealSysfs

pytestmark = pytest.mark.layers(6)


@pytest.fixture
def vm(tmp_path):
    t = RealSysfs(tmp_path / "sys")
    t.virtio_net("0000:00:03.0", index=2, name="eth0")
    t.sriov_pf("0000:01:00.0", "enp1s0", numvfs=2)
    t.sriov_pf("0000:02:00.0", "enp2s0", bridge="0000:00:02.1")
    return t


def by_address(nics):
    return dict((n["pci_address"], n) for n in nics)


def test_a_virtio_nic_is_named_through_its_virtio_child(vm):
    nics = by_address(sysfs_nic.discover(vm.root))
    virtio = nics["0000:00:03.0"]
    assert virtio["name"] == "eth0"
    assert virtio["vendor_device"] == "1af4:1041" and virtio["driver"] == "virtio-pci"
    assert virtio["mtu"] == 1500 and virtio["mac"] == "52:54:00:12:34:56" and virtio["link_type"] == "ETH"
    assert virtio["sriov"]["capable"] is False and virtio["vfs"] == []


def test_the_virtio_nic_is_found_from_class_net_alone(vm, tmp_path):
    # class/net/eth0/device resolves to the virtio child, whose parent is the
    # PCI function: found by that link even when the PCI scan would not see it
    # as a network function (class not 0x02xxxx)
    with open(vm.root + "/devices/pci0000:00/0000:00:03.0/class", "w") as fh:
        fh.write("0x078000\n")
    nics = by_address(sysfs_nic.discover(vm.root))
    assert nics["0000:00:03.0"]["name"] == "eth0"


def test_igb_pfs_their_vfs_and_no_vf_listed_as_a_pf(vm):
    nics = sysfs_nic.discover(vm.root)
    assert [(n["pci_address"], n["name"], n["vendor_device"]) for n in nics] == [
        ("0000:00:03.0", "eth0", "1af4:1041"), ("0000:01:00.0", "enp1s0", "8086:10c9"),
        ("0000:02:00.0", "enp2s0", "8086:10c9")]
    pf = nics[1]
    assert pf["driver"] == "igb" and pf["sriov"]["totalvfs"] == 7 and pf["sriov"]["numvfs"] == 2
    assert pf["sriov"]["vf_device"] == "10ca" and pf["rdma_device"] is None
    assert [(v["index"], v["pci_address"], v["netdev"], v["driver"]) for v in pf["vfs"]] == [
        (0, "0000:01:10.0", "enp1s0v0", "igbvf"), (1, "0000:01:10.2", "enp1s0v1", "igbvf")]


def test_pfs_select_by_vendor_device_name_and_address_on_igb(vm):
    nics = sysfs_nic.discover(vm.root)
    entries = [{"match": {"vendor_device": "8086:10c9"}, "num_vfs": 7}]
    assert [p["name"] for p in sriov.selected_pfs(nics, entries)] == ["enp1s0", "enp2s0"]
    assert sriov.select(nics, {"name": "eth0"})[0]["pci_address"] == "0000:00:03.0"
    plan = sriov.build_plan(nics, [{"vendor_device": "8086:10C9", "num_vfs": 7}])
    assert [(pf["name"], want["num_vfs"]) for pf, want in plan] == [("enp1s0", 7), ("enp2s0", 7)]


def test_asking_a_nic_without_sriov_for_vfs_says_so_and_lists_the_pfs(vm):
    nics = sysfs_nic.discover(vm.root)
    with pytest.raises(sriov.SriovError) as err:
        sriov.build_plan(nics, [{"name": "eth0", "num_vfs": 7}])
    msg = str(err.value)
    assert "eth0 (0000:00:03.0, 1af4:1041) has no SR-IOV capability (no sriov_totalvfs)" in msg
    assert "enp1s0 (0000:01:00.0, 8086:10c9" in msg and "enp2s0 (0000:02:00.0, 8086:10c9" in msg
    assert "None" not in msg and "mlxconfig" not in msg
    # num_vfs 0 on it asks for nothing
    assert sriov.build_plan(nics, [{"name": "eth0", "num_vfs": 0}])[0][1]["num_vfs"] == 0


def test_a_name_that_matches_nothing_lists_every_nic_by_its_name(vm):
    nics = sysfs_nic.discover(vm.root)
    with pytest.raises(sriov.SriovError) as err:
        sriov.select(nics, {"name": "ens9"})
    msg = str(err.value)
    assert "no PF matches name=ens9" in msg
    assert "eth0 (0000:00:03.0, 1af4:1041" in msg and "enp1s0 (0000:01:00.0, 8086:10c9" in msg
    assert "None" not in msg


def test_an_unbound_nic_is_listed_without_a_name_not_as_none(tmp_path):
    t = RealSysfs(tmp_path / "sys")
    t.virtio_net("0000:00:03.0", name="eth0")
    t.sriov_pf("0000:01:00.0", "enp1s0", driver=None)
    nics = sysfs_nic.discover(t.root)
    assert by_address(nics)["0000:01:00.0"]["name"] is None
    with pytest.raises(sriov.SriovError) as err:
        sriov.select(nics, {"name": "enp1s0"})
    assert "0000:01:00.0 (8086:10c9, no netdev: no driver bound" in str(err.value)
    assert "None" not in str(err.value)


def test_a_soft_roce_device_is_the_rdma_device_of_its_netdev(vm):
    # rdma_rxe registers rxe0 without a parent device (drivers/infiniband/sw/rxe/rxe_verbs.c
    # rxe_register_device: ib_register_device(dev, ibdev_name, NULL)): it is under
    # devices/virtual/infiniband, not under the PCI function, and names its netdev
    # in its parent file (rxe_verbs.c parent_show) and port 1's GID ndevs
    vm.rxe("rxe0", "enp1s0", ipv4="172.30.0.1")
    nics = by_address(sysfs_nic.discover(vm.root))
    pf = nics["0000:01:00.0"]
    assert pf["rdma_device"] == "rxe0"
    assert pf["rdma"]["state"] == "ACTIVE" and pf["rdma"]["link_layer"] == "Ethernet"
    assert pf["rdma"]["roce_v2_gid_index"] == 3 and pf["rdma"]["gids"][3]["ipv4"] == "172.30.0.1"
    assert nics["0000:02:00.0"]["rdma_device"] is None and nics["0000:00:03.0"]["rdma_device"] is None
    assert pf["link_type"] == "ETH"
    # a hardware RDMA device (it has a device link) is its PCI function's only, whatever its files say
    cx = vm.sriov_pf("0000:3b:00.0", "enp59s0f0np0", vendor="15b3", device="1021", vf_device="101e", totalvfs=16,
                     driver="mlx5_core", bridge="0000:00:02.2", rdma="mlx5_0")
    ib = os.path.join(vm.root, "devices", cx, "infiniband", "mlx5_0")
    os.symlink("../../../0000:3b:00.0", os.path.join(ib, "device"))
    with open(os.path.join(ib, "parent"), "w") as fh:
        fh.write("enp2s0\n")
    nics = by_address(sysfs_nic.discover(vm.root))
    assert nics["0000:3b:00.0"]["rdma_device"] == "mlx5_0" and nics["0000:02:00.0"]["rdma_device"] is None
    assert nics["0000:01:00.0"]["rdma_device"] == "rxe0"


def test_an_unbound_igb_pf_is_told_to_bind_its_own_driver_not_mlx5_core(tmp_path):
    t = RealSysfs(tmp_path / "sys")
    t.sriov_pf("0000:01:00.0", "enp1s0", driver=None)
    nics = sysfs_nic.discover(t.root)
    with pytest.raises(sriov.SriovError) as err:
        sriov.build_plan(nics, [{"pci_address": "01:00.0", "num_vfs": 4}])
    assert "load and bind its driver (the driver of 8086:10c9, layer 5)" in str(err.value)
    assert "mlx5_core" not in str(err.value)
    exc = OSError(2, "No such file or directory")
    assert "(the driver of 8086:10c9, layer 5)" in str(sriov.numvfs_error(nics[0], 4, exc))


def test_a_snapshot_reads_each_file_once_and_only_inside_its_block(vm, tmp_path, monkeypatch):
    root = str(tmp_path / "sys")
    opened = []
    real_open = open

    def counting_open(path, *args, **kwargs):
        opened.append(path)
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr("builtins.open", counting_open)
    fresh = sysfs_nic.discover(root)
    files = set(opened)
    numvfs = os.path.join(root, "bus/pci/devices/0000:01:00.0/sriov_numvfs")
    assert numvfs in files and len(opened) > len(files)  # discover alone reads some twice
    del opened[:]
    with sysfs_nic.snapshot():
        first = sysfs_nic.discover(root)
        assert sorted(opened) == sorted(files)
        with sysfs_nic.snapshot():  # an inner block keeps the outer's answers
            assert sysfs_nic.discover(root) == first
        with real_open(numvfs, "w") as fh:
            fh.write("1\n")
        # the file changed, the kept answer did not: a snapshot is for reads only
        assert sysfs_nic.discover(root) == first == fresh
        assert sorted(opened) == sorted(files)
    assert by_address(sysfs_nic.discover(root))["0000:01:00.0"]["sriov"]["numvfs"] == 1


def test_numvfs_as_a_real_connectx7_pf_prints_it(tmp_path, real_output):
    """sriov_numvfs holds what ``cat`` printed on a ConnectX-7 PF with one VF
    (real-outputs sysfs/schmaustech-cx7-sriov-numvfs-cat.txt: the kernel's
    ``sysfs_emit(buf, "%u\\n", pdev->sriov->num_VFs)`` in drivers/pci/iov.c);
    nic_facts reads it as 1, with the one VF it links."""
    body = real_output("sysfs/schmaustech-cx7-sriov-numvfs-cat.txt")
    t = RealSysfs(tmp_path / "sys")
    rel = t.sriov_pf("0000:37:00.0", "enp55s0np0", vendor="15b3", device="1021", vf_device="101e",
                     totalvfs=16, numvfs=1, driver="mlx5_core", vf_driver="mlx5_core")
    with open(os.path.join(t.root, "devices", rel, "sriov_numvfs"), "w") as fh:
        fh.write(body if body.endswith("\n") else body + "\n")
    pf = by_address(sysfs_nic.discover(t.root))["0000:37:00.0"]
    assert body.strip() == "1"
    assert (pf["name"], pf["vendor_device"], pf["driver"]) == ("enp55s0np0", "15b3:1021", "mlx5_core")
    assert (pf["sriov"]["totalvfs"], pf["sriov"]["numvfs"], pf["sriov"]["vf_device"]) == (16, 1, "101e")
    assert [v["index"] for v in pf["vfs"]] == [0]
