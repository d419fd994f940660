#!/usr/bin/env bash
# Measures what writing the samples costs sample run, alternating the commands in rounds so
# that a shared, noisy machine disturbs them alike, and prints rows/s per round, the ratios
# and bytes per row:
#   none      sample run without --out
#   parquet   the same with --out DIR/x.parquet
#   json      the same with --out DIR/x.jsonl
#   base-parquet, base-json  the same with a baseline binary (-b, e.g. built from an older commit)
# -f names the formats to run (default "parquet json"; -f parquet leaves JSON lines out).
# CartPole-v1, the bundled MLP, 256 sub-environments, exploring, one worker (-w sets
# --workers: with 2 on a 2-core machine both cores sample and the writer's CPU comes out of
# theirs).
#
# The commands run with nice -n -15 when allowed (root), so that other work on the machine
# disturbs them less. -c sets the Parquet codec (--compression; the default is the sampler's).
#
#   scripts/bench_output.sh [-r ROUNDS] [-s STEPS] [-w WORKERS] [-f "parquet json"] [-b BASELINE_SAMPLE_BINARY] [-c snappy|zstd|none]
set -euo pipefail
rounds=3 steps=5000000 workers=1 formats="parquet json" base="" comp=()
while getopts "r:s:w:f:b:c:" o; do
	case $o in
	r) rounds=$OPTARG ;;
	s) steps=$OPTARG ;;
	w) workers=$OPTARG ;;
	f) formats=$OPTARG ;;
	b) base=$OPTARG ;;
	c) comp=(--compression "$OPTARG") ;;
	*) echo "usage: $0 [-r ROUNDS] [-s STEPS] [-w WORKERS] [-f 'parquet json'] [-b BASELINE_SAMPLE_BINARY] [-c snappy|zstd|none]" >&2; exit 2 ;;
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
	sps=$(cd "$root" && "${nice[@]}" "$bin" run --env CartPole-v1 --num-envs 256 --workers "$workers" --explore=true \
		--steps "$steps" --max-file-size 0 --json "$@" |
		sed -n 's/.*"\(num_env_steps_sampled_lifetime_throughput\|steps_per_sec\)":\([0-9.e+]*\).*/\2/p')
	local bytes
	bytes=$(du -cb "$tmp/out" | tail -1 | cut -f1)
	echo "$sps $bytes"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", a/b}'; }

names="none $formats"
for f in $formats; do [[ -n $base ]] && names="$names base-$f"; done
printf "%-6s" round
for n in $names; do printf " %14s" "$n"; done
for f in $formats; do printf " %14s" "$f/none"; done
for f in $formats; do [[ -n $base ]] && printf " %18s" "$f/base-$f"; done
echo
for r in $(seq 1 "$rounds"); do
	declare -A sps bpr
	# shellcheck disable=SC2086 # names is a list of words
	for n in $(round_order "$r" $names); do
		case $n in
		none) set -- "$tmp/sample" none ;;
		parquet) set -- "$tmp/sample" parquet --out "$tmp/out/x.parquet" "${comp[@]}" ;;
		json) set -- "$tmp/sample" json --out "$tmp/out/x.jsonl" ;;
		base-parquet) set -- "$base" base-parquet --out "$tmp/out/x.parquet" "${comp[@]}" ;;
		base-json) set -- "$base" base-json --out "$tmp/out/x.jsonl" ;;
		*) echo "unknown format in -f: $n" >&2; exit 2 ;;
		esac
		read -r s b < <(one "$@")
		sps[$n]=$s
		bpr[$n]=$(awk -v b="$b" -v s="$steps" 'BEGIN{printf "%.1f", b/s}')
	done
	printf "%-6s" "$r"
	for n in $names; do printf " %14.0f" "${sps[$n]}"; done
	for f in $formats; do printf " %14s" "$(ratio "${sps[$f]}" "${sps[none]}")"; done
	for f in $formats; do [[ -n $base ]] && printf " %18s" "$(ratio "${sps[$f]}" "${sps[base-$f]}")"; done
	echo
done
echo "bytes/row (last round):$(for n in $names; do [[ $n != none ]] && printf " %s %s" "$n" "${bpr[$n]}"; done)"
