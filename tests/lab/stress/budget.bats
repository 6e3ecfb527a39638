#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# A budget burst between tests/lab/budget.bats's 100 and 1100 ranks (issue 28), run by hand: it took 53-69 s
# of a CI lane, and CI must stay under 45 minutes (its host counterpart, tests/unit/test_budget.c, runs there).
#   tests/lab/run --timeout 900 -- tests/lab/check tests/lab/stress/budget.bats

load ../../helper
load ../budget

@test "300 ranks at once under a job budget of 290 QPs: exactly 10 refused, the ledger equals netlink" {
	job_burst 300 290
}
