#!/usr/bin/env bash
# Install what the rack twin needs on a Debian/Ubuntu machine: podman with
# runc, fuse3 for the twin sysfs, debootstrap for the node images (QEMU for
# the VM nodes comes from Debian's archive through debootstrap too), the SSH
# client and mkfs.ext4 for the VM nodes, and chromium, in which the tests
# render the doctor's report.html headless; libvirt's daemon with its QEMU
# driver and Python binding for the VM nodes behind sushy-tools' BMC emulator
# (without their recommends: no system daemons, no Debian QEMU), and openssl
# for those BMCs' certificates.
# Runs apt as root, or through sudo.
set -euo pipefail
need=()
bare=()
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || need+=(runc)
command -v fusermount3 >/dev/null || need+=(fuse3)
dpkg -s libfuse3-3 >/dev/null 2>&1 || need+=(libfuse3-3)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v ssh-keyscan >/dev/null || need+=(openssh-client)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v chromium >/dev/null || need+=(chromium)
command -v openssl >/dev/null || need+=(openssl)
command -v unshare >/dev/null || need+=(util-linux)
[ -x /usr/sbin/libvirtd ] || bare+=(libvirt-daemon)
dpkg -s libvirt-daemon-driver-qemu >/dev/null 2>&1 || bare+=(libvirt-daemon-driver-qemu)
dpkg -s python3-libvirt >/dev/null 2>&1 || bare+=(python3-libvirt)
[ ${#need[@]} -eq 0 ] && [ ${#bare[@]} -eq 0 ] && exit 0
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup-host: run as root or install sudo" >&2; exit 1; }
  SUDO=sudo
fi
echo "setup-host: installing ${need[*]} ${bare[*]}"
$SUDO apt-get update -qq
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ ${#bare[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${bare[@]}" >/dev/null
fi
