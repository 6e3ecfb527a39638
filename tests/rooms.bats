#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# lib/'s rooms: every include keeps the rule of doc/design.md ("The rooms of lib/"), and the check can fail.

load helper

@test "every include of lib/, preload/, slurm/, bpf/ and cmd/ keeps the rooms' rule" {
	run -0 python3 "$TOP/tests/rooms/check.py" "$TOP"
	assert_output --regexp '^rooms: [0-9]+ files, [0-9]+ includes, 0 breaks of the rule$'
}

# A fresh copy of what the check reads, in $BATS_TEST_TMPDIR/tree.
copy_tree() {
	local d=$BATS_TEST_TMPDIR/tree

	rm -rf "$d" && mkdir -p "$d/doc"
	cp "$TOP/doc/design.md" "$d/doc/"
	cp -r "$TOP/lib" "$TOP/preload" "$TOP/slurm" "$TOP/bpf" "$TOP/cmd" "$d/"
}

# A copy of the tree with one break in it: the check names it and fails.
broken() {
	copy_tree
	echo "$1" >> "$BATS_TEST_TMPDIR/tree/$2"
	run -1 python3 "$TOP/tests/rooms/check.py" "$BATS_TEST_TMPDIR/tree"
}

@test "a room that includes one above it (core -> top) is a break" {
	broken '#include "top/top.h"' lib/core/util.c
	assert_output --partial 'lib/core/util.c:'
	assert_output --partial 'core includes top ("top/top.h"), which doc/design.md does not allow'
}

@test "the preload reaching past core and ledger, and lib reaching into cmd/, are breaks" {
	broken '#include "nl/nl.h"' preload/acct.c
	assert_output --partial 'preload includes nl'
	broken '#include "../../cmd/rdmactl.h"' lib/top/top.c
	assert_output --partial 'top includes cmd'
}

@test "an include not by room, a room the table lacks, a file outside the rooms, a circle" {
	broken '#include "util.h"' lib/core/out.c
	assert_output --partial 'include by room ("core/util.h")'
	copy_tree
	echo '#include "core/out.h"' >> "$BATS_TEST_TMPDIR/tree/lib/core/util.h"
	echo '#include "core/clock.h"' >> "$BATS_TEST_TMPDIR/tree/lib/core/out.h"
	echo '#include "core/util.h"' >> "$BATS_TEST_TMPDIR/tree/lib/core/clock.h"
	run -1 python3 "$TOP/tests/rooms/check.py" "$BATS_TEST_TMPDIR/tree"
	assert_output --partial 'a circle of includes: lib/core/'
	copy_tree
	mkdir -p "$BATS_TEST_TMPDIR/tree/lib/attic" && touch "$BATS_TEST_TMPDIR/tree/lib/stray.c"
	run -1 python3 "$TOP/tests/rooms/check.py" "$BATS_TEST_TMPDIR/tree"
	assert_output --partial 'lib/attic/: a room the table of doc/design.md does not name'
	assert_output --partial 'lib/stray.c: a file outside every room'
}
