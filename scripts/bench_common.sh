# Shared by the bench_*.sh scripts (sourced): builds bin/sample into a temporary directory and
# sets root, tmp (removed on exit), nice (nice -n -15 when allowed), and defines fresh_out,
# round_order and median.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/sample" ./cmd/sample)
nice=()
[[ $(id -u) == 0 ]] && nice=(nice -n -15)

# fresh_out empties $tmp/out, then syncs and waits, so that the kernel's writing back of the
# last command's files does not fall on the next command.
fresh_out() {
	rm -rf "$tmp/out" && mkdir -p "$tmp/out" && sync && sleep 1
}

# round_order ROUND NAMES...: the names, reversed in every other round. A command's memory
# comes faster when the one before it has just freed some, and the order should favour none.
round_order() {
	local r=$1
	shift
	if ((r % 2 == 0)); then
		printf '%s\n' "$@" | tac | tr '\n' ' '
	else
		echo "$@"
	fi
}

# median VALUES...: their median, with three decimals.
median() {
	printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END{printf "%.3f", (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'
}
