#!/usr/bin/env bash
# Measures what writing the samples costs sample run, alternating the commands in rounds so
# that a shared, noisy machine disturbs them alike, and prints rows/s per round, the ratios
# and bytes per row:
#   none      sample run without --out
#   parquet   the same with --out DIR/x.parquet
#   json      the same with --out DIR/x.jsonl
#   base-json the same with a baseline binary (-b, e.g. built from an older commit)
# CartPole-v1, the bundled MLP, 256 sub-environments, one worker, exploring.
#
# The commands run with nice -n -15 when allowed (root), so that other work on the machine
# disturbs them less. -c sets the Parquet codec (--compression; the default is the sampler's).
#
#   scripts/bench_output.sh [-r ROUNDS] [-s STEPS] [-b BASELINE_SAMPLE_BINARY] [-c snappy|zstd|none]
set -euo pipefail
rounds=3 steps=5000000 base="" comp=()
while getopts "r:s:b:c:" o; do
	case $o in
	r) rounds=$OPTARG ;;
	s) steps=$OPTARG ;;
	b) base=$OPTARG ;;
	c) comp=(--compression "$OPTARG") ;;
	*) echo "usage: $0 [-r ROUNDS] [-s STEPS] [-b BASELINE_SAMPLE_BINARY] [-c snappy|zstd|none]" >&2; exit 2 ;;
	esac
done
. "$(dirname "$0")/bench_common.sh"

# one BIN NAME [--out FILE]: runs sample run, prints "env-steps/s bytes" (the summary's
# num_env_steps_sampled_lifetime_throughput; steps_per_sec in binaries from before issue 36)
one() {
	local bin=$1 name=$2
	shift 2
	fresh_out
	local sps
	sps=$(cd "$root" && "${nice[@]}" "$bin" run --env CartPole-v1 --num-envs 256 --workers 1 --explore=true \
		--steps "$steps" --max-file-size 0 --json "$@" |
		sed -n 's/.*"\(num_env_steps_sampled_lifetime_throughput\|steps_per_sec\)":\([0-9.e+]*\).*/\2/p')
	local bytes
	bytes=$(du -cb "$tmp/out" | tail -1 | cut -f1)
	echo "$sps $bytes"
}

declare -A sum
names="none parquet json"
[[ -n $base ]] && names="$names base-json"
printf "%-6s" round
for n in $names; do printf " %14s" "$n"; done
printf " %10s %10s" parquet/none json/none
[[ -n $base ]] && printf " %14s" json/base-json
echo
for r in $(seq 1 "$rounds"); do
	declare -A sps bpr
	# shellcheck disable=SC2086 # names is a list of words
	for n in $(round_order "$r" $names); do
		case $n in
		none) set -- "$tmp/sample" none ;;
		parquet) set -- "$tmp/sample" parquet --out "$tmp/out/x.parquet" "${comp[@]}" ;;
		json) set -- "$tmp/sample" json --out "$tmp/out/x.jsonl" ;;
		base-json) set -- "$base" base-json --out "$tmp/out/x.jsonl" ;;
		esac
		read -r s b < <(one "$@")
		sps[$n]=$s
		bpr[$n]=$(awk -v b="$b" -v s="$steps" 'BEGIN{printf "%.1f", b/s}')
	done
	printf "%-6s" "$r"
	for n in $names; do printf " %14.0f" "${sps[$n]}"; done
	printf " %10.3f %10.3f" "$(awk -v a="${sps[parquet]}" -v b="${sps[none]}" 'BEGIN{print a/b}')" \
		"$(awk -v a="${sps[json]}" -v b="${sps[none]}" 'BEGIN{print a/b}')"
	[[ -n $base ]] && printf " %14.3f" "$(awk -v a="${sps[json]}" -v b="${sps[base-json]}" 'BEGIN{print a/b}')"
	echo
done
echo "bytes/row (last round):$(for n in parquet json ${base:+base-json}; do printf " %s %s" "$n" "${bpr[$n]}"; done)"
