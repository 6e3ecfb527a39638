#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Ledger hot path: ns per reserve+release pair (build/bench/ledger), then instructions per pair under callgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}/bench/ledger
[ -x "$B" ] || { echo "build it first: make bench" >&2; exit 1; }
"$B" "$@"
N=100000
out=$(mktemp)
trap 'rm -f "$out"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect=bench_loop "$B" --loop $N >/dev/null 2>&1
ir=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !n++ { gsub(",", "", $1); print $1 }')
[ -n "$ir" ] || { echo "callgrind gave no total" >&2; exit 1; }
echo "callgrind: $ir instructions for $N pairs = $((ir / N)) instructions per reserve+release pair"
