# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The twin nodes' connection: containers.podman's podman connection with
pipelining.

The upstream plugin runs each module as a real host would without
pipelining: `podman mount` for every task, a `podman exec` to make a
temporary directory, the module copied in, a `podman exec` to run it and one
to remove the directory.  `podman exec -i` passes the module on standard input
instead, as SSH does with the pipelining the collection's ansible.cfg turns on
for real nodes, so a task on a twin node is one `podman exec`.  The container
is mounted only for a task that copies a file (template, copy, fetch).
An exec that podman itself refuses (exit status 125 or 255 with podman's
"Error: ..." on standard error: the container is paused, stopped or gone) is
a connection failure, so the host is unreachable, as over SSH (exit status
255) and through the upstream plugin, whose temporary directory then cannot
be made.

simlab's inventories name it (ansible_connection: simlab_podman) and their
ansible.cfg, the repository's and Molecule's find it in this directory
(connection_plugins)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shlex

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.connection import ConnectionBase
from ansible_collections.containers.podman.plugins.connection import podman as upstream

DOCUMENTATION = upstream.DOCUMENTATION.replace("name: podman", "name: simlab_podman", 1).replace(
    "short_description: Interact with an existing podman container",
    "short_description: Interact with a twin node's podman container, with pipelining", 1)


class Connection(upstream.Connection):
    transport = "simlab_podman"
    has_pipelining = True

    def _connect(self):
        # no `podman mount` here: only a file transfer needs the mount
        ConnectionBase._connect(self)
        self._connected = True
        return self

    def _mounted(self):
        if self._mount_point is None and not getattr(self, "_mount_tried", False):
            self._mount_tried = True
            upstream.Connection._connect(self)

    def exec_command(self, cmd, in_data=None, sudoable=False):
        ConnectionBase.exec_command(self, cmd, in_data=in_data, sudoable=sudoable)
        args = ["exec", "-i"] if in_data is not None else ["exec"]
        if self.user:
            args.extend(("--user", self.user))
        rc, stdout, stderr = self._podman(args, shlex.split(to_native(cmd, errors="surrogate_or_strict")), in_data)
        if rc in (125, 255) and stderr.startswith(b"Error: "):
            raise AnsibleConnectionFailure("podman exec in %s failed: %s"
                                           % (self._container_id, to_native(stderr, errors="surrogate_or_strict").strip()))
        return rc, stdout, stderr

    def put_file(self, in_path, out_path):
        self._mounted()
        return super(Connection, self).put_file(in_path, out_path)

    def fetch_file(self, in_path, out_path):
        self._mounted()
        return super(Connection, self).fetch_file(in_path, out_path)
