/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Kernel quotas and the drivers' own uverbs methods: names for the table of bpf/kqdrv.h, the unknown methods
 * that limited tasks called (map kq_drvunk) and the host's choice for them (map kq_drvcfg).
 */
#ifndef RDMACTL_LIBKQDRV_H
#define RDMACTL_LIBKQDRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "../../bpf/kq.h"
#include "../../bpf/kqdrv.h"

struct bpf_object;

/* A driver's name ("mlx5"), or NULL for an id the table of drivers does not know. */
const char *kq_drv_name(unsigned int driver_id);

/* One method of the table: the uapi names of its object and method, its action (KQ_DRV_UNKNOWN: not there). */
struct kq_drv_method {
	unsigned int driver, object, method, action;
	const char *object_name, *method_name;
};
extern const struct kq_drv_method kq_drv_methods[];
extern const size_t kq_drv_nmethods;
int kq_drv_lookup(unsigned int driver, unsigned int object, unsigned int method);

/* "mlx5 object 0x100a method 0x1000" (with the uapi names where the table has them). */
void kq_drv_describe(uint64_t key, char *buf, size_t len);

/* Pin the driver maps of a freshly loaded kq object (lib/kq/kq.c load_and_pin). */
int kq_drv_pin(struct bpf_object *obj);

/* The unknown driver methods limited tasks called, one callback each. -ENOENT: not loaded. */
struct kq_drv_unknown {
	uint64_t key; /* KQ_DRV_KEY */
	unsigned int driver, object, method;
	struct kq_drvseen seen;
};
int kq_drv_unknown_foreach(int (*cb)(const struct kq_drv_unknown *u, void *arg), void *arg);

/* The host's choice: pass unknown driver methods uncounted (a hole), or refuse them (the default). */
int kq_drv_get_pass_unknown(bool *pass);
int kq_drv_set_pass_unknown(bool pass);

#endif
