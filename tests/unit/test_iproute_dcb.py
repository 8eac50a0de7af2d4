"""iproute2's dcb parser (plugins/module_utils/roce_host/iproute_dcb.py) against the real
published outputs in tests/unit/fixtures/dcb_real (see its README for the
sources), each read as published and with the space dcb prints before every
newline put back."""

from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import iproute_dcb as D

pytestmark = pytest.mark.layers(8)

REAL = Path(__file__).resolve().parent / "fixtures" / "dcb_real"


def body(name):
    text = (REAL / name).read_text()
    head, sep, rest = text.partition("# ---\n")
    assert sep and head.startswith("# source: ") and "\n# what: " in head, name
    return rest


def both(name):
    """The published text, and the text as dcb prints it (a space before each newline)."""
    text = body(name)
    return [text, "".join(line + " \n" for line in text.splitlines())]


def test_every_fixture_has_its_source_and_is_in_the_readme():
    readme = (REAL / "README.md").read_text()
    files = sorted(p.name for p in REAL.glob("*.txt"))
    assert len(files) == 20
    for name in files:
        body(name)
        assert f"`{name}`" in readme, name


# ------------------------------------------------------------------ pfc

@pytest.mark.parametrize("variant", [0, 1])
def test_pfc_hns3_with_four_tcs_prints_eight_priorities(variant):
    off = D.parse_pfc(both("pfc-hns3-eth0-off.txt")[variant])
    assert (off["pfc_cap"], off["macsec_bypass"], off["delay"]) == (4, False, 0)
    assert off["prio_pfc"] == [False] * 8 and off["pfc_enabled"] == [0] * 8 and off["pfc_priorities"] == []
    assert off["requests"] is None and off["indications"] is None
    on = D.parse_pfc(both("pfc-hns3-eth0-on.txt")[variant])
    assert on["pfc_enabled"] == [1] * 8 and on["pfc_priorities"] == list(range(8))


@pytest.mark.parametrize("variant", [0, 1])
def test_pfc_manpage(variant):
    pfc = D.parse_pfc(both("pfc-manpage-eth0.txt")[variant])
    assert (pfc["pfc_cap"], pfc["delay"], pfc["pfc_priorities"]) == (8, 4096, [6, 7])
    assert pfc["pfc_enabled"] == [0, 0, 0, 0, 0, 0, 1, 1]


def test_named_attributes_joined_on_one_line_are_read():
    """dcb prints each attribute named on its show command on a line of its
    own; a published example joined them. The names split the line: the
    figures are the same either way."""
    one = D.parse_pfc(body("pfc-talos-readme-one-line.txt"))
    assert (one["pfc_cap"], one["delay"], one["macsec_bypass"], one["pfc_priorities"]) == (8, 0, None, [3])
    assert one["pfc_enabled"] == [0, 0, 0, 1, 0, 0, 0, 0]
    as_printed = D.parse_pfc("pfc-cap 8 \nprio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \ndelay 0 \n")
    assert as_printed == one
    app = D.parse_app(body("app-talos-readme-dscp.txt"))
    prios = D.dscp_to_prio(app)
    assert (prios[26], prios[48]) == (3, 6) and [p for p in prios if p is not None] == [3, 6]
    # a name cut from its value, or one the reader does not know, still fails quoting the line
    with pytest.raises(D.DcbError, match=r"delay without its value in 'pfc-cap 8 prio-pfc .* delay'"):
        D.parse_pfc("pfc-cap 8 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off delay")
    with pytest.raises(D.DcbError, match=r"prio-pfc: 7 entries, expected 8"):
        D.parse_pfc("pfc-cap 8 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off delay 0")
    with pytest.raises(D.DcbError, match=r"unknown field 'pfc-mode' in"):
        D.parse_pfc("pfc-cap 8 pfc-mode 3 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off")


def test_pfc_counters_are_read_with_s():
    text = body("pfc-hns3-eth0-off.txt") + "requests 0:0 1:217 2:0 3:0 4:0 5:0 6:0 7:28 \n" \
        "indications 0:0 1:179 2:0 3:0 4:0 5:0 6:0 7:18 \n"
    pfc = D.parse_pfc(text)
    assert pfc["requests"] == [0, 217, 0, 0, 0, 0, 0, 28] and pfc["indications"][1] == 179


def test_pfc_of_a_development_build_is_refused_quoting_the_line():
    with pytest.raises(D.DcbError, match=r"cannot read 'pg-pfc 0:off 1:on 2:off 3:off 4:off 5:off 6:off 7:on'"):
        D.parse_pfc(body("pfc-prerelease-eni1np1.txt"))


def test_a_driver_without_the_object_is_named_not_a_parse_error():
    with pytest.raises(D.DcbUnsupported, match="does not report it") as e:
        D.parse_pfc(body("pfc-attribute-not-found.txt"))
    assert e.value.reason == "not-found"
    # no dcbnl ops at all (igb, a VF): perror("Attribute read") with EOPNOTSUPP
    with pytest.raises(D.DcbUnsupported, match="has no DCB") as e:
        D.parse_pfc("Attribute read: Operation not supported\n")
    assert e.value.reason == "no-dcb"
    with pytest.raises(D.DcbError, match="No such device"):
        D.parse_pfc("Attribute read: No such device\n")


@pytest.mark.parametrize("text, quoted", [
    ("pfc-cap 8 macsec-bypass off delay 7\nprio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off\n", "7 entries"),
    ("prio-pfc 0:off 1:off 2:off 3:yes 4:off 5:off 6:off 7:off\n", "value 'yes' of entry 3"),
    ("prio-pfc 0:off 2:off 1:off 3:on 4:off 5:off 6:off 7:off\n", "entry '2:off' is not '1:<value>'"),
    ("pfc-cap 8 macsec-bypass off delay\nprio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n", "without its value"),
    ("pfc-cap 8 macsec-bypass off delay 7\n", "no 'prio-pfc' line"),
])
def test_a_pfc_line_that_cannot_be_read_fails_quoting_it(text, quoted):
    with pytest.raises(D.DcbError, match=quoted):
        D.parse_pfc(text)


# ------------------------------------------------------------------ ets

@pytest.mark.parametrize("variant", [0, 1])
def test_ets_lines_asked_for(variant):
    ets = D.parse_ets(both("ets-coverletter-eni1np1.txt")[variant])
    assert ets["tc_tsa"] == ["ets"] * 3 + ["strict"] * 5 and ets["tc_bw"] == [33, 33, 34, 0, 0, 0, 0, 0]
    assert ets["prio_tc"] is None and ets["ets_cap"] is None
    ets = D.parse_ets(both("ets-manpage-eth0.txt")[variant])
    assert ets["prio_tc"] == list(range(8)) and sum(ets["tc_bw"]) == 100


def test_ets_of_a_development_build_is_refused_quoting_the_line():
    with pytest.raises(D.DcbError, match=r"unknown field 'ets_cap' in 'willing on ets_cap 8 cbs off'"):
        D.parse_ets(body("ets-prerelease-eni1np1.txt"))
    # its other seven lines are the released format: the whole output with the name fixed reads
    ets = D.parse_ets(body("ets-prerelease-eni1np1.txt").replace("ets_cap", "ets-cap"))
    assert (ets["willing"], ets["ets_cap"], ets["cbs"]) == (True, 8, False)
    assert ets["prio_tc"] == [1, 3, 5, 0, 0, 0, 0, 0] and ets["tc_tsa"][4] == "ets" and ets["reco_tc_tsa"] == ["strict"] * 8


def test_an_unknown_tsa_and_a_class_above_7_fail():
    with pytest.raises(D.DcbError, match="value 'wfq' of entry 0"):
        D.parse_ets("tc-tsa 0:wfq 1:ets 2:ets 3:strict 4:strict 5:strict 6:strict 7:strict\n")
    with pytest.raises(D.DcbError, match="above 7"):
        D.parse_ets("prio-tc 0:8 1:0 2:0 3:0 4:0 5:0 6:0 7:0\n")


# ------------------------------------------------------------------ app

@pytest.mark.parametrize("variant", [0, 1])
def test_app_dscp_names_and_numbers_are_the_same_table(variant):
    names = D.parse_app(both("app-manpage-names.txt")[variant])
    numbers = D.parse_app(both("app-manpage-numeric.txt")[variant])
    assert names == numbers
    assert names["dscp_prio"] == [[0, 0], [24, 2], [24, 3], [48, 6]]
    m = D.dscp_to_prio(names)
    assert (m[0], m[24], m[48], m[46]) == (0, [2, 3], 6, None)
    app = D.parse_app(both("app-eni1np1-names.txt")[variant])
    assert app["dscp_prio"] == [[0, 0], [24, 3], [48, 6]] and D.dscp_to_prio(app)[24] == 3
    assert D.dscp_to_prio(D.parse_app(both("app-eni1np1-duplicate.txt")[variant]))[24] == [3, 4]


@pytest.mark.parametrize("variant", [0, 1])
def test_app_default_prio_before_dscp_and_an_unnamed_dscp(variant):
    assert D.parse_app(both("app-felix-swp3-default.txt")[variant])["default_prio"] == [0]
    app = D.parse_app(both("app-felix-swp3-dscp.txt")[variant])
    assert app["default_prio"] == [3] and app["dscp_prio"] == [[16, 2], [24, 5]]
    sparx = D.parse_app(both("app-sparx5-eth1-duplicate.txt")[variant])
    assert sparx["dscp_prio"] == [[63, 1], [63, 2]] and D.dscp_to_prio(sparx)[63] == [1, 2]


def test_app_pcp_keys():
    app = D.parse_app(body("app-manpage-pcp.txt"))
    assert app["pcp_prio"] == [[1, 1], [10, 2]] and app["dscp_prio"] == []   # 2de: PCP 2 + 8 * DEI


def test_an_empty_app_table_is_pcp_trust_on_mlx5():
    app = D.parse_app("")
    assert app["dscp_prio"] == [] and D.trust(app) == "pcp"
    state = D.qos_state(body("pfc-manpage-eth0.txt"), "")
    assert state == {"trust": "pcp", "pfc_enabled": [0, 0, 0, 0, 0, 0, 1, 1], "pfc_priorities": [6, 7],
                     "dscp_to_prio": None, "pfc_cap": 8, "delay": 4096}


def test_mlx5_in_dscp_trust_lists_all_64_dscps():
    # en_dcbnl.c mlx5e_dcbnl_dscp_app: in DSCP trust every DSCP is registered, on one line (dcb never wraps)
    line = "dscp-prio " + " ".join("%d:%d" % (d, d // 8) for d in range(64)) + " \n"
    state = D.qos_state("pfc-cap 8 macsec-bypass off delay 7 \n"
                        "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n", line)
    assert state["trust"] == "dscp" and state["pfc_priorities"] == [3]
    assert state["dscp_to_prio"] == [d // 8 for d in range(64)] and state["delay"] == 7


@pytest.mark.parametrize("text, quoted", [
    ("dscp-prio 0:0 MYCLASS:3\n", r"entry 'MYCLASS:3' cannot be read in 'dscp-prio 0:0 MYCLASS:3' \(run dcb -N"),
    ("dscp-prio 64:3\n", "entry '64:3'"),
    ("dscp-prio 24:8\n", "entry '24:8'"),
    ("dscp-prio 24\n", "entry '24'"),
    ("default-prio 9\n", "not 0-7 in 'default-prio 9'"),
    ("rewr-prio 1:2\n", "cannot read 'rewr-prio 1:2'"),
])
def test_an_app_line_that_cannot_be_read_fails_quoting_it(text, quoted):
    with pytest.raises(D.DcbError, match=quoted):
        D.parse_app(text)


# ------------------------------------------------------------------ apptrust

@pytest.mark.parametrize("variant", [0, 1])
def test_apptrust_order(variant):
    assert D.parse_apptrust(both("apptrust-manpage-eth0.txt")[variant]) == ["port", "pcp", "ethtype"]
    order = D.parse_apptrust(both("apptrust-sparx5-eth0.txt")[variant])
    assert order == ["ethtype", "stream-port", "pcp"] and D.trust(D.parse_app(""), order) == "pcp"
    # dcb_apptrust.c prints the order, then an empty line
    assert D.parse_apptrust("order: dscp pcp \n\n") == ["dscp", "pcp"]
    assert D.parse_apptrust("order: \n\n") == [] and D.trust(D.parse_app(""), []) is None


def test_apptrust_refusals():
    with pytest.raises(D.DcbUnsupported) as e:        # mlx5 has no dcbnl_getapptrust
        D.parse_apptrust("Attribute not found: Success\n")
    assert e.value.reason == "not-found"
    with pytest.raises(D.DcbError, match="unknown selector 'vlan'"):
        D.parse_apptrust("order: dscp vlan\n")
    with pytest.raises(D.DcbError, match="no 'order:' line"):
        D.parse_apptrust("")
