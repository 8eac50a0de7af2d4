"""The kernel settings under /proc/sys that the twin models (a container's
/proc/sys is read-only and its modules are the host's): forwarding, and the
bridge-netfilter switches that exist only while br_netfilter is loaded
(brnf_call_* default to 1 when it loads).

No imports: the sysctl tool twin reads it at every call (simlab.node.kernel
holds the values; this module only names them)."""

BASE_SYSCTLS = {"net.ipv4.ip_forward": "0", "net.ipv6.conf.all.forwarding": "0"}
BRIDGE_SYSCTLS = {"net.bridge.bridge-nf-call-arptables": "1", "net.bridge.bridge-nf-call-ip6tables": "1",
                  "net.bridge.bridge-nf-call-iptables": "1"}


def sysctl_key(key: str) -> str:
    """procps accepts net/ipv4/ip_forward as well as net.ipv4.ip_forward."""
    return str(key).strip().replace("/", ".")


def sysctl_modelled(key: str) -> bool:
    key = sysctl_key(key)
    return key in BASE_SYSCTLS or key.startswith("net.bridge.")
