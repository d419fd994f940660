#!/usr/bin/env bash
# Runs make targets one after another as the stages of `make test` and `make run`: each prints
# one line when it starts and one with its elapsed time when it ends, then a total. Every stage
# runs its own recipe only (make -o for the others, which run as stages of their own), without
# make's "Entering directory" lines.
#   scripts/stages.sh TARGET...          (MAKE names the make to call; default make)
set -euo pipefail
make=${MAKE:-make}
stages=("$@")

elapsed() { # seconds (with decimals) -> "4.2 s" or "3 min 07 s"
  awk -v s="$1" 'BEGIN { if (s < 60) printf "%.1f s", s; else printf "%d min %02d s", s / 60, s % 60 }'
}

start_all=$EPOCHREALTIME
for stage in "${stages[@]}"; do
  others=()
  for o in "${stages[@]}"; do
    [[ $o == "$stage" ]] || others+=(-o "$o")
  done
  echo "==> $stage"
  start=$EPOCHREALTIME
  if ! $make --no-print-directory -s "${others[@]}" "$stage"; then
    echo "==> $stage FAILED after $(elapsed "$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')")"
    exit 1
  fi
  echo "==> $stage: $(elapsed "$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')")"
done
echo "==> all ${#stages[@]} stages: $(elapsed "$(awk -v a="$start_all" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')")"
