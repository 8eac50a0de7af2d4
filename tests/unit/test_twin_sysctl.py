"""The twin node's kernel settings for layer 10: the modprobe twin loads
overlay and br_netfilter (with bridge, stp, llc), br_netfilter brings the
bridge-netfilter sysctls, the sysctl twin reads and writes them with
procps-ng's messages and exit codes, and a boot applies modules-load.d and
sysctl.d the way systemd does on a host."""

from __future__ import annotations

import pytest

from simlab.node import boot
from simlab.tools import modprobe, sysctl
from test_tool_twins import agent, run  # noqa: F401  (pytest fixture and helper)

pytestmark = pytest.mark.layers(10)

BRIDGE = "net.bridge.bridge-nf-call-iptables"


def test_bridge_sysctls_exist_only_with_br_netfilter(agent, capsys):  # noqa: F811
    rc, out, err = run(capsys, sysctl, ["-n", BRIDGE])
    assert rc == 1 and out == ""
    assert err == f"sysctl: cannot stat /proc/sys/net/bridge/bridge-nf-call-iptables: No such file or directory\n"
    rc, out, err = run(capsys, sysctl, ["-e", "-n", BRIDGE])
    assert (rc, out, err) == (0, "", "")
    rc, out, err = run(capsys, modprobe, ["-v", "br_netfilter"])
    assert rc == 0 and "net/bridge/bridge.ko" in out and "net/bridge/br_netfilter.ko" in out
    assert {"br_netfilter", "bridge", "stp", "llc"} <= agent.kernel.modules
    rc, out, err = run(capsys, sysctl, [BRIDGE])
    assert (rc, out) == (0, f"{BRIDGE} = 1\n")
    rc, out, err = run(capsys, modprobe, ["-r", "br_netfilter"])
    assert rc == 0 and "br_netfilter" not in agent.kernel.modules and "bridge" not in agent.kernel.modules
    assert run(capsys, sysctl, ["-n", BRIDGE])[0] == 1


def test_write_and_read_forwarding(agent, capsys):  # noqa: F811
    assert run(capsys, sysctl, ["-n", "net.ipv4.ip_forward"])[1] == "0\n"
    rc, out, err = run(capsys, sysctl, ["-w", "net.ipv4.ip_forward=1"])
    assert (rc, out, err) == (0, "net.ipv4.ip_forward = 1\n", "")
    assert run(capsys, sysctl, ["-q", "-w", "net/ipv4/ip_forward=0"])[1] == ""
    assert agent.kernel.sysctls["net.ipv4.ip_forward"] == "0"
    rc, out, err = run(capsys, sysctl, ["-w", "net.ipv4.ip_forward=yes"])
    assert rc == 1 and err == 'sysctl: setting key "net.ipv4.ip_forward": Invalid argument\n'


def test_load_a_file_as_ansible_posix_sysctl_does(agent, capsys, tmp_path):  # noqa: F811
    conf = tmp_path / "99-k8s.conf"
    conf.write_text(f"# comment\n{BRIDGE}=1\nnet.ipv4.ip_forward = 1\n")
    rc, out, err = run(capsys, sysctl, ["-p", str(conf)])
    assert rc == 1 and "cannot stat /proc/sys/net/bridge/bridge-nf-call-iptables" in err
    assert "net.ipv4.ip_forward = 1" in out
    run(capsys, modprobe, ["br_netfilter"])
    rc, out, err = run(capsys, sysctl, ["-p", str(conf)])
    assert (rc, err) == (0, "") and out == f"{BRIDGE} = 1\nnet.ipv4.ip_forward = 1\n"
    rc, out, err = run(capsys, sysctl, ["-e", "-p", str(tmp_path / "missing.conf")])
    assert rc == 1 and "cannot open" in err


def test_boot_applies_modules_load_d_and_sysctl_d(tmp_path):
    (tmp_path / "etc/modules-load.d").mkdir(parents=True)
    (tmp_path / "etc/modules-load.d/gpufabric-containerd.conf").write_text("# layer 10\noverlay\nbr_netfilter\n")
    (tmp_path / "usr/lib/sysctl.d").mkdir(parents=True)
    (tmp_path / "usr/lib/sysctl.d/99-gpufabric-kubernetes.conf").write_text("net.ipv4.ip_forward=0\n")
    (tmp_path / "etc/sysctl.d").mkdir(parents=True)
    # same file name in /etc wins over /usr/lib; later files win over earlier ones
    (tmp_path / "etc/sysctl.d/99-gpufabric-kubernetes.conf").write_text(
        f"{BRIDGE} = 1\nnet.ipv4.ip_forward=1\nkernel.pid_max = 4194304\n")
    (tmp_path / "etc/sysctl.d/10-early.conf").write_text("net.ipv4.ip_forward=0\n")
    assert boot.boot_modules(tmp_path) == ["overlay", "br_netfilter"]
    assert boot.boot_sysctls(tmp_path) == [("net.ipv4.ip_forward", "0"), (BRIDGE, "1"), ("net.ipv4.ip_forward", "1")]


def test_agent_boot_config(agent, monkeypatch):  # noqa: F811
    monkeypatch.setattr(boot, "boot_modules", lambda: ["overlay", "br_netfilter", "nouveau"])
    monkeypatch.setattr(boot, "boot_sysctls", lambda: [("net.ipv4.ip_forward", "1"), (BRIDGE, "0")])
    agent.apply_boot_config()
    k = agent.kernel
    assert {"overlay", "br_netfilter", "bridge"} <= k.modules and "nouveau" not in k.modules
    assert k.sysctls["net.ipv4.ip_forward"] == "1" and k.sysctls[BRIDGE] == "0"


@pytest.mark.parametrize("key", ["kernel.pid_max", "net.ipv4.conf.all.rp_filter"])
def test_other_keys_are_not_the_twins(key):
    assert not sysctl.sysctl_modelled(key)


# The real procps-ng sysctl of the machine running the tests (Debian 12's
# procps 2:4.0.2) against the twin, on reads whose answers do not depend on
# the machine's kernel settings: values are compared as "a number", every
# message and exit code as is. A key under net.bridge that no kernel has is
# absent for both, as the bridge keys are on a node without br_netfilter.
REAL_SYSCTL = "/usr/sbin/sysctl"
ABSENT = "net.bridge.no-such-key"


def _real_sysctl_version():
    import shutil
    import subprocess
    if not shutil.which(REAL_SYSCTL):
        return None
    out = subprocess.run([REAL_SYSCTL, "--version"], capture_output=True, text=True).stdout
    return out.strip() if "procps-ng" in out else None


def _numbers(text):
    import re
    return re.sub(r"(?m)(= |^)\d+$", r"\1N", text)


@pytest.mark.skipif(not _real_sysctl_version(), reason="procps-ng's sysctl is not installed")
@pytest.mark.parametrize("argv", [
    ["net.ipv4.ip_forward"],
    ["net/ipv4/ip_forward"],
    ["-n", "net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding"],
    [ABSENT],
    ["-e", ABSENT],
    ["-n", ABSENT, "net.ipv4.ip_forward"],
], ids=["name", "slashes", "values-only", "absent", "absent-ignored", "absent-then-present"])
def test_the_twin_reads_as_procps_sysctl_does(agent, capsys, argv):  # noqa: F811
    import subprocess
    real = subprocess.run([REAL_SYSCTL, *argv], capture_output=True, text=True, env={"LC_ALL": "C", "PATH": "/usr/bin"})
    rc, out, err = run(capsys, sysctl, argv)
    assert (rc, _numbers(out), err) == (real.returncode, _numbers(real.stdout), real.stderr), _real_sysctl_version()


# What procps-ng 4.0.2's src/sysctl.c does with a write, and what the
# kernel's proc_dointvec() takes; the VM tier holds both to a VM node's
# real sysctl and kernel (tests/vm/test_vm_twin_faithful.py).
def test_a_write_echoes_the_value_as_given_in_the_form_asked(agent, capsys):  # noqa: F811
    assert run(capsys, sysctl, ["-w", "net.ipv4.ip_forward=0x1"]) == (0, "net.ipv4.ip_forward = 0x1\n", "")
    assert agent.kernel.sysctls["net.ipv4.ip_forward"] == "1"
    assert run(capsys, sysctl, ["-nw", "net.ipv4.ip_forward= 010 "]) == (0, "010\n", "")
    assert agent.kernel.sysctls["net.ipv4.ip_forward"] == "8"
    assert run(capsys, sysctl, ["-b", "-w", "net.ipv4.ip_forward=0"]) == (0, "0", "")
    assert run(capsys, sysctl, ["--values", "--binary", "net.ipv4.ip_forward"]) == (0, "0", "")
    assert run(capsys, sysctl, ["-w", "net.bridge.bridge-nf-call-iptables=1"])[0] == 1
    run(capsys, modprobe, ["br_netfilter"])
    assert run(capsys, sysctl, ["-w", BRIDGE + "=2"]) == (0, f"{BRIDGE} = 2\n", "")
    assert agent.kernel.sysctls[BRIDGE] == "1"          # brnf_sysctl_call_tables(): non-zero is 1


@pytest.mark.parametrize("value,stored", [
    ("1", 1), (" 1 ", 1), ("0x1f", 31), ("010", 8), ("-1", -1), ("-2147483648", -2147483648),
    ("2147483647", 2147483647), ("2147483648", None), ("09", None), ("+1", None), ("yes", None), ("", None),
    ("1.5", None), ("0x", None), ("-", None),
])
def test_the_kernel_reads_an_int_as_proc_dointvec_does(value, stored):
    from simlab.node.kernel import KernelError, proc_int
    if stored is None:
        with pytest.raises(KernelError):
            proc_int(value + "\n")
    else:
        assert proc_int(value + "\n") == stored


def test_command_line_forms_and_exit_statuses_of_procps(agent, capsys):  # noqa: F811
    rc, out, err = run(capsys, sysctl, ["-w", "net.ipv4.ip_forward"])
    assert (rc, out, err) == (1, "", "sysctl: command line(0): invalid syntax, continuing...\n")
    rc, out, err = run(capsys, sysctl, [ABSENT, "net.bridge.nope", "net.ipv4.ip_forward"])
    assert rc == 2 and out == "net.ipv4.ip_forward = 0\n" and err.count("cannot stat") == 2
    assert run(capsys, sysctl, ["-e", "-w", ABSENT + "=1"]) == (0, "", "")
    assert run(capsys, sysctl, ["-w", "net.ipv4.ip_forward = 1", "-q"]) == (0, "", "")
    assert agent.kernel.sysctls["net.ipv4.ip_forward"] == "1"


def test_a_files_lines_as_procps_reads_them(agent, capsys, tmp_path):  # noqa: F811
    conf = tmp_path / "k.conf"
    conf.write_text("; comment\nnet.ipv4.ip_forward\n-net.bridge.excluded\n-net.bridge.no-such = 1\n"
                    "   net.ipv4.ip_forward =  1  \n")
    for argv in (["-p", str(conf)], [f"-p{conf}"], [f"--load={conf}"]):
        rc, out, err = run(capsys, sysctl, argv)
        assert (rc, out) == (1, "net.ipv4.ip_forward = 1\n"), argv
        assert err == (f"sysctl: {conf}(2): invalid syntax, continuing...\n"
                       "sysctl: cannot stat /proc/sys/net/bridge/no-such: No such file or directory\n")
    assert run(capsys, sysctl, ["-e", "-p", str(conf)])[0] == 0


def test_what_goes_to_the_real_sysctl_keeps_the_options_and_the_ignore_mark(agent, capsys, tmp_path, monkeypatch):  # noqa: F811
    """A key the twin does not model goes to the real sysctl with -b/-n/-e/-q
    as given, after ``--`` (a read's leading '-' is part of its key), and a
    file line's ``-`` (procps' ignore-failure) kept on the key."""
    handed = []
    monkeypatch.setattr(sysctl, "_run_real", lambda argv: handed.append(argv) or 0)
    monkeypatch.setattr(sysctl, "_exec_real", lambda argv: handed.append(["exec", *argv]) or 0)
    assert run(capsys, sysctl, ["-b", "net.ipv4.ip_forward", "kernel.ostype"])[1] == "0"
    assert run(capsys, sysctl, ["-e", "-n", "--", "net.ipv4.ip_forward", "-kernel.x"])[1] == "0\n"
    conf = tmp_path / "k.conf"
    conf.write_text("-kernel.pid_max = 4194304\nkernel.y=1\n")
    assert run(capsys, sysctl, ["-q", "-p", str(conf)])[0] == 0
    run(capsys, sysctl, ["--", "-net.ipv4.ip_forward"])
    assert handed == [["-b", "--", "kernel.ostype"], ["-n", "-e", "--", "-kernel.x"],
                      ["-q", "-w", "--", "-kernel.pid_max=4194304"], ["-q", "-w", "--", "kernel.y=1"],
                      ["exec", "--", "-net.ipv4.ip_forward"]]


def test_load_options_as_getopt_reads_them(agent, capsys, tmp_path, monkeypatch):  # noqa: F811
    """-f takes no file (``-fq`` is -f -q on /etc/sysctl.conf); -p takes one
    only attached; ``--load=`` names the empty file; a directory reads as
    nothing; ``-`` is standard input."""
    import io
    opened = []
    monkeypatch.setattr(sysctl, "_load", lambda path, o: opened.append((path, o["quiet"])) or 0)
    for argv, want in ((["-fq"], [("/etc/sysctl.conf", True)]), (["-pq"], [("q", False)]),
                       (["-qp", "a", "b"], [("a", True), ("b", True)]), (["--load="], [("", False)])):
        opened.clear()
        run(capsys, sysctl, argv)
        assert opened == want, argv
    monkeypatch.undo()
    import test_tool_twins as ttt
    monkeypatch.setattr(ttt.agentclient, "request", lambda req, sock_path=None, timeout=30: agent.handle(req))
    assert run(capsys, sysctl, ["-p", str(tmp_path)]) == (0, "", "")
    assert run(capsys, sysctl, ["--load="]) == (1, "", 'sysctl: cannot open "": No such file or directory\n')
    monkeypatch.setattr("sys.stdin", io.StringIO("net.ipv4.ip_forward = 1\n"))
    assert run(capsys, sysctl, ["-p", "-"]) == (0, "net.ipv4.ip_forward = 1\n", "")
