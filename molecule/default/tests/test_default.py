"""Layer 6 as a node sees it after converge: VF counts, per-VF settings,
VF MTUs, the boot unit and the NetworkManager udev rule."""

SYS = "/run/simlab/sys"


def test_vf_counts(host):
    # molecule.yml: 8 VFs on the PF at 0000:3b:00.0, 4 on enp134s0f0np0
    assert host.file(f"{SYS}/bus/pci/devices/0000:3b:00.0/sriov_numvfs").content_string.strip() == "8"
    assert host.file(f"{SYS}/class/net/enp134s0f0np0/device/sriov_numvfs").content_string.strip() == "4"


def test_per_vf_settings(host):
    out = host.check_output("ip link show enp134s0f0np0")
    assert "vf 0     link/ether 02:00:00:86:00:00 brd ff:ff:ff:ff:ff:ff, vlan 100, qos 3, spoof checking on" in out


def test_vf_netdevs_have_the_mtu(host):
    for i in range(8):
        assert host.file(f"{SYS}/class/net/enp59s0f0v{i}/mtu").content_string.strip() == "9000"


def test_tenant_safe_defaults_through_the_pf(host):
    out = host.check_output("ip link show enp59s0f0np0")
    vf_lines = [line for line in out.splitlines() if line.strip().startswith("vf ")]
    assert len(vf_lines) == 8
    assert all("spoof checking on" in line and "trust off" in line for line in vf_lines)


def test_boot_unit_enabled_and_ordered_before_kubelet(host):
    unit = host.file("/etc/systemd/system/gpufabric-sriov.service")
    assert unit.exists
    assert "Before=network.target NetworkManager.service systemd-networkd.service kubelet.service" in unit.content_string
    assert host.service("gpufabric-sriov").is_enabled


def test_networkmanager_kept_off_the_vfs(host):
    rule = host.file("/etc/udev/rules.d/70-gpufabric-nm-unmanaged.rules").content_string
    assert 'KERNELS=="0000:3b:00.1", ENV{NM_UNMANAGED}="1"' in rule
    assert rule.count("NM_UNMANAGED") == 12
