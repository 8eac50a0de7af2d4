"""module_utils/bios/redfish_bios: one walk from the Systems collection to the
current and pending BIOS attributes, against the twin's BMCs over HTTPS and
against recorded answers of other shapes."""

import base64
import http.client
import json
import socket
import ssl

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.bios import redfish_bios
from simlab.bmc.power import FakePowerDriver
from simlab.bmc.server import BmcLab
from test_bmc_trust import TlsServer

pytestmark = pytest.mark.layers(2)

CTX = ssl._create_unverified_context()
SPEC = [
    {"name": "dell1", "port": 0, "vendor": "dell", "username": "root", "password": "calvin",
     "container": "c-dell1"},
    {"name": "hpe1", "port": 0, "vendor": "hpe", "username": "Administrator",
     "password": "hpe-pw", "container": "c-hpe1"},
    {"name": "smc1", "port": 0, "vendor": "supermicro", "username": "ADMIN",
     "password": "smc-pw", "container": "c-smc1", "bios_version": "3.0a"},
]


@pytest.fixture
def lab(tmp_path):
    lab = BmcLab(tmp_path, SPEC, FakePowerDriver(initial="On"))
    lab.start()
    yield lab
    lab.stop()


def _getter(lab, name, password=None, log=None):
    """The module's own HTTPS client, pointed at a twin BMC."""
    entry = next(e for e in SPEC if e["name"] == name)
    address = "127.0.0.1:%d" % lab.bmcs[name].port
    get = redfish_bios.https_getter(address, entry["username"], password or entry["password"], timeout=10)
    if log is None:
        return get, address

    def logged(path):
        log.append(path)
        return get(path)
    return logged, address


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _patch(lab, name, path, body):
    entry = next(e for e in SPEC if e["name"] == name)
    conn = http.client.HTTPSConnection("127.0.0.1", lab.bmcs[name].port, context=CTX, timeout=10)
    cred = base64.b64encode(("%s:%s" % (entry["username"], entry["password"])).encode()).decode()
    conn.request("PATCH", path, body=json.dumps(body),
                 headers={"Content-Type": "application/json", "Authorization": "Basic " + cred})
    assert conn.getresponse().status in (200, 202, 204)
    conn.close()


def test_dell_current_and_pending_follow_the_links(lab):
    log = []
    get, addr = _getter(lab, "dell1", log=log)
    before = redfish_bios.read_bios(get, addr)
    assert before["error"] == "" and before["status"] == 200
    assert before["vendor"] == "dell" and "Dell" in before["manufacturer"]
    assert before["system_uri"] == "/redfish/v1/Systems/System.Embedded.1"
    assert before["settings_uri"] == before["bios_uri"] + "/Settings"
    assert before["current"]["SriovGlobalEnable"] == "Disabled"
    assert before["pending"] == {} and before["registry"] == {}
    # the system's inventory comes with the same read (the doctor's layer 1)
    assert set(before["system"]) == {"Manufacturer", "Model", "SerialNumber", "BiosVersion", "PowerState"}
    assert before["system"]["Manufacturer"] == before["manufacturer"]
    assert before["system"]["PowerState"] in ("On", "Off")
    # Systems, the system, Bios, its settings object: nothing else for Dell.
    assert log == ["/redfish/v1/", "/redfish/v1/Systems", before["system_uri"], before["bios_uri"],
                   before["settings_uri"]]
    _patch(lab, "dell1", before["settings_uri"], {"Attributes": {"SriovGlobalEnable": "Enabled"}})
    after = redfish_bios.read_bios(get, addr)
    assert after["pending"] == {"SriovGlobalEnable": "Enabled"}
    assert after["current"]["SriovGlobalEnable"] == "Disabled"


def test_supermicro_reads_the_english_registry(lab):
    get, addr = _getter(lab, "smc1")
    out = redfish_bios.read_bios(get, addr)
    assert out["error"] == "" and out["vendor"] == "supermicro"
    names = [a["DisplayName"] for a in out["registry"]["RegistryEntries"]["Attributes"]]
    assert "SR-IOV Support" in names
    assert any(k.startswith("SR_IOVSupport_") for k in out["current"])


def test_vendor_given_overrides_the_manufacturer(lab):
    get, addr = _getter(lab, "hpe1")
    assert redfish_bios.read_bios(get, addr)["vendor"] == "hpe"
    assert redfish_bios.read_bios(get, addr, vendor="dell")["vendor"] == "dell"


def test_wrong_password_is_named_not_raised(lab):
    get, addr = _getter(lab, "hpe1", password="nope")
    out = redfish_bios.read_bios(get, addr)
    assert out["status"] == 401 and out["current"] == {} and out["system"] == {}
    assert out["error"] == ("wrong credentials: the BMC at %s rejected bmc_username/bmc_password (HTTP 401)" % addr)


def test_nothing_listening_is_unreachable_through_the_https_client():
    port = free_port()
    out = redfish_bios.read_bios(redfish_bios.https_getter("127.0.0.1:%d" % port, "u", "p", timeout=5),
                                 "127.0.0.1:%d" % port)
    assert out["status"] == -1
    assert out["error"].startswith("BMC unreachable: no Redfish answer from 127.0.0.1:%d (" % port), out["error"]


@pytest.mark.parametrize("given,address", [("10.0.0.9", "10.0.0.9"), ("https://10.0.0.9:8443/redfish/v1", "10.0.0.9:8443"),
                                           ("http://bmc-node01", "bmc-node01")])
def test_bmc_address(given, address):
    assert redfish_bios.bmc_address(given) == address


ROOT = {"/redfish/v1/": (200, {"Systems": {"@odata.id": "/redfish/v1/Systems"},
                                "Registries": {"@odata.id": "/redfish/v1/Registries"}}, "")}


def test_no_answer_and_other_statuses():
    def dead(path):
        return -1, None, "[Errno 111] Connection refused"
    out = redfish_bios.read_bios(dead, "10.0.0.9")
    assert out["status"] == -1
    assert out["error"] == "BMC unreachable: no Redfish answer from 10.0.0.9 ([Errno 111] Connection refused)"

    answers = {"/redfish/v1/Systems": (200, {"Members": [{"@odata.id": "/redfish/v1/Systems/1"}]}, ""),
               "/redfish/v1/Systems/1": (200, {"Manufacturer": "HPE", "Bios": {"@odata.id": "/redfish/v1/Systems/1/bios"}}, ""),
               "/redfish/v1/Systems/1/bios": (503, None, "Service Unavailable"), **ROOT}
    out = redfish_bios.read_bios(lambda p: answers[p], "bmc1")
    assert out["status"] == 503
    assert out["error"].startswith("BIOS unreadable: HTTP 503 from bmc1 (/redfish/v1/Systems/1/bios)")


def test_hpe_lowercase_links_and_no_settings_object():
    answers = {
        "/redfish/v1/": (200, {"Systems": {"@odata.id": "/redfish/v1/systems/"}}, ""),
        "/redfish/v1/systems/": (200, {"Members": [{"@odata.id": "/redfish/v1/systems/1/"}]}, ""),
        "/redfish/v1/systems/1/": (200, {"Manufacturer": "HPE", "Bios": {"@odata.id": "/redfish/v1/systems/1/bios/"}}, ""),
        "/redfish/v1/systems/1/bios/": (200, {"Attributes": {"Sriov": "Enabled"},
                                              "@Redfish.Settings": {"SettingsObject": {
                                                  "@odata.id": "/redfish/v1/systems/1/bios/settings/"}}}, ""),
        "/redfish/v1/systems/1/bios/settings/": (200, {"Attributes": {"Sriov": "Enabled", "IntelProcVtd": "Enabled"}}, ""),
    }
    out = redfish_bios.read_bios(lambda p: answers[p], "ilo")
    assert out["error"] == "" and out["vendor"] == "hpe"
    # iLO answers the settings object with every attribute: pending is what differs
    assert out["pending"] == {"IntelProcVtd": "Enabled"}
    del answers["/redfish/v1/systems/1/bios/"][1]["@Redfish.Settings"]
    out = redfish_bios.read_bios(lambda p: answers[p], "ilo")
    assert out["error"] == "" and out["pending"] == {} and out["settings_uri"] == ""


def test_supermicro_without_registry_is_not_an_error():
    answers = {
        "/redfish/v1/Systems": (200, {"Members": [{"@odata.id": "/redfish/v1/Systems/1"}]}, ""),
        "/redfish/v1/Systems/1": (200, {"Manufacturer": "Supermicro", "Bios": {"@odata.id": "/redfish/v1/Systems/1/Bios"}}, ""),
        "/redfish/v1/Systems/1/Bios": (200, {"Attributes": {"SR_IOVSupport_0001": "Disabled"},
                                             "AttributeRegistry": "BiosAttributeRegistry.v1_0_0"}, ""),
        "/redfish/v1/Registries": (200, {"Members": [{"@odata.id": "/redfish/v1/Registries/Base.1.16.0"}]}, ""),
        **ROOT,
    }
    out = redfish_bios.read_bios(lambda p: answers[p], "smc")
    assert out["error"] == "" and out["registry"] == {} and out["current"] == {"SR_IOVSupport_0001": "Disabled"}


def test_the_attribute_registry_is_found_through_the_registries_collection():
    """No registry URI is built from its name: the Registries collection's
    member whose URI ends in the name, or in its name without the version
    (as iDRAC lists BiosAttributeRegistry for BiosAttributeRegistry.v1_0_3),
    and its file's English Location."""
    log = []
    answers = {
        "/redfish/v1/Systems": (200, {"Members": [{"@odata.id": "/redfish/v1/Systems/1"}]}, ""),
        "/redfish/v1/Systems/1": (200, {"Manufacturer": "Supermicro", "Bios": {"@odata.id": "/redfish/v1/Systems/1/Bios"}}, ""),
        "/redfish/v1/Systems/1/Bios": (200, {"Attributes": {"SR_IOVSupport_0001": "Disabled"},
                                             "AttributeRegistry": "BiosAttributeRegistry.v1_0_3"}, ""),
        "/redfish/v1/Registries": (200, {"Members": [{"@odata.id": "/redfish/v1/Registries/Base.1.16.0"},
                                                     {"@odata.id": "/redfish/v1/Registries/BiosAttributeRegistry"}]}, ""),
        "/redfish/v1/Registries/BiosAttributeRegistry": (200, {
            "Id": "BiosAttributeRegistry", "Registry": "BiosAttributeRegistry.v1_0_3",
            "Location": [{"Language": "ja", "Uri": "/registries/ja/bios.json"},
                         {"Language": "en", "Uri": "/registries/en/bios.json"}]}, ""),
        "/registries/en/bios.json": (200, {"RegistryEntries": {"Attributes": [{"AttributeName": "SR_IOVSupport_0001"}]}}, ""),
        **ROOT,
    }

    def get(path):
        log.append(path)
        return answers[path]
    out = redfish_bios.read_bios(get, "smc")
    assert out["error"] == "" and out["registry"]["RegistryEntries"]["Attributes"][0]["AttributeName"] == "SR_IOVSupport_0001"
    assert log[-3:] == ["/redfish/v1/Registries", "/redfish/v1/Registries/BiosAttributeRegistry", "/registries/en/bios.json"]
    assert "/redfish/v1/Registries/Base.1.16.0" not in log         # not read: not the registry asked for


def test_no_redfish_uri_is_built_from_a_name():
    """DSP0266: a client knows the service root and follows links. Every
    Redfish path literal in the collection's Python is the service root."""
    import re
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    plugins = repo
    found = []
    for path in list((repo / "plugins").rglob("*.py")) + list((repo / "roles").rglob("*.yml")) + \
            list((repo / "playbooks").rglob("*.yml")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            for literal in re.findall(r"[\"'](/redfish/v1[^\"']*)[\"']", code):
                if literal not in ("/redfish/v1/", "/redfish/v1"):
                    found.append("%s:%d: %s" % (path.relative_to(plugins), number, literal))
    assert found == []


def test_empty_systems_collection_and_missing_attributes():
    out = redfish_bios.read_bios(lambda p: (200, {"Members": []}, ""), "bmc")
    assert out["error"] == "BIOS unreadable: the service root of the BMC at bmc links no Systems collection"
    out = redfish_bios.read_bios(lambda p: ROOT[p] if p in ROOT else (200, {"Members": []}, ""), "bmc")
    assert out["error"] == "BIOS unreadable: the BMC at bmc lists no system in /redfish/v1/Systems"
    answers = {"/redfish/v1/Systems": (200, {"Members": [{"@odata.id": "/S/1"}]}, ""), **ROOT,
               "/S/1": (200, {"Manufacturer": "Dell Inc.", "Bios": {"@odata.id": "/S/1/Bios"}}, ""),
               "/S/1/Bios": (200, {"Id": "Bios"}, "")}
    out = redfish_bios.read_bios(lambda p: answers[p], "bmc")
    assert out["error"] == "BIOS unreadable: /S/1/Bios on the BMC at bmc has no Attributes"


@pytest.mark.parametrize("name,vendor", [("Dell Inc.", "dell"), ("HPE", "hpe"), ("Hewlett Packard Enterprise", "hpe"),
                                         ("Supermicro", "supermicro"), ("Lenovo", "lenovo"), ("Contoso", "")])
def test_manufacturer_vendor(name, vendor):
    assert redfish_bios.manufacturer_vendor(name) == vendor


@pytest.mark.parametrize("given, want", [
    (("10.0.0.5", "root", "s3cret"), ""),
    (("10.0.0.5", "", "s3cret"), "bmc_username must not be empty"),
    (("", "root", None), "bmc_address, bmc_password must not be empty"),
    (("10.0.0.5", "root", "  "), "bmc_password must not be empty"),
])
def test_empty_credentials_are_named_by_their_inventory_variable(given, want):
    assert redfish_bios.empty_credentials(*given) == want


def test_bios_facts_sends_nothing_without_credentials(monkeypatch):
    import io
    import json
    from contextlib import redirect_stdout
    from ansible.module_utils.testing import patch_module_args
    from ansible_collections.gpufabric.stack.plugins.modules import bios_facts

    def no_request(*args, **kwargs):
        raise AssertionError("a request was about to be sent")

    monkeypatch.setattr(redfish_bios, "https_getter", no_request)
    out = io.StringIO()
    with patch_module_args({"baseuri": "10.0.0.5", "username": "root", "password": "", "_ansible_check_mode": True}), \
            redirect_stdout(out), pytest.raises(SystemExit):
        bios_facts.main()
    got = json.loads(out.getvalue())
    assert got["error"] == "bmc_password must not be empty" and got["current"] == {} and not got.get("failed")


def test_an_empty_credential_is_layer_1s_wrong_credentials_and_nothing_is_sent(monkeypatch):
    """The doctor's layer 1 and the bmc role read through facts(): an empty
    bmc_username or bmc_password sends nothing and is named as what it is,
    not as an unreachable BMC."""
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import bmc as bmc_check

    def no_request(*args, **kwargs):
        raise AssertionError("a request was about to be sent")

    monkeypatch.setattr(redfish_bios, "https_getter", no_request)
    params = dict((k, v.get("default")) for k, v in redfish_bios.FACTS_ARGUMENT_SPEC.items())
    params.update(baseuri="10.0.0.5", username="", password="pw")
    answer = redfish_bios.facts(params)
    assert answer["error"] == "bmc_username must not be empty"
    assert answer["system_error"] == "wrong credentials: bmc_username must not be empty (nothing was sent to the BMC)"
    got = bmc_check.check({"bmc": answer}, {"bmc_address": "10.0.0.5"}, "node01")
    assert (got["status"], got["reason"]) == ("fail", "wrong credentials"), got
    assert "Fix bmc_username/bmc_password for node01" in got["remediation"]


# -- the HTTPS client's connection --------------------------------------------

def _count_connections(monkeypatch):
    opened = []
    connect = http.client.HTTPSConnection.connect

    def counted(self):
        opened.append((self.host, self.port))
        return connect(self)
    monkeypatch.setattr(http.client.HTTPSConnection, "connect", counted)
    return opened


def test_a_read_is_one_connection_to_the_bmc(lab, monkeypatch):
    # Supermicro's walk is the longest (root, Systems, the system, Bios, its
    # settings, Registries, the registry file): one TLS handshake for all of it
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    opened = _count_connections(monkeypatch)
    paths = []
    get, addr = _getter(lab, "smc1", log=paths)
    out = redfish_bios.read_bios(get, addr)
    assert out["error"] == "" and len(paths) >= 6
    assert opened == [("127.0.0.1", lab.bmcs["smc1"].port)]


class ClosingServer(TlsServer):
    """An HTTPS server (test_bmc_trust's, one request per connection) whose
    answers say nothing of closing, as a kept-alive answer, though the
    connection then closes (a BMC's idle timeout between two requests of a
    read); a path of ``redirects`` answers 302 to its location."""

    def __init__(self, tmp_path, redirects=None):
        from simlab.bmc.server import ensure_certificate
        self.redirects = redirects or {}
        super().__init__(*ensure_certificate(tmp_path))

    @property
    def requests(self):
        return [data.split(b"\r\n", 1)[0] for data in self.received if data]

    def answer(self, tls, request):
        path = request.split(b" ")[1].decode()
        if path in self.redirects:
            tls.sendall(b"HTTP/1.1 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n"
                        % self.redirects[path].encode())
            return
        body = json.dumps({"@odata.id": path}).encode()
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                    % (len(body), body))


def test_a_connection_the_bmc_closed_is_opened_again(tmp_path, monkeypatch):
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    server = ClosingServer(tmp_path)
    try:
        opened = _count_connections(monkeypatch)
        get = redfish_bios.https_getter("127.0.0.1:%d" % server.port, "u", "p", timeout=5)
        assert get("/redfish/v1/") == (200, {"@odata.id": "/redfish/v1/"}, "")
        assert get("/redfish/v1/Systems") == (200, {"@odata.id": "/redfish/v1/Systems"}, "")
        get.close()
        assert len(opened) == 2
        assert server.requests == [b"GET /redfish/v1/ HTTP/1.1", b"GET /redfish/v1/Systems HTTP/1.1"]
    finally:
        server.close()


def test_a_bmc_behind_the_environments_https_proxy_is_read_through_it(lab, monkeypatch):
    # the proxy named for it is down: nothing goes to the BMC directly
    opened = _count_connections(monkeypatch)
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:%d" % free_port())
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    get, addr = _getter(lab, "dell1")
    out = redfish_bios.read_bios(get, addr)
    assert out["status"] == -1 and out["error"].startswith("BMC unreachable: no Redfish answer from %s (" % addr)
    assert opened == [] or all(port != lab.bmcs["dell1"].port for _host, port in opened)
    # one the environment's no_proxy names is read directly, over one connection
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    get, addr = _getter(lab, "dell1")
    assert redfish_bios.read_bios(get, addr)["error"] == ""
    assert [port for _host, port in opened if port == lab.bmcs["dell1"].port] == [lab.bmcs["dell1"].port]


def test_a_redirect_is_followed_on_the_bmc_and_named_off_it(tmp_path, monkeypatch):
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    server = ClosingServer(tmp_path)
    address = "127.0.0.1:%d" % server.port
    server.redirects = {"/redfish/v1": "/redfish/v1/",                                 # relative
                        "/redfish/v1/Systems": "https://%s/redfish/v1/Systems/" % address.upper(),
                        "/away": "https://198.51.100.7/redfish/v1/"}
    try:
        get = redfish_bios.https_getter(address, "u", "p", timeout=5)
        assert get("/redfish/v1") == (200, {"@odata.id": "/redfish/v1/"}, "")
        assert get("/redfish/v1/Systems") == (200, {"@odata.id": "/redfish/v1/Systems/"}, "")
        # the credentials go to no other host: the redirect is the answer, with what it said
        assert get("/away") == (302, None, "HTTP Error 302: redirect to https://198.51.100.7/redfish/v1/, off the BMC")
        assert b"GET /redfish/v1/ HTTP/1.1" in server.requests and len(server.requests) == 5
    finally:
        server.close()


@pytest.mark.parametrize("address,expected", [("[fd00::7]", ("fd00::7", 443)), ("[fd00::7]:8443", ("fd00::7", 8443)),
                                              ("bmc-node01", ("bmc-node01", 443)), ("10.0.0.9:8443", ("10.0.0.9", 8443))])
def test_the_connection_goes_to_the_bmcs_host_and_port(address, expected, monkeypatch):
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    opened = []

    def refused(self):
        opened.append((self.host, self.port))
        raise ConnectionRefusedError("refused")
    monkeypatch.setattr(http.client.HTTPSConnection, "connect", refused)
    status, body, message = redfish_bios.https_getter(address, "u", "p", timeout=5)("/redfish/v1/")
    assert (status, body) == (-1, None) and "refused" in message
    assert opened == [expected]
