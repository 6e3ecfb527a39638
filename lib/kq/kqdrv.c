// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Kernel quotas and the drivers' own uverbs methods: the table's names, the unknown methods seen, the option. */
#include "kq/kqdrv.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define DRV_UNK_PIN KQ_PIN_DIR "/kq_drvunk"
#define DRV_CFG_PIN KQ_PIN_DIR "/kq_drvcfg"

const char *kq_drv_name(unsigned int driver_id)
{
	switch (driver_id) {
#define X(NAME, id, str) case id: return str;
		KQ_DRIVERS(X)
#undef X
	}
	return NULL;
}

const struct kq_drv_method kq_drv_methods[] = {
#define X(d, on, o, mn, m, a) { KQ_DRIVER_##d, o, m, KQ_DRV_##a, #on, #mn },
	KQ_DRV_METHODS(X)
#undef X
};
const size_t kq_drv_nmethods = sizeof(kq_drv_methods) / sizeof(kq_drv_methods[0]);

int kq_drv_lookup(unsigned int driver, unsigned int object, unsigned int method)
{
	size_t i;

	for (i = 0; i < kq_drv_nmethods; i++)
		if (kq_drv_methods[i].driver == driver && kq_drv_methods[i].object == object &&
		    kq_drv_methods[i].method == method)
			return (int)i;
	return -1;
}

void kq_drv_describe(uint64_t key, char *buf, size_t len)
{
	unsigned int drv = key >> 32, obj = (key >> 16) & 0xffff, meth = key & 0xffff;
	const char *name = kq_drv_name(drv);
	const char *oname = NULL;
	char dbuf[24];
	size_t i;

	if (!name) {
		snprintf(dbuf, sizeof(dbuf), "driver %u", drv);
		name = dbuf;
	}
	/* the object's name, from any method of the table on it */
	for (i = 0; i < kq_drv_nmethods && !oname; i++)
		if (kq_drv_methods[i].driver == drv && kq_drv_methods[i].object == obj)
			oname = kq_drv_methods[i].object_name;
	if (oname)
		snprintf(buf, len, "%s object 0x%x (%s) method 0x%x", name, obj, oname, meth);
	else
		snprintf(buf, len, "%s object 0x%x method 0x%x", name, obj, meth);
}

int kq_drv_pin(struct bpf_object *obj)
{
	static const char *const maps[][2] = { { "kq_drvunk", DRV_UNK_PIN }, { "kq_drvcfg", DRV_CFG_PIN } };
	size_t i;
	int err;

	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(obj, maps[i][0]);

		err = map ? bpf_map__pin(map, maps[i][1]) : -ENOENT;
		if (err)
			return err;
	}
	return 0;
}

int kq_drv_unknown_foreach(int (*cb)(const struct kq_drv_unknown *u, void *arg), void *arg)
{
	LIBBPF_OPTS(bpf_obj_get_opts, opts, .file_flags = BPF_F_RDONLY);
	struct kq_drv_unknown u;
	__u64 key, next, *prev = NULL;
	int fd, err = 0;

	fd = bpf_obj_get_opts(DRV_UNK_PIN, &opts);
	if (fd < 0)
		return -errno;
	while (!err && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		memset(&u, 0, sizeof(u));
		if (bpf_map_lookup_elem(fd, &key, &u.seen))
			continue;
		u.key = key;
		u.driver = key >> 32;
		u.object = (key >> 16) & 0xffff;
		u.method = key & 0xffff;
		err = cb(&u, arg);
	}
	close(fd);
	return err;
}

int kq_drv_get_pass_unknown(bool *pass)
{
	LIBBPF_OPTS(bpf_obj_get_opts, opts, .file_flags = BPF_F_RDONLY);
	__u32 zero = 0, v = 0;
	int fd = bpf_obj_get_opts(DRV_CFG_PIN, &opts);

	if (fd < 0)
		return -errno;
	if (bpf_map_lookup_elem(fd, &zero, &v)) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	*pass = v & KQ_DRVCFG_PASS_UNKNOWN;
	return 0;
}

int kq_drv_set_pass_unknown(bool pass)
{
	__u32 zero = 0, v = pass ? KQ_DRVCFG_PASS_UNKNOWN : 0;
	int fd = bpf_obj_get(DRV_CFG_PIN), err = 0;

	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(fd, &zero, &v, BPF_ANY))
		err = -errno;
	close(fd);
	return err;
}
