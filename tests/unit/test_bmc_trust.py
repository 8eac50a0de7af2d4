"""Trust in a BMC before its credentials are sent (module_utils/bios/bmc_trust.py):
the known-certificates file, pinning on first contact under a lock, a changed
certificate refused naming both fingerprints, and the pinned TLS context held
to a real TLS server (the twin's BMC certificate, made by openssl) before any
byte of the request is written."""

import socket
import ssl
import subprocess
import threading
import time

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.bios import bmc_trust as bt
from simlab.bmc.server import ensure_certificate

pytestmark = pytest.mark.layers(1, 2)

FP_A = "SHA256:" + ":".join(["AB"] * 32)
FP_B = "SHA256:" + ":".join(["CD"] * 32)


def test_fingerprint_is_openssls(tmp_path):
    cert, _key = ensure_certificate(tmp_path)
    der = ssl.PEM_cert_to_DER_cert(cert.read_text())
    out = subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in", str(cert)],
                         capture_output=True, text=True, check=True).stdout.strip()
    # "sha256 Fingerprint=AB:CD:..." (OpenSSL 3) or "SHA256 Fingerprint=..." (1.1)
    assert bt.fingerprint(der) == "SHA256:" + out.split("=", 1)[1]


def test_addresses_are_named_host_port():
    assert bt.key("https://10.0.0.5/redfish/v1") == "10.0.0.5:443"
    assert bt.key("127.0.0.1:8443") == "127.0.0.1:8443"
    assert bt.key("[fe80::1]:8443") == "[fe80::1]:8443"
    assert bt.key("bmc-a01.example.net") == "bmc-a01.example.net:443"
    with pytest.raises(bt.TrustError, match="BMC address 'bmc-a01:https': port 'https' is not a number"):
        bt.key("bmc-a01:https")


def test_the_file_is_read_line_by_line_and_a_line_it_cannot_read_fails_quoted():
    text = "# pinned by gpufabric.stack\n10.0.0.5:443 %s\n\n10.0.0.6 %s  # rack b\n" % (FP_A, FP_B)
    assert bt.parse_known(text) == {"10.0.0.5:443": FP_A, "10.0.0.6:443": FP_B}
    with pytest.raises(bt.TrustError, match=r"known line 2 is not '<bmc address> SHA256:<32 hex pairs>': "
                                            r"'10.0.0.7:443 sha1:AB:CD'"):
        bt.parse_known("10.0.0.5:443 %s\n10.0.0.7:443 sha1:AB:CD\n" % FP_A, "known")
    with pytest.raises(bt.TrustError, match="pins 10.0.0.5:443 twice"):
        bt.parse_known("10.0.0.5 %s\n10.0.0.5:443 %s\n" % (FP_A, FP_B), "known")


def test_verdicts():
    known = {"10.0.0.5:443": FP_A}
    assert bt.verdict("10.0.0.5", FP_A, known)[0] == "trusted"
    assert bt.verdict("10.0.0.6", FP_A, known)[0] == "new"
    status, message = bt.verdict("https://10.0.0.5", FP_B, known)
    assert status == "changed"
    assert message.startswith("10.0.0.5:443 presents certificate %s, but %s is pinned for it: refused before any "
                              "credential is sent" % (FP_B, FP_A))


def test_record_pins_once_under_a_lock_and_never_over_another_pin(tmp_path):
    path = tmp_path / "inv" / "bmc_known_certs"
    results = []
    threads = [threading.Thread(target=lambda a=a: results.append(bt.record(str(path), a, FP_A)))
               for a in ["10.0.0.%d" % (i % 4) for i in range(16)]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = path.read_text().splitlines()
    assert sorted(lines) == sorted("10.0.0.%d:443 %s" % (i, FP_A) for i in range(4))
    assert sorted(r[0] for r in results) == ["new"] * 4 + ["trusted"] * 12
    assert bt.record(str(path), "10.0.0.1", FP_B)[0] == "changed"
    assert len(path.read_text().splitlines()) == 4
    # a file edited by hand without its last newline: the new pin starts its own line
    edited = tmp_path / "edited"
    edited.write_text("# the rack's BMCs, pinned\n10.0.0.1:443 %s" % FP_A)
    assert bt.record(str(edited), "10.0.0.2", FP_B)[0] == "new"
    assert bt.parse_known(edited.read_text()) == {"10.0.0.1:443": FP_A, "10.0.0.2:443": FP_B}
    edited.write_text("# a comment without its newline")
    bt.record(str(edited), "10.0.0.3", FP_A)
    assert bt.parse_known(edited.read_text()) == {"10.0.0.3:443": FP_A}


class TlsServer:
    """A TLS server on 127.0.0.1 with a given certificate that records the
    bytes each connection received after the handshake."""

    def __init__(self, cert, key):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(str(cert), str(key))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.received = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                with self.ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.settimeout(2)
                    data = b""
                    try:
                        while b"\r\n\r\n" not in data:
                            chunk = tls.recv(4096)
                            if not chunk:
                                break
                            data += chunk
                    except (socket.timeout, ssl.SSLError, OSError):
                        pass
                    self.received.append(data)
                    if data:
                        self.answer(tls, data)
            except (ssl.SSLError, OSError):
                self.received.append(b"")

    def answer(self, tls, request):
        """What the server writes back to a request (its bytes up to the
        blank line): an empty JSON object, and the connection closed."""
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                    b"Connection: close\r\n\r\n{}")

    def close(self):
        self.sock.close()


def test_the_pinned_context_sends_nothing_to_another_certificate(tmp_path):
    from ansible_collections.gpufabric.stack.plugins.module_utils.bios import redfish_bios
    cert, key = ensure_certificate(tmp_path)
    other, other_key = ensure_certificate(tmp_path, replaced_for="bmc1")
    real = TlsServer(cert, key)
    impostor = TlsServer(other, other_key)
    try:
        pin = bt.fingerprint(bt.peer_certificate("127.0.0.1:%d" % real.port, 5))
        assert pin == bt.fingerprint(ssl.PEM_cert_to_DER_cert(cert.read_text()))
        get = redfish_bios.https_getter("127.0.0.1:%d" % real.port, "root", "s3cret", pin=pin, timeout=5)
        assert get("/redfish/v1")[0] == 200
        assert real.received and b"Authorization: Basic" in real.received[-1]
        get = redfish_bios.https_getter("127.0.0.1:%d" % impostor.port, "root", "s3cret", pin=pin, timeout=5)
        status, body, error = get("/redfish/v1")
        assert status == -2 and body is None and "is not the pinned %s" % pin in error
        assert error.startswith("BMC not trusted: ") and error.endswith("; nothing was sent")
        deadline = time.monotonic() + 5
        while not impostor.received and time.monotonic() < deadline:    # the server thread records it
            time.sleep(0.05)
        assert impostor.received and all(data == b"" for data in impostor.received)   # not one byte of the request
    finally:
        real.close()
        impostor.close()


def test_trust_pins_then_refuses_a_changed_certificate(tmp_path):
    known = tmp_path / "bmc_known_certs"
    answers = iter([b"cert-1", b"cert-1", b"cert-2"])
    get = lambda address, timeout: next(answers)           # noqa: E731 - the BMC's certificate, in turn
    first = bt.trust("10.0.0.5", str(known), get_certificate=get)
    assert first["status"] == "new" and "pinned on first contact in %s" % known in first["message"]
    assert bt.trust("10.0.0.5", str(known), get_certificate=get)["status"] == "trusted"
    with pytest.raises(bt.TrustError) as err:
        bt.trust("10.0.0.5", str(known), get_certificate=get)
    assert bt.fingerprint(b"cert-1") in str(err.value) and bt.fingerprint(b"cert-2") in str(err.value)
    assert "remove its line from %s" % known in str(err.value)
    # check mode: a new BMC is seen, not written
    seen = bt.trust("10.0.0.9", str(known), write=False, get_certificate=lambda a, t: b"cert-9")
    assert seen["status"] == "new" and "10.0.0.9" not in known.read_text()


def test_an_unreachable_bmc_is_named():
    with pytest.raises(bt.TrustError, match=r"BMC unreachable: no Redfish answer from 127.0.0.1:1 \(no TLS handshake: ") \
            as err:
        bt.peer_certificate("127.0.0.1:1", 2)
    assert err.value.unreachable


@pytest.mark.parametrize("defaults", ["roles/bmc/defaults/main.yml", "roles/bios/vars/main.yml"])
def test_the_default_known_certs_file_beside_the_inventory_is_no_inventory_source(tmp_path, defaults):
    """-i <inventory directory> (as a rack's inventory is given) reads every
    file there as an inventory source but those inventory_ignore_extensions
    names: the known-certificates file the roles write there by default is
    not parsed (and warned about) on every run."""
    import os
    import re
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    text = (root / defaults).read_text()
    name = re.search(r"bmc_known_certs\S*:.*/(bmc_known_certs[^'\"]*)['\"]", text).group(1)
    inv = tmp_path / "rack"
    inv.mkdir()
    (inv / "hosts.yml").write_text("all:\n  hosts:\n    node01:\n")
    (inv / name).write_text("10.0.0.5:443 %s\n" % FP_A)
    command = Path(sys.executable).with_name("ansible-inventory")
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(command) if command.exists() else "ansible-inventory", "-i", str(inv), "--list"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "node01" in proc.stdout
    assert name not in proc.stderr and "WARNING" not in proc.stderr, proc.stderr
