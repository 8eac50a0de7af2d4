"""The twin's kernel model and sysfs tree follow drivers/pci/iov.c and mlx5."""

import errno
import os

import pytest

from simlab.node import hardware
from simlab.node.kernel import Kernel, KernelError, parse_u16
from simlab.node.sysfs import Dir, Link, Tree

pytestmark = pytest.mark.layers(6)


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def make(preset="ready", driver="inbox", faults=None, cmdline="BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt",
         bios=None, nics=2, link_type="ETH"):
    hw = hardware.default_spec("node01", 1, nics=nics, driver=driver, link_type=link_type)
    hw["rdma_naming"] = "kernel" if driver == "ofed" else "pci"
    fw = hardware.factory_firmware(hw)
    if preset == "ready":
        for state in fw.values():
            for col in ("current", "next"):
                state[col].update(SRIOV_EN=1, NUM_OF_VFS=16)
    clock = Clock()
    k = Kernel(hw, fw, cmdline, bios or {"sriov": True, "iommu": True}, faults, clock=clock)
    return k, Tree(k), clock


PF0 = "/bus/pci/devices/0000:3b:00.0"


def numvfs(tree, value):
    tree.write(f"{PF0}/sriov_numvfs", f"{value}\n".encode())


def test_parse_u16_like_kstrtou16():
    assert parse_u16(b"8\n") == 8
    assert parse_u16(b"0x10") == 16
    for bad in (b"", b"-1", b"8 ", b"eight", b"\n"):
        with pytest.raises(KernelError) as e:
            parse_u16(bad)
        assert e.value.errno == errno.EINVAL
    with pytest.raises(KernelError) as e:
        parse_u16(b"70000")
    assert e.value.errno == errno.ERANGE


def test_sriov_numvfs_state_machine():
    k, t, clock = make()
    assert t.read(f"{PF0}/sriov_totalvfs") == b"16\n"
    assert t.read(f"{PF0}/sriov_numvfs") == b"0\n"
    numvfs(t, 8)
    assert t.read(f"{PF0}/sriov_numvfs") == b"8\n"
    numvfs(t, 8)                                   # same value: silent no-op
    with pytest.raises(KernelError) as e:
        numvfs(t, 4)                               # N while M != 0
    assert e.value.errno == errno.EBUSY
    with pytest.raises(KernelError) as e:
        numvfs(t, 17)                              # above totalvfs
    assert e.value.errno == errno.ERANGE
    numvfs(t, 0)
    numvfs(t, 4)
    assert t.read(f"{PF0}/sriov_numvfs") == b"4\n"


def test_erange_checked_before_same_value_and_unbound():
    k, t, _ = make()
    t.write("/bus/pci/drivers/mlx5_core/unbind", b"0000:3b:00.0")
    with pytest.raises(KernelError) as e:
        numvfs(t, 99)
    assert e.value.errno == errno.ERANGE
    numvfs(t, 0)                                   # same value wins over unbound
    with pytest.raises(KernelError) as e:
        numvfs(t, 2)
    assert e.value.errno == errno.ENOENT
    assert t.lookup(f"{PF0}/driver") is None
    assert t.lookup("/class/net/enp59s0f0np0") is None          # no driver, no netdev
    assert t.lookup("/class/net/enp134s0f0np0") is not None
    t.write("/bus/pci/drivers/mlx5_core/bind", b"0000:3b:00.0\n")
    assert isinstance(t.lookup(f"{PF0}/driver"), Link)


def test_enomem_without_iov_bars_and_realloc_fixes_it():
    k, t, _ = make(bios={"sriov": False, "iommu": True})
    with pytest.raises(KernelError) as e:
        numvfs(t, 2)
    assert e.value.errno == errno.ENOMEM
    k, t, _ = make(faults={"numvfs-enomem": True})
    with pytest.raises(KernelError) as e:
        numvfs(t, 2)
    assert e.value.errno == errno.ENOMEM
    k, t, _ = make(faults={"numvfs-enomem": True}, cmdline="ro intel_iommu=on iommu=pt pci=realloc")
    numvfs(t, 2)


def test_sriov_files_absent_when_firmware_has_sriov_off():
    k, t, _ = make(preset="factory")
    names = t.listdir(PF0)
    assert not [n for n in names if n.startswith("sriov")]
    assert "vendor" in names


def test_vfs_links_netdevs_and_rdma_appear_in_kernel_order():
    k, t, clock = make()
    numvfs(t, 2)
    assert t.readlink(f"{PF0}/virtfn0") == "../0000:3b:00.1"
    assert t.readlink(f"{PF0}/virtfn1") == "../0000:3b:00.2"
    assert t.readlink("/bus/pci/devices/0000:3b:00.1/physfn") == "../0000:3b:00.0"
    # netdevs come a moment later, as udev names them
    assert t.lookup("/class/net/enp59s0f0v0") is None
    clock.t += 1
    assert isinstance(t.lookup("/class/net/enp59s0f0v0"), Link)
    assert t.read("/class/net/enp59s0f0v0/device/physfn/sriov_numvfs") == b"2\n"
    assert t.read("/bus/pci/devices/0000:3b:00.1/device") == b"0x101e\n"
    rdma = t.listdir("/bus/pci/devices/0000:3b:00.1/infiniband")
    assert rdma == ["rocep59s0f1"]
    assert t.readlink(f"/class/infiniband/{rdma[0]}") == \
        "../../devices/pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:01.0/0000:3b:00.1/infiniband/rocep59s0f1"


def test_symlink_shapes_follow_real_sysfs():
    k, t, _ = make()
    # the PF below its PCIe switch: root port, upstream port, downstream port
    assert t.readlink(PF0) == "../../../devices/pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:01.0/0000:3b:00.0"
    assert t.readlink("/class/net/enp59s0f0np0") == \
        "../../devices/pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:01.0/0000:3b:00.0/net/enp59s0f0np0"
    assert t.readlink("/class/net/enp59s0f0np0/device") == "../../../0000:3b:00.0"
    assert t.readlink(f"{PF0}/driver") == "../../../../../../bus/pci/drivers/mlx5_core"
    assert t.read(f"{PF0}/subsystem/devices/0000:3b:00.0/vendor") == b"0x15b3\n"
    assert t.read("/class/net/enp59s0f0np0/subsystem/enp59s0f0np0/device/vendor") == b"0x15b3\n"
    assert t.read(f"{PF0}/sriov_vf_device") == b"101e\n"
    assert t.read(f"{PF0}/vendor") == b"0x15b3\n"


def test_disable_clears_per_vf_config():
    k, t, clock = make()
    numvfs(t, 2)
    clock.t += 1
    k.set_vf("enp59s0f0np0", 1, mac="02:00:00:00:00:01", trust=True, vlan=100)
    assert k.pfs[0].vfs[1].trust
    numvfs(t, 0)
    numvfs(t, 2)
    vf = k.pfs[0].vfs[1]
    assert (vf.mac, vf.trust, vf.vlan, vf.spoofchk) == ("00:00:00:00:00:00", False, 0, True)


def test_set_vf_errors():
    k, t, clock = make()
    numvfs(t, 1)
    clock.t += 1
    with pytest.raises(KernelError) as e:
        k.set_vf("enp59s0f0np0", 3, trust=True)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(KernelError) as e:
        k.set_vf("enp59s0f0np0", 0, node_guid="11:22:33:44:55:66:77:88")
    assert e.value.errno == errno.EOPNOTSUPP
    with pytest.raises(KernelError) as e:
        k.set_vf("nosuchdev", 0, trust=True)
    assert e.value.errno == errno.ENODEV


def test_gid_table_and_read_errors():
    k, t, _ = make()
    port = "/class/infiniband/rocep59s0f0/ports/1"
    assert t.read(f"{port}/gid_attrs/types/3") == b"RoCE v2\n"
    assert t.read(f"{port}/gids/3") == b"0000:0000:0000:0000:0000:ffff:ac1e:0001\n"
    assert t.read(f"{port}/gids/9") == b"0000:0000:0000:0000:0000:0000:0000:0000\n"
    with pytest.raises(KernelError) as e:
        t.read(f"{port}/gid_attrs/types/9")
    assert e.value.errno == errno.EINVAL
    with pytest.raises(KernelError) as e:
        t.read("/class/net/enp59s0f0np0/phys_switch_id")
    assert e.value.errno == errno.EOPNOTSUPP
    assert t.read("/class/net/enp59s0f0np0/phys_port_name") == b"p0\n"


def test_iommu_needs_bios_and_flag():
    k, t, _ = make()
    assert t.listdir("/class/iommu") == ["dmar0"]
    assert isinstance(t.lookup(f"{PF0}/iommu_group"), Link)
    k, t, _ = make(cmdline="ro quiet")
    assert t.listdir("/class/iommu") == []
    assert t.lookup(f"{PF0}/iommu_group") is None
    k, t, _ = make(bios={"sriov": True, "iommu": False})
    assert t.listdir("/class/iommu") == []


def test_ofed_flavour_has_ecn_and_qos_trees_inbox_does_not():
    k, t, _ = make(driver="ofed")
    assert isinstance(t.lookup("/class/net/enp59s0f0np0/ecn/roce_np/enable/3"), Link) is False
    t.write("/class/net/enp59s0f0np0/ecn/roce_np/enable/3", b"1\n")
    assert t.read("/class/net/enp59s0f0np0/ecn/roce_np/enable/3") == b"1\n"
    assert t.read("/class/net/enp59s0f0np0/qos/trust") == b"pcp\n"
    assert t.listdir("/class/infiniband") == ["mlx5_0", "mlx5_1"]
    k, t, _ = make()
    with pytest.raises(KernelError):
        t.read("/class/net/enp59s0f0np0/ecn/roce_np/enable/3")
    assert t.lookup(f"{PF0}/mlx5_num_vfs") is None


def test_link_down_fault():
    k, t, _ = make(faults={"link-down": True})
    assert t.read("/class/net/enp59s0f0np0/operstate") == b"down\n"
    assert t.read("/class/net/enp59s0f0np0/speed") == b"-1\n"
    assert t.read("/class/infiniband/rocep59s0f0/ports/1/state") == b"1: DOWN\n"
    assert t.read("/class/net/enp134s0f0np0/operstate") == b"up\n"


def test_materialize(tmp_path):
    k, t, clock = make()
    numvfs(t, 2)
    clock.t += 1
    t.materialize(str(tmp_path))
    assert os.readlink(tmp_path / "bus/pci/devices/0000:3b:00.0/virtfn1") == "../0000:3b:00.2"
    assert (tmp_path / "class/net/enp59s0f0v1/device/physfn/sriov_numvfs").read_text() == "2\n"
    assert isinstance(t.lookup("/class/net"), Dir)


def test_ofed_ecn_starts_from_the_firmware_congestion_settings():
    k, t, _ = make(driver="ofed")
    base = "/class/net/enp59s0f0np0/ecn"
    assert [t.read(f"{base}/roce_np/enable/{p}") for p in range(8)] == [b"1\n"] * 8
    assert t.read(f"{base}/roce_np/cnp_dscp") == b"48\n" and t.read(f"{base}/roce_np/cnp_802p_prio") == b"6\n"
    hw = hardware.default_spec("node01", 1, nics=2, driver="ofed")
    fw = hardware.factory_firmware(hw)
    for state in fw.values():
        state["current"].update(ROCE_CC_PRIO_MASK_P1=0x08, CNP_DSCP_P1=46)
    t = Tree(Kernel(hw, fw, "ro", {"sriov": True, "iommu": True}, clock=Clock()))
    assert [t.read(f"{base}/roce_rp/enable/{p}") for p in range(8)] == [b"0\n"] * 3 + [b"1\n"] + [b"0\n"] * 4
    assert t.read(f"{base}/roce_np/cnp_dscp") == b"46\n"
    with pytest.raises(KernelError) as err:
        t.write(f"{base}/roce_np/cnp_dscp", b"64\n")
    assert err.value.errno == errno.EINVAL
    t.write(f"{base}/roce_np/cnp_802p_prio", b"5\n")
    assert t.read(f"{base}/roce_np/cnp_802p_prio") == b"5\n"


def test_a_vf_binds_with_autoprobe_off_only_through_its_driver_override():
    """pci_device_can_probe() (drivers/pci/pci-driver.c): a VF whose PF has
    sriov_drivers_autoprobe off probes only with a driver_override, and
    driver_match_device() then takes that driver alone. Seen on a real kernel
    (the VM nodes' igbvf): the bind without an override fails ENODEV."""
    k, tree, clock = make()
    tree.write(f"{PF0}/sriov_drivers_autoprobe", b"0\n")
    numvfs(tree, 2)
    vf0 = os.path.basename(tree.lookup(f"{PF0}/virtfn0").target)
    bind = "/bus/pci/drivers/mlx5_core/bind"
    with pytest.raises(KernelError) as e:
        tree.write(bind, vf0.encode())
    assert e.value.errno == errno.ENODEV
    override = f"/bus/pci/devices/{vf0}/driver_override"
    assert tree.read(override) == b"(null)\n"
    tree.write(override, b"vfio-pci\n")
    with pytest.raises(KernelError) as e:         # the override names another driver
        tree.write(bind, vf0.encode())
    assert e.value.errno == errno.ENODEV
    tree.write(override, b"mlx5_core\n")
    tree.write(bind, vf0.encode())
    with pytest.raises(KernelError) as e:
        tree.write(bind, vf0.encode())
    assert e.value.errno == errno.EBUSY
    tree.write(override, b"\n")
    assert tree.read(override) == b"(null)\n"


def test_no_path_changes_its_type_across_the_states_of_a_node():
    """The twin's FUSE mount lets the node's kernel keep the entries it
    looked up (simlab/node/fusefs.py) without telling it of a change: a path
    that came back as another type (a link where a directory was) would read
    as a bad inode until the kernel dropped its entry. sysfs keeps a path's
    type, and so does the tree, through every state a node goes through
    between two boots: VFs created and removed, a VF unbound and handed to
    vfio-pci, mlx5_ib and mlx5_core unloaded and loaded, an RDMA-CM configfs
    group made and removed, on both driver stacks."""
    from simlab.node.agent import VFIO_MODULE, Agent
    for driver in ("inbox", "ofed"):
        k, tree, clock = make(driver=driver)
        agent = Agent.__new__(Agent)
        agent.kernel, agent.tree = k, tree
        kinds, states = {}, 0

        def record():
            nonlocal states
            clock.t += 5                                  # past every VF's probe
            tree.refresh()
            states += 1
            for path, entry in tree.entries.items():
                kind = type(entry).__name__
                assert kinds.setdefault(path, kind) == kind, (driver, path, kinds[path], kind)

        record()
        numvfs(tree, 4)
        record()
        vf0 = os.path.basename(tree.lookup(f"{PF0}/virtfn0").target)
        tree.write(f"/bus/pci/devices/{vf0}/driver/unbind", vf0.encode())
        record()
        agent.op_driver_modules({"load": [VFIO_MODULE]})
        tree.write(f"/bus/pci/devices/{vf0}/driver_override", b"vfio-pci\n")
        tree.write("/bus/pci/drivers_probe", vf0.encode())
        record()
        assert tree.readlink(f"/bus/pci/devices/{vf0}/driver").endswith("/vfio-pci")
        device = tree.listdir("/class/infiniband")[0]
        tree.mkdir(f"{tree.CONFIGFS}/{device}")
        record()
        tree.rmdir(f"{tree.CONFIGFS}/{device}")
        numvfs(tree, 0)
        record()
        for module in ("mlx5_ib", "mlx5_core", VFIO_MODULE):
            agent.op_driver_modules({"unload": [module]})
            record()
        for module in ("mlx5_core", "mlx5_ib"):
            agent.op_driver_modules({"load": [module]})
            record()
        numvfs(tree, 2)
        record()
        assert states == 12 and len(kinds) > 500, (driver, states, len(kinds))
