"""Serve a :class:`~simlab.node.sysfs.Tree` as a FUSE filesystem (mfusepy).

Every read and write goes to the tree's handlers, so a writer sees the
kernel's errno (``echo 4 > sriov_numvfs`` fails with EBUSY when 8 VFs exist).
Files report size 4096 like sysfs attributes and are opened with direct I/O,
so each ``write(2)`` reaches the handler and its error is returned by that
call, not at ``close()``.
"""

from __future__ import annotations

import errno
import os
import stat
import time

import mfusepy as fuse

from .kernel import KernelError
from .sysfs import Dir, Link, Tree


class SysfsFS(fuse.Operations):
    use_ns = True

    def __init__(self, tree: Tree):
        self.tree = tree
        self.t0 = int(time.time() * 1e9)

    def _entry(self, path: str):
        e = self.tree.lookup(path)
        if e is None:
            raise fuse.FuseOSError(errno.ENOENT)
        return e

    def getattr(self, path, fh=None):
        e = self._entry(path)
        base = dict(st_uid=0, st_gid=0, st_atime=self.t0, st_mtime=self.t0, st_ctime=self.t0)
        if isinstance(e, Dir):
            return dict(base, st_mode=stat.S_IFDIR | e.mode, st_nlink=2)
        if isinstance(e, Link):
            return dict(base, st_mode=stat.S_IFLNK | 0o777, st_nlink=1, st_size=len(e.target))
        return dict(base, st_mode=stat.S_IFREG | e.mode, st_nlink=1, st_size=4096)

    def readdir(self, path, fh):
        try:
            return [".", ".."] + self.tree.listdir(path)
        except KernelError as exc:
            raise fuse.FuseOSError(exc.errno) from None

    def readlink(self, path):
        e = self._entry(path)
        if not isinstance(e, Link):
            raise fuse.FuseOSError(errno.EINVAL)
        return e.target

    def open(self, path, flags):
        e = self._entry(path)
        if isinstance(e, Dir):
            raise fuse.FuseOSError(errno.EISDIR)
        acc = flags & os.O_ACCMODE
        if acc in (os.O_WRONLY, os.O_RDWR) and e.write is None and getattr(e, "pwrite", None) is None:
            raise fuse.FuseOSError(errno.EACCES)
        if acc in (os.O_RDONLY, os.O_RDWR) and e.read is None:
            raise fuse.FuseOSError(errno.EACCES)
        return 0

    def access(self, path, amode):
        # asked only by access(2) and chdir(2), never by a path walk: a name
        # gone from the tree fails, though the kernel may still hold its entry
        self._entry(path)
        return 0

    def opendir(self, path):
        # as sysfs, opening a directory that is gone fails at open, not at
        # the first getdents
        if not isinstance(self._entry(path), Dir):
            raise fuse.FuseOSError(errno.ENOTDIR)
        return 0

    def init_with_config(self, conn, config):
        # Attribute files change under the reader; never cache them. The
        # kernel keeps the entries it looked up (an hour; a node's reboot
        # mounts anew), so a path walk asks only for components it has not
        # seen: every component used to be looked up again (one validate.yml
        # made 7,868 FUSE requests per node, 5,217 of them lookups; 2,699 and
        # 48 with the entries kept). Everything else is asked every
        # time, so a change shows at once as it does in sysfs: attributes
        # (a removed VF fails stat through an entry the kernel holds), link
        # targets, listings, opens (of directories too), reads and access(2),
        # and a name that was missing (no negative entries). A path keeps its
        # type (a link never comes back as a directory), which a kept entry
        # needs: tests/unit/test_twin_kernel.py; the change shown at once:
        # tests/vm/sysfs_entries.py, held against a real kernel's sysfs in
        # tests/vm/test_vm_twin_faithful.py
        if config is not None:
            config.direct_io = 1
            config.kernel_cache = 0
            config.attr_timeout = 0
            config.entry_timeout = 3600
            config.negative_timeout = 0

    def read(self, path, size, offset, fh):
        try:
            data = self.tree.read(path)
        except KernelError as exc:
            raise fuse.FuseOSError(exc.errno) from None
        return data[offset:offset + size]

    def write(self, path, data, offset, fh):
        try:
            self.tree.write(path, bytes(data), offset)
        except KernelError as exc:
            raise fuse.FuseOSError(exc.errno) from None
        return len(data)

    def truncate(self, path, length, fh=None):
        e = self._entry(path)
        if getattr(e, "write", None) is None and getattr(e, "pwrite", None) is None:
            raise fuse.FuseOSError(errno.EACCES)
        return 0

    def mkdir(self, path, mode):
        try:
            self.tree.mkdir(path)
        except KernelError as exc:
            raise fuse.FuseOSError(exc.errno) from None
        return 0

    def rmdir(self, path):
        try:
            self.tree.rmdir(path)
        except KernelError as exc:
            raise fuse.FuseOSError(exc.errno) from None
        return 0

    def chmod(self, path, mode):
        return 0

    def chown(self, path, uid, gid):
        return 0

    def utimens(self, path, times=None):
        return 0


def serve(tree: Tree, mountpoint: str, foreground: bool = True) -> None:
    os.makedirs(mountpoint, exist_ok=True)
    fuse.FUSE(SysfsFS(tree), mountpoint, foreground=foreground, allow_other=True,
              fsname="simlab-sysfs")
