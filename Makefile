# Two commands do all set-up on a fresh machine:
#   make test   - virtual environment, project + test extras, control plane build, full test suite
#   make demo   - the same set-up, then the agent syncing sample-repo/ into a local control plane
#   make bench  - the same set-up plus the bench extra, then the benchmark (BENCHMARKS.md)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
# make test: pytest-xdist workers, each with a control plane of its own (tests/conftest.py says why
# they never share one). The tests mostly wait on the agent and the control plane, so more workers
# than cores pay off; TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 4
XDIST := -n $(TEST_WORKERS) --dist loadgroup

.PHONY: test demo cluster unit unit-under-load mutation clean lock bench docs screenshots image image-check dist

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[test]'
	touch $@

cluster: $(VENV)/.installed
	$(PY) -m tests.cluster build

test: cluster
	bash scripts/test-deps.sh
	$(PY) -m pytest -v --durations=15 $(XDIST) $(PYTEST_ARGS)

unit: $(VENV)/.installed
	$(PY) -m pytest -v tests/unit $(PYTEST_ARGS)

# unit-under-load - the unit tests twice at once on 4 workers each, 5 rounds (ROUNDS, WORKERS):
# fails when any run fails, as a test that races the clock would under load (docs/development.md)
unit-under-load: $(VENV)/.installed
	PY=$(PY) bash scripts/unit_under_load.sh

# BENCH_N, BENCH_REPEATS, BENCH_AGENT_TREE, BENCH_CONCURRENCY, BENCH_SCALE_OUT_N, BENCH_STOP_AT: see bench/__main__.py
bench: cluster $(VENV)/.bench-installed
	$(PY) -m bench

$(VENV)/.bench-installed: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $@

# screenshots - the status page's pictures in docs/images, taken by its browser test (headless chromium)
screenshots: cluster
	bash scripts/test-deps.sh
	GITOPS_AGENT_SCREENSHOTS=docs/images $(PY) -m pytest -n 0 tests/test_status_page.py

demo: cluster
	PY=$(PY) bash scripts/demo.sh

# mutation - mutmut on the pure core ([tool.mutmut] in pyproject.toml) against tests/unit alone,
# from a fresh mutants/ copy, then the score per module (fails below 90 % on the core or on the pass).
# MUTATION_CHILDREN: parallel mutants (default 1: the machine is shared); MUTANTS: a name glob
# such as 'agent.kinds.render.*' to run one module while iterating (keeps earlier results).
MUTATION_CHILDREN ?= 1
MUTANTS ?=
mutation: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[mutation]'
	$(if $(MUTANTS),,rm -rf mutants)
	$(VENV)/bin/mutmut run --max-children $(MUTATION_CHILDREN) $(MUTANTS)
	$(PY) scripts/mutation_score.py

# docs - what is generated from the code (agent/cli/reference.py): docs/reference/*.md, crd.yaml, and
# the child kinds' RBAC rules in deploy/ (agent/kinds/install.py); tests/unit/cli/test_docs.py,
# test_ci.py and tests/unit/kinds/test_install.py fail when a committed copy differs.
docs: $(VENV)/.installed
	$(PY) -m agent.cli.reference docs/reference
	$(PY) -m agent.cli.reference --crd > crd.yaml.tmp && mv crd.yaml.tmp crd.yaml
	$(PY) -m agent.cli.reference --rbac

# dist - the wheel of the commit checked out (a release: build it on its tag), with its sha256, to attach to the
# release: dist/gitops_agent-VERSION-py3-none-any.whl. Built from `git archive HEAD`, so nothing uncommitted and no
# stale build/lib file gets in. docs/guides/ci.md installs it, pinned by URL and sha256; tests/test_ci_guide.py
# builds the same wheel from the work tree and runs the guide's jobs with it.
dist: $(VENV)/.installed
	rm -rf dist build/dist-src && mkdir -p build/dist-src
	git archive HEAD | tar -x -C build/dist-src
	$(PY) -m pip wheel -q --no-deps -w dist build/dist-src
	rm -rf build/dist-src
	cd dist && sha256sum *.whl

# image - the agent's image with no registry and no Docker engine (scripts/image.py, as root): Debian
# bookworm from Debian's packages (mmdebstrap), requirements.lock with hashes, the project; writes the
# OCI layout build/image/ and build/gitops-agent-image.tar (docker load, podman load, kind load
# image-archive, skopeo copy oci-archive:) and prints the digest and size. image-check builds it a
# second time (build/image-check/) and fails unless both give the same digest.
image: $(VENV)/.installed
	bash scripts/test-deps.sh image
	$(PY) scripts/image.py build

image-check: $(VENV)/.installed
	bash scripts/test-deps.sh image
	$(PY) scripts/image.py check

# requirements.lock: the image's pinned dependencies with hashes (pip-tools), from pyproject.toml
lock: $(VENV)/.installed
	$(PY) -m pip install -q pip-tools
	$(VENV)/bin/pip-compile -q --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url \
		--no-emit-find-links -o requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) .cluster .demo mutants build dist
