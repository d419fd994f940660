#!/usr/bin/env bash
# Measures what publishing to NATS costs against writing Parquet locally: sample run with two
# workers, CartPole-v1, the bundled MLP, 256 sub-environments, exploring, alternating in rounds
# so that a shared, noisy machine disturbs the commands alike:
#   parquet   sample run --out DIR/x.parquet
#   publish   sample run --publish embedded (JetStream's files in DIR, nothing consuming)
#   base      the same publish with a baseline binary (-b, e.g. built from an older commit)
# Rows per second are the rows over the whole command's wall-clock time, so that what is
# still queued when sampling ends (the file's last row groups, the messages not yet
# acknowledged) counts, as do start-up and the embedded server's start. Each command starts
# after a sync, so that the kernel's writing back of the last command's files does not fall
# on it.
#
#   scripts/bench_publish.sh [-r ROUNDS] [-s STEPS] [-b BASELINE_SAMPLE_BINARY]
set -euo pipefail
rounds=3 steps=5000000 base=""
while getopts "r:s:b:" o; do
	case $o in
	r) rounds=$OPTARG ;;
	s) steps=$OPTARG ;;
	b) base=$OPTARG ;;
	*) echo "usage: $0 [-r ROUNDS] [-s STEPS] [-b BASELINE_SAMPLE_BINARY]" >&2; exit 2 ;;
	esac
done
. "$(dirname "$0")/bench_common.sh"

# one BIN ARGS...: runs sample run, prints "rows_per_sec bytes"
one() {
	local bin=$1
	shift
	fresh_out
	local t0 t1 rows
	t0=$(date +%s.%N)
	rows=$(cd "$root" && "${nice[@]}" "$bin" run --env CartPole-v1 --num-envs 256 --workers 2 --explore=true \
		--steps "$steps" --json "$@" 2>/dev/null | sed -n 's/.*"rows":\([0-9]*\).*/\1/p')
	t1=$(date +%s.%N)
	echo "$(awk -v r="$rows" -v a="$t0" -v b="$t1" 'BEGIN{printf "%.0f", r/(b-a)}') $(du -cb "$tmp/out" | tail -1 | cut -f1)"
}

names="parquet publish"
[[ -n $base ]] && names="$names base"
printf "%-6s" round
for n in $names; do printf " %12s" "$n"; done
printf " %15s" publish/parquet
[[ -n $base ]] && printf " %13s" publish/base
echo
for r in $(seq 1 "$rounds"); do
	declare -A rps bytes
	# shellcheck disable=SC2086 # names is a list of words
	for n in $(round_order "$r" $names); do
		pubargs=(--publish embedded --store "$tmp/out/store" --stream-max-bytes 8GiB --wait-drained=false)
		case $n in
		parquet) set -- "$tmp/sample" --out "$tmp/out/x.parquet" ;;
		publish) set -- "$tmp/sample" "${pubargs[@]}" ;;
		base) set -- "$base" "${pubargs[@]}" ;;
		esac
		read -r rps[$n] bytes[$n] < <(one "$@")
	done
	printf "%-6s" "$r"
	for n in $names; do printf " %12s" "${rps[$n]}"; done
	printf " %15.3f" "$(awk -v a="${rps[publish]}" -v b="${rps[parquet]}" 'BEGIN{print a/b}')"
	[[ -n $base ]] && printf " %13.3f" "$(awk -v a="${rps[publish]}" -v b="${rps[base]}" 'BEGIN{print a/b}')"
	echo
done
echo "bytes/row (last round):$(for n in $names; do printf " %s %s" "$n" "$(awk -v b="${bytes[$n]}" -v s="$steps" 'BEGIN{printf "%.1f", b/s}')"; done)"
