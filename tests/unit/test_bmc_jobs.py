"""iDRAC's BIOS configuration jobs: pending BIOS settings apply at a reset
only through a scheduled job (Dell's iDRAC-Redfish-Scripting: a PATCH
without ``@Redfish.SettingsApplyTime`` "will only be setting pending values").
The twin's Dell BMC is held to the recorded iDRAC 9's job queue and job
(tests/unit/fixtures/bmc_real/dell); bios_facts reads the open jobs, the plan
and the doctor's layer 2 name what a reset would leave pending, and the bios
role schedules the job (community.general's CreateBiosConfigJob) or stops
before a change iDRAC would refuse (SYS011)."""

import json

import pytest

from simlab.bmc import state
from simlab.bmc.power import FakePowerDriver
from simlab.bmc.server import BmcLab

from ansible_collections.gpufabric.stack.plugins.module_utils.bios import redfish_bios
from ansible_collections.gpufabric.stack.plugins.plugin_utils.bios import bios_attributes
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import bios as bios_check

from test_bmc_recordings import REAL, replay
from test_bmc_roles import PLAYBOOK_BIN, _recap, _run, _task_hosts, boot_lab
from test_bmc_server import Client

pytestmark = pytest.mark.layers(2)

SYS = "/redfish/v1/Systems/System.Embedded.1"
SETTINGS = SYS + "/Bios/Settings"
QUEUE = "/redfish/v1/Managers/iDRAC.Embedded.1/Oem/Dell/Jobs"
WANT = {"SriovGlobalEnable": "Enabled", "ProcVirtualization": "Enabled"}
# what the intent (SR-IOV and VT-d on, ACS off) wants of a factory iDRAC
ALL = dict(WANT, PcieAcsControl="Disabled")
INTENT = {"bmc_address": "bmc", "bmc_vendor": "dell", "bios_cpu_vendor": "intel",
          "bios_sriov": True, "bios_iommu": True, "bios_acs": False}


@pytest.fixture
def lab(tmp_path):
    lab = BmcLab(tmp_path, [{"name": "dell1", "port": 0, "vendor": "dell", "username": "root",
                             "password": "calvin", "container": "c-dell1"},
                            {"name": "smc1", "port": 0, "vendor": "supermicro", "username": "ADMIN",
                             "password": "smc-pw", "container": "c-smc1"}], FakePowerDriver(initial="On"))
    lab.start()
    yield lab
    lab.stop()


def reset(c, system=SYS):
    st, _, _ = c.req("POST", system + "/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
    assert st == 204


def getter(lab, name="dell1", user="root", password="calvin"):
    addr = "127.0.0.1:%d" % lab.bmcs[name].port
    return redfish_bios.https_getter(addr, user, password), addr


def test_the_twins_job_reads_as_the_recorded_idracs(lab):
    c = Client(lab, "dell1")
    st, body, headers = c.req("PATCH", SETTINGS, {"Attributes": WANT,
                                                  "@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"}})
    assert st == 202, body
    job_uri = headers["Location"]
    # Location as community.general's CreateBiosConfigJob documents it; the
    # job read where the recorded iDRAC keeps it (its queue under Oem/Dell)
    assert job_uri.startswith("/redfish/v1/Managers/iDRAC.Embedded.1/Jobs/JID_")
    job = c.get(QUEUE + "/" + job_uri.rsplit("/", 1)[1])
    recorded = json.loads((REAL / "dell/redfish/v1/Managers/iDRAC.Embedded.1/Oem/Dell/Jobs/JID_102241909559"
                           / "index.json").read_text())
    assert sorted(job) == sorted(recorded)
    for key in ("@odata.type", "@odata.context", "JobType", "Name", "Description", "EndTime", "TargetSettingsURI"):
        assert job[key] == recorded[key], key
    documented = json.loads((REAL / "dell_errors" / "job_scheduled.json").read_text())
    state = ("JobState", "Message", "MessageId", "PercentComplete", "CompletionTime", "EndTime")
    assert {k: job[k] for k in state} == {k: documented[k] for k in state}
    queue = c.get(QUEUE)
    recorded_queue = json.loads((REAL / "dell/redfish/v1/Managers/iDRAC.Embedded.1/Oem/Dell/Jobs/index.json")
                                .read_text())
    assert sorted(queue) == sorted(recorded_queue) and queue["Name"] == recorded_queue["Name"]
    assert [m["@odata.id"].rsplit("/", 1)[1] for m in queue["Members"]] == [job["Id"]]
    # the settings object links the queue as the recorded one does
    settings = c.get(SETTINGS)
    recorded_settings = json.loads((REAL / "dell/redfish/v1/Systems/System.Embedded.1/Bios/Settings/index.json")
                                   .read_text())
    assert settings["Oem"] == recorded_settings["Oem"]
    # the job runs at the reset: settings current, job completed as recorded
    reset(c)
    assert {k: c.get(SYS + "/Bios")["Attributes"][k] for k in WANT} == WANT
    done = c.get(QUEUE + "/" + job["Id"])
    assert (done["JobState"], done["Message"], done["MessageId"], done["PercentComplete"]) == (
        recorded["JobState"], recorded["Message"], recorded["MessageId"], recorded["PercentComplete"])


def test_pending_settings_without_a_job_stay_pending_across_a_reset(lab, tmp_path):
    c = Client(lab, "dell1")
    st, _, headers = c.req("PATCH", SETTINGS, {"Attributes": WANT})
    assert st == 200 and "Location" not in headers
    reset(c)
    assert c.get(SETTINGS)["Attributes"] == WANT
    assert c.get(SYS + "/Bios")["Attributes"]["SriovGlobalEnable"] == "Disabled"
    # a job made afterwards (community.general's CreateBiosConfigJob POST) applies them
    st, _, headers = c.req("POST", "/redfish/v1/Managers/iDRAC.Embedded.1/Jobs", {"TargetSettingsURI": SETTINGS})
    assert st == 200 and "/Jobs/JID_" in headers["Location"]
    reset(c)
    assert c.get(SETTINGS)["Attributes"] == {}
    # Supermicro applies pending settings at the next reset with no job
    s = Client(lab, "smc1")
    name = next(k for k in s.get("/redfish/v1/Systems/1/Bios")["Attributes"] if k.startswith("SR_IOVSupport"))
    st, _, _ = s.req("PATCH", "/redfish/v1/Systems/1/Bios/SD", {"Attributes": {name: "Enabled"}})
    assert st == 200
    reset(s, "/redfish/v1/Systems/1")
    assert s.get("/redfish/v1/Systems/1/Bios")["Attributes"][name] == "Enabled"


def test_a_scheduled_job_refuses_more_settings_with_sys011(lab):
    c = Client(lab, "dell1")
    c.req("PATCH", SETTINGS, {"Attributes": {"SriovGlobalEnable": "Enabled"},
                              "@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"}})
    st, body, _ = c.req("PATCH", SETTINGS, {"Attributes": {"ProcVirtualization": "Enabled"}})
    assert st == 400
    # the live iDRAC's body, the attribute PATCHed named where it named its own
    live = (REAL / "dell_errors" / "sys011.json").read_text().replace("HttpDev1EnDis", "ProcVirtualization")
    assert body == json.loads(live)
    st, body, _ = c.req("POST", "/redfish/v1/Managers/iDRAC.Embedded.1/Jobs", {"TargetSettingsURI": SETTINGS})
    assert st == 400 and "already committed" in json.dumps(body)
    assert c.get(SETTINGS)["Attributes"] == {"SriovGlobalEnable": "Enabled"}


def test_bios_facts_reads_the_open_jobs_and_the_doctor_names_settings_no_reset_applies(lab):
    c = Client(lab, "dell1")
    c.req("PATCH", SETTINGS, {"Attributes": ALL})
    get, addr = getter(lab)
    answer = redfish_bios.read_bios(get, addr)
    assert answer["job_queue"] == QUEUE and answer["bios_jobs"] == [] and answer["pending"] == ALL
    got = bios_check.check({"bmc": answer}, INTENT, "node01")
    assert (got["status"], got["reason"]) == ("fail", "settings pending with no BIOS configuration job"), got
    assert any(QUEUE in e and "a reset leaves them pending" in e for e in got["evidence"]), got
    assert "schedules the job" in got["remediation"] and SETTINGS in got["remediation"]
    plan = bios_attributes.bios_plan(answer["current"], "dell", pending=answer["pending"],
                                     job_queue=answer["job_queue"], bios_jobs=answer["bios_jobs"])
    assert (plan["stage"], plan["job_needed"]) == ({}, True)
    # with the job scheduled: pending a reboot, the job named
    c.req("POST", "/redfish/v1/Managers/iDRAC.Embedded.1/Jobs", {"TargetSettingsURI": SETTINGS})
    answer = redfish_bios.read_bios(get, addr)
    assert [j["state"] for j in answer["bios_jobs"]] == ["Scheduled"]
    got = bios_check.check({"bmc": answer}, INTENT, "node01")
    assert (got["status"], got["reason"]) == ("warn", "settings pending a reboot"), got
    assert any(e.startswith("BMC job JID_") and "Scheduled" in e for e in got["evidence"]), got


def test_the_recorded_idrac_links_its_queue_and_has_no_open_job():
    get = replay("dell")
    answer = redfish_bios.read_bios(get, "bmc")
    # nothing pending: the queue is named, not read
    assert answer["job_queue"] == QUEUE and answer["bios_jobs"] == []
    assert redfish_bios.open_bios_jobs(get, QUEUE) == []  # its one job completed
    assert redfish_bios.open_bios_jobs(lambda p: (503, None, "busy"), QUEUE) is None
    # HPE's and Supermicro's settings objects link no queue
    for vendor in ("hpe", "supermicro", "lenovo"):
        assert redfish_bios.read_bios(replay(vendor), "bmc")["job_queue"] == "", vendor


def test_the_plan_schedules_a_job_only_where_staging_does_not_and_stops_behind_an_open_one():
    current = {"SriovGlobalEnable": "Disabled", "ProcVirtualization": "Enabled", "PcieAcsControl": "Disabled"}
    pending = {"SriovGlobalEnable": "Enabled"}
    plan = bios_attributes.bios_plan(current, "dell", pending=pending, job_queue=QUEUE, bios_jobs=[])
    assert (plan["stage"], plan["job_needed"], plan["blocked_by"]) == ({}, True, [])
    open_job = [{"id": "JID_1", "state": "Scheduled", "message": "Task successfully scheduled."}]
    plan = bios_attributes.bios_plan(current, "dell", pending=pending, job_queue=QUEUE, bios_jobs=open_job)
    assert (plan["job_needed"], plan["blocked_by"]) == (False, [])
    # something to stage while a job is scheduled: iDRAC would refuse it
    plan = bios_attributes.bios_plan(dict(current, ProcVirtualization="Disabled"), "dell", pending=pending,
                                     job_queue=QUEUE, bios_jobs=open_job)
    assert plan["stage"] == {"ProcVirtualization": "Enabled"} and plan["blocked_by"] == ["JID_1"]
    # the queue unread, or a BMC without one: no job asked for
    for queue, jobs in ((QUEUE, None), ("", [])):
        plan = bios_attributes.bios_plan(current, "dell", pending=pending, job_queue=queue, bios_jobs=jobs)
        assert plan["job_needed"] is False
    # staging on a queue makes its own job
    plan = bios_attributes.bios_plan(current, "dell", job_queue=QUEUE, bios_jobs=[])
    assert plan["stage"] == {"SriovGlobalEnable": "Enabled"} and plan["job_needed"] is False


def test_a_read_only_attribute_that_must_change_is_named_before_anything_is_staged():
    registry = {"RegistryEntries": {"Attributes": [
        {"AttributeName": "SR_IOVSupport_0047", "DisplayName": "SR-IOV Support", "ReadOnly": True,
         "Value": [{"ValueName": "Enabled"}, {"ValueName": "Disabled"}]},
        {"AttributeName": "IntelVTforDirectedI_O_VT_d__1E32", "DisplayName": "Intel VT for Directed I/O (VT-d)",
         "ReadOnly": False, "Value": [{"ValueName": "Enable"}, {"ValueName": "Disable"}]}]}}
    current = {"SR_IOVSupport_0047": "Disabled", "IntelVTforDirectedI_O_VT_d__1E32": "Enable"}
    with pytest.raises(bios_attributes.BiosError) as err:
        bios_attributes.bios_plan(current, "supermicro", registry=registry)
    assert "SR_IOVSupport_0047 is read-only" in str(err.value) and "'Disabled'" in str(err.value)
    # read-only but already as wanted: nothing to stage, no error
    plan = bios_attributes.bios_plan(dict(current, SR_IOVSupport_0047="Enabled"), "supermicro", registry=registry)
    assert plan["stage"] == {} and plan["reset_needed"] is False


BIOS_ONLY = """
- name: Doctor
  hosts: nodes
  gather_facts: false
  tasks:
    - gpufabric.stack.doctor: {layers: [2]}
      register: d
    - ansible.builtin.copy:
        dest: "{{ out }}/{{ inventory_hostname }}.{{ tag }}.json"
        content: "{{ d.results[0] | to_json }}"
      delegate_to: localhost
      changed_when: false
"""


@pytest.mark.slow
@pytest.mark.skipif(not PLAYBOOK_BIN.exists(), reason="ansible-playbook not in this virtualenv")
def test_the_bios_role_schedules_the_job_pending_settings_lack_and_stops_behind_one(tmp_path):
    lab, driver = boot_lab(tmp_path, initial="On")
    lab.start()
    try:
        c = Client(lab, "dell1")
        # a tool staged the wanted values without a job: a reset leaves them
        st, _, _ = c.req("PATCH", SETTINGS, {"Attributes": ALL})
        assert st == 200
        doc = _run(tmp_path, lab, BIOS_ONLY, "-l", "dell1", "-e", "tag=before")
        assert doc.returncode == 0, doc.stdout[-3000:]
        before = json.loads((tmp_path / "out" / "dell1.before.json").read_text())
        conv = _run(tmp_path, lab, "- hosts: nodes\n  gather_facts: false\n  roles: [gpufabric.stack.bios]\n",
                    "-l", "dell1")
        assert conv.returncode == 0, conv.stdout[-4000:]
        job_task = "gpufabric.stack.bios : Schedule the BIOS configuration job that applies the pending settings"
        assert _task_hosts(conv.stdout, job_task) == {"dell1": "changed"}
        assert [e for e in driver.events if "restart" in e[0]] == [("force-restart", "c-dell1")]
        doc = _run(tmp_path, lab, BIOS_ONLY, "-l", "dell1", "-e", "tag=after")
        assert doc.returncode == 0, doc.stdout[-3000:]
        after = json.loads((tmp_path / "out" / "dell1.after.json").read_text())
        queue = c.get(QUEUE)
        jobs = [c.get(m["@odata.id"]) for m in queue["Members"]]
        states = [j["JobState"] for j in jobs]

        # a job scheduled for one setting, another to stage: stop before any change
        c.req("PATCH", SETTINGS, {"Attributes": {"PcieAcsControl": "Enabled"},
                                  "@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"}})
        events = list(driver.events)
        blocked = _run(tmp_path, lab, "- hosts: nodes\n  gather_facts: false\n  roles: [gpufabric.stack.bios]\n",
                       "-l", "dell1", overrides={"dell1": {"bios_iommu": False}})
        pending_after = c.get(SETTINGS)["Attributes"]
    finally:
        lab.stop()
    assert before["status"] == "fail" and before["reason"] == "settings pending with no BIOS configuration job"
    assert after["status"] == "pass", after
    assert states == ["Completed"]
    # the completed job's state as the recorded iDRAC's completed BIOS job reads
    recorded = json.loads((REAL / "dell/redfish/v1/Managers/iDRAC.Embedded.1/Oem/Dell/Jobs/JID_102241909559"
                           / "index.json").read_text())
    done = ("JobState", "Message", "MessageId", "PercentComplete")
    assert {k: jobs[0][k] for k in done} == {k: recorded[k] for k in done}
    data = state.load_bios(tmp_path / "lab/nodes/dell1")
    assert blocked.returncode != 0
    assert "dell1: the BMC's job JID_" in blocked.stdout and "is scheduled to apply" in blocked.stdout
    assert "calvin" not in blocked.stdout
    assert driver.events == events and pending_after == {"PcieAcsControl": "Enabled"}
    assert data["current"]["ProcVirtualization"] == "Enabled"
    assert _recap(conv.stdout)["dell1"]["failed"] == 0


def test_the_doctor_names_a_read_only_attribute_and_a_wanted_value_pending_another_is_staged_again():
    registry = {"RegistryEntries": {"Attributes": [
        {"AttributeName": "SR_IOVSupport_0047", "DisplayName": "SR-IOV Support", "ReadOnly": True,
         "Value": [{"ValueName": "Enabled"}, {"ValueName": "Disabled"}]},
        {"AttributeName": "IntelVTforDirectedI_O_VT_d__1E32", "DisplayName": "Intel VT for Directed I/O (VT-d)",
         "Value": [{"ValueName": "Enable"}, {"ValueName": "Disable"}]}]}}
    answer = {"manufacturer": "Supermicro", "current": {"SR_IOVSupport_0047": "Disabled",
                                                        "IntelVTforDirectedI_O_VT_d__1E32": "Enable"},
              "pending": {}, "registry": registry}
    got = bios_check.check({"bmc": answer}, dict(INTENT, bmc_vendor="supermicro"), "node01")
    assert (got["status"], got["reason"]) == ("fail", "BIOS attribute read-only"), got
    assert "SR_IOVSupport_0047" in got["evidence"][0] and "BIOS setup of node01" in got["remediation"]
    # SR-IOV on now, but a job would turn it off at the reset: staged again
    current = {"SriovGlobalEnable": "Enabled", "ProcVirtualization": "Enabled", "PcieAcsControl": "Disabled"}
    plan = bios_attributes.bios_plan(current, "dell", pending={"SriovGlobalEnable": "Disabled"}, job_queue=QUEUE,
                                     bios_jobs=[])
    assert plan["stage"] == {"SriovGlobalEnable": "Enabled"} and plan["job_needed"] is False
    plan = bios_attributes.bios_plan(current, "dell", pending={"SriovGlobalEnable": "Disabled"}, job_queue=QUEUE,
                                     bios_jobs=[{"id": "JID_2", "state": "Scheduled", "message": ""}])
    assert plan["blocked_by"] == ["JID_2"]


def test_reset_bios_defaults_apply_at_the_next_reset_without_a_job_but_what_is_patched_after_does_not(lab):
    c = Client(lab, "dell1")
    c.req("PATCH", SETTINGS, {"Attributes": ALL, "@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"}})
    reset(c)
    assert {k: c.get(SYS + "/Bios")["Attributes"][k] for k in ALL} == ALL
    st, _, _ = c.req("POST", SYS + "/Bios/Actions/Bios.ResetBios", {})
    assert st == 204 and c.get(SETTINGS)["Attributes"] == {"SriovGlobalEnable": "Disabled",
                                                           "ProcVirtualization": "Disabled",
                                                           "PcieAcsControl": "Enabled"}
    # a value PATCHed after the defaults, without a job, stays pending
    c.req("PATCH", SETTINGS, {"Attributes": {"SysProfile": "PerfOptimized"}})
    reset(c)
    cur = c.get(SYS + "/Bios")["Attributes"]
    assert (cur["SriovGlobalEnable"], cur["PcieAcsControl"]) == ("Disabled", "Enabled")
    assert c.get(SETTINGS)["Attributes"] == {"SysProfile": "PerfOptimized"}
    st, body, _ = c.req("PATCH", SETTINGS, {"Attributes": {"SysProfile": "PerfOptimized"},
                                            "@Redfish.SettingsApplyTime": "OnReset"})
    assert st == 400 and "must be an object" in json.dumps(body)
