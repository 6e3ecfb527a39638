/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Kernel quotas and the drivers' own uverbs methods (the namespace 1 << UVERBS_ID_NS_SHIFT): which ones a
 * limited task may call, which create a counted kind and how it is read from the request. Shared by the BPF
 * programs (bpf/kqdrv.bpf.h), lib/kq/kqdrv.c (names for monitor and quota show) and tests/unit/test_kqdrv.c,
 * which checks the table against the installed uapi headers. Ids are numbers here, not the headers' enums:
 * Debian 12's headers predate some of them (bnxt_re's methods, efa's MR query).
 */
#ifndef RDMACTL_KQDRV_H
#define RDMACTL_KQDRV_H

/* enum rdma_driver_id (rdma/ib_user_ioctl_verbs.h): hdr.driver_id of a uverbs ioctl. */
#define KQ_DRIVERS(X)                                                                                                \
	X(UNKNOWN, 0, "unknown") X(MLX5, 1, "mlx5") X(MLX4, 2, "mlx4") X(CXGB3, 3, "cxgb3") X(CXGB4, 4, "cxgb4")    \
	X(MTHCA, 5, "mthca") X(BNXT_RE, 6, "bnxt_re") X(OCRDMA, 7, "ocrdma") X(NES, 8, "nes")                       \
	X(IRDMA, 9, "irdma") X(VMW_PVRDMA, 10, "vmw_pvrdma") X(QEDR, 11, "qedr") X(HNS, 12, "hns")                  \
	X(USNIC, 13, "usnic") X(RXE, 14, "rxe") X(HFI1, 15, "hfi1") X(QIB, 16, "qib") X(EFA, 17, "efa")             \
	X(SIW, 18, "siw") X(ERDMA, 19, "erdma") X(MANA, 20, "mana")

enum kq_driver {
#define X(NAME, id, str) KQ_DRIVER_##NAME = id,
	KQ_DRIVERS(X)
#undef X
};

/* What the programs do with a driver method (0: not in the table, refused to a limited task). */
enum kq_drv_action {
	KQ_DRV_UNKNOWN = 0,
	KQ_DRV_PASS = 1,        /* creates no counted kind: passes at any limit */
	KQ_DRV_DEVX_CREATE = 2, /* mlx5 DEVX object: the kind from the PRM opcode of its command */
	KQ_DRV_UMEM_REG = 3,    /* mlx5 DEVX UMEM: its length is mr_bytes */
};

/*
 * Every driver method the programs know: driver, object (name, id), method (name, id), action. A driver's
 * method can sit on a core object (mlx5 QUERY_PORT on the device, efa's MR query): the object id is then the
 * core one. The names are the uapi headers' (checked by tests/unit/test_kqdrv.c); sources: Linux 6.1 and
 * 6.12 (include/uapi/rdma/mlx5_user_ioctl_cmds.h, bnxt_re-abi.h, efa-abi.h), the modules' BTF in the lab.
 */
#define KQ_DRV_METHODS(X)                                                                                            \
	X(MLX5, MLX5_IB_OBJECT_DEVX, 0x1000, MLX5_IB_METHOD_DEVX_OTHER, 0x1000, PASS)                               \
	X(MLX5, MLX5_IB_OBJECT_DEVX, 0x1000, MLX5_IB_METHOD_DEVX_QUERY_UAR, 0x1001, PASS)                           \
	X(MLX5, MLX5_IB_OBJECT_DEVX, 0x1000, MLX5_IB_METHOD_DEVX_QUERY_EQN, 0x1002, PASS)                           \
	X(MLX5, MLX5_IB_OBJECT_DEVX, 0x1000, MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT, 0x1003, PASS)                     \
	X(MLX5, MLX5_IB_OBJECT_DEVX_OBJ, 0x1001, MLX5_IB_METHOD_DEVX_OBJ_CREATE, 0x1000, DEVX_CREATE)               \
	X(MLX5, MLX5_IB_OBJECT_DEVX_OBJ, 0x1001, MLX5_IB_METHOD_DEVX_OBJ_DESTROY, 0x1001, PASS)                     \
	X(MLX5, MLX5_IB_OBJECT_DEVX_OBJ, 0x1001, MLX5_IB_METHOD_DEVX_OBJ_MODIFY, 0x1002, PASS)                      \
	X(MLX5, MLX5_IB_OBJECT_DEVX_OBJ, 0x1001, MLX5_IB_METHOD_DEVX_OBJ_QUERY, 0x1003, PASS)                       \
	X(MLX5, MLX5_IB_OBJECT_DEVX_OBJ, 0x1001, MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY, 0x1004, PASS)                 \
	X(MLX5, MLX5_IB_OBJECT_DEVX_UMEM, 0x1002, MLX5_IB_METHOD_DEVX_UMEM_REG, 0x1000, UMEM_REG)                   \
	X(MLX5, MLX5_IB_OBJECT_DEVX_UMEM, 0x1002, MLX5_IB_METHOD_DEVX_UMEM_DEREG, 0x1001, PASS)                     \
	X(MLX5, MLX5_IB_OBJECT_FLOW_MATCHER, 0x1003, MLX5_IB_METHOD_FLOW_MATCHER_CREATE, 0x1000, PASS)              \
	X(MLX5, MLX5_IB_OBJECT_FLOW_MATCHER, 0x1003, MLX5_IB_METHOD_FLOW_MATCHER_DESTROY, 0x1001, PASS)             \
	X(MLX5, MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD, 0x1004, MLX5_IB_METHOD_DEVX_ASYNC_CMD_FD_ALLOC, 0x1000, PASS)     \
	X(MLX5, MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD, 0x1005, MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC, 0x1000, PASS) \
	X(MLX5, MLX5_IB_OBJECT_VAR, 0x1006, MLX5_IB_METHOD_VAR_OBJ_ALLOC, 0x1000, PASS)                            \
	X(MLX5, MLX5_IB_OBJECT_VAR, 0x1006, MLX5_IB_METHOD_VAR_OBJ_DESTROY, 0x1001, PASS)                          \
	X(MLX5, MLX5_IB_OBJECT_PP, 0x1007, MLX5_IB_METHOD_PP_OBJ_ALLOC, 0x1000, PASS)                              \
	X(MLX5, MLX5_IB_OBJECT_PP, 0x1007, MLX5_IB_METHOD_PP_OBJ_DESTROY, 0x1001, PASS)                            \
	X(MLX5, MLX5_IB_OBJECT_UAR, 0x1008, MLX5_IB_METHOD_UAR_OBJ_ALLOC, 0x1000, PASS)                            \
	X(MLX5, MLX5_IB_OBJECT_UAR, 0x1008, MLX5_IB_METHOD_UAR_OBJ_DESTROY, 0x1001, PASS)                          \
	X(MLX5, MLX5_IB_OBJECT_STEERING_ANCHOR, 0x1009, MLX5_IB_METHOD_STEERING_ANCHOR_CREATE, 0x1000, PASS)       \
	X(MLX5, MLX5_IB_OBJECT_STEERING_ANCHOR, 0x1009, MLX5_IB_METHOD_STEERING_ANCHOR_DESTROY, 0x1001, PASS)      \
	X(MLX5, UVERBS_OBJECT_DEVICE, 0, MLX5_IB_METHOD_QUERY_PORT, 0x1000, PASS)                                  \
	X(MLX5, UVERBS_OBJECT_DEVICE, 0, MLX5_IB_METHOD_GET_DATA_DIRECT_SYSFS_PATH, 0x1001, PASS)                  \
	X(MLX5, UVERBS_OBJECT_PD, 1, MLX5_IB_METHOD_PD_QUERY, 0x1000, PASS)                                        \
	X(MLX5, UVERBS_OBJECT_FLOW, 9, MLX5_IB_METHOD_CREATE_FLOW, 0x1000, PASS)                                   \
	X(MLX5, UVERBS_OBJECT_FLOW, 9, MLX5_IB_METHOD_DESTROY_FLOW, 0x1001, PASS)                                  \
	X(MLX5, UVERBS_OBJECT_FLOW_ACTION, 13, MLX5_IB_METHOD_FLOW_ACTION_CREATE_MODIFY_HEADER, 0x1000, PASS)      \
	X(MLX5, UVERBS_OBJECT_FLOW_ACTION, 13, MLX5_IB_METHOD_FLOW_ACTION_CREATE_PACKET_REFORMAT, 0x1001, PASS)    \
	X(MLX5, UVERBS_OBJECT_DM, 14, MLX5_IB_METHOD_DM_MAP_OP_ADDR, 0x1000, PASS)                                 \
	X(MLX5, UVERBS_OBJECT_DM, 14, MLX5_IB_METHOD_DM_QUERY, 0x1001, PASS)                                       \
	X(BNXT_RE, BNXT_RE_OBJECT_ALLOC_PAGE, 0x1000, BNXT_RE_METHOD_ALLOC_PAGE, 0x1000, PASS)                     \
	X(BNXT_RE, BNXT_RE_OBJECT_ALLOC_PAGE, 0x1000, BNXT_RE_METHOD_DESTROY_PAGE, 0x1001, PASS)                   \
	X(BNXT_RE, BNXT_RE_OBJECT_NOTIFY_DRV, 0x1001, BNXT_RE_METHOD_NOTIFY_DRV, 0x1000, PASS)                     \
	X(BNXT_RE, BNXT_RE_OBJECT_GET_TOGGLE_MEM, 0x1002, BNXT_RE_METHOD_GET_TOGGLE_MEM, 0x1000, PASS)             \
	X(BNXT_RE, BNXT_RE_OBJECT_GET_TOGGLE_MEM, 0x1002, BNXT_RE_METHOD_RELEASE_TOGGLE_MEM, 0x1001, PASS)         \
	X(EFA, UVERBS_OBJECT_MR, 7, EFA_IB_METHOD_MR_QUERY, 0x1000, PASS)

/* The key of a (driver, object, method): what the BPF switch and the unknown methods' map use. */
#define KQ_DRV_KEY(drv, obj, meth) (((__u64)(drv) << 32) | ((__u64)(obj) << 16) | (__u64)(meth))

/* mlx5 DEVX object creation: MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_IN, the PRM command (opcode big-endian first). */
#define KQ_DEVX_ATTR_CMD_IN 0x1001
/* mlx5 DEVX UMEM registration: MLX5_IB_ATTR_DEVX_UMEM_REG_LEN (u64, inline). */
#define KQ_DEVX_ATTR_UMEM_LEN 0x1002

/*
 * The PRM opcodes of DEVX creates that make a counted kind (mlx5_ifc.h; the kernel's devx_is_obj_create_cmd
 * accepts them, and keeps opcode | obj_type << 16 in the top half of devx_obj.obj_id). Every other create
 * (TIR, TIS, RQT, flow tables, counters, general objects...) passes uncounted: the rdma cgroup counts it.
 */
#define KQ_DEVX_OPCODES(X)                                                                                           \
	X(CREATE_MKEY, 0x200, KQ_MR) X(CREATE_CQ, 0x400, KQ_CQ) X(CREATE_QP, 0x500, KQ_QP)                          \
	X(CREATE_SRQ, 0x700, KQ_SRQ) X(CREATE_XRC_SRQ, 0x705, KQ_SRQ) X(CREATE_DCT, 0x710, KQ_QP)                  \
	X(CREATE_XRQ, 0x717, KQ_SRQ) X(ALLOC_PD, 0x800, KQ_PD) X(ALLOC_XRCD, 0x80e, KQ_XRCD)                       \
	X(CREATE_SQ, 0x904, KQ_QP) X(CREATE_RQ, 0x908, KQ_WQ) X(CREATE_RMP, 0x90c, KQ_SRQ)

/*
 * The errno of every refusal of a driver method (a DEVX create or UMEM past a limit, a method not in the
 * table): EOPNOTSUPP, on which UCX and the other DEVX users fall back to plain verbs, whose objects the core
 * path counts (and refuses with EDQUOT at the same limit); EDQUOT here would end a UCX job outright.
 */
#define KQ_DRV_ERRNO 95 /* EOPNOTSUPP */

/* A refusal of a method not in the table: kq_events type; amount carries its KQ_DRV_KEY. */
#define KQ_EV_DRV_UNKNOWN 3

/* Map kq_drvunk (pinned): the unknown methods limited tasks called, by KQ_DRV_KEY. */
struct kq_drvseen {
	__u64 refused; /* refused to a limited task */
	__u64 passed;  /* passed uncounted (kq_drvcfg: KQ_DRVCFG_PASS_UNKNOWN) */
	__u32 tgid;    /* the last caller */
	__u32 pad;
	char comm[16];
};

/* Map kq_drvcfg (pinned, one __u32): the host's choice for unknown driver methods. */
#define KQ_DRVCFG_PASS_UNKNOWN 1u

#endif
