# gpuops.node test entry points. `make test` is what CI runs (through .ci/run).
#
#   make venv            create/refresh .venv from tests/requirements.txt
#   make lint            yamllint + ansible-lint (production profile, offline) + changelog-lint
#   make sanity          ansible-test sanity on a copy of the collection (tests/scripts/sanity.sh)
#   make units           pytest tests/unit (pytest.ini: collection importable as ansible_collections.gpuops.node)
#   make browser         pytest tests/browser: rack report pages rendered by headless chromium, checked through
#                        the DOM it builds; full-page screenshots in .build/screenshots/ (needs chromium)
#   make bench           the benchmarks of bench/ (validate.yml on 50 and 200 simulated hosts against
#                        ansible -m ping, the parsers, the report): each prints its ratios, none asserts a time
#   make bench-fleet     validate.yml against ansible -m ping on 50, 200 and 1,000 simulated hosts (~10 minutes)
#   make check           the inner loop: lint, build, sanity, units, browser (no containers)
#   make molecule        every molecule scenario, one after another (molecule test -s NAME)
#   make molecule-NAME   one scenario
#   make molecule-affected  the scenarios a change can break (tests/affected/scenarios.yml), for the files that
#                        differ from AFFECTED_BASE (default HEAD: the work tree's changes)
#   make test            what CI runs: the set-up, then lint build sanity units browser bench, every scenario and
#                        the demo, in two lanes at once (tests/ci_plan.yml, tests/scripts/lanes.py)
#   make images          build the podman base images the scenarios use (localhost/gpuops-base:SUITE)
#   make clean           remove build and test output (keeps .venv and the images)
#   make demo            a virtual rack of simulated GPU nodes (podman containers) rolled out with site.yml;
#                        prints the rack report (simulator/demo.py, layout simulator/demo-layout.yml)
#   make demo-clean      remove the demo containers and .build/demo (keeps the base image)
#
# Variables: PYTEST_ARGS (extra pytest arguments), AFFECTED_BASE, SANITY_EXTRA_ARGS,
# SANITY_TARGET_PYTHONS, IMAGE_SUITES (default: the suites the scenarios use).
# Demo: DEMO_LAYOUT (layout file), DEMO_RACKS ("rack_a=h100*2 rack_b=a100,pcie"), DEMO_FAULT
# (none, or NAME[:KEY=VALUE,...][@NODE]), DEMO_SUITE (base image suite), DEMO_ANSIBLE_ARGS.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test
.NOTPARALLEL:

PYTHON ?= python3
VENV ?= $(CURDIR)/.venv
REQUIREMENTS := tests/requirements.txt
VENV_STAMP := $(VENV)/.requirements.stamp
BIN := $(VENV)/bin
BUILD := $(CURDIR)/.build
TIMED := bash $(CURDIR)/tests/scripts/timed.sh

# Collection search path: the repo itself, through a symlink tree that makes
# the working tree importable as ansible_collections.gpuops.node, and the
# collections bundled in the `ansible` PyPI package (ansible.posix,
# community.general, containers.podman, ...). Recursive (=) so that it is
# evaluated after `venv` has created site-packages.
COLLECTIONS_ROOT := $(BUILD)/collections
COLLECTION_LINK := $(COLLECTIONS_ROOT)/ansible_collections/gpuops/node
SITE_PACKAGES = $(firstword $(wildcard $(VENV)/lib/python3*/site-packages))
export ANSIBLE_COLLECTIONS_PATH = $(COLLECTIONS_ROOT):$(SITE_PACKAGES)
export PATH := $(BIN):$(PATH)
export PY_COLORS ?= 0
export ANSIBLE_FORCE_COLOR ?= 0
export ANSIBLE_NOCOLOR ?= 1
export NO_COLOR ?= 1
# The simulated nodes are podman containers: `podman` connections use simulator/connection_plugins/podman.py
# (containers.podman's connection with pipelining, one `podman exec` a module instead of five).
export ANSIBLE_CONNECTION_PLUGINS := $(CURDIR)/simulator/connection_plugins

# Scenarios live in molecule/ (not extensions/molecule/): tell molecule so.
export MOLECULE_GLOB := molecule/*/molecule.yml
MOLECULE_SCENARIOS := $(sort $(patsubst molecule/%/molecule.yml,%,$(wildcard molecule/*/molecule.yml)))
MOLECULE_TARGETS := $(addprefix molecule-,$(MOLECULE_SCENARIOS))
# A scenario runs once at a time on this host, even across checkouts (its containers have fixed names), and the
# scenarios that mount one apt cache volume (gpuops-apt-SUITE) run one at a time: a lock per scenario and per volume.
MOLECULE_LOCK_DIR ?= /tmp
# Base image suites used by the scenarios (localhost/gpuops-base:SUITE).
IMAGE_SUITES ?= $(or $(sort $(shell sed -n 's/.*localhost\/gpuops-base:\([a-z]*\).*/\1/p' molecule/*/molecule.yml 2>/dev/null)),bookworm)

.PHONY: help venv collection-link lint yamllint ansible-lint changelog-lint sanity units browser bench bench-fleet \
        check images molecule molecule-affected $(MOLECULE_TARGETS) test clean

help:
	@sed -n '1,/^$$/p' $(firstword $(MAKEFILE_LIST)) | sed 's/^# \{0,1\}//'

# ---------------------------------------------------------------- venv
venv: $(VENV_STAMP)

# Re-installs whenever tests/requirements.txt is newer than the stamp.
$(VENV_STAMP): $(REQUIREMENTS)
	@echo "== venv: $(VENV) from $(REQUIREMENTS)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r $(REQUIREMENTS)
	$(BIN)/python -m pip check
	touch $@

collection-link: venv
	@mkdir -p $(dir $(COLLECTION_LINK))
	@if [ "$$(readlink $(COLLECTION_LINK) 2>/dev/null)" != "$(CURDIR)" ]; then \
	  ln -sfn $(CURDIR) $(COLLECTION_LINK); echo "== $(COLLECTION_LINK) -> $(CURDIR)"; fi

# ---------------------------------------------------------------- lint
lint: yamllint ansible-lint changelog-lint

yamllint: venv
	@$(TIMED) yamllint yamllint --strict .

ansible-lint: collection-link
	@$(TIMED) ansible-lint ansible-lint --offline --profile production --strict

changelog-lint: venv
	@$(TIMED) changelog-lint antsibull-changelog lint

# ---------------------------------------------------------------- sanity
sanity: venv
	@$(TIMED) sanity bash tests/scripts/sanity.sh

# ---------------------------------------------------------------- build
# The built collection installs offline (dependencies from the `ansible` package) and documents every module.
build: venv
	@echo "== build: ansible-galaxy collection build + offline install + ansible-doc"
	rm -rf $(BUILD)/dist && mkdir -p $(BUILD)/dist
	cd $(BUILD)/dist && env -u PYTHONPATH ansible-galaxy collection build --output-path . $(CURDIR)
	cd $(BUILD)/dist && env -u PYTHONPATH ANSIBLE_COLLECTIONS_PATH=$(BUILD)/dist/installed:$(SITE_PACKAGES) \
	  ansible-galaxy collection install --offline -p installed gpuops-node-*.tar.gz
	@cd $(BUILD)/dist && modules=$$(ls $(CURDIR)/plugins/modules/*.py | xargs -n1 basename | sed 's/\.py$$//'); \
	for m in $$modules; do \
	  env -u PYTHONPATH ANSIBLE_COLLECTIONS_PATH=$(BUILD)/dist/installed ansible-doc gpuops.node.$$m \
	    | grep -q "installed/ansible_collections/gpuops/node/plugins/modules/$$m.py" \
	    || { echo "build: ansible-doc gpuops.node.$$m failed on the installed collection" >&2; exit 1; }; \
	  echo "   ansible-doc gpuops.node.$$m: ok"; \
	done

# ---------------------------------------------------------------- units
# pytest.ini (the repository root) is the configuration: its pythonpath makes the collection importable as
# ansible_collections.gpuops.node (.build/collections, made by collection-link) and puts the helpers' folders on
# sys.path; its addopts are -p no:cacheprovider -ra. The tests are laid out like the repository (tests/unit/roles,
# tests/unit/playbooks, ...; docs/testing.md). pytest's exit 5 (no tests collected) is a failure here.
units: collection-link
	@$(TIMED) units $(BIN)/python -m pytest tests/unit $(PYTEST_ARGS) \
	  || { rc=$$?; if [ $$rc -eq 5 ]; then echo "units: pytest collected no tests (exit 5): failing" >&2; fi; exit $$rc; }

# ---------------------------------------------------------------- browser
# The rack report page in headless chromium (tests/browser): skipped without chromium, failed without it
# when CI is set. Screenshots: $(BUILD)/screenshots/. Configuration: pytest.ini, as for units. pytest's exit 5 is
# a failure here too.
browser: collection-link
	@$(TIMED) browser $(BIN)/python -m pytest tests/browser $(PYTEST_ARGS) \
	  || { rc=$$?; if [ $$rc -eq 5 ]; then echo "browser: pytest collected no tests (exit 5): failing" >&2; fi; exit $$rc; }

# ---------------------------------------------------------------- bench
# Each benchmark prints its measurements and ratios and never asserts a time; one fails only when what it runs
# does not work. bench_validate: validate.yml against ansible -m ping on 50 and 200 simulated hosts, with
# ./ansible.cfg (bench-fleet adds 1,000 hosts: about 8 minutes more on 2 cores). The second run of site.yml is
# benchmarked in the verify of the role scenarios (bench/second_run.yml).
bench: collection-link
	@for b in bench_device_errors bench_report_html; do $(TIMED) $$b $(BIN)/python bench/$$b.py; done
	@$(TIMED) bench_gather $(BIN)/python bench/bench_gather.py --repeat 2
	@$(TIMED) bench_validate $(BIN)/python bench/bench_validate.py --sizes 50,200

bench-fleet: collection-link
	@$(TIMED) bench_fleet $(BIN)/python bench/bench_validate.py --sizes 50,200,1000

# ---------------------------------------------------------------- molecule
images:
	@for suite in $(IMAGE_SUITES); do $(TIMED) image-$$suite bash tests/images/build-image.sh $$suite; done

molecule: $(MOLECULE_TARGETS)
	@if [ -z "$(MOLECULE_SCENARIOS)" ]; then echo "molecule: no scenarios under molecule/" >&2; exit 1; fi

# The scenarios of tests/affected/scenarios.yml for the files that differ from AFFECTED_BASE; fails when a changed
# file is in no row of the table or nothing differs.
AFFECTED_BASE ?= HEAD
molecule-affected: collection-link images
	@scenarios="$$($(BIN)/python tests/affected/affected.py --base '$(AFFECTED_BASE)')"; \
	for s in $$scenarios; do $(MAKE) --no-print-directory molecule-$$s; done; \
	echo "== molecule-affected: passed: $${scenarios:-no scenario uses the changed files}" | tr '\n' ' '; echo

$(MOLECULE_TARGETS): molecule-%: collection-link images
	@locks="flock $(MOLECULE_LOCK_DIR)/gpuops-node-molecule-$*.lock"; \
	for volume in $$(grep -o 'gpuops-apt-[a-z]*' molecule/$*/molecule.yml | sort -u || true); do \
	  locks="$$locks flock $(MOLECULE_LOCK_DIR)/gpuops-node-$$volume.lock"; done; \
	$(TIMED) molecule-$* $$locks molecule test -s $*

# ---------------------------------------------------------------- all
# The inner loop: everything that needs no container. Prerequisites run in order; make stops at the first failure.
check: lint build sanity units browser
	@echo "== make check: lint, build, sanity, units and browser passed"

# The set-up first (host packages, venv, images); then the stages of tests/ci_plan.yml in two lanes at once (one
# lane's waits are the other's work time). The plan holds every stage of check and bench, every scenario and the
# demo (tests/unit/ci/test_ci_plan.py). The stages one after another: make check bench molecule demo-check.
test: host collection-link images
	@$(BIN)/python tests/scripts/lanes.py
	@echo "== make test: lint, build, sanity, units, browser, bench, molecule ($(MOLECULE_SCENARIOS)) and the demo passed"

clean:
	rm -rf $(BUILD)/collections $(BUILD)/sanity $(BUILD)/sanity-bin tests/output .pytest_cache

# ---------------------------------------------------------------- demo
# `make demo` on a fresh Debian/Ubuntu machine, as root: installs podman, runc, debootstrap and
# python3-venv when missing, sets podman's runtime to runc, creates the venv, builds the base image when
# absent, brings up the rack of simulator/demo-layout.yml (or DEMO_RACKS / DEMO_FAULT), runs site.yml
# and prints the rack report. Exit 0 only when every node is provisioned except the node with the
# injected fault, held back by exactly that fault. Reuses running demo containers.
DEMO_LAYOUT ?= simulator/demo-layout.yml
DEMO_RACKS ?=
DEMO_FAULT ?=
DEMO_SUITE ?= bookworm
DEMO_ANSIBLE_ARGS ?=
.PHONY: demo demo-check host demo-clean

demo: host collection-link
	@$(BIN)/python simulator/demo.py up --layout '$(DEMO_LAYOUT)' --racks '$(DEMO_RACKS)' \
	  --fault '$(DEMO_FAULT)' --suite '$(DEMO_SUITE)' -- $(DEMO_ANSIBLE_ARGS)

# ---------------------------------------------------------------- host
# What `make demo` and `make test` need from the machine (as root on Debian/Ubuntu): apt packages when a
# tool is missing, and podman's runtime set to runc (crun fails on hybrid cgroup hosts).
# prometheus: for promtool, which checks and tests the dcgm role's alert rules (make units)
# chromium: the headless browser that renders the rack report page (make browser)
# dnf, dnf-plugins-core, rpm, createrepo-c: a modular stand-in of NVIDIA's RHEL repository, read by a real dnf
# in an --installroot (tests/unit/repos/test_rhel_repo.py)
HOST_APT_PACKAGES := podman runc debootstrap make rsync git shellcheck util-linux python3 python3-venv ca-certificates tar \
                     apt-utils gpg prometheus chromium dnf dnf-plugins-core rpm createrepo-c
HOST_TOOLS := podman runc debootstrap rsync git shellcheck flock python3 apt-ftparchive gpg promtool chromium \
              dnf rpmbuild createrepo_c

host:
	@missing=""; \
	for tool in $(HOST_TOOLS); do command -v $$tool >/dev/null 2>&1 || missing="$$missing $$tool"; done; \
	if [ ! -x $(BIN)/python ] && ! dpkg -s python3-venv >/dev/null 2>&1; then missing="$$missing python3-venv"; fi; \
	if [ -n "$$missing" ]; then \
	  echo "[host] installing packages (missing:$$missing): $(HOST_APT_PACKAGES)"; \
	  if [ "$$(id -u)" -ne 0 ]; then echo "[host] apt-get needs root" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-upgrade $(HOST_APT_PACKAGES); \
	else \
	  echo "[host] packages present ($(HOST_TOOLS))"; \
	fi
	@$(PYTHON) simulator/demo.py host

# The demo as a test: it exits non-zero unless every node is provisioned but the faulty one, held back by
# exactly its fault; the rack is removed afterwards either way.
demo-check: host collection-link
	@rc=0; $(TIMED) demo $(BIN)/python simulator/demo.py up --layout '$(DEMO_LAYOUT)' --suite '$(DEMO_SUITE)' || rc=$$?; \
	$(PYTHON) simulator/demo.py clean; exit $$rc

demo-clean:
	@$(PYTHON) simulator/demo.py clean
