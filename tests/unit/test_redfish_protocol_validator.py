"""The twin's BMC of every vendor held to DMTF's Redfish Protocol Validator
(PyPI redfish-protocol-validator): the protocol rules of DSP0266 a service
follows whatever its resources (HTTP methods and status codes, the headers
of requests and responses, the OData service and metadata documents,
authentication, sessions, accounts and roles, TLS).  No assertion may FAIL
or WARN; the ones it cannot test here are listed below (and in
docs/layers/01-bmc.md) with why, and a change in that list fails the test.

The three vendors run side by side: most of a run is the validator waiting
for SSDP answers that a lab on loopback never sends."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from redfish_protocol_validator import utils as validator_utils

from simlab.bmc import vendors
from simlab.bmc.power import FakePowerDriver
from simlab.bmc.server import BmcLab

pytestmark = pytest.mark.layers(1, 2)

VALIDATOR = Path(sys.executable).with_name("rf_protocol_validator")

# What the validator reports NOT_TESTED on the twin's BMC, by why (docs/layers/01-bmc.md says the same).
NOT_TESTED = {
    # it tests ETags, If-Match and the password-change rules on an account it creates and deletes; the
    # BMC's AccountService is read-only (the collection manages no BMC accounts), so it creates none
    "account writes": {
        "PROTO_ETAG_412_WRITE_NOT_APPLIED", "PROTO_ETAG_CONDITIONAL_GET", "PROTO_ETAG_HEADER_AND_PROPERTY",
        "PROTO_ETAG_IF_MATCH_ENFORCED", "PROTO_ETAG_LOST_UPDATE", "PROTO_ETAG_ROTATES_ON_WRITE",
        "PROTO_ETAG_STABLE_WITHOUT_MODIFICATION", "REQ_HEADERS_IF_MATCH", "REQ_PATCH_BAD_PROP",
        "REQ_PATCH_MIXED_PROPS", "REQ_PATCH_ODATA_PROPS", "REQ_HEADERS_CONTENT_TYPE", "PROTO_HTTP_SUPPORTED_METHODS",
        "REQ_DATA_MOD_ERRORS", "RESP_STATUS_BAD_REQUEST", "SEC_ACCOUNTS_SUPPORT_ETAGS",
        "SEC_PRIV_OPERATION_TO_PRIV_MAPPING", "SEC_PWD_CHANGE_REQ_ALLOW_GET_ACCOUNT",
        "SEC_PWD_CHANGE_REQ_ALLOW_PATCH_PASSWORD", "SEC_PWD_CHANGE_REQ_ALLOW_SESSION_LOGIN",
        "SEC_PWD_CHANGE_REQ_DISALLOW_ALL_OTHERS"},
    # no event service: no event subscriptions and no server-sent event stream
    "events": {
        "SERV_EVENT_ERROR_ON_BAD_REQUEST", "SERV_EVENT_POST_RESP", "SERV_SSE_BLANK_LINES_BETWEEN_EVENTS",
        "SERV_SSE_CLOSE_CONNECTION_IF_EVENT_DEST_DELETED", "SERV_SSE_CONNECTION_OPEN_UNTIL_CLOSED",
        "SERV_SSE_DATA_FIELD_BASED_ON_PAYLOAD_FORMAT", "SERV_SSE_EVENTS_SENT_VIA_OPEN_CONNECTION",
        "SERV_SSE_EVENT_DEST_CONTEXT_OPAQUE_STR", "SERV_SSE_EVENT_DEST_DELETED_ON_CLOSE",
        "SERV_SSE_ID_FIELD_UNIQUELY_IDENTIFIES_PAYLOAD", "SERV_SSE_JSON_EVENT_MESSAGE_FORMAT",
        "SERV_SSE_JSON_METRIC_REPORT_FORMAT", "SERV_SSE_OPEN_CREATES_EVENT_DEST", "SERV_SSE_SUCCESSFUL_RESPONSE",
        "SERV_SSE_UNSUCCESSFUL_RESPONSE", "SEC_SESSION_TERMINATION_SIDE_EFFECTS"},
    # the BMCs listen on loopback: no SSDP discovery
    "ssdp": {
        "SERV_SSDP_AL_HEADER_POINTS_TO_SERVICE_ROOT", "SERV_SSDP_CAN_BE_DISABLED",
        "SERV_SSDP_MSEARCH_RESPONDS_TO_REDFISH_OR_ALL", "SERV_SSDP_M_SEARCH_RESPONSE_FORMAT",
        "SERV_SSDP_ST_HEADER_FORMAT", "SERV_SSDP_USN_MATCHES_SERVICE_ROOT_UUID",
        "SERV_SSDP_UUID_IN_CANONICAL_FORMAT"},
    # features the BMC does not have: HTTP redirects, query parameters, an OpenAPI document, a certificate
    # service, and no request that makes it fail with 500
    "not served": {
        "PROTO_REDIRECT_ENFORCES_TARGET_PRIVS", "REQ_QUERY_PROTOCOL_FEATURES_SUPPORTED", "REQ_HEADERS_ACCEPT",
        "RESP_HEADERS_CONTENT_TYPE", "SEC_DEFAULT_CERT_REPLACE", "RESP_STATUS_INTERNAL_SERVER_ERROR"},
}


# The validator judges the X-Auth-Token of one session with two statistical tests (monobit frequency and
# runs, each failing at p < 0.01), so a token from a sound 128-bit random source WARNs about 2% of the
# time (2.08% of 200,000 tokens of secrets.token_hex(16)).  The tokens are judged on a sample instead:
# MORE_TOKENS new sessions, of which at most MAX_UNLUCKY may fail the validator's own tests.  A sound
# source exceeds that once in about ten million runs; a counter or a clock fails nearly every token, and
# a source whose tokens fail half the time passes once in ten thousand.
TOKEN_WARN = "RESP_HEADERS_X_AUTH_TOKEN"
MORE_TOKENS = 40
MAX_UNLUCKY = 8


def fresh_tokens(port, cert, n=MORE_TOKENS):
    """``n`` X-Auth-Tokens of new sessions on the BMC at ``port`` (each session deleted again)."""
    tokens = []
    base = "https://127.0.0.1:%d" % port
    for _ in range(n):
        r = requests.post(base + "/redfish/v1/SessionService/Sessions", json={"UserName": "root",
                          "Password": "calvin"}, verify=str(cert), timeout=30)
        assert r.status_code == 201, (r.status_code, r.text)
        tokens.append(r.headers["X-Auth-Token"])
        requests.delete(base + r.headers["Location"] if r.headers["Location"].startswith("/")
                        else r.headers["Location"], headers={"X-Auth-Token": tokens[-1]}, verify=str(cert),
                        timeout=30)
    return tokens


def test_the_twins_bmc_passes_dmtfs_protocol_validator(tmp_path):
    assert VALIDATOR.exists(), "rf_protocol_validator not in the virtualenv (requirements.txt)"
    # the validator's own sessions take the CA bundle from the environment before --ca-bundle
    env = {k: v for k, v in os.environ.items() if k not in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")}
    labs, runs, tokens = {}, {}, {}
    try:
        for vendor in sorted(vendors.PROFILES):
            lab = labs[vendor] = BmcLab(tmp_path / vendor, [
                {"name": "n1", "port": 0, "vendor": vendor, "username": "root", "password": "calvin",
                 "container": "c1"}], FakePowerDriver(initial="On"))
            lab.start()
            cert = next((tmp_path / vendor).rglob("cert.pem"))
            runs[vendor] = subprocess.Popen(
                [str(VALIDATOR), "--user", "root", "--password", "calvin",
                 "--rhost", "https://127.0.0.1:%d" % lab.bmcs["n1"].port, "--ca-bundle", str(cert),
                 "--report-dir", str(tmp_path / vendor / "report"), "--report-type", "tsv",
                 "--avoid-http-redirect"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path, env=env)
        outputs = {vendor: proc.communicate(timeout=600)[0] for vendor, proc in runs.items()}
        for vendor, lab in labs.items():
            tokens[vendor] = fresh_tokens(lab.bmcs["n1"].port, next((tmp_path / vendor).rglob("cert.pem")))
    finally:
        for proc in runs.values():
            if proc.poll() is None:
                proc.kill()
        for lab in labs.values():
            lab.stop()
    expected_untested = set().union(*NOT_TESTED.values())
    for vendor, out in outputs.items():
        summary = re.search(r"Summary - PASS: (\d+), WARN: (\d+), FAIL: (\d+), NOT_TESTED: (\d+)", out)
        assert summary, (vendor, out[-3000:])
        passed, warned, failed, _untested = (int(n) for n in summary.groups())
        rows = [line.split("\t") for line in
                next((tmp_path / vendor / "report").glob("*.tsv")).read_text().splitlines()[1:]]
        problems = [row for row in rows if row[4] in ("FAIL", "WARN")]
        unlucky = [t for t in tokens[vendor] if not validator_utils.random_sequence(t)]
        assert len(tokens[vendor]) == len(set(tokens[vendor])) == MORE_TOKENS, (vendor, tokens[vendor])
        assert len(unlucky) <= MAX_UNLUCKY, (vendor, unlucky)
        if [row[:1] + row[4:5] for row in problems] == [[TOKEN_WARN, "WARN"]]:
            problems, warned = [], warned - 1
        assert failed == 0 and warned == 0 and not problems, (vendor, problems)
        untested = {row[0] for row in rows if row[4] == "NOT_TESTED"}
        assert untested == expected_untested, (vendor, sorted(untested - expected_untested),
                                               sorted(expected_untested - untested))
        # the protocol it did test: methods and status codes, headers, the OData documents, sessions, roles, TLS
        tested = {row[0] for row in rows if row[4] == "PASS"}
        for assertion in ("PROTO_HTTP_UNSUPPORTED_METHODS", "REQ_HEADERS_ODATA_VERSION",
                          "RESP_HEADERS_ALLOW_GET_OR_HEAD", "RESP_HEADERS_LINK_REL_DESCRIBED_BY",
                          "RESP_ODATA_METADATA_ENTITY_CONTAINER",
                          "RESP_ODATA_SERVICE_VALUE_PROP", "SEC_PRIV_SUPPORT_PREDEFINED_ROLES", "SEC_TLS_1_1",
                          "SEC_BASIC_AUTH_STANDALONE", "SEC_SESSION_POST_RESPONSE", "RESP_HEADERS_ETAG"):
            assert assertion in tested, (vendor, assertion)
        assert passed > 240, (vendor, passed)
