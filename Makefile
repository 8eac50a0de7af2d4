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

.PHONY: help setup image demo demo-down test unit twin-test molecule lint sanity build clean

help:
	@echo "make demo   - set up, bring up a 4-node 2-switch twin rack, run site.yml and validate.yml"
	@echo "make test   - set up, then every test: unit, twin, molecule, ansible-lint, ansible-test sanity"
	@echo "make setup  - host packages (podman, runc, fuse3, debootstrap) and the Python venv"
	@echo "make image  - build the twin node image"
	@echo "make demo-down - remove the demo twin rack"

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

image: setup
	$(PY) -m simlab image

# --- demo ----------------------------------------------------------------------
demo: image
	$(PY) -m simlab up --name $(LAB) --nodes $(NODES) --switches $(SWITCHES) --inventory $(TWIN_INV)
	$(BIN)/ansible-playbook -i $(TWIN_INV)/hosts.yml playbooks/site.yml
	$(BIN)/ansible-playbook -i $(TWIN_INV)/hosts.yml playbooks/validate.yml

demo-down: setup
	$(PY) -m simlab down --name $(LAB)

# --- tests ---------------------------------------------------------------------
test: image unit twin-test molecule lint sanity

unit: setup
	$(BIN)/pytest -q tests/unit

twin-test: image
	$(BIN)/pytest -q tests/integration

molecule: image
	SIMLAB_IMAGE=$$($(PY) -m simlab image) $(BIN)/molecule test -s default

lint: setup
	$(BIN)/ansible-lint --profile production playbooks roles

sanity: setup
	scripts/sanity.sh

build: setup
	$(BIN)/ansible-galaxy collection build --force --output-path out/

clean:
	rm -rf .build out reports
