"""Layer 15 in render mode: ansible-playbook renders the MPIJob for
inventories/example into gpufabric_render_dir (nothing is contacted), and
the object validates against the kubeflow.org MPIJob v2beta1 CRD schema,
with the NCCL environment of the fabric intent, IPC_LOCK, a memory-backed
/dev/shm and one VF per rail."""

import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.reference import CRDS

pytestmark = pytest.mark.layers(15)

REPO = Path(__file__).resolve().parents[2]
INVENTORY = REPO / "inventories" / "example" / "hosts.yml"
TENANTS = (yaml.safe_load((REPO / "inventories/example/group_vars/all/kubernetes.yml").read_text())
           if (REPO / "inventories/example/group_vars/all/kubernetes.yml").exists() else {}).get(
    "gpufabric_tenants") or [{"namespace": "default"}]
PLAY = """
- name: Layer 15
  hosts: gpu_workers
  gather_facts: false
  roles:
    - role: gpufabric.stack.nccl_validate
"""


def run(tmp_path, *extra):
    (tmp_path / "play.yml").write_text(PLAY)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PYTHONPATH=str(REPO))
    return subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(INVENTORY),
                           str(tmp_path / "play.yml"), "-e", "gpufabric_render_dir=%s" % (tmp_path / "out"),
                           "-e", "ansible_python_interpreter=%s" % sys.executable, *extra],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("render")
    proc = run(tmp)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    files = sorted((tmp / "out").rglob("*.yaml"))
    # the MPIJob runs in the first tenant's namespace, where layer 14 put the SR-IOV networks
    ns = TENANTS[0]["namespace"]
    assert [f.relative_to(tmp / "out").as_posix() for f in files] == ["15-nccl_validate/mpijob-%s-nccl-allreduce.yaml" % ns]
    docs = list(yaml.safe_load_all(files[0].read_text()))
    assert len(docs) == 1
    inv = yaml.safe_load(INVENTORY.read_text())
    workers = {}
    for pool in inv["all"]["children"]["gpu_workers"]["children"].values():
        workers.update(pool["hosts"])
    return docs[0], sorted(workers), proc


def crd_schema():
    crd = yaml.safe_load((CRDS / "kubeflow.org_mpijobs.yaml").read_text())
    version = [v for v in crd["spec"]["versions"] if v["name"] == "v2beta1"][0]
    return crd, version["schema"]["openAPIV3Schema"]


def unknown_fields(obj, schema, path="$"):
    """Fields the structural schema does not declare (the API server would
    prune them silently)."""
    out = []
    if isinstance(obj, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if schema.get("x-kubernetes-preserve-unknown-fields") or (props is None and extra is None):
            return out          # an open object (metadata is one): the API server checks it
        for k, v in obj.items():
            if props and k in props:
                out += unknown_fields(v, props[k], "%s.%s" % (path, k))
            elif isinstance(extra, dict):
                out += unknown_fields(v, extra, "%s.%s" % (path, k))
            elif extra is not True:
                out.append("%s.%s" % (path, k))
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(obj):
            out += unknown_fields(v, schema["items"], "%s[%d]" % (path, i))
    return out


def test_mpijob_validates_against_the_crd(rendered):
    job, _, _ = rendered
    crd, schema = crd_schema()
    assert job["apiVersion"] == "%s/v2beta1" % crd["spec"]["group"] and job["kind"] == crd["spec"]["names"]["kind"]
    jsonschema.validate(job, schema)
    assert unknown_fields(job, schema) == []
    # a wrong field type is caught, so the validation above means something
    bad = dict(job, spec=dict(job["spec"], slotsPerWorker="eight"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    assert unknown_fields(dict(job, spec=dict(job["spec"], slotPerWorker=8)), schema) == ["$.spec.slotPerWorker"]


def env_of(container):
    return {e["name"]: e["value"] for e in container.get("env", [])}


def test_nccl_environment_from_the_intent(rendered):
    job, _, _ = rendered
    specs = job["spec"]["mpiReplicaSpecs"]
    launcher = specs["Launcher"]["template"]["spec"]["containers"][0]
    worker = specs["Worker"]["template"]["spec"]["containers"][0]
    intent = yaml.safe_load((REPO / "inventories/example/group_vars/all/fabric.yml").read_text())["gpufabric_roce"]
    for c in (launcher, worker):
        env = env_of(c)
        assert env["NCCL_IB_TC"] == str((intent["dscp"] << 2) | 2) == "106"
        assert env["NCCL_IB_GID_INDEX"] == "3" and env["NCCL_SOCKET_IFNAME"] == "eth0"
        assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_IB_HCA"]
    # mpirun forwards every NCCL variable of the launcher to the ranks
    cmd = launcher["args"][0]
    for name in env_of(launcher):
        if name.startswith("NCCL_"):
            assert "-x %s " % name in cmd
    assert "/opt/nccl_tests/build/all_reduce_perf -b 1G -e 8G -f 2 -g 1 -c 1" in cmd
    assert env_of(launcher)["OMPI_ALLOW_RUN_AS_ROOT"] == "1"


def test_workers_take_vfs_gpus_ipc_lock_and_shm(rendered):
    job, workers, _ = rendered
    spec = job["spec"]
    assert spec["mpiReplicaSpecs"]["Worker"]["replicas"] == len(workers) == 8
    assert spec["slotsPerWorker"] == 8
    np_ = int(spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"][0]
              .split("-np ")[1].split()[0])
    assert np_ == spec["slotsPerWorker"] * len(workers)
    pod = spec["mpiReplicaSpecs"]["Worker"]["template"]
    c = pod["spec"]["containers"][0]
    assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    shm = [m for m in c["volumeMounts"] if m["mountPath"] == "/dev/shm"]
    assert len(shm) == 1
    vol = [v for v in pod["spec"]["volumes"] if v["name"] == shm[0]["name"]][0]
    assert vol["emptyDir"]["medium"] == "Memory"
    nics = yaml.safe_load((REPO / "inventories/example/group_vars/gpu_workers.yml").read_text())
    rails = ["openshift.io/%s%d" % (nics["gpufabric_nics"][0]["resource_prefix"], r)
             for r in range(nics["gpufabric_nics_per_node"])]
    for part in ("limits", "requests"):
        res = c["resources"][part]
        assert res["nvidia.com/gpu"] == 8
        assert sorted(k for k in res if k != "nvidia.com/gpu") == rails
        assert all(res[r] == 1 for r in rails)
    assert job["metadata"]["namespace"] == TENANTS[0]["namespace"]
    # the NetworkAttachmentDefinitions layer 14 creates in that namespace: <namespace>-gpu-rail<r>
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == ",".join(
        "%s-%s" % (TENANTS[0]["namespace"], r.split("/")[1].replace("_", "-")) for r in rails)
    aff = pod["spec"]["affinity"]
    terms = aff["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == workers
    assert aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == \
        "kubernetes.io/hostname"


def sections(stdout):
    """{task name: [result lines]} from the default callback's output."""
    out, name = {}, None
    for line in stdout.splitlines():
        if line.startswith("TASK ["):
            name = line[6:line.index("]")]
            out[name] = []
        elif name and line.split(":")[0] in ("ok", "changed", "skipping", "fatal", "failed"):
            out[name].append(line)
    return out


def test_render_applies_nothing(rendered):
    """No task reached a node (the example inventory's addresses do not
    exist), nothing ran or was applied; only the file was written."""
    _, workers, proc = rendered
    assert "UNREACHABLE" not in proc.stdout
    tasks = sections(proc.stdout)
    facts = tasks["gpufabric.stack.nccl_validate : Read the NICs of the node, unless the doctor's reading of it is "
                  "given"]
    assert len(facts) == len(workers) and all(line.startswith("skipping:") for line in facts)
    assert not [t for t in tasks if "Run all_reduce_perf" in t or "Apply the MPIJob" in t]
    changed = [(t, line) for t, lines in tasks.items() for line in lines if line.startswith("changed")]
    assert [t for t, _ in changed] == ["gpufabric.stack.nccl_validate : Create the layer 15 render directory",
                                       "gpufabric.stack.nccl_validate : Render the MPIJob"]
    assert all("-> localhost" in line for _, line in changed)


@pytest.mark.parametrize("extra,message", [
    ('{"gpufabric_roce": {"dscp": 99}}', "gpufabric_roce.dscp=\"99\" is not a DSCP (0-63)"),
    ('{"nccl_validate_efficiency": 3}', "nccl_validate_efficiency=3 is not in (0, 1.5]"),
    ('{"nccl_validate_max_bytes": "8 gigs"}', 'nccl_validate_max_bytes="8 gigs" is not a size'),
    ('{"nccl_validate_job_name": "NCCL_Job"}', 'nccl_validate_job_name="NCCL_Job" is not a Kubernetes name'),
])
def test_bad_input_fails_before_rendering(tmp_path, extra, message):
    proc = run(tmp_path, "-e", extra)
    assert proc.returncode != 0
    assert message in proc.stdout and "gpu-a01: " in proc.stdout
    assert not (tmp_path / "out").exists()


DOCTOR = """
- name: Layer 15 check
  hosts: nodes
  gather_facts: false
  tasks:
    - name: Check
      ansible.builtin.include_role:
        name: gpufabric.stack.nccl_validate
        tasks_from: doctor
    - name: Keep the verdict
      ansible.builtin.copy:
        content: "{{ doctor_fabric.results | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost
"""


@pytest.mark.parametrize("recorded", [True, False])
def test_check_reads_the_last_run_in_k8s_mode(tmp_path, recorded):
    """Where the doctor does not run the test (k8s mode) it gates the last
    recorded run: nodes of that run get its verdict, others and a rack with
    no recorded run are skipped, and so is a node without GPUs (the first
    of the play), whatever was recorded."""
    import json
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.nccl_validate import nccl_validate as NV
    (tmp_path / "hosts.yml").write_text(
        "all:\n  children:\n    nodes:\n      hosts:\n        cpu-a00: {ansible_connection: local, gpu_count: 0}\n"
        "        gpu-a01: {ansible_connection: local}\n"
        "        gpu-a02: {ansible_connection: local}\n        gpu-a03: {ansible_connection: local}\n")
    (tmp_path / "doctor.yml").write_text(DOCTOR)
    last = tmp_path / "last.json"
    if recorded:
        plan = NV.plan({"gpu-a01": {"pfs": None, "nics": []}, "gpu-a02": {"pfs": None, "nics": []}},
                       {"dscp": 26}, {"mode": "k8s", "expected_busbw_gbs": 100})
        log = ("gpu-a01:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
               "  1073741824     268435456     float     sum      -1    10776   99.64  186.83      0    10781   99.60  "
               "186.75      0\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 186.79 \n")
        last.write_text(json.dumps({"plan": plan, "gate": NV.gate_output(log, 100, 0.85), "output": log}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"),
               ANSIBLE_NOCOLOR="1", PYTHONPATH=str(REPO))
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(tmp_path / "hosts.yml"),
                           str(tmp_path / "doctor.yml"), "-e", "out=%s" % tmp_path, "-e", "nccl_validate_mode=k8s",
                           "-e", "nccl_validate_result_file=%s" % last, "-e", '{"gpufabric_roce": {"dscp": 26}}',
                           "-e", "ansible_python_interpreter=%s" % sys.executable],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    got = {}
    for h in ("cpu-a00", "gpu-a01", "gpu-a02", "gpu-a03"):
        (got[h],) = json.loads((tmp_path / ("%s.json" % h)).read_text())   # one record, the action's
    assert all(r["layer"] == 15 and r["name"] == "nccl_validate" for r in got.values())
    cpu = got.pop("cpu-a00")
    assert (cpu["status"], cpu["reason"]) == ("skipped", "not applicable: cpu-a00 has no GPUs "
                                                         "(nccl_validate_gpus_per_node 0)")
    assert cpu["evidence"] == ["nccl_validate_gpus_per_node=0 (gpu_count)"]
    assert cpu["remediation"] == "none; layer 15 runs on GPU nodes"
    if recorded:
        assert got["gpu-a01"]["status"] == got["gpu-a02"]["status"] == "fail"
        assert got["gpu-a01"]["reason"] == "NCCL used NET/Socket instead of NET/IB"
        assert got["gpu-a03"]["status"] == "skipped"
        assert got["gpu-a03"]["reason"] == "not in the last NCCL run (gpu-a01, gpu-a02)"
        assert got["gpu-a03"]["evidence"] == [str(last)]
        assert got["gpu-a03"]["remediation"] == "run site.yml --tags layer15"
    else:
        assert {r["status"] for r in got.values()} == {"skipped"}
        assert got["gpu-a01"]["reason"] == "no NCCL run recorded"
        assert got["gpu-a01"]["evidence"] == ["%s does not exist" % last]
        assert got["gpu-a01"]["remediation"] == "run site.yml --tags layer15"
