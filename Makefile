# Two entry points do all set-up on a fresh machine:
#   make demo   installs neardup in .venv and de-duplicates the bundled demo corpus
#   make test   installs neardup with its test dependencies in .venv and runs the tests
# While working: make test-fast (everything but the marked lanes, in a few minutes), or one
# lane: .venv/bin/python -m pytest -m ray (lanes: the markers in pyproject.toml).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
# The installer: uv (from PyPI, put into the venv by pip at the version constraints.txt
# pins) installs the same pinned set as pip in a fraction of its time and compiles no
# bytecode up front (each module is compiled when first imported); INSTALLER=pip for pip.
# uv reads none of pip's settings: unless UV_FIND_LINKS is set, it gets pip's find-links
# (PIP_FIND_LINKS, else pip's configuration; this project's machines keep the CPU build
# of torch there). Decision 0042, docs/testing.md.
INSTALLER ?= uv
ifeq ($(INSTALLER),uv)
FIND_LINKS = $${UV_FIND_LINKS:-$$(echo $${PIP_FIND_LINKS:-$$($(PY) -m pip config get global.find-links 2>/dev/null)} | xargs | tr ' ' ',')}
INSTALL = UV_FIND_LINKS="$(FIND_LINKS)" $(VENV)/bin/uv pip install -q --python $(PY)
INSTALLER_BIN := $(VENV)/bin/uv
else
INSTALL = $(PIP) install
INSTALLER_BIN :=
endif
OUT ?= out
# pytest-xdist workers: one per logical CPU. worksteal: each worker takes half the tests,
# longest files first (tests/durations.py), and an idle one takes the other's last ones.
# The Ray tests share one cluster per worker (tests/conftest.py's ray_cluster).
# PYTHONDONTWRITEBYTECODE cleared: the Python processes the tests start (xdist and Ray
# workers, CLI subprocesses) then compile neardup once, not each one again.
WORKERS ?= logical
PYTEST := HF_HUB_OFFLINE=1 PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(WORKERS) --dist worksteal
LANES := slow or ray or neural or train or browser or faults

.PHONY: demo test test-fast test-durations install install-test bench clean browser docs

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/bin/uv: | $(VENV)/bin/python
	$(PIP) install -c constraints.txt uv

$(VENV)/.installed: pyproject.toml constraints.txt | $(VENV)/bin/python $(INSTALLER_BIN)
	$(INSTALL) -c constraints.txt -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(INSTALL) -c constraints.txt -e '.[test,bench,neural,train,ray,serve,llm,docs]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: install
	$(VENV)/bin/neardup dedup --id-field id --date-field date \
		--clusters-out $(OUT)/demo-clusters.parquet \
		--pairs-out $(OUT)/demo-pairs.parquet \
		--out $(OUT)/demo-deduped.jsonl \
		--report $(OUT)/demo-report.json
	@echo "The default's accuracy against the demo corpus's labels (ARI: 1 is perfect)."
	@echo "The default (--method auto) runs rerank up to 10,000 documents, minhash above: docs/choosing-a-method.md"
	HF_HUB_OFFLINE=1 $(VENV)/bin/neardup eval \
		"$$($(PY) -c 'from neardup.data import demo_corpus_path; print(demo_corpus_path())')"

# Headless Chromium for the report's browser tests (they skip, saying why, without it).
# Never fails the build: where apt is unavailable the tests are skipped instead.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
		(DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null 2>&1 || \
		 (apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null 2>&1) || \
		 echo "skipping browser install: no chromium and apt-get cannot install it") || true

# The whole suite (what CI runs), on every core, with the 25 slowest tests listed.
test: install-test browser
	$(PYTEST) --durations=25

# Everything but the marked lanes ($(LANES)).
test-fast: install-test
	$(PYTEST) --durations=10 -m "not ($(LANES))"

# The whole suite, recording each file's seconds in tests/durations.json (which orders the
# files, longest first): after adding or reshaping slow tests.
test-durations: install-test browser
	$(PYTEST) --durations=25 --record-durations

# The documentation site (mkdocs.yml) into site/; broken links or references fail the build.
docs: install-test
	$(PY) -m mkdocs build --strict --site-dir site

# The benchmark suite (benchmarks/README.md): smoke by default, or CONFIG=100k, 1m, 10m.
CONFIG ?= smoke
bench: install-test
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks run $(CONFIG)

clean:
	rm -rf $(VENV) $(OUT) build *.egg-info .pytest_cache
