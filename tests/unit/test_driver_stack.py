"""Layer 5's driver-stack reader (module_utils/rdma_drivers/driver_stack.py) against real
modinfo and ofed_info outputs (tests/unit/fixtures/driver_stack_real, each
with its source), and the mixes the doctor names."""

from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_drivers import driver_stack as D

pytestmark = [pytest.mark.layers(5)]

FIX = Path(__file__).parent / "fixtures" / "driver_stack_real"
INBOX = {"mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs", "rdma_ucm"}
OFED = INBOX | {"mlx_compat", "mlxdevm"}


def body(name):
    head, sep, rest = (FIX / name).read_text().partition("# ---\n")
    assert sep and "# source:" in head and "# what:" in head, name
    return rest


def test_every_fixture_has_its_source_and_is_in_the_readme():
    readme = (FIX / "README.md").read_text()
    for f in FIX.glob("*.txt"):
        body(f.name)
        assert f.name in readme, f.name


@pytest.mark.parametrize("name,release", [
    ("modinfo-mlx5_core-inbox-debian12-6.1.0-20.txt", "6.1.0-20-amd64"),
    ("modinfo-mlx5_core-inbox-debian12-6.1.0-31.txt", "6.1.0-31-amd64"),
    ("modinfo-mlx5_core-inbox-debian12-6.1.0-50-simlab-vm.txt", "6.1.0-50-amd64"),
])
def test_inbox_modinfo_is_inbox(name, release):
    info = D.parse_modinfo(body(name), "mlx5_core")
    assert info["intree"] == "Y" and "version" not in info
    assert info["vermagic"].split()[0] == release
    assert len(info["alias"]) > 20 and info["parm"]
    found = D.classify("mlx5_core", INBOX, None, None, info, None, release, "inbox")
    assert (found["stack"], found["file_stack"], found["problems"]) == ("inbox", "inbox", [])
    assert D.describe(found).startswith("inbox mlx5_core (/lib/modules/%s/kernel/drivers/" % release)


@pytest.mark.parametrize("module,depends,aliases,parms", [
    ("mlx5_ib", "mlx5_core,ib_uverbs,ib_core", 3, 0),
    ("ib_core", "", 3, 4),
])
def test_the_other_inbox_rdma_modules_read_as_inbox(module, depends, aliases, parms):
    """Fields before ``license:`` (ib_core's alias), an empty ``depends:``
    with its padding, a module without parameters: read, not refused."""
    info = D.parse_modinfo(body("modinfo-%s-inbox-debian12-6.1.0-50-simlab-vm.txt" % module), module)
    assert (info["depends"], len(info["alias"]), len(info.get("parm", []))) == (depends, aliases, parms)
    assert info["filename"].endswith("/%s.ko" % module) and D.disk_stack(info) == "inbox"
    assert info["signature"].count(":") == 511       # 512 bytes, its 26 lines joined


def test_a_rhel_backport_with_srcversion_is_still_inbox():
    info = D.parse_modinfo(body("modinfo-mlx5_ib-inbox-centos7.9.txt"), "mlx5_ib")
    assert info["srcversion"] == "CF2AF2DCF911C7F8B769A7B" and info["rhelversion"] == "7.9"
    assert D.disk_stack(info) == "inbox"


@pytest.mark.parametrize("name,version,release", [
    ("modinfo-mlx5_core-mlnxofed-24.01-debian12.txt", "24.01-0.3.3", "6.1.0-20-amd64"),
    ("modinfo-mlx5_core-mlnxofed-24.07-debian12.txt", "24.07-0.6.1", "6.1.0-25-amd64"),
    ("modinfo-mlx5_core-mlnxofed-24.10-debian12.txt", "24.10-2.1.8", "6.1.0-31-amd64"),
])
def test_ofed_modinfo_is_ofed_and_the_loaded_module_matches(name, version, release):
    info = D.parse_modinfo(body(name), "mlx5_core")
    assert info["version"] == version and "mlx_compat" in info["depends"].split(",")
    assert info["basedon"].startswith("Korg ")
    found = D.classify("mlx5_core", OFED, version, info["srcversion"], info,
                       {"name": "OFED-internal", "version": "24.10-1.1.4.0.200"}, release, "doca")
    assert (found["stack"], found["file_stack"], found["version"]) == ("ofed", "ofed", version)
    assert found["problems"] == []
    assert D.describe(found) == "OFED mlx5_core %s (ofed_info OFED-internal-24.10-1.1.4.0.200)" % version


def test_ib_core_of_ofed_depends_on_mlx_compat():
    info = D.parse_modinfo(body("modinfo-ib_core-mlnxofed-5.4-ubuntu20.04.txt"), "ib_core")
    assert info["depends"] == "mlx_compat" and D.disk_stack(info) == "ofed"


@pytest.mark.parametrize("name,kind,version", [
    ("ofed_info-s-MLNX_OFED_LINUX-5.4.txt", "MLNX_OFED_LINUX", "5.4-3.0.3.0"),
    ("ofed_info-s-MLNX_OFED_LINUX-23.07.txt", "MLNX_OFED_LINUX", "23.07-0.5.1.2"),
    ("ofed_info-header-MLNX_OFED_LINUX-23.10.txt", "MLNX_OFED_LINUX", "23.10-1.1.9.0"),
    ("ofed_info-s-OFED-internal-4.9.txt", "OFED-internal", "4.9-5.1.0"),
    ("ofed_info-s-doca-ofed-24.10-dgxos7.txt", "OFED-internal", "24.10-1.1.4.0.200"),
])
def test_ofed_info(name, kind, version):
    assert D.parse_ofed_info(body(name)) == {"name": kind, "version": version}


def test_unreadable_lines_fail_quoting_them():
    with pytest.raises(D.DriverStackError, match="'this is not modinfo'"):
        D.parse_modinfo("filename: /x.ko\nthis is not modinfo\n", "mlx5_core")
    with pytest.raises(D.DriverStackError, match="'OFED 24.10'"):
        D.parse_ofed_info("OFED 24.10\n")
    assert D.parse_modinfo("modinfo: ERROR: Module mlx5_core not found.\n", "mlx5_core") is None


def test_old_in_tree_version_strings_are_not_ofed():
    # in-tree mlx5 printed 5.0-0 and 3.0-1 (January 2015) before 5.11; mlx4 4.0-0
    for version in ("5.0-0", "3.0-1 (January 2015)", "4.0-0"):
        assert D.loaded_stack("mlx5_core", INBOX, version) == "inbox"
    assert D.loaded_stack("mlx5_core", INBOX, "24.10-2.1.8") == "ofed"
    assert D.loaded_stack("mlx5_core", INBOX | {"mlx_compat"}, None) == "ofed"
    assert D.loaded_stack("mlx5_core", {"igb"}, None) is None


def _reasons(found):
    return [(p["status"], p["reason"]) for p in found["problems"]]


def test_ofed_userspace_over_inbox_modules_is_named_with_the_fix():
    info = D.parse_modinfo(body("modinfo-mlx5_core-inbox-debian12-6.1.0-20.txt"), "mlx5_core")
    found = D.classify("mlx5_core", INBOX, None, None, info,
                       D.parse_ofed_info(body("ofed_info-s-doca-ofed-24.10-dgxos7.txt")), "6.1.0-20-amd64")
    assert _reasons(found) == [("fail", "OFED userspace (ofed_info: OFED-internal-24.10-1.1.4.0.200) over the "
                                        "inbox mlx5_core: its kernel modules are missing")]
    assert "dkms autoinstall -k 6.1.0-20-amd64" in found["problems"][0]["fix"]
    assert "with OFED userspace OFED-internal-24.10-1.1.4.0.200" in D.describe(found)


def test_ofed_modules_installed_but_the_inbox_ones_loaded():
    info = D.parse_modinfo(body("modinfo-mlx5_core-mlnxofed-24.10-debian12.txt"), "mlx5_core")
    found = D.classify("mlx5_core", INBOX, None, None, info, None, "6.1.0-31-amd64", "doca")
    assert _reasons(found) == [
        ("fail", "the OFED mlx5_core is installed (/lib/modules/6.1.0-31-amd64/updates/dkms/mlx5_core.ko, "
                 "version 24.10-2.1.8) but the inbox mlx5_core is loaded"),
        ("fail", "rdma_drivers_flavor is doca but the inbox mlx5_core is loaded")]
    assert "openibd" in found["problems"][0]["fix"]


def test_ofed_modules_built_for_another_kernel():
    # a kernel upgrade: modprobe finds the OFED module through weak-updates
    info = D.parse_modinfo(body("modinfo-mlx5_core-mlnxofed-24.07-debian12.txt"), "mlx5_core")
    found = D.classify("mlx5_core", OFED, "24.07-0.6.1", info["srcversion"], info, None, "6.1.0-31-amd64")
    assert _reasons(found) == [("fail", "mlx5_core on disk (/lib/modules/6.1.0-25-amd64/updates/dkms/mlx5_core.ko) "
                                        "was built for kernel 6.1.0-25-amd64, the running kernel is 6.1.0-31-amd64")]
    assert found["problems"][0]["fix"].endswith("or boot kernel 6.1.0-25-amd64.")


def test_loaded_ofed_but_the_next_boot_loads_the_inbox_driver():
    info = D.parse_modinfo(body("modinfo-mlx5_core-inbox-debian12-6.1.0-31.txt"), "mlx5_core")
    found = D.classify("mlx5_core", OFED, "24.10-2.1.8", "78352976D87E8F24553D352", info, None, "6.1.0-31-amd64",
                       "doca")
    assert _reasons(found)[0][1].startswith("the loaded mlx5_core is OFED's (version 24.10-2.1.8) but modprobe "
                                            "would load the inbox")


def test_replaced_modules_not_reloaded_warn():
    info = D.parse_modinfo(body("modinfo-mlx5_core-mlnxofed-24.10-debian12.txt"), "mlx5_core")
    found = D.classify("mlx5_core", OFED, "24.10-2.1.8", "0000000000000000000000A", info, None, "6.1.0-31-amd64",
                       "doca")
    assert [s for s, _ in _reasons(found)] == ["warn"]
    assert "srcversion 0000000000000000000000A" in found["problems"][0]["reason"]


def test_intent_inbox_with_ofed_loaded_warns_and_another_driver_is_inbox_by_nature():
    info = D.parse_modinfo(body("modinfo-mlx5_core-mlnxofed-24.10-debian12.txt"), "mlx5_core")
    found = D.classify("mlx5_core", OFED, "24.10-2.1.8", info["srcversion"], info, None, "6.1.0-31-amd64", "inbox")
    assert _reasons(found) == [("warn", "OFED's mlx5_core 24.10-2.1.8 is loaded where rdma_drivers_flavor is inbox")]
    igb = D.classify("igb", {"igb", "rdma_rxe"}, None, None,
                     {"filename": "/lib/modules/6.1.0-40-amd64/kernel/drivers/net/ethernet/intel/igb/igb.ko",
                      "intree": "Y", "vermagic": "6.1.0-40-amd64 SMP"}, None, "6.1.0-40-amd64", "doca")
    assert (igb["stack"], igb["problems"]) == ("inbox", [])


def test_read_takes_sysfs_modinfo_and_ofed_info(tmp_path):
    (tmp_path / "sys/module/mlx5_core").mkdir(parents=True)
    (tmp_path / "sys/module/mlx5_core/version").write_text("24.10-2.1.8\n")
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text("6.1.0-31-amd64\n")
    calls = []
    outputs = {"modinfo": body("modinfo-mlx5_core-mlnxofed-24.10-debian12.txt"),
               "ofed_info": body("ofed_info-s-doca-ofed-24.10-dgxos7.txt")}

    def run(argv):
        calls.append(argv)
        return 0, outputs[argv[0].rsplit("/", 1)[-1]], ""

    found = D.read(run, lambda t: "/usr/bin/" + t, "mlx5_core", OFED, str(tmp_path / "sys"),
                   str(tmp_path / "proc"), "doca")
    assert calls == [["/usr/bin/modinfo", "mlx5_core"], ["/usr/bin/ofed_info", "-s"]]
    assert (found["stack"], found["version"], found["release"], found["problems"]) == (
        "ofed", "24.10-2.1.8", "6.1.0-31-amd64", [])
    # no modinfo, no ofed_info: the loaded module alone decides
    alone = D.read(run, lambda t: None, "mlx5_core", INBOX, str(tmp_path / "none"), str(tmp_path / "proc"))
    assert (alone["stack"], alone["file"], alone["userspace"]) == ("inbox", None, None)


def test_layer_5_check_names_the_stack_and_fails_a_mix():
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import rdma_drivers as check
    nics = [{"pci_address": "0000:3b:00.0", "vendor": "15b3", "vendor_device": "15b3:1021", "driver": "mlx5_core",
             "rdma_device": "mlx5_0", "netdev": "enp59s0f0np0", "device": "1021"}]
    modules = ["mlx5_core", "mlx5_ib"]
    info = D.parse_modinfo(body("modinfo-mlx5_core-inbox-debian12-6.1.0-31.txt"), "mlx5_core")
    good = D.classify("mlx5_core", INBOX, None, None, info, None, "6.1.0-31-amd64", "inbox")
    res = check.check_rdma_drivers(nics, nics, modules, modules, stack=good)
    assert res["status"] == "pass" and res["reason"].endswith("; inbox stack")
    assert res["evidence"][0].startswith("stack: inbox mlx5_core (/lib/modules/6.1.0-31-amd64/kernel/")
    mixed = D.classify("mlx5_core", INBOX, None, None, info,
                       D.parse_ofed_info(body("ofed_info-s-MLNX_OFED_LINUX-23.07.txt")), "6.1.0-31-amd64", "inbox")
    res = check.check_rdma_drivers(nics, nics, modules, modules, stack=mixed)
    assert (res["status"], res["reason"]) == (
        "fail", "OFED userspace (ofed_info: MLNX_OFED_LINUX-23.07-0.5.1.2) over the inbox mlx5_core: "
                "its kernel modules are missing")
    assert "remove the OFED userspace" in res["remediation"]
    res = check.check_rdma_drivers(nics, nics, modules, modules, stack={"failed": True, "msg": "modinfo mlx5_core: x"})
    assert res["status"] == "fail" and res["evidence"] == ["modinfo mlx5_core: x"]
    assert check.reads({"rdma_drivers_sysfs_root": "/sys", "rdma_drivers_pf_driver": "igb",
                        "rdma_drivers_flavor": "inbox", "rdma_drivers_gpudirect": "auto"},
                       "n")["nic_facts"]["stack"] == {"module": "igb",
                                                                                        "flavor": "inbox"}
