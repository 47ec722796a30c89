# trainstack.cluster developer entry points. `make lab` and `make test` are the two set-up commands.
SHELL := /bin/bash
VENV ?= .venv
PY ?= python3
LAB_NODES ?= 2
LAB_DISTRO ?= 12
export PATH := $(abspath $(VENV))/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/collections

.PHONY: lab lab-down lab-shell site test lint sanity units molecule bench venv core-floor host-deps clean clean-host

$(VENV)/.installed: requirements-dev.txt
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

## The oldest ansible-core the collection supports (meta/runtime.yml), for tests/unit/playbooks/test_core_floor.py.
.venv-core-floor/bin/ansible-playbook: requirements-core-floor.txt
	scripts/core-floor-venv

core-floor: .venv-core-floor/bin/ansible-playbook

## Bring up the container lab, converge it with site.yml (PyTorch from a wheelhouse filled first), run the
## acceptance suite on it (report in ./acceptance-results/<run id>, latest links the newest), print what was built.
lab: venv
	scripts/lab up $(LAB_NODES) $(LAB_DISTRO)
	ansible-playbook -i inventories/lab playbooks/pytorch_wheelhouse.yml
	ansible-playbook -i inventories/lab site.yml
	ansible-playbook -i inventories/lab playbooks/validate.yml
	scripts/lab summary

lab-down:
	scripts/lab down

## A shell on a lab node: make lab-shell (the controller), make lab-shell NODE=node1.
NODE ?= ctl
lab-shell:
	docker exec -it $(or $(LAB_PREFIX),ts)-$(NODE) bash -l

## site.yml on the lab again with the collection's own tools, e.g. make site ARGS="--check --diff".
site: venv
	ansible-playbook -i inventories/lab site.yml $(ARGS)

## Remove what make lab / make test put on this host: lab containers, network and images, the image and
## apt caches, the dockerd and apt-cacher-ng they started, and the Debian packages they installed.
clean-host:
	scripts/lab clean-host

## Debian packages the tests use as references: shellcheck (ansible-test sanity), slurm-client (scontrol,
## hostlist differential tests), slurmd + hwloc (slurmd -C / CPU map checks), autoconf + automake (the NHC build
## the NHC check tests run in). Installed when root;
## otherwise listed, and the tests that need them are reported as skipped.
HOST_PACKAGES := shellcheck slurm-client slurmd hwloc autoconf automake
host-deps:
	@missing=$$(for p in $(HOST_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" -eq 0 ]; then \
	  echo "host-deps: installing" $$missing; \
	  apt-get update -q >/dev/null || true; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null; \
	else \
	  echo "host-deps: not root, missing:" $$missing "(their tests will be reported as skipped)" >&2; \
	fi

## Every test layer: yamllint, ansible-lint, ansible-test sanity, pytest units, molecule.
test: venv core-floor host-deps
	scripts/test

lint: venv
	scripts/test yamllint ansible-lint

sanity: venv host-deps
	scripts/test sanity

units: venv core-floor host-deps
	scripts/test units

molecule: venv
	scripts/test molecule

## Benchmarks: print figures, assert nothing.
bench: venv
	@for b in tests/bench/bench_*.py; do echo "== $$b"; $(VENV)/bin/python $$b || exit 1; done

clean:
	rm -rf tests/output .pytest_cache
