"""The twin's BMC of every vendor held to DMTF's Redfish Service Validator
(PyPI redfish-service-validator), with the DSP8010 schemas of ../shared
(DMTF's site is not reachable here): every resource the service links is
walked and checked against its schema; no FAIL. The one WARN allowed is the
vendor's own OEM extension of the service root, whose schema is the vendor's
(its CSDL is served by the BMC's vendor, not DMTF): the validator cannot find
it in DSP8010, which says so as a warning; for Supermicro, the OEM object
without an @odata.type, as the recorded X13 serves it."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from simlab.bmc import vendors
from simlab.bmc.power import FakePowerDriver
from simlab.bmc.server import BmcLab
from tests.reference import REDFISH_CSDL

pytestmark = pytest.mark.layers(1, 2)

VALIDATOR = Path(sys.executable).with_name("rf_service_validator")
# the vendor's OEM type of the service root (simlab/bmc/vendors.py service_root_oem)
# the vendors' OEM types the recordings carry, whose schemas are not in DSP8010 (Dell: the service root's,
# the settings object's Oem.Dell and the job queue it links)
OEM_TYPES = {"dell": ["DellServiceRoot.v1_0_0.DellServiceRoot", "DellManager.v1_2_0.DellManager",
                      "DellJobCollection.DellJobCollection"],
             "hpe": ["HpeiLOServiceExt.v2_3_0.HpeiLOServiceExt"]}


@pytest.mark.parametrize("vendor", sorted(vendors.PROFILES))
def test_the_twins_bmc_passes_dmtfs_service_validator(vendor, tmp_path):
    assert VALIDATOR.exists(), "rf_service_validator not in the virtualenv (requirements.txt)"
    assert REDFISH_CSDL.is_dir(), f"DSP8010 schemas not found at {REDFISH_CSDL}"
    lab = BmcLab(tmp_path / "lab", [{"name": "n1", "port": 0, "vendor": vendor, "username": "root",
                                     "password": "calvin", "container": "c1"}], FakePowerDriver(initial="On"))
    lab.start()
    try:
        proc = subprocess.run([str(VALIDATOR), "--user", "root", "--password", "calvin", "--authtype", "Basic",
                               "--rhost", "https://127.0.0.1:%d" % lab.bmcs["n1"].port,
                               "--schema_directory", str(REDFISH_CSDL), "--logdir", str(tmp_path / "logs")],
                              capture_output=True, text=True, timeout=600, cwd=tmp_path)
    finally:
        lab.stop()
    table = re.search(r"PASS\s+\|\s+WARN\s+\|\s+FAIL\s+\|\s+NOT TESTED\s+\|\s*\n[+-]+\n\|\s*(\d+)\s*\|\s*(\d+)\s*\|"
                      r"\s*(\d+)\s*\|\s*(\d+)\s*\|", proc.stdout)
    assert table, proc.stdout[-3000:] + proc.stderr[-2000:]
    passed, warned, failed, _untested = (int(n) for n in table.groups())
    log = "".join(p.read_text() for p in (tmp_path / "logs").rglob("*Debug*.log"))
    problems = [line for line in log.splitlines() if re.search(r" - (WARN|FAIL) - ", line)]
    assert failed == 0 and proc.returncode == 0, "\n".join(problems) or proc.stdout[-3000:]
    # every resource the twin links was reached: the service root, the system, its Bios and settings,
    # the attribute registry (through the Registries collection), managers, chassis, sessions, accounts and roles
    walked = re.findall(r"^Validating (\S+?)\.\.\.$", proc.stdout, re.M)
    for resource in ("/redfish/v1/Systems/", "/Bios", "/Registries/", "/Managers/", "/Chassis/", "/SessionService",
                     "/AccountService/Roles/"):
        assert any(resource in uri for uri in walked), (resource, walked)
    assert passed > 250
    oem = OEM_TYPES.get(vendor)
    # the recorded X13 serves its Oem object without @odata.type: the validator warns on it as on the twin
    allowed = (["Unable to locate the schema definition for the '%s' type" % t for t in oem] if oem
               else ["/Oem/Supermicro/@odata.type ([Not Present]): Required Property Error"])
    assert warned == len(allowed) and all(any(a in line for a in allowed) for line in problems), problems
    assert all(any(a in line for line in problems) for a in allowed), problems
