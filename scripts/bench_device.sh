#!/usr/bin/env bash
# Measures the whole sampler with the project's execution provider against ONNX Runtime's CPU
# provider (issue 37's last goal: `sample run --device native` at least 1.1x `--device cpu`),
# alternating the commands in rounds so that a shared, noisy machine disturbs them alike. For
# each number of sub-environments (-n, default 256) a round runs, in an order reversed every
# other round:
#   cpu-greedy     sample run --env CartPole-v1 --num-envs N --workers 1 --steps S --explore=false --device cpu
#   native-greedy  the same with --device native
#   cpu-explore    exploring, with every column (--explore=true --gae), --device cpu
#   native-explore the same with --device native
# The bundled MLP (cartpole_mlp), one intra-op thread, no --out. -l LIB measures that build of
# the provider (ONNXRL_EP_LIBRARY; by default the project's build/lib/libonnxrl_ep.so). Prints
# each round's env steps/s and native/cpu (env steps/s with native over with cpu: above 1 =
# native faster), then the medians.
#
#	ONNXRUNTIME_SHARED_LIBRARY_PATH=$PWD/third_party/onnxruntime/lib/libonnxruntime.so.1 \
#		bash scripts/bench_device.sh [-r ROUNDS] [-s STEPS] [-n "SIZES"] [-l LIBRARY]
set -euo pipefail
rounds=3 steps=8000000 sizes="256" lib=""
while getopts "r:s:n:l:" o; do
	case $o in
	r) rounds=$OPTARG ;;
	s) steps=$OPTARG ;;
	n) sizes=$OPTARG ;;
	l) lib=$OPTARG ;;
	*) echo "usage: $0 [-r ROUNDS] [-s STEPS] [-n \"SIZES\"] [-l PROVIDER_LIBRARY]" >&2; exit 2 ;;
	esac
done
. "$(dirname "$0")/bench_common.sh"
[[ -n $lib ]] && export ONNXRL_EP_LIBRARY=$lib

one() {
	local name=$1 n=$2 mode=(--explore=false)
	[[ $name == *explore ]] && mode=(--explore=true --gae)
	(cd "$root" && "${nice[@]}" "$tmp/sample" run --env CartPole-v1 --num-envs "$n" --workers 1 \
		--steps "$steps" --threads 1 --device "${name%%-*}" "${mode[@]}" --json) |
		sed -n 's/.*"num_env_steps_sampled_lifetime_throughput":\([0-9.e+]*\).*/\1/p'
}

names="cpu-greedy native-greedy cpu-explore native-explore"
declare -A all # "N mode" -> the rounds' native/cpu ratios
printf "%-6s %5s" envs round
for c in $names; do printf " %14s" "$c"; done
printf " %18s %18s\n" "greedy native/cpu" "explore native/cpu"
for r in $(seq 1 "$rounds"); do
	for n in $sizes; do
		declare -A sps=()
		for c in $(round_order "$r" $names); do
			sps[$c]=$(one "$c" "$n")
			[[ -n ${sps[$c]} ]] || { echo "$c at $n sub-environments printed no throughput" >&2; exit 1; }
		done
		printf "%-6s %5s" "$n" "$r"
		for c in $names; do printf " %14.0f" "${sps[$c]}"; done
		for m in greedy explore; do
			x=$(awk -v a="${sps[native-$m]}" -v b="${sps[cpu-$m]}" 'BEGIN{printf "%.3f", a/b}')
			all["$n $m"]+="$x "
			printf " %18s" "$x"
		done
		echo
	done
done
echo "median over $rounds rounds of native/cpu env steps/s (above 1 = native faster; goal >= 1.1):"
for n in $sizes; do
	printf "%-6s %5s %14s %14s %14s %14s %18s %18s\n" "$n" med "" "" "" "" "$(median ${all["$n greedy"]})" "$(median ${all["$n explore"]})"
done
