# trainstack.cluster developer entry points. `make lab` and `make test` are the two set-up commands.
SHELL := /bin/bash
VENV ?= .venv
PY ?= python3
LAB_NODES ?= 2
LAB_DISTRO ?= 12
export PATH := $(abspath $(VENV))/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/collections

.PHONY: lab lab-down test lint sanity units molecule bench venv host-deps clean

$(VENV)/.installed: requirements-dev.txt
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

## Bring up the container lab, converge it with site.yml, print what was built.
lab: venv
	scripts/lab up $(LAB_NODES) $(LAB_DISTRO)
	ansible-playbook -i inventories/lab site.yml
	scripts/lab summary

lab-down:
	scripts/lab down

## Every test layer: yamllint, ansible-lint, ansible-test sanity, pytest units, molecule.
test: venv
	scripts/test

lint: venv
	scripts/test yamllint ansible-lint

sanity: venv
	scripts/test sanity

units: venv
	scripts/test units

molecule: venv
	scripts/test molecule

## Benchmarks: print figures, assert nothing.
bench: venv
	@for b in tests/bench/bench_*.py; do echo "== $$b"; $(VENV)/bin/python $$b || exit 1; done

clean:
	rm -rf tests/output .pytest_cache
