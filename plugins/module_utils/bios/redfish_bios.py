# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a server's BIOS through Redfish: current attributes, pending settings
and, for Supermicro, the attribute registry.  Plain Python; the HTTP client is
passed in (``https_getter`` is the module's), so tests drive it with or without a BMC.

The walk follows the links the service gives, never guessed paths: the
service root ``/redfish/v1/`` -> its ``Systems`` -> first member -> its
``Bios`` -> the Bios resource's ``@Redfish.Settings.SettingsObject``
(``Bios/Settings`` on Dell, ``bios/settings/`` on iLO, ``Bios/SD`` on
Supermicro, ``Bios/Pending`` on XCC) -> for Supermicro, the registry file of
its ``AttributeRegistry`` in the root's ``Registries`` collection and that
file's English ``Location``.

``get(path)`` returns ``(status, body, message)``: the HTTP status (``-1``
when nothing answered, ``-2`` when the BMC's certificate was not the pinned
one and nothing was sent), the decoded JSON body (``None`` when there is none)
and a message for errors.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import re

from ansible.module_utils.six.moves import http_client
from ansible.module_utils.six.moves.urllib import parse as urlparse
from ansible.module_utils.six.moves.urllib import request as urlrequest
from ansible.module_utils.six.moves.urllib.error import HTTPError
from ansible.module_utils.urls import Request, make_context
from ansible_collections.gpufabric.stack.plugins.module_utils.bios import bmc_trust


def bmc_address(baseuri):
    """``host[:port]`` of a BMC given as an address or a URL."""
    return re.sub(r"/.*$", "", re.sub(r"^https?://", "", str(baseuri)))


# the module options a BMC read needs and the inventory variables they come from
CREDENTIALS = (("baseuri", "bmc_address"), ("username", "bmc_username"), ("password", "bmc_password"))


def empty_credentials(baseuri, username, password):
    """Why no request may be sent: ``'bmc_address, bmc_password must not be
    empty'`` naming each empty one by its inventory variable, '' when none is
    (the password's value is never part of it)."""
    given = {"baseuri": baseuri, "username": username, "password": password}
    empty = [name for option, name in CREDENTIALS if given[option] is None or not str(given[option]).strip()]
    return "%s must not be empty" % ", ".join(empty) if empty else ""


# bios_facts' options (the module's and its action's, which reads from the
# controller's own process when the task runs there)
FACTS_ARGUMENT_SPEC = dict(
    baseuri=dict(type="str", required=True),
    username=dict(type="str", required=True),
    password=dict(type="str", required=True, no_log=True),
    validate_certs=dict(type="bool", default=False),
    ca_path=dict(type="path"),
    pin=dict(type="str"),
    timeout=dict(type="int", default=30),
    vendor=dict(type="str", default="auto", choices=["auto", "dell", "hpe", "supermicro", "lenovo"]),
)


def facts(params):
    """bios_facts' answer for its validated options ``params``: nothing sent
    when a credential is empty (``error`` names it), else :func:`read_bios`
    over :func:`https_getter`."""
    empty = empty_credentials(params["baseuri"], params["username"], params["password"])
    if empty:
        answer = {"error": empty, "status": 0, "manufacturer": "", "vendor": "", "system_uri": "", "system": {},
                  "boot_order": [], "bios_uri": "", "settings_uri": "", "current": {}, "pending": {}, "registry": {},
                  "job_queue": "", "bios_jobs": []}
        answer["system_error"] = system_error(answer, params["baseuri"])
        return answer
    address = bmc_address(params["baseuri"])
    get = https_getter(address, params["username"], params["password"],
                       validate_certs=params.get("validate_certs") or False, timeout=params.get("timeout") or 30,
                       pin=params.get("pin"), ca_path=params.get("ca_path"))
    try:
        answer = read_bios(get, address, vendor=params.get("vendor") or "auto")
    finally:
        get.close()
    answer["system_error"] = system_error(answer, address)
    return answer


def system_error(answer, address):
    """What layer 1 sees of a read: '' when the BMC answered with its system
    (a BIOS that could not be read after it is layer 2's), else what went
    wrong, led by 'wrong credentials', 'BMC unreachable' or 'BMC not
    trusted'."""
    answer = answer or {}
    err = str(answer.get("error") or "")
    if answer.get("system") or not err:
        return ""
    if answer.get("status") == 0 and err.endswith("must not be empty"):
        # an empty credential (empty_credentials): nothing was sent
        return "wrong credentials: %s (nothing was sent to the BMC)" % err
    if re.match(r"(wrong credentials|BMC unreachable|BMC not trusted)", err):
        return err
    return "BMC unreachable: no Redfish system from %s (%s)" % (address, err)


# DSP0266: the service root, the only URI of a Redfish service a client is
# given; the rest come from its links
SERVICE_ROOT = "/redfish/v1/"


def https_getter(address, username, password, validate_certs=False, timeout=30, pin=None, ca_path=None):
    """A ``get(path)`` for :func:`read_bios` over HTTPS with basic auth
    (:class:`HttpsGetter`): the reads of one getter share one TLS context (the
    CA store is loaded once) and one kept-alive connection, so a read of the
    BMC's resources costs one TLS handshake, not one per resource. With
    ``pin`` (a fingerprint from bmc_trust), every connection is held to it
    before the request, and its credentials, are written; else the CA store
    (``ca_path``, or the system's) when ``validate_certs``. Where the
    environment names an HTTPS proxy for the BMC's address, each request goes
    through it as ansible's ``open_url`` sends it (one connection each)."""
    return HttpsGetter(address, username, password, validate_certs, timeout, pin, ca_path)


class HttpsGetter(object):
    """``get(path) -> (status, body, message)`` on one BMC; ``close()`` ends
    its connection (a read's last step; a getter left open closes with the
    process)."""

    HEADERS = {"Accept": "application/json", "OData-Version": "4.0"}
    # a BMC that answers with a redirect is followed on the same host, this often
    MAX_REDIRECTS = 3

    def __init__(self, address, username, password, validate_certs=False, timeout=30, pin=None, ca_path=None):
        self.address, self.root = address, "https://" + address
        self._username, self._password = username, password
        self._validate_certs, self._timeout = validate_certs, timeout
        self._pin, self._ca_path = pin, ca_path
        self._context = self._request = self._conn = None
        self._proxied = _proxied(address)

    def context(self):
        if self._context is None:
            if self._pin:
                self._context = bmc_trust.pinned_context(self._pin)
            else:
                self._context = make_context(cafile=self._ca_path or None, validate_certs=self._validate_certs)
        return self._context

    def __call__(self, path):
        try:
            if self._proxied:
                status, raw, message = self._through_proxy(path)
            else:
                status, raw, message = self._kept_alive(path)
        except Exception as exc:  # pylint: disable=broad-except  # any transport error: no answer
            self.close()
            if "is not the pinned" in str(exc):
                return -2, None, "BMC not trusted: %s at %s; nothing was sent" % (exc, self.address)
            return -1, None, str(exc)
        if not 200 <= status < 300:
            # an error status, or a redirect that was not followed: its message, no body
            return status, None, message
        try:
            return status, json.loads(raw.decode("utf-8") or "null"), ""
        except ValueError as exc:
            return 502, None, "not JSON: %s" % exc

    def close(self):
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _authorization(self):
        pair = ("%s:%s" % (self._username, self._password)).encode("utf-8")
        return "Basic " + base64.b64encode(pair).decode("ascii")

    def _kept_alive(self, path):
        """One GET on the getter's connection (opened on first use; opened
        again, and the GET sent again, when the BMC had closed it since the
        last answer); redirects on the same host followed."""
        headers = dict(self.HEADERS, Authorization=self._authorization())
        for _hop in range(self.MAX_REDIRECTS + 1):
            reused = self._conn is not None
            try:
                resp = self._send(path, headers)
            except (http_client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if not reused:
                    raise
                # the BMC closed the idle connection: a GET is safe to send again
                resp = self._send(path, headers)
            raw = resp.read()
            if resp.will_close:
                self.close()
            location = resp.getheader("Location") or ""
            if resp.status in (301, 302, 303, 307, 308) and location:
                target = urlparse.urlsplit(urlparse.urljoin(self.root + path, location))
                if target.scheme != "https" or not _same_bmc(target.netloc, self.address):
                    return resp.status, raw, "HTTP Error %d: redirect to %s, off the BMC" % (
                        resp.status, urlparse.urlunsplit(target[:3] + ("", "")))
                path = urlparse.urlunsplit(("", "", target.path, target.query, ""))
                continue
            return resp.status, raw, "HTTP Error %d: %s" % (resp.status, resp.reason)
        return resp.status, raw, "HTTP Error %d: more than %d redirects" % (resp.status, self.MAX_REDIRECTS)

    def _send(self, path, headers):
        if self._conn is None:
            host, port = bmc_trust.split_address(self.address)
            self._conn = http_client.HTTPSConnection(host, port, context=self.context(), timeout=self._timeout)
        self._conn.request("GET", path, headers=headers)
        return self._conn.getresponse()

    def _through_proxy(self, path):
        if self._request is None:
            self._request = Request(context=self.context())
        try:
            resp = self._request.open("GET", self.root + path, headers=self.HEADERS,
                                      url_username=self._username, url_password=self._password,
                                      force_basic_auth=True, validate_certs=self._validate_certs,
                                      timeout=self._timeout)
        except HTTPError as exc:
            return exc.code, b"", str(exc)
        return resp.getcode(), resp.read(), ""


def _proxied(address):
    """Whether the environment sends HTTPS to ``address`` through a proxy
    (``https_proxy`` without a ``no_proxy`` entry that covers it), as urllib,
    and so ansible's ``open_url``, would."""
    if not urlrequest.getproxies().get("https"):
        return False
    try:
        host = bmc_trust.split_address(address)[0]
    except bmc_trust.TrustError:
        # not an address a connection can be opened to: the read names it
        return False
    return not urlrequest.proxy_bypass(host)


def _same_bmc(netloc, address):
    """Whether a redirect's ``host[:port]`` is the BMC at ``address`` (the
    host's case and an implied 443 aside)."""
    try:
        there, here = bmc_trust.split_address(netloc), bmc_trust.split_address(address)
    except bmc_trust.TrustError:
        return False
    return (there[0].lower(), there[1]) == (here[0].lower(), here[1])


def manufacturer_vendor(name):
    """Map a Redfish Manufacturer string to dell, hpe, supermicro or lenovo ('' for others)."""
    s = str(name or "").lower()
    if "dell" in s:
        return "dell"
    if "hpe" in s or "hewlett" in s or s == "hp":
        return "hpe"
    if "supermicro" in s or "super micro" in s:
        return "supermicro"
    if "lenovo" in s:
        return "lenovo"
    return ""


def _error(address, status, message, what):
    if status == -2:
        return str(message)
    if status in (401, 403):
        return ("wrong credentials: the BMC at %s rejected bmc_username/bmc_password (HTTP %d)"
                % (address, status))
    if status in (-1, 0):
        text = str(message or "")
        if len(text) > 200:
            text = text[:197] + "..."
        return "BMC unreachable: no Redfish answer from %s (%s)" % (address, text)
    return "BIOS unreadable: HTTP %d from %s (%s)" % (status, address, what)


def _odata(body, *keys):
    """body[keys...]['@odata.id'] or ''."""
    cur = body
    for key in keys:
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(key)
    if isinstance(cur, dict):
        return str(cur.get("@odata.id") or "")
    return ""


# What the system resource says of the node besides its BIOS: what the bmc
# role's layer 1 check reports (community.general.redfish_info's
# GetSystemInventory names the same properties).
SYSTEM_FIELDS = ("Manufacturer", "Model", "SerialNumber", "BiosVersion", "PowerState")


def read_bios(get, address, vendor="auto"):
    """Walk the BIOS resources; return a dict with ``error`` ('' on success),
    ``status`` (of the first request that failed, else 200), ``manufacturer``,
    ``vendor`` (``vendor`` when not ``auto``, else derived from the
    manufacturer, '' when unknown), ``system_uri``, ``system`` (the system
    resource's inventory and power state, as SYSTEM_FIELDS names them; empty
    when it was not read), ``boot_order`` (its ``Boot.BootOrder``, the boot
    option references in order), ``bios_uri``, ``settings_uri``, ``current``,
    ``pending``, ``registry``, ``job_queue`` (the job queue the settings
    object links, iDRAC's) and ``bios_jobs`` (its open BIOS configuration
    jobs, read where something is pending; None when unreadable)."""
    out = {"error": "", "status": 200, "manufacturer": "", "vendor": "", "system_uri": "", "system": {},
           "boot_order": [], "bios_uri": "", "settings_uri": "", "current": {}, "pending": {}, "registry": {},
           "job_queue": "", "bios_jobs": []}

    def fetch(path, what):
        status, body, message = get(path)
        if status != 200 or not isinstance(body, dict):
            out["status"] = status
            out["error"] = _error(address, status, message, what)
            return None
        return body

    # the service root is the one URI a client may know (DSP0266); every other
    # one is followed from the links the service gives
    root = fetch(SERVICE_ROOT, SERVICE_ROOT)
    if root is None:
        return out
    systems_uri = _odata(root, "Systems")
    if not systems_uri:
        out["status"] = 404
        out["error"] = "BIOS unreadable: the service root of the BMC at %s links no Systems collection" % address
        return out
    systems = fetch(systems_uri, systems_uri)
    if systems is None:
        return out
    members = systems.get("Members") or []
    out["system_uri"] = _odata(members[0]) if members else ""
    if not out["system_uri"]:
        out["status"] = 404
        out["error"] = "BIOS unreadable: the BMC at %s lists no system in %s" % (address, systems_uri)
        return out
    system = fetch(out["system_uri"], out["system_uri"])
    if system is None:
        return out
    out["manufacturer"] = str(system.get("Manufacturer") or "")
    out["system"] = dict((key, system[key]) for key in SYSTEM_FIELDS if key in system)
    boot = system.get("Boot") if isinstance(system.get("Boot"), dict) else {}
    out["boot_order"] = [str(ref) for ref in boot.get("BootOrder") or []]
    out["vendor"] = vendor if vendor and vendor != "auto" else manufacturer_vendor(out["manufacturer"])
    out["bios_uri"] = _odata(system, "Bios")
    if not out["bios_uri"]:
        out["status"] = 404
        out["error"] = "BIOS unreadable: %s on the BMC at %s has no Bios resource" % (out["system_uri"], address)
        return out
    bios = fetch(out["bios_uri"], out["bios_uri"])
    if bios is None:
        return out
    if not isinstance(bios.get("Attributes"), dict):
        out["status"] = 502
        out["error"] = "BIOS unreadable: %s on the BMC at %s has no Attributes" % (out["bios_uri"], address)
        return out
    out["current"] = bios["Attributes"]
    out["settings_uri"] = _odata(bios, "@Redfish.Settings", "SettingsObject")
    if out["settings_uri"]:
        settings = fetch(out["settings_uri"], out["settings_uri"])
        if settings is None:
            return out
        # iLO and XCC answer with every attribute, Dell and Supermicro with
        # the pending ones: pending is what differs from the current value
        out["pending"] = dict((k, v) for k, v in (settings.get("Attributes") or {}).items()
                              if out["current"].get(k) != v)
        out["job_queue"] = job_queue_uri(settings)
        if out["job_queue"] and out["pending"]:
            out["bios_jobs"] = open_bios_jobs(get, out["job_queue"])
    if out["vendor"] == "supermicro" and bios.get("AttributeRegistry"):
        # Optional: without the registry the keys are matched by their shape.
        regfile = registry_file(get, _odata(root, "Registries"), bios["AttributeRegistry"])
        english = [loc for loc in (regfile or {}).get("Location") or []
                   if str(loc.get("Language", "")).startswith("en") and loc.get("Uri")]
        if english:
            status, registry, _msg = get(english[0]["Uri"])
            if status == 200 and isinstance(registry, dict):
                out["registry"] = registry
    return out


# iDRAC applies pending BIOS settings only through a configuration job; a
# job in one of these states has not run yet (DellJob.v1_2_0's JobState).
JOB_OPEN_STATES = ("New", "Scheduled", "Scheduling", "ReadyForExecution", "Waiting", "Running", "Downloading",
                   "Downloaded", "Paused", "RebootPending", "PendingActivation")
JOB_READ_MAX = 16


def job_queue_uri(settings):
    """The job queue a settings object links (iDRAC: ``Oem.Dell.Jobs``), or ''."""
    for oem in ((settings or {}).get("Oem") or {}).values():
        uri = _odata(oem, "Jobs") if isinstance(oem, dict) else ""
        if uri:
            return uri
    return ""


def open_bios_jobs(get, queue_uri):
    """The BIOS configuration jobs of the queue that have not run:
    ``[{"id", "state", "message", "uri"}]``, newest last; the last
    JOB_READ_MAX members are read (a queue keeps old jobs).  None when the
    queue cannot be read."""
    status, queue, _msg = get(queue_uri)
    if status != 200 or not isinstance(queue, dict):
        return None
    out = []
    for member in (queue.get("Members") or [])[-JOB_READ_MAX:]:
        uri = _odata(member)
        status, job, _msg = get(uri) if uri else (0, None, "")
        if status != 200 or not isinstance(job, dict):
            continue
        if job.get("JobType") == "BIOSConfiguration" and job.get("JobState") in JOB_OPEN_STATES:
            out.append({"id": str(job.get("Id") or _last_segment(uri)), "state": job.get("JobState"),
                        "message": str(job.get("Message") or ""), "uri": uri})
    return out


def _last_segment(uri):
    return str(uri or "").rstrip("/").rsplit("/", 1)[-1]


def registry_file(get, registries_uri, name):
    """The registry file resource of registry ``name`` (a Bios resource's
    ``AttributeRegistry``, such as ``BiosAttributeRegistry.v1_0_0``), found
    through the service's Registries collection, never by building its URI: a
    member whose URI ends in the name, else in the same registry under
    another version or none (a recorded iDRAC 9 lists
    ``.../Registries/BiosAttributeRegistry.v1_0_0`` for
    ``BiosAttributeRegistry.v1_0_3``, a recorded X13 ``.../BiosAttributeRegistry``
    for ``BiosAttributeRegistry.v1_0_0``). None when the service has no such
    file."""
    if not registries_uri:
        return None
    status, coll, _msg = get(registries_uri)
    if status != 200 or not isinstance(coll, dict):
        return None
    members = [_odata(m) for m in coll.get("Members") or [] if _odata(m)]
    base = name.split(".")[0]
    # the likely ones first: a URI ending in the name, then in its base
    members.sort(key=lambda uri: _last_segment(uri) != name)
    for uri in members:
        if _last_segment(uri).split(".")[0] != base:
            continue
        status, regfile, _msg = get(uri)
        if status == 200 and isinstance(regfile, dict) and (
                name in (regfile.get("Id"), regfile.get("Registry")) or _last_segment(uri) == name
                or str(regfile.get("Registry") or "").split(".")[0] == base):
            return regfile
    return None
