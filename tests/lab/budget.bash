# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The bursts of tests/lab/budget.bats and tests/lab/stress/budget1100.bats: N ranks of startburst released
# together under a limit, the rounds checked, the ledger compared with RDMA netlink.
SB=$BUILD/lab-progs/startburst
LQ=$BUILD/lab-progs/ledgerq

setup() {
	require_lab
	export RDMACTL_LEDGER=$BATS_TEST_TMPDIR/ledger
	export RDMACTL_ERRNO=EDQUOT # startburst tells a refusal from another failure by it
	"$RDMACTL" quota init >/dev/null
}

teardown() {
	pkill -f "$SB" 2>/dev/null || true
	sleep 0.5
	if [ -n "${CG:-}" ]; then
		wait_for 20 rmdir "$CG" 2>/dev/null || true
	fi
}

# Objects of one kind the kernel holds for user processes.
kernel_count_all() {
	rdma -j res show "$1" | jq '[.[] | select(.pid != null)] | length'
}

# The value of field $2 (asked, created, refused) of kind $3 on the line of round $1 in $OUT.
field() {
	sed -nE "s/^$1 .*\b$3 asked=([0-9]+) created=([0-9]+) refused=([0-9]+).*/\1 \2 \3/p" "$OUT" |
		awk -v f="$2" '{ print f == "asked" ? $1 : f == "created" ? $2 : $3 }'
}

# Start the burst ($@: the command that runs startburst) in the background, wait until it holds.
burst() {
	OUT=$BATS_TEST_TMPDIR/out
	# emptied here, not by the background job's redirection: a test runs several bursts, and the wait below
	# must not find the last burst's "holding" before the new job has truncated the file (seen in CI)
	: >"$OUT"
	: >"$BATS_TEST_TMPDIR/err"
	"$@" >>"$OUT" 2>>"$BATS_TEST_TMPDIR/err" 3>&- &
	BURST=$!
	wait_for 600 grep -q '^holding' "$OUT" || { cat "$OUT" "$BATS_TEST_TMPDIR/err"; return 1; }
	cat "$OUT"
	! grep -q '^errors=' "$OUT"
}

# Round 1: N asked one QP each under a QP limit of L: exactly max(0, N-L) refused. Round 2: the QPs asked
# get what is left under L, no more and no fewer; the CQs and MRs (limits above what is asked) are all made.
check_rounds() { # N L
	local n=$1 l=$2 r1=$(( $1 > $2 ? $1 - $2 : 0 )) made1 asked2 left
	made1=$(( n - r1 ))
	# what refused, and what else the ranks said (shown when a check below fails)
	sed -nE 's/.*refused ([a-z_]+) for pid [0-9]+[^:]*: [0-9]+\/[0-9]+ in use, (.*)/refused \1: \2/p' \
		"$BATS_TEST_TMPDIR/err" | sort | uniq -c
	grep -v 'refused [a-z_]* for pid' "$BATS_TEST_TMPDIR/err" | sort | uniq -c | head -5
	grep -m3 -E 'refused (mr|mr_bytes|cq) for' "$BATS_TEST_TMPDIR/err" || true
	assert_equal "$(field round1 refused qp)" "$r1"
	assert_equal "$(field round1 created qp)" "$made1"
	asked2=$(field round2 asked qp)
	left=$(( l - made1 ))
	[ "$left" -lt "$asked2" ] || left=$asked2
	assert_equal "$(field round2 created qp)" "$left"
	assert_equal "$(field round2 refused qp)" "$(( asked2 - left ))"
	assert_equal "$(field round2 refused cq)" 0
	assert_equal "$(field round2 refused mr)" 0
	# the refusals the ranks printed name usage that fills the limit, never more than it
	run grep -oE 'refused qp for pid [0-9]+[^:]*: [0-9]+/[0-9]+ in use' "$BATS_TEST_TMPDIR/err"
	if [ "$r1" -gt 0 ] || [ "$left" -lt "$asked2" ]; then
		assert_success
		run awk -v l="$l" -F'[ /:]+' '{ u = $(NF - 3); if (u > l || u + 1 <= l - 8) bad++ } END { print bad + 0 }' <<<"$output"
		assert_output 0
	fi
}

# What the kernel holds of qp, cq and mr equals the ledger's usage of scope $@ (ledgerq's words).
same_as_netlink() {
	local k want got snap
	snap=$("$LQ" "$@")
	for k in qp cq mr; do
		want=$(kernel_count_all $k)
		got=$(awk -v k=$k '$1 == k { print $2 }' <<<"$snap")
		[ "$want" = "$got" ] || { echo "$k: kernel $want, ledger $got"; return 1; }
	done
}

# End the burst together (half the ranks killed, half exiting) and see nothing left.
end_burst() {
	kill -TERM "$BURST"
	wait "$BURST" || true
	wait_for 180 bash -c "[ \$(rdma -j res show qp | jq '[.[] | select(.pid != null)] | length') = 0 ]"
}

job_burst() { # N L [K]
	local n=$1 l=$2 k=${3:-4} big=$(( 20 * $1 ))
	burst timeout 900 "$RDMACTL" run --job "b$n" --max-qp "$l" --max-cq "$big" --max-mr "$big" \
		--max-mr-bytes 1G -- "$SB" -n "$n" -k "$k"
	check_rounds "$n" "$l"
	run same_as_netlink job "b$n"
	assert_success
	end_burst
	run "$RDMACTL" quota gc
	run "$LQ" job "b$n"
	[ "$status" -eq 3 ] || { assert_success; refute_output --regexp '^(qp|cq|mr|mr_bytes) [1-9]'; }
}
