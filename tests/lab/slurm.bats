#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The Slurm SPANK plugin against a real single-node Slurm (slurmctld + slurmd, no munge) in the lab: each step
# one rdmactl job under --rdma-max-*, kernel limits on the step's cgroup, the site ceiling, and nothing left
# after the step ends, is cancelled, or loses its slurmstepd.

load ../helper

KQ=$BUILD/lab-progs/kqverbs
KQS=$BUILD/lab-progs/kqverbs-static

setup_file() {
	require_lab
	export SL=/tmp/slurm-lab
	export SLURM_CONF=$SL/slurm.conf
	export RDMACTL_LEDGER=/dev/shm/rdmactl-slurm
	rm -rf "$SL" && mkdir -p "$SL/spool/d" "$SL/spool/ctld"
	grep -q ' lab$' /etc/hosts || echo "127.0.0.1 lab" >>/etc/hosts
	mkdir -p /sys/fs/cgroup/system.slice
	echo "+cpu +memory +pids +rdma" >/sys/fs/cgroup/cgroup.subtree_control
	cat >"$SLURM_CONF" <<-EOF
		ClusterName=lab
		SlurmctldHost=lab
		AuthType=auth/none
		CredType=cred/none
		ProctrackType=proctrack/cgroup
		TaskPlugin=task/none
		SlurmUser=root
		MpiDefault=none
		ReturnToService=2
		SlurmdSpoolDir=$SL/spool/d
		StateSaveLocation=$SL/spool/ctld
		SlurmctldPidFile=$SL/slurmctld.pid
		SlurmdPidFile=$SL/slurmd.pid
		PlugStackConfig=$SL/plugstack.conf
		NodeName=lab CPUs=2 RealMemory=1000 State=UNKNOWN
		PartitionName=lab Nodes=lab Default=YES MaxTime=INFINITE State=UP
	EOF
	printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' >"$SL/cgroup.conf"
	echo "required $BUILD/spank_rdmactl.so max_qp=64 rdmactl=$BUILD/rdmactl preload=$PRELOAD" \
		"ledger=$RDMACTL_LEDGER" >"$SL/plugstack.conf"
	"$RDMACTL" quota init >/dev/null
	slurmctld -L "$SL/slurmctld.log" 3>&-
	slurmd -L "$SL/slurmd.log" 3>&-
	wait_for 90 bash -c 'sinfo -h -o %t 2>/dev/null | grep -qx idle' || {
		tail -20 "$SL/slurmctld.log" "$SL/slurmd.log" >&2
		return 1
	}
}

teardown_file() {
	local f
	for f in "$SL/slurmd.pid" "$SL/slurmctld.pid"; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	rm -f "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
}

setup() {
	require_lab
	PIDS=()
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}

# No rdmactl job of a step, no cgroup scope and no kernel scope left in the ledger. srun and sbatch -W return
# when the tasks are gone; slurmstepd's exit (the job released, the kernel limits taken off, which detaches the
# kernel quota programs after the last one: about a second in the lab) runs after that: callers wait for it.
assert_nothing_left() {
	run -0 "$RDMACTL" quota show -j
	local show=$output
	[ "$(jq '[.scopes[] | select(.scope == "job" or .scope == "cgroup")] | length' <<<"$show")" = 0 ] || {
		echo "left behind: $show" >&2
		return 1
	}
	run -0 bash -c "find /sys/fs/cgroup -path '*job_*/step_*' -type d 2>/dev/null"
	assert_output ""
}

@test "srun --rdma-max-qp=2 ib_write_bw -q 4 fails cleanly against a peer, --rdma-max-qp=8 passes; nothing remains" {
	local port=18700 q
	for q in 2 8; do
		timeout 120 ib_write_bw -d rxe0 -x 1 -q 4 -D 1 -p $port >"$BATS_TEST_TMPDIR/srv.$q" 2>&1 3>&- &
		PIDS+=($!)
		sleep 1
		run timeout 180 srun --rdma-max-qp=$q ib_write_bw -d rxe0 -x 1 -q 4 -D 1 -p $port 192.0.2.1
		echo "$output" >"$BATS_TEST_TMPDIR/cli.$q"
		if [ $q = 2 ]; then
			# refused at the third QP, with rdmactl's line naming the step's job; a clean exit, not a signal
			[ "$status" -ne 0 ]
			[ "$status" -lt 124 ]
			assert_output --regexp 'refused qp for pid [0-9]+ \(job slurm-[0-9]+\.0\): 2/2 in use'
		else
			assert_success
			assert_output --partial 'BW average'
		fi
		kill "${PIDS[-1]}" 2>/dev/null || true
		wait "${PIDS[-1]}" 2>/dev/null || true
		port=$((port + 1))
	done
	wait_for 30 assert_nothing_left
}

@test "the kernel enforces the step's limit on its cgroup: a static program (no interceptor) gets 2 QPs of 4" {
	run timeout 120 srun --rdma-max-qp=2 "$KQS" -k qp -n 4
	assert_output --partial 'qp created=2 errno=EDQUOT'
	assert_output --partial 'alive'
	wait_for 30 assert_nothing_left
}

@test "kernel=auto where BPF LSM is active: a step whose kernel limits cannot be applied never runs; kernel=no runs it" {
	local m=$BATS_TEST_TMPDIR/ran pin=/sys/fs/bpf/rdmactl mode conf=$SL/plugstack.conf
	run -0 cat /sys/kernel/security/lsm
	assert_output --regexp '(^|,)bpf(,|$)'
	# a pin directory rdmactl does not trust (writable by all): quota set --kernel refuses, and so the step
	mkdir -p "$pin"
	mode=$(stat -c %a "$pin")
	chmod 0777 "$pin"
	run timeout 120 srun --rdma-max-qp=2 touch "$m"
	local st=$status
	chmod "$mode" "$pin"
	echo "srun exit $st"
	# srun fails (its task killed before it execed), not by timeout (124), and nothing ran
	[ "$st" -ne 0 ]
	[ "$st" -ne 124 ]
	[ ! -e "$m" ]
	assert_output --partial 'task 0: Killed'
	# srun's error names the cause and the way out; so does slurmd's log
	assert_output --partial "mode 0777, not to root with mode 0700"
	assert_output --partial "the step does not run: kernel=auto, and BPF LSM is active"
	assert_output --partial "kernel=no in plugstack.conf runs steps on the interceptor alone"
	# the task writes slurmd's log itself, and srun may print the error first: wait for the line
	wait_for 10 grep -q "rdmactl: step slurm-.*kernel limits on .* not applied: .*the step does not run" "$SL/slurmd.log" || { tail -20 "$SL/slurmd.log"; false; }
	wait_for 30 assert_nothing_left
	# what the error names: kernel=no runs the step on the interceptor alone (its limit still holds there)
	cp "$conf" "$conf.auto"
	sed -i 's|$| kernel=no|' "$conf"
	chmod 0777 "$pin"
	run timeout 120 srun --rdma-max-qp=2 "$KQ" -k qp -n 4
	chmod "$mode" "$pin"
	mv "$conf.auto" "$conf"
	# the interceptor's refusal (ENOMEM, its default errno), not the kernel's EDQUOT
	assert_output --partial 'qp created=2 errno=ENOMEM'
	assert_output --regexp 'refused qp for pid [0-9]+ \(job slurm-[0-9]+\.0\): 2/2 in use'
	wait_for 30 assert_nothing_left
}

@test "a request above the site ceiling is refused before anything runs" {
	local m=$BATS_TEST_TMPDIR/ran
	run timeout 60 srun --rdma-max-qp=100000 touch "$m"
	assert_failure
	assert_output --partial '--rdma-max-qp=100000 is above this cluster'"'"'s ceiling of 64'
	[ ! -e "$m" ]
	run timeout 60 srun --rdma-max-qp=bogus touch "$m"
	assert_failure
	assert_output --partial "--rdma-max-qp: invalid value 'bogus'"
	[ ! -e "$m" ]
	run -0 srun --help
	assert_output --partial '--rdma-max-mr-bytes'
}

@test "sbatch --rdma-max-qp=2 (as #SBATCH) reaches the job's steps" {
	local out=$BATS_TEST_TMPDIR/batch.out script=$BATS_TEST_TMPDIR/job.sh
	printf '#!/bin/sh\n#SBATCH --rdma-max-qp=2\nsrun %s -k qp -n 4\n' "$KQS" >"$script"
	# the script ends as its step: kqverbs exits 3 when creation stopped early
	run -3 timeout 300 sbatch -W -o "$out" "$script"
	run cat "$out"
	assert_output --partial 'qp created=2 errno=EDQUOT'
	wait_for 30 assert_nothing_left
}

@test "a running step is named in quota show and top; scancel leaves nothing behind" {
	local out=$BATS_TEST_TMPDIR/step hold=$BATS_TEST_TMPDIR/hold id
	timeout 300 srun --rdma-max-qp=4 "$KQ" -k qp -n 3 -H "$hold" >"$out" 2>&1 3>&- &
	PIDS+=($!)
	wait_for 120 grep -q holding "$out" || { cat "$out" >&2; return 1; }
	id=$(squeue -h -o %i | head -1)
	run -0 "$RDMACTL" quota show -j
	[ "$(jq --arg j "slurm-$id.0" '[.scopes[] | select(.scope == "job" and (tostring | contains($j)))] | length' \
		<<<"$output")" = 1 ] || { echo "$output" >&2; return 1; }
	run -0 "$RDMACTL" quota show
	assert_output --partial "job slurm-$id.0"
	run -0 "$RDMACTL" top -b -n 1 -j
	assert_output --partial "\"slurm-$id.0\""
	run -0 scancel "$id"
	wait_for 60 bash -c '! squeue -h | grep -q .'
	wait "${PIDS[-1]}" || true
	wait_for 30 assert_nothing_left
}

@test "a step whose slurmstepd is killed (node failure) is cleaned by quota gc" {
	local out=$BATS_TEST_TMPDIR/step hold=$BATS_TEST_TMPDIR/hold id
	timeout 300 srun --rdma-max-qp=4 "$KQ" -k qp -n 1 -H "$hold" >"$out" 2>&1 3>&- &
	PIDS+=($!)
	wait_for 120 grep -q holding "$out" || { cat "$out" >&2; return 1; }
	id=$(squeue -h -o %i | head -1)
	# everything of the step dies at once, as on a node that lost power: no slurm_spank_exit
	local tasks stepd
	tasks=$(scontrol listpids "$id" | awk '$1 ~ /^[0-9]+$/ {print $1}')
	stepd=$(pgrep -f "^slurmstepd: \[$id\.0\]")
	[ -n "$tasks" ]
	[ -n "$stepd" ]
	kill -KILL $stepd $tasks
	# gone, or a zombie nobody reaps (the lab's init does not): dead either way
	wait_for 30 bash -c 'for p; do [ ! -e /proc/$p ] || [ "$(awk "{print \$3}" /proc/$p/stat)" = Z ] || exit 1; done' \
		sh $tasks
	run -0 "$RDMACTL" quota gc
	run -0 "$RDMACTL" quota show -j
	[ "$(jq '[.scopes[] | select(.scope == "job")] | length' <<<"$output")" = 0 ] || { echo "$output" >&2; return 1; }
	scancel "$id" || true
	wait_for 60 bash -c '! squeue -h | grep -q .' || true
	# the step's cgroup outlives its killed slurmstepd: once it is gone (removed here, as a reboot or the
	# node's cleanup would), gc drops its limits from the ledger and the kernel too
	local d
	for d in $(find /sys/fs/cgroup -depth -type d -path "*job_$id*"); do
		rmdir "$d" 2>/dev/null || true
	done
	run -0 "$RDMACTL" -j quota gc
	run -0 jq -e '.cgroups_removed >= 1' <<<"$output"
	run -0 "$RDMACTL" quota show -j
	[ "$(jq --arg j "job_$id" '[.scopes[] | select(.scope == "cgroup" and (.cgroup | contains($j)))] | length' \
		<<<"$output")" = 0 ] || { echo "$output" >&2; return 1; }
}
