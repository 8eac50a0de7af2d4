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

Where the inventory gives the container's ID (simlab's inventories do, as
ansible_simlab_container_id) and the controller runs as root, a command goes
in through `runc exec` on that ID instead: the same OCI runtime podman runs
the container with and the process podman exec would start (the container's
environment, capabilities, seccomp filter, cgroup and namespaces), without
the podman client, conmon and the `podman container cleanup` an exec costs
(about 0.035 CPU-s of the machine against 0.13 for a `podman exec true`;
tests/integration/test_tool_twins_live.py holds the two processes equal).
When runc cannot exec (the container is stopped,
paused or was made anew under another ID), the command goes through podman
exec by the container's name as above, so its answer (a connection failure,
or the command run) is podman's.  SIMLAB_EXEC=podman (or the host variable
ansible_simlab_exec) keeps every command on podman exec; `make bench` does,
so its figures compare with every results file before this path.

simlab's inventories name it (ansible_connection: simlab_podman) and their
ansible.cfg, the repository's and Molecule's find it in this directory
(connection_plugins)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shlex
import shutil
import subprocess

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.connection import ConnectionBase
from ansible.utils.display import Display
from ansible_collections.containers.podman.plugins.connection import podman as upstream

DOCUMENTATION = upstream.DOCUMENTATION.replace("name: podman", "name: simlab_podman", 1).replace(
    "short_description: Interact with an existing podman container",
    "short_description: Interact with a twin node's podman container, with pipelining", 1).replace(
    "\n    options:\n", """
    options:
      container_id:
        description:
          - The full ID of the container named by remote_addr. With it, and as root, a command runs
            through C(runc exec) on the ID; without it, through C(podman exec) on the name.
        type: str
        vars:
          - name: ansible_simlab_container_id
      exec_via:
        description:
          - C(runc) runs a command through C(runc exec) where it can (see container_id), C(podman)
            always through C(podman exec).
        type: str
        default: runc
        choices: [runc, podman]
        env:
          - name: SIMLAB_EXEC
        vars:
          - name: ansible_simlab_exec
""", 1)

# runc's own refusal, before any process started in the container: a log
# line at level error saying the exec failed (stopped, paused, no such ID)
RUNC_REFUSED = re.compile(rb'\A(?:time="[^"]*" )?level=error msg="exec failed: ')

display = Display()


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

    def _runc(self):
        """The runc to exec with, or None where podman exec has to: no ID, not
        root, another user asked for, podman exec asked for, no runc."""
        if self.user not in (None, "", "root", "0") or self.get_option("exec_via") == "podman" or not self.get_option("container_id"):
            return None
        if os.geteuid() != 0:
            return None
        return shutil.which("runc")

    def _runc_exec(self, runc, argv, in_data):
        # podman exec leaves out the container_uuid the container's own
        # process carries (systemd mode); so does this path
        cmd = [runc, "exec", self.get_option("container_id"), "env", "-u", "container_uuid", *argv]
        display.vvv("RUNC EXEC %s" % (cmd,), host=self._container_id)
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE if in_data is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = p.communicate(in_data)
        return p.returncode, stdout, stderr

    def exec_command(self, cmd, in_data=None, sudoable=False):
        ConnectionBase.exec_command(self, cmd, in_data=in_data, sudoable=sudoable)
        argv = shlex.split(to_native(cmd, errors="surrogate_or_strict"))
        runc = self._runc()
        if runc:
            rc, stdout, stderr = self._runc_exec(runc, argv, in_data)
            if not (rc == 255 and not stdout and RUNC_REFUSED.match(stderr)):
                return rc, stdout, stderr
        args = ["exec", "-i"] if in_data is not None else ["exec"]
        if self.user:
            args.extend(("--user", self.user))
        rc, stdout, stderr = self._podman(args, argv, in_data)
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
