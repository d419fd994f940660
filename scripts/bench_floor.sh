#!/usr/bin/env bash
# Measures `sample run` against the floor (benchmarks/floor: plain Go CartPole-v1, one ONNX
# Runtime session bound once, argmax, nothing kept), alternating the commands in rounds so
# that a shared, noisy machine disturbs them alike (issue 36, section 3). For each number of
# sub-environments (-n, default "256 4096") a round runs, in an order reversed every other
# round:
#   floor     the floor command
#   greedy    sample run --env CartPole-v1 --num-envs N --workers 1 --steps S --explore=false
#   explore   the same exploring, with every column (--explore=true --gae)
#   base-*    greedy and explore with a baseline binary (-b, e.g. built from an older commit)
# No --out: every batch is built and dropped, as a run without a file does. The bundled MLP
# (cartpole_mlp) is the model of both, the CPU provider with one thread.
#
# It prints env steps/s per command and round, and the ratios "X/floor" = X's env steps/s
# divided by the floor's in the same round (the goals: greedy/floor >= 0.80, explore/floor
# >= 0.70), then each ratio's median over the rounds, and the same medians of CPU time
# ("cpu X/floor": the floor's CPU seconds, user and system, over X's, for the same steps),
# which a machine shared with other work disturbs less than wall time.
#
# The commands run with nice -n -15 when allowed (root), so that other work on the machine
# disturbs them less.
#
#   scripts/bench_floor.sh [-r ROUNDS] [-s STEPS] [-n "SIZES"] [-b BASELINE_SAMPLE_BINARY]
set -euo pipefail
rounds=3 steps=20000000 sizes="256 4096" base=""
while getopts "r:s:n:b:" o; do
	case $o in
	r) rounds=$OPTARG ;;
	s) steps=$OPTARG ;;
	n) sizes=$OPTARG ;;
	b) base=$OPTARG ;;
	*) echo "usage: $0 [-r ROUNDS] [-s STEPS] [-n \"SIZES\"] [-b BASELINE_SAMPLE_BINARY]" >&2; exit 2 ;;
	esac
done
. "$(dirname "$0")/bench_common.sh"
(cd "$root" && go build -o "$tmp/floor" ./benchmarks/floor)

# one NAME N: runs command NAME with N sub-environments and prints its env steps/s (the
# summary's num_env_steps_sampled_lifetime_throughput; steps_per_sec in binaries from before
# issue 36) and the CPU seconds (user and system) the process took.
one() {
	local name=$1 n=$2 cmd
	case $name in
	floor) cmd=("$tmp/floor" --num-envs "$n" --steps "$steps" --json) ;;
	greedy | explore | base-greedy | base-explore)
		local bin=$tmp/sample mode=(--explore=false)
		[[ $name == base-* ]] && bin=$base
		[[ $name == *explore ]] && mode=(--explore=true --gae)
		cmd=("$bin" run --env CartPole-v1 --num-envs "$n" --workers 1 --steps "$steps" "${mode[@]}" --json)
		;;
	esac
	local sps
	sps=$(cd "$root" && "${nice[@]}" /usr/bin/time -o "$tmp/cpu" -f "%U %S" "${cmd[@]}" |
		sed -n 's/.*"\(num_env_steps_sampled_lifetime_throughput\|steps_per_sec\)":\([0-9.e+]*\).*/\2/p')
	echo "$sps $(awk '{print $1+$2}' "$tmp/cpu")"
}

names="floor greedy explore"
[[ -n $base ]] && names="$names base-greedy base-explore"
ratios="greedy explore"
[[ -n $base ]] && ratios="$ratios base-greedy base-explore"
declare -A all allcpu # "N ratio" -> the rounds' ratios (of env steps/s, of CPU time)
printf "%-6s %5s" envs round
for c in $names; do printf " %13s" "$c"; done
for c in $ratios; do printf " %18s" "$c/floor"; done
echo
for r in $(seq 1 "$rounds"); do
	for n in $sizes; do
		declare -A sps=() cpu=()
		# shellcheck disable=SC2086 # names is a list of words
		for c in $(round_order "$r" $names); do
			read -r "sps[$c]" "cpu[$c]" < <(one "$c" "$n")
		done
		printf "%-6s %5s" "$n" "$r"
		for c in $names; do printf " %13.0f" "${sps[$c]}"; done
		for c in $ratios; do
			x=$(awk -v a="${sps[$c]}" -v b="${sps[floor]}" 'BEGIN{printf "%.3f", a/b}')
			all["$n $c"]+="$x "
			allcpu["$n $c"]+="$(awk -v a="${cpu[$c]}" -v b="${cpu[floor]}" 'BEGIN{printf "%.3f", b/a}') "
			printf " %18s" "$x"
		done
		echo
	done
done
# medians LABEL ARRAY: a row per size of the medians of ARRAY's ratios ("N ratio" -> rounds).
medians() {
	local -n rs=$2
	for n in $sizes; do
		printf "%-6s %5s" "$n" "$1"
		# shellcheck disable=SC2086 # a list of numbers
		for c in $ratios; do printf " %18s" "$(median ${rs["$n $c"]})"; done
		echo
	done
}
echo "median over $rounds rounds (X/floor = X's env steps/s over the floor's; goals: greedy >= 0.80, explore >= 0.70):"
medians med all
echo "median over $rounds rounds of cpu X/floor (the floor's CPU time over X's):"
medians cpu allcpu
