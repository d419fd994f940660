# The sampler's build. `make run` and `make test` work on a fresh clone (Go, gcc and npm needed;
# the ONNX Runtime library is fetched from the npm registry and checked against pinned digests).

GO ?= go
BENCHTIME ?= 1s
# Packages whose benchmarks `make bench` runs.
BENCH_PKGS ?= ./...

.PHONY: all build run run-cartpole test go-test pyarrow-venv native native-test native-tools nvrtc python-test python-deps nats-server vet race bench bench-ep onnxruntime models ep-graphs check-ep-runtime fuzz soak clean

all: build

build:
	$(GO) build -o bin/sample ./cmd/sample

onnxruntime:
	bash scripts/install-onnxruntime.sh

# The main job: the bundled CartPole-v1 policy, greedy, 100 episodes over 16 sub-environments,
# ending in the summary table. `make run` and `make test` run their stages one by one, each
# with a line when it starts and its elapsed time when it ends (scripts/stages.sh).
run:
	@MAKE='$(MAKE)' bash scripts/stages.sh onnxruntime build run-cartpole

run-cartpole: onnxruntime build
	./bin/sample run --env CartPole-v1 --num-envs 16 --episodes 100 --explore=false

vet:
	$(GO) vet ./...

# Everything: go vet, the Go tests with the race detector, the native build with CTest, and the
# Python package's tests, from the source tree and then from the installed wheel (wheel-test).
# The native build comes first: the Go tests of device "native" load build/lib/libonnxrl_ep.so.
test:
	@MAKE='$(MAKE)' bash scripts/stages.sh docs-lint onnxruntime native-tools nvrtc native vet \
		python-deps nats-server pyarrow-venv go-test native-test build python-venv python-test wheel-test

# The Python packages come first too: the NumPy reference sampler that sample bench --vs is
# tested against (benchmarks/baselines/) needs NumPy.
go-test: onnxruntime native vet python-deps nats-server pyarrow-venv
	ONNXRL_PYARROW_PYTHON=$(CURDIR)/$(PYARROW_VENV)/bin/python $(GO) test -race -count=1 ./...

# README.md and docs/ checked with markdownlint-cli2 (settings: .markdownlint-cli2.jsonc),
# installed from the npm registry by scripts/markdownlint's lock file into its node_modules
# (git-ignored); nothing system-wide.
MDLINT := scripts/markdownlint/node_modules/.bin/markdownlint-cli2
.PHONY: docs-lint
docs-lint:
	@test -x $(MDLINT) || npm ci --prefix scripts/markdownlint --no-audit --no-fund --loglevel=error
	$(MDLINT) README.md 'docs/**/*.md'

# pyarrow from PyPI in a virtual environment under the build folder (git-ignored): the
# reader no one here wrote, with which the Go tests check the Parquet files we write
# (scripts/check_parquet.py: schema, row counts, page checksums).
PYARROW_VENV ?= $(BUILD_DIR)/pyarrow-venv
pyarrow-venv:
	@$(PYARROW_VENV)/bin/python -c 'import pyarrow' 2>/dev/null || \
		{ $(PYTHON) -m venv $(PYARROW_VENV) && $(PYARROW_VENV)/bin/pip install -q pyarrow; }

# RLlib itself reads sample run's JSON lines (JsonReader) and Parquet (ray.data and the
# OfflinePreLearner), every column checked against our reader (scripts/check_rllib.py);
# ray[rllib] comes from PyPI into the git-ignored .venv-rllib. Not part of make test: ray is large.
RLLIB_VENV ?= .venv-rllib
.PHONY: check-rllib
check-rllib: build
	@$(RLLIB_VENV)/bin/python -c 'import ray.rllib' 2>/dev/null || \
		{ $(PYTHON) -m venv $(RLLIB_VENV) && $(RLLIB_VENV)/bin/pip install -q 'ray[rllib]'; }
	$(RLLIB_VENV)/bin/python scripts/check_rllib.py

# The native build (CMakeLists.txt): libonnxrl_sampler.so, the policy execution provider
# (build/lib/libonnxrl_ep.so), the C++ example, the C and C++ tests.
BUILD_DIR ?= build
native: native-tools nvrtc
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j2

native-test: onnxruntime native
	ctest --test-dir $(BUILD_DIR) --output-on-failure

# NVRTC from PyPI's nvidia-cuda-nvrtc-cu12 wheel under third_party/nvrtc (sha256-pinned), for
# the CTest that compiles the CUDA backend's kernels without a GPU (ep_cuda_compile).
nvrtc:
	bash scripts/install-nvrtc.sh

# The external NATS broker the scale-out tests also run against (scaleout/external_test.go),
# built from the nats-server module the embedded broker already uses, into the build folder:
# nothing is installed system-wide (no user, no service).
nats-server:
	$(GO) build -o $(BUILD_DIR)/bin/nats-server github.com/nats-io/nats-server/v2

# cmake and g++ from Debian's packages, when missing.
native-tools:
	@command -v cmake >/dev/null && command -v g++ >/dev/null || \
		{ apt-get update && apt-get install -y --no-install-recommends cmake g++ make; }

# The Python package (python/onnxrl_sampler) over the library, with Debian's NumPy and pytest,
# and torch for the export tests (PYTHON_TORCH=0 leaves torch out: those tests then skip).
PYTHON ?= /usr/bin/python3
PYTHON_TORCH ?= 1
python-test: python-deps python-venv onnxruntime native build
	$(PYTHON) -m pytest -q -p no:cacheprovider python/tests
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider python/tests/test_vector.py python/tests/test_sampler.py

# The project's Python virtual environment (.venv, git-ignored): NumPy and pytest from the
# system's site-packages, gymnasium 1.x from PyPI, for the tests of make_vec as a subclass of
# gymnasium.vector.VectorEnv (python/tests/test_vector.py; Debian's python3 runs them without it),
# pyarrow and polars for the Sampler's Arrow batches (python/tests/test_sampler.py).
.PHONY: python-venv
VENV ?= .venv
python-venv: python-deps
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv --system-site-packages $(VENV)
	@$(VENV)/bin/python -c 'import gymnasium' 2>/dev/null || $(VENV)/bin/pip install -q 'gymnasium>=1.0,<2'
	@# pyarrow and polars take Sampler batches zero-copy (test_sampler.py); pyarrow 22+ needs NumPy 2.
	@$(VENV)/bin/python -c 'import pyarrow, polars' 2>/dev/null || $(VENV)/bin/pip install -q 'pyarrow<22' polars

# The wheel: dist/onnxrl_sampler-<version>-py3-none-<platform>.whl with libonnxrl_sampler.so,
# libonnxrl_ep.so and the pinned ONNX Runtime inside the package, where it loads them from
# (python/_build_backend/onnxrl_build.py: standard library only, so pip builds it offline).
.PHONY: wheel
wheel: onnxruntime native
	$(PYTHON) -m pip wheel --no-deps --no-index -w dist --config-settings build-dir=$(abspath $(BUILD_DIR)) ./python

# The Python tests against the installed wheel: a fresh virtual environment under the build folder
# (NumPy, pytest and torch from the system's site-packages), the wheel installed with --no-index,
# python/tests run with ONNXRL_TEST_INSTALLED=1 (conftest.py: the package from the venv, not the
# source tree) and none of our variables set; the tests that can only check the source tree skip
# saying why, test_installed.py checks where the package and its libraries came from.
WHEEL_TEST_VENV ?= $(BUILD_DIR)/wheel-test-venv
.PHONY: wheel-test
wheel-test: python-deps wheel build
	rm -rf $(WHEEL_TEST_VENV)
	$(PYTHON) -m venv --system-site-packages $(WHEEL_TEST_VENV)
	$(WHEEL_TEST_VENV)/bin/python -m pip install -q --no-index "$$(ls -t dist/onnxrl_sampler-*.whl | head -n1)"
	env -u ONNXRL_SAMPLER_LIBRARY -u ONNXRUNTIME_SHARED_LIBRARY_PATH -u ONNXRL_EP_LIBRARY -u ONNXRL_BUILD_DIR \
		-u LD_LIBRARY_PATH -u PYTHONPATH ONNXRL_TEST_INSTALLED=1 \
		$(WHEEL_TEST_VENV)/bin/python -m pytest -q -rs -p no:cacheprovider python/tests

# Debian's python3-numpy, python3-pytest (and python3-torch), when missing.
python-deps:
	@missing=""; \
	$(PYTHON) -c 'import numpy' 2>/dev/null || missing="$$missing python3-numpy"; \
	$(PYTHON) -c 'import pytest' 2>/dev/null || missing="$$missing python3-pytest"; \
	if [ "$(PYTHON_TORCH)" = 1 ]; then $(PYTHON) -c 'import torch' 2>/dev/null || missing="$$missing python3-torch"; fi; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing"; \
		apt-get update && apt-get install -y --no-install-recommends $$missing; \
	fi

bench: onnxruntime
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(BENCH_PKGS)

# The execution provider against ONNX Runtime's CPU provider on six policy shapes (batch 1 to
# 4,096, one and two threads), as throughput ratios native/cpu (above 1 = native faster):
# benchmarks/epbench. Exports the Nature CNN (not committed: 6.8 MB) with Debian's torch first.
EPBENCH_FLAGS ?=
bench-ep: onnxruntime native
	@test -f benchmarks/epbench/models/nature_cnn.onnx || bash models/export/run.sh --epbench nature_cnn
	$(GO) run ./benchmarks/epbench $(EPBENCH_FLAGS)

# The load-and-fault suite of sample serve (cmd/sample/soak_test.go): 1,024 clients with 20%
# abandoning episodes, hostile requests, 2,000 slow sockets, SIGTERM and SIGKILL under load, a
# full disk (a tmpfs, as root), a flood of idle connections; and of scale-out
# (soak_scaleout_test.go): two drains, one SIGKILLed mid-commit round after round, and a worker
# on a full stream stopped by SIGTERM. Traffic to 127.0.0.1 only; SOAK_DURATION per scenario.
SOAK_DURATION ?= 60s
soak: onnxruntime
	SAMPLE_SOAK=1 SAMPLE_SOAK_DURATION=$(SOAK_DURATION) $(GO) test -count=1 -v -timeout 20m -run '^TestSoak' ./cmd/sample/

# Short fuzzing sessions of every fuzz target (the seeds also run in `make test`).
FUZZTIME ?= 20s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzUnmarshal$$' -fuzztime $(FUZZTIME) ./spaces/
	$(GO) test -run '^$$' -fuzz '^FuzzParseConfig$$' -fuzztime $(FUZZTIME) ./env/
	$(GO) test -run '^$$' -fuzz '^FuzzLoadBytes$$' -fuzztime $(FUZZTIME) ./inference/
	$(GO) test -run '^$$' -fuzz '^FuzzParseDevice$$' -fuzztime $(FUZZTIME) ./inference/
	$(GO) test -run '^$$' -fuzz '^FuzzParseSpec$$' -fuzztime $(FUZZTIME) ./models/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./envrunner/output/
	$(GO) test -run '^$$' -fuzz '^FuzzReadParquet$$' -fuzztime $(FUZZTIME) ./envrunner/output/
	$(GO) test -run '^$$' -fuzz '^FuzzThrift$$' -fuzztime $(FUZZTIME) ./envrunner/output/
	$(GO) test -run '^$$' -fuzz '^FuzzAgentChain$$' -fuzztime $(FUZZTIME) ./connectors/
	$(GO) test -run '^$$' -fuzz '^FuzzValue$$' -fuzztime $(FUZZTIME) ./externalenv/server/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzRequests$$' -fuzztime $(FUZZTIME) ./externalenv/server/
	$(GO) test -run '^$$' -fuzz '^FuzzResolve$$' -fuzztime $(FUZZTIME) ./models/
	$(GO) test -run '^$$' -fuzz '^FuzzNativeGraphs$$' -fuzztime $(FUZZTIME) ./inference/
	$(GO) test -run '^$$' -fuzz '^FuzzNativeConv$$' -fuzztime $(FUZZTIME) ./inference/

# Re-export the bundled models with PyTorch (installs Debian's python3-torch when missing).
models:
	bash models/export/run.sh

# Load the native provider into the newest onnxruntime-node release from the npm registry
# (or VERSION=x.y.z): the version handshake and a model's outputs (needs the network).
check-ep-runtime: native
	bash scripts/check-ep-runtime.sh $(VERSION)

# Re-export the native provider's randomized test graphs (inference/testdata/native).
ep-graphs:
	bash models/export/run.sh --ep-graphs

clean:
	rm -rf bin $(BUILD_DIR) dist
