// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The floor any BPF design of the kernel quotas pays (bench/kqprobe, configuration "empty"): programs that
 * return at once, at exactly the hooks a create+destroy pair passes while a kernel limit exists (bpf/kq.bpf.c):
 * the uverbs ioctl's LSM hook (create and destroy), the begin's fexit, the commit's fentry, the destroy's
 * fexit; a context's open (LSM file_open, fexit ib_uverbs_open) and release (fentry ib_uverbs_close). What
 * they add is the trampolines alone. Never loaded by rdmactl.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("lsm.s/file_ioctl")
int BPF_PROG(kqe_ioctl)
{
	return 0;
}

SEC("lsm/file_open")
int BPF_PROG(kqe_open)
{
	return 0;
}

SEC("fexit/ib_uverbs_open")
int BPF_PROG(kqe_opened)
{
	return 0;
}

SEC("fentry/ib_uverbs_close")
int BPF_PROG(kqe_close)
{
	return 0;
}

SEC("fexit/rdma_alloc_begin_uobject")
int BPF_PROG(kqe_begin)
{
	return 0;
}

SEC("fentry/rdma_alloc_commit_uobject")
int BPF_PROG(kqe_commit)
{
	return 0;
}

SEC("fexit/uverbs_destroy_uobject")
int BPF_PROG(kqe_destroy)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
