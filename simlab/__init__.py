"""simlab: a rack twin for gpufabric.stack.

GPU nodes are podman containers running systemd, each with a FUSE sysfs that
follows the kernel's SR-IOV semantics and tool twins with the vendor tools'
output formats; BMCs are Redfish endpoints and leaf switches are SSH servers
that netmiko drives.  See docs/simlab.md.
"""

__version__ = "0.1.0"
