# gpufabric.stack: the two commands a user needs are `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV    ?= .venv
PY      := $(VENV)/bin/python
BIN     := $(VENV)/bin
LAB     ?= demo
NODES   ?= 4
SWITCHES ?= 2
TWIN_INV := out/inventories/$(LAB)

export CONTAINERS_CONF := $(CURDIR)/simlab/containers.conf
export ANSIBLE_CONFIG  := $(CURDIR)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.build
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: help setup image demo demo-vm demo-down render bench test unit twin-test vm-test molecule molecule-default lint sanity build clean

help:
	@echo "make demo   - set up, bring up a 4-node 2-switch twin rack, run site.yml and validate.yml"
	@echo "make demo-vm - the same on 2 VM nodes with a real kernel and igb SR-IOV NICs (layers 1-6, 9, 10)"
	@echo "make test   - set up, then every tier: unit, ansible-lint, sanity, twin, VM nodes, Molecule; the time of each"
	@echo "              at the end (docs/testing.md; pytest -m layer08 runs what covers one layer)"
	@echo "make setup  - host packages (podman, runc, fuse3, debootstrap) and the Python venv"
	@echo "make image  - build the node images: the twin's (podman) and the VM nodes' (QEMU tree, guest disk)"
	@echo "make demo-down - remove the demo twin rack"
	@echo "make bench  - time ping, converge, no-change re-run, validate and roce_switch on twin racks (SIZES=\"8 32 64\" RUNS=3 MITOGEN=1);"
	@echo "              writes bench/results/<date>.json and docs/performance.md (not part of make test)"
	@echo "make render - write what the Kubernetes layers would apply to out/rendered/{example,twin}/ (applies nothing)"

# --- set-up -------------------------------------------------------------------
setup: $(VENV)/.installed .build/ansible_collections/gpufabric/stack

$(VENV)/.installed: requirements.txt scripts/setup-host.sh
	scripts/setup-host.sh
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

.build/ansible_collections/gpufabric/stack:
	mkdir -p .build/ansible_collections/gpufabric
	ln -sfn ../../.. $@

# The twin's node image (podman) and the VM nodes' images (QEMU tree, guest
# disk under out/vm); each tier depends on the one it uses.
image: image-twin image-vm

image-twin: setup
	$(PY) -m simlab image --kind twin

image-vm: setup
	$(PY) -m simlab image --kind vm

# --- demo ----------------------------------------------------------------------
demo: image-twin
	$(PY) -m simlab up --name $(LAB) --nodes $(NODES) --switches $(SWITCHES) --inventory $(TWIN_INV)
	$(BIN)/ansible-playbook -i $(TWIN_INV)/hosts.yml playbooks/site.yml
	$(BIN)/ansible-playbook -i $(TWIN_INV)/hosts.yml playbooks/validate.yml

demo-down: setup
	$(PY) -m simlab down --name $(LAB)
	$(PY) -m simlab down --name $(VMLAB)

# --- demo on VM nodes (real kernel) -----------------------------------------------
# Two Debian 12 VMs from the factory image: site.yml takes them through BIOS
# VT-d (a Redfish reset that restarts QEMU with the IOMMU), the kernel command
# line (a real GRUB reboot), igb SR-IOV VFs, Soft-RoCE, the ib_write_bw check
# and containerd; then the doctor.
VMLAB    ?= vmdemo
VM_INV   := out/inventories/$(VMLAB)
VM_LAYERS := layer01,layer02,layer03,layer04,layer05,layer06,layer08,layer09,layer10

demo-vm: image-vm
	$(PY) -m simlab up --kind vm --name $(VMLAB) --nodes 2 --inventory $(VM_INV)
	$(BIN)/ansible-playbook -i $(VM_INV)/hosts.yml playbooks/site.yml --tags $(VM_LAYERS)
	$(BIN)/ansible-playbook -i $(VM_INV)/hosts.yml playbooks/validate.yml

# --- render mode ---------------------------------------------------------------
# Every config and object the Kubernetes layers would install or apply, one
# object per file, for the example inventory and for a twin rack's inventory
# (generated without starting the twin). Nothing is applied, no host contacted.
RENDER_INV := out/inventories/render

render: setup
	$(PY) -m simlab inventory --name render --nodes $(NODES) --switches $(SWITCHES) --inventory $(RENDER_INV)
	$(BIN)/ansible-playbook -i inventories/example/hosts.yml playbooks/render.yml \
		-e gpufabric_render_dir=$(CURDIR)/out/rendered/example
	$(BIN)/ansible-playbook -i $(RENDER_INV)/hosts.yml playbooks/render.yml \
		-e gpufabric_render_dir=$(CURDIR)/out/rendered/twin

# --- benchmarks ------------------------------------------------------------------
# Twin racks of each size in turn, one at a time, taken down at the end.
SIZES   ?= 8 32 64
RUNS    ?= 3
MITOGEN ?=

bench: image-twin
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-bench.txt
	$(PY) -m bench.run --sizes "$(SIZES)" --runs $(RUNS) $(if $(MITOGEN),--mitogen)
	$(PY) bench/report.py

# --- tests ---------------------------------------------------------------------
# Every tier, each timed: scripts/test-tiers.sh prints the time of each at the
# end (docs/testing.md says what each covers and costs). The node images are
# built side by side with the unit tests (downloads and disk against CPU); the
# Molecule default scenario runs as soon as the twin's image is there, and
# ansible-lint and sanity once the VM images are (on a fresh machine the twin's
# image and Molecule are the longer chain); the labs' tiers follow one at a
# time: run side by side, the twin tier's two workers starved the emulated
# VMs, whose converge took three times as long, and the whole was no shorter
# (docs/testing.md).
TIERS ?= image-twin,molecule-default+image-vm,lint,sanity+unit twin-test vm-test

test: setup
	scripts/test-tiers.sh $(TIERS)

# Two workers: the unit tests are independent of each other (tmp_path only);
# each test file on one worker, so a module's fixtures (the renders of the
# Kubernetes layers) run once, not once per worker.
unit: setup
	$(BIN)/pytest -q -n 2 --dist loadfile --durations 15 tests/unit

# Two workers, each test file on one of them (module labs stay whole), the
# files in tests/integration/conftest.py's order (longest first); each
# worker brings up its own session rack. A twin test that cannot run fails
# here (SIMLAB_REQUIRED=1) instead of being skipped.
twin-test: image-twin
	SIMLAB_REQUIRED=1 $(BIN)/pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations 15 tests/integration

# The VM nodes: one lab per test module, tests in order (converge, re-run,
# the vm_nodes scenario's testinfra checks, doctor, faults); CPU-bound
# emulation, so no parallel workers.
vm-test: image-vm
	SIMLAB_REQUIRED=1 $(BIN)/pytest -q --durations 15 tests/vm

# Every Molecule scenario, whole. make test runs the default scenario whole
# (molecule-default) and the verifiers of host_bringup and vm_nodes on the labs
# the twin and VM tiers converge the same way (tests/integration/test_host_layers_twin.py,
# tests/vm/test_vm_nodes.py), instead of converging two more labs from factory.
SCENARIOS ?= default host_bringup vm_nodes

molecule: image
	SIMLAB_IMAGE=$$($(PY) -m simlab image) $(BIN)/molecule test $(foreach s,$(SCENARIOS),-s $(s))

molecule-default: image-twin
	SIMLAB_IMAGE=$$($(PY) -m simlab image) $(BIN)/molecule test -s default

lint: setup
	$(BIN)/ansible-lint --profile production playbooks roles

sanity: setup
	scripts/sanity.sh

build: setup
	$(BIN)/ansible-galaxy collection build --force --output-path out/

clean:
	rm -rf .build out reports
