# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Trust in a BMC before its credentials are sent: each BMC's TLS
certificate pinned on first contact in a known-certificates file beside the
inventory, as SSH's known_hosts pins host keys.

The file has one line per BMC, ``<address> <fingerprint>``, the fingerprint
as OpenSSL prints it (``openssl x509 -noout -fingerprint -sha256``: ``SHA256``
and the digest of the DER certificate in upper-case hex pairs joined by
colons); ``#`` starts a comment. A BMC not in the file is pinned at first
contact; a BMC whose certificate differs from its line is refused, naming
both fingerprints, before any request carries a credential.

``pinned_context(fingerprint)`` is a TLS client context that checks the
certificate of every connection it makes against the pin right after the
handshake, before the HTTP request (and its Authorization header) is written:
the reads of this collection (bios_facts, the doctor) use it, so the pin holds
on the very connection that carries the password.

Plain Python, no Ansible imports; the socket and the clock are the caller's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import os
import re
import socket
import ssl

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

FINGERPRINT_RE = re.compile(r"^SHA256:(?:[0-9A-F]{2}:){31}[0-9A-F]{2}$")


class TrustError(Exception):
    """The BMC cannot be trusted, or the known-certificates file cannot be
    read or written; the message names the BMC, the file and the values.
    ``unreachable`` is true when no TLS handshake took place (the BMC's
    message then reads as every other 'BMC unreachable' of the collection)."""

    def __init__(self, message, unreachable=False):
        super(TrustError, self).__init__(message)
        self.unreachable = unreachable


def fingerprint(der):
    """``SHA256:AB:CD:...`` of a DER certificate, as OpenSSL prints it."""
    digest = hashlib.sha256(der).hexdigest().upper()
    return "SHA256:" + ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


def split_address(address, default_port=443):
    """``(host, port)`` of a BMC address (``host``, ``host:port``,
    ``[v6]:port``, with or without ``https://`` and a path)."""
    text = re.sub(r"^https?://", "", str(address or "").strip()).split("/", 1)[0]
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:] else default_port
    if text.count(":") == 1:
        host, port = text.split(":")
        if not port.isdigit():
            raise TrustError("BMC address %r: port %r is not a number" % (address, port))
        return host, int(port)
    return text, default_port


def key(address):
    """How a BMC is named in the file: its ``host:port`` (``[v6]:port``)."""
    host, port = split_address(address)
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def parse_known(text, path="known certificates"):
    """``{address: fingerprint}`` of a known-certificates file. A line that
    is neither a comment nor ``<address> <fingerprint>`` fails, quoting it:
    a pin that cannot be read is never taken as no pin."""
    known = {}
    for number, line in enumerate((text or "").splitlines(), 1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        fields = body.split()
        if len(fields) != 2 or not FINGERPRINT_RE.match(fields[1]):
            raise TrustError("%s line %d is not '<bmc address> SHA256:<32 hex pairs>': %r" % (path, number, line))
        name = key(fields[0])
        if name in known and known[name] != fields[1]:
            raise TrustError("%s pins %s twice, to %s and %s (line %d); keep one"
                             % (path, name, known[name], fields[1], number))
        known[name] = fields[1]
    return known


def verdict(address, seen, known):
    """``(status, message)`` for a BMC whose certificate has fingerprint
    ``seen``: ``trusted`` (as pinned), ``new`` (not pinned yet) or
    ``changed`` (refused)."""
    name = key(address)
    pinned = known.get(name)
    if pinned is None:
        return "new", "%s: no pin yet; its certificate %s is pinned on this first contact" % (name, seen)
    if pinned == seen:
        return "trusted", "%s: certificate %s as pinned" % (name, seen)
    return "changed", ("%s presents certificate %s, but %s is pinned for it: refused before any credential is sent. "
                       "If the BMC's certificate was replaced on purpose, remove its line from the known "
                       "certificates file (the next run pins the new one)" % (name, seen, pinned))


def read_known(path):
    """The pins of ``path`` ({} when the file does not exist yet), read under
    a shared lock, so a line another fork is appending is never read half."""
    try:
        with open(path) as fh:
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_SH)
            return parse_known(fh.read(), path)
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return {}
        raise TrustError("cannot read the known BMC certificates %s: %s" % (path, exc))


def record(path, address, seen):
    """Pin ``seen`` for ``address`` in ``path`` (created with its directory),
    under an exclusive lock, so parallel forks pinning their BMCs neither lose
    nor double a line. Returns the verdict of the file as it is under the lock:
    another fork may have pinned the same BMC (``trusted``), or pinned another
    certificate for it (``changed``: nothing is written)."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        try:
            os.makedirs(directory)
        except OSError as exc:
            # another fork made it first
            if exc.errno != errno.EEXIST or not os.path.isdir(directory):
                raise
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    except (IOError, OSError) as exc:
        raise TrustError("cannot write the known BMC certificates %s: %s" % (path, exc))
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        with os.fdopen(os.dup(fd)) as fh:
            fh.seek(0)
            text = fh.read()
            status, message = verdict(address, seen, parse_known(text, path))
        if status == "new":
            # a file edited by hand may end without a newline: the pin starts its own line
            lead = "\n" if text and not text.endswith("\n") else ""
            os.write(fd, ("%s%s %s\n" % (lead, key(address), seen)).encode("ascii"))
        return status, message
    finally:
        os.close(fd)


def peer_certificate(address, timeout=30, connect=socket.create_connection):
    """The DER certificate the BMC at ``address`` presents (no request is
    sent: the TLS handshake only). TrustError naming the BMC when it cannot be
    reached or does not speak TLS."""
    host, port = split_address(address)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        sock = connect((host, port), timeout)
        try:
            with ctx.wrap_socket(sock, server_hostname=host if not re.match(r"^[0-9.:]+$", host) else None) as tls:
                der = tls.getpeercert(binary_form=True)
        finally:
            sock.close()
    except (socket.error, ssl.SSLError, OSError) as exc:
        raise TrustError("BMC unreachable: no Redfish answer from %s (no TLS handshake: %s)" % (address, exc),
                         unreachable=True)
    if not der:
        raise TrustError("%s presented no certificate" % key(address))
    return der


class PinMismatch(ssl.SSLError):
    """A connection's certificate is not the pinned one."""


def pinned_context(pin):
    """A TLS client context that accepts exactly the certificate whose
    fingerprint is ``pin`` (no CA, no host name: the pin is the trust), checked
    after each handshake and before anything is sent on the connection.

    The check is in the socket's ``do_handshake``, which ``wrap_socket`` runs
    before returning (``do_handshake_on_connect``, as http.client and urllib
    use it): a caller that wraps with ``do_handshake_on_connect=False`` or
    uses ``wrap_bio`` gets no check and must not be given this context."""

    class PinnedSocket(ssl.SSLSocket):
        def do_handshake(self, *args, **kwargs):
            super(PinnedSocket, self).do_handshake(*args, **kwargs)
            seen = fingerprint(self.getpeercert(binary_form=True) or b"")
            if seen != pin:
                raise PinMismatch("certificate %s is not the pinned %s" % (seen, pin))

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.sslsocket_class = PinnedSocket
    return ctx


def trust(address, known_path, timeout=30, write=True, get_certificate=peer_certificate):
    """Pin or check the BMC at ``address``: ``{address, fingerprint, status,
    message}`` with status ``trusted`` or ``new`` (pinned now, or only seen
    when ``write`` is false, as in check mode); TrustError when the
    certificate changed or the file is unreadable."""
    seen = fingerprint(get_certificate(address, timeout))
    status, message = verdict(address, seen, read_known(known_path))
    if status == "new" and write:
        status, message = record(known_path, address, seen)
        if status == "new":
            message = "%s: its certificate %s pinned on first contact in %s" % (key(address), seen, known_path)
    if status == "changed":
        raise TrustError(message.replace("the known certificates file", known_path))
    return {"address": key(address), "fingerprint": seen, "status": status, "message": message}
