/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the kernel quota programs read of the uverbs interface, shared by bpf/kq.bpf.c and the floors of
 * bench/kqprobe (bpf/kqfloor.bpf.c), so that a floor classifies a request exactly as the programs do: local
 * views of ib_uverbs' types, a uverbs ioctl's header and attributes, and the kind a request or an object is
 * counted as. Include after vmlinux.h, rdma/ib_user_ioctl_cmds.h and kq.h.
 */
#ifndef RDMACTL_KQUVERBS_BPF_H
#define RDMACTL_KQUVERBS_BPF_H

/* ib_uverbs types are not in vmlinux BTF: local views, relocated by CO-RE against the module's BTF. */
struct uverbs_api_object___kq {
	__u32 id;
} __attribute__((preserve_access_index));

struct ib_uobject___kq {
	void *object;
	void *ufile; /* struct ib_uverbs_file *: its uverbs file's, the key of the file's context record */
	struct list_head list;
	const struct uverbs_api_object___kq *uapi_object;
} __attribute__((preserve_access_index));

struct ib_uverbs_file___kq {
	struct list_head uobjects;
} __attribute__((preserve_access_index));

struct ib_mr___kq {
	__u64 length;
} __attribute__((preserve_access_index));

/* The kind a uverbs object type is counted as, or KQ_NK. */
static __always_inline __u32 kind_of_object(__u32 id)
{
	switch (id) {
	case UVERBS_OBJECT_PD: return KQ_PD;
	case UVERBS_OBJECT_CQ: return KQ_CQ;
	case UVERBS_OBJECT_QP: return KQ_QP;
	case UVERBS_OBJECT_SRQ: return KQ_SRQ;
	case UVERBS_OBJECT_AH: return KQ_AH;
	case UVERBS_OBJECT_MR: return KQ_MR;
	case UVERBS_OBJECT_MW: return KQ_MW;
	case UVERBS_OBJECT_XRCD: return KQ_XRCD;
	case UVERBS_OBJECT_WQ: return KQ_WQ;
	}
	return KQ_NK;
}

/* The kind a write command (direct or through INVOKE_WRITE) creates, or KQ_NK. */
static __always_inline __u32 kind_of_write(__u32 cmd)
{
	__u32 c = cmd & KQ_CMD_MASK;

	if (cmd & KQ_CMD_FLAG_EXTENDED) {
		switch (c) {
		case KQ_CMD_CREATE_CQ: return KQ_CQ;
		case KQ_CMD_CREATE_QP: return KQ_QP;
		case KQ_CMD_EX_CREATE_WQ: return KQ_WQ;
		}
		return KQ_NK;
	}
	switch (c) {
	case KQ_CMD_ALLOC_PD: return KQ_PD;
	case KQ_CMD_CREATE_AH: return KQ_AH;
	case KQ_CMD_REG_MR: return KQ_MR;
	case KQ_CMD_ALLOC_MW: return KQ_MW;
	case KQ_CMD_CREATE_CQ: return KQ_CQ;
	case KQ_CMD_CREATE_QP: return KQ_QP;
	case KQ_CMD_OPEN_QP: return KQ_QP;
	case KQ_CMD_CREATE_SRQ: return KQ_SRQ;
	case KQ_CMD_CREATE_XSRQ: return KQ_SRQ;
	case KQ_CMD_OPEN_XRCD: return KQ_XRCD;
	}
	return KQ_NK;
}

struct uattr {
	__u16 attr_id;
	__u16 len;
	__u16 flags;
	__u16 reserved;
	__u64 data;
};

struct uhdr {
	__u16 length;
	__u16 object_id;
	__u16 method_id;
	__u16 num_attrs;
	__u64 reserved1;
	__u32 driver_id;
	__u32 reserved2;
};

/* The header and the first attributes, read with one copy (libibverbs puts WRITE_CMD first, CORE_IN next). */
#define KQ_FIRST_ATTRS 2
struct ureq {
	struct uhdr h;
	struct uattr a[KQ_FIRST_ATTRS];
};

#endif
