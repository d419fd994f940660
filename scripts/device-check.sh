#!/usr/bin/env bash
# The CUDA backend's check on a GPU machine (no Go there): run scripts/device-pack.sh on the
# development machine first and carry .device/ with the working tree. Under 8 minutes; one
# progress line per step; every result and log lands in $OUT (default out/device-check):
#   0. the GPU, the driver, NVRTC; the backend's CUDA declarations against cuda.h and nvrtc.h
#   1. parity: every bundled model and randomized graph through native:cuda:0 against the CPU
#      provider at batch 1, 7, 256, 4096 and 65536 (TestNativeCUDAMatchesCPU), and the host
#      backend's own parity tests on this machine
#   2. speed: BenchmarkNativeCUDAVsCPU (ours against the CPU provider) and
#      scripts/device_bench_torch.py (PyTorch eager and CUDA-graph replay) in one run
#   3. end to end: sample run --env CartPole-v1 --num-envs 4096 --workers 2, greedy, on
#      native:cuda:0 and on the CPU
# Exits non-zero when a step fails; later steps still run.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/out/device-check}
mkdir -p "$OUT"
PROGRESS=$OUT/progress.log
step() { printf '[%s] %s\n' "$(date +%T)" "$*" | tee -a "$PROGRESS"; }
failed=0
check() { # check NAME RC
  if [ "$2" -ne 0 ]; then step "  $1: FAILED (exit $2)"; failed=1; else step "  $1: ok"; fi
}

[ -f .device/inference.test ] || { step ".device/ is missing: run scripts/device-pack.sh first"; exit 2; }
RUN=/tmp/onnxrl-device
mkdir -p $RUN
python3 -c '
import lzma, shutil, sys
for src, dst in (("sample", "sample"), ("libonnxruntime.so.1", "libonnxruntime.so.1")):
    with lzma.open(".device/" + src + ".xz") as f, open(sys.argv[1] + "/" + dst, "wb") as g:
        shutil.copyfileobj(f, g)
' $RUN
cp .device/inference.test .device/libonnxrl_ep.so $RUN/
chmod +x $RUN/sample $RUN/inference.test
export ONNXRUNTIME_SHARED_LIBRARY_PATH=$RUN/libonnxruntime.so.1
export ONNXRL_EP_LIBRARY=$RUN/libonnxrl_ep.so
export ONNXRL_CUDA_CACHE=$RUN/cache

step "0/3 the GPU"
nvidia-smi > "$OUT/gpu.txt" 2>&1
head -15 "$OUT/gpu.txt" | tee -a "$PROGRESS"
ls /usr/local/cuda/lib64/libnvrtc* 2>/dev/null | tee -a "$PROGRESS"
CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include
if [ -f "$CUDA_INC/cuda.h" ]; then
  g++ -std=c++17 -Iep/src -I"$CUDA_INC" -o $RUN/cuda_api_test ep/tests/cuda_api_test.cc > "$OUT/cuda_api.log" 2>&1 &&
    $RUN/cuda_api_test >> "$OUT/cuda_api.log" 2>&1
  check "declarations against $CUDA_INC" $?
else
  step "  no cuda.h in $CUDA_INC: declarations not checked"
fi

step "1/3 parity against the CPU provider"
(cd inference && ONNXRL_REQUIRE_CUDA=1 timeout 150 $RUN/inference.test -test.v -test.count 1 \
  -test.run 'TestNativeCUDA|TestNativeMatchesCPU' > "$OUT/parity.log" 2>&1)
check parity $?
grep -E '^(---|ok|FAIL|PASS)|native_cuda_test' "$OUT/parity.log" | head -60 | tee -a "$PROGRESS"

step "2/3 speed: ours and the CPU provider"
(cd inference && timeout 90 $RUN/inference.test -test.run '^$' -test.bench 'NativeCUDAVsCPU' \
  -test.benchtime 1s > "$OUT/speed_ours.txt" 2>&1)
check "BenchmarkNativeCUDAVsCPU" $?
# What each choice buys: no CUDA graphs; the sessions' tensors not pinned, so that every copy
# is staged (pinned chunks) or direct (pageable) by size as before, every copy direct, every
# copy staged; the pinned tensors' copies outside the graph, or inside it but in line with the
# kernels (no second stream); and the time of each phase
# (ONNXRL_CUDA_PROFILE, eager with a sync per phase), pinned and not.
for v in "GRAPHS=0 nographs" "PIN=0 unpinned" "PIN=0:DIRECT_BYTES=0 direct" "PIN=0:DIRECT_BYTES=1000000000000 staged" \
  "GRAPH_COPIES=0 copies_outside" "OVERLAP=0 overlap_off" "PROFILE=1 profile" "PIN=0:PROFILE=1 profile_unpinned" "PIN=1 pinned_again"; do
  set -- $v
  bt=0.5s; case $2 in profile*) bt=50x ;; esac
  vars=$(echo "$1" | sed 's/^/ONNXRL_CUDA_/; s/:/ ONNXRL_CUDA_/g')
  env $vars bash -c "cd inference && timeout 60 $RUN/inference.test -test.run '^\$' \
    -test.bench 'NativeCUDAVsCPU' -test.benchtime $bt > '$OUT/speed_ours_$2.txt' 2>&1"
  check "BenchmarkNativeCUDAVsCPU, $vars" $?
done
grep -h "onnxrl cuda profile" "$OUT/speed_ours_profile.txt" "$OUT/speed_ours_profile_unpinned.txt" | tee -a "$PROGRESS"
grep Benchmark "$OUT/speed_ours.txt" | tee -a "$PROGRESS"
step "2/3 speed: PyTorch"
PYTHONUNBUFFERED=1 timeout 90 python3 scripts/device_bench_torch.py > "$OUT/speed_torch.jsonl" 2> "$OUT/speed_torch.err"
check "PyTorch" $?
cat "$OUT/speed_torch.jsonl" | tee -a "$PROGRESS"

step "3/3 end to end: sample run, 4096 CartPoles, 2 workers, greedy"
for run in native:cuda:0 native:cuda:0/unpinned cpu; do
  dev=${run%/*} name=${run//[:\/]/_} pin=1
  [ "$run" = "${run%/unpinned}" ] || pin=0
  ONNXRL_CUDA_PIN=$pin timeout 60 $RUN/sample run --env CartPole-v1 --num-envs 4096 --workers 2 --explore=false \
    --steps 16000000 --device $dev --json > "$OUT/e2e_$name.json" 2> "$OUT/e2e_$name.err"
  check "sample run --device $dev (ONNXRL_CUDA_PIN=$pin)" $?
  tail -c 1500 "$OUT/e2e_$name.json" | tee -a "$PROGRESS"
done
step "done (failed=$failed)"
exit $failed
