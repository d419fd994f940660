# The sampler's build. `make run` and `make test` work on a fresh clone (Go, gcc and npm needed;
# the ONNX Runtime library is fetched from the npm registry and checked against pinned digests).

GO ?= go
BENCHTIME ?= 1s
# Packages whose benchmarks `make bench` runs.
BENCH_PKGS ?= ./...

.PHONY: all build run test go-test native native-test native-tools vet race bench onnxruntime models fuzz clean

all: build

build:
	$(GO) build -o bin/sample ./cmd/sample

onnxruntime:
	bash scripts/install-onnxruntime.sh

# The main job: the bundled CartPole-v1 policy, greedy, 100 episodes over 16 sub-environments,
# ending in the summary table.
run: onnxruntime build
	./bin/sample run --env CartPole-v1 --num-envs 16 --episodes 100 --explore=false

vet:
	$(GO) vet ./...

# Everything: go vet, the Go tests with the race detector, and the native build with CTest.
test: go-test native-test

go-test: onnxruntime vet
	$(GO) test -race -count=1 ./...

# The native build (CMakeLists.txt): libonnxrl_sampler.so, the C++ example, the C tests.
BUILD_DIR ?= build
native: native-tools
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j2

native-test: onnxruntime native
	ctest --test-dir $(BUILD_DIR) --output-on-failure

# cmake and g++ from Debian's packages, when missing.
native-tools:
	@command -v cmake >/dev/null && command -v g++ >/dev/null || \
		{ apt-get update && apt-get install -y --no-install-recommends cmake g++ make; }

bench: onnxruntime
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(BENCH_PKGS)

# Short fuzzing sessions of every fuzz target (the seeds also run in `make test`).
FUZZTIME ?= 20s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzUnmarshal$$' -fuzztime $(FUZZTIME) ./spaces/
	$(GO) test -run '^$$' -fuzz '^FuzzLoadBytes$$' -fuzztime $(FUZZTIME) ./inference/
	$(GO) test -run '^$$' -fuzz '^FuzzParseSpec$$' -fuzztime $(FUZZTIME) ./models/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./envrunner/output/
	$(GO) test -run '^$$' -fuzz '^FuzzReadParquet$$' -fuzztime $(FUZZTIME) ./envrunner/output/
	$(GO) test -run '^$$' -fuzz '^FuzzAgentChain$$' -fuzztime $(FUZZTIME) ./connectors/
	$(GO) test -run '^$$' -fuzz '^FuzzValue$$' -fuzztime $(FUZZTIME) ./externalenv/server/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzRequests$$' -fuzztime $(FUZZTIME) ./externalenv/server/

# Re-export the bundled models with PyTorch (installs Debian's python3-torch when missing).
models:
	bash models/export/run.sh

clean:
	rm -rf bin $(BUILD_DIR)
