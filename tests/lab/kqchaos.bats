#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Kernel quotas under chaos (issue 33 item 6), the programs attached throughout (tests/lab/kqchaos.bash).

load ../helper
load kq
load kqchaos

@test "churners SIGKILLed at random while a limit is lifted and set again beside another (a global one): kernel usage ends equal to RDMA netlink, a fresh program gets exactly its limit, none is killed" {
	chaos 3
}
