// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The monitor's per-tgid counters map, read from any process (top, export): no BPF program is loaded here. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "core/proc.h"
#include "monitor/bpfmon.h"

/* Read-only: readers need read access to the pin only (CAP_DAC_READ_SEARCH, not CAP_DAC_OVERRIDE, for a
 * service that is not root: dist/systemd/rdmactl-export.service). */
static int open_ro(const char *pin, int *fd)
{
	LIBBPF_OPTS(bpf_obj_get_opts, opts, .file_flags = BPF_F_RDONLY);
	int f = bpf_obj_get_opts(pin, &opts);

	if (f < 0)
		return -errno;
	*fd = f;
	return 0;
}

int mon_counters_open_pinned(int *fd)
{
	return open_ro(MON_PIN_COUNTERS, fd);
}

int mon_devcounters_open_pinned(int *fd)
{
	return open_ro(MON_PIN_DEVCOUNTERS, fd);
}

int mon_status_open_pinned(int *fd)
{
	return open_ro(MON_PIN_STATUS, fd);
}

int mon_qpids_open_pinned(int *fd)
{
	return open_ro(MON_PIN_QPIDS, fd);
}

/*
 * A hash map read in batches: a bucket larger than the batch fails with ENOSPC and is read again with a larger
 * one. The map may change meanwhile: the caller checks the counts around the read (an entry deleted and added
 * again during it can be seen twice or not at all).
 */
int mon_qpids_read(int fd, struct mon_qp **out, size_t *n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	struct mon_qpid *keys = NULL;
	struct mon_qp *v = NULL;
	__u32 *vals = NULL, batch = 4096, cnt;
	size_t have = 0, cap = 0, i;
	__u32 in = 0, next = 0;
	bool first = true, done = false;
	int ret = 0;

	while (!done) {
		if (have + batch > cap) {
			struct mon_qp *nv;

			cap = (have + batch) * 2;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				ret = -ENOMEM;
				break;
			}
			v = nv;
		}
		free(keys);
		free(vals);
		keys = malloc(batch * sizeof(*keys));
		vals = malloc(batch * sizeof(*vals));
		if (!keys || !vals) {
			ret = -ENOMEM;
			break;
		}
		cnt = batch;
		if (bpf_map_lookup_batch(fd, first ? NULL : &in, &next, keys, vals, &cnt, &opts)) {
			if (errno == ENOSPC && !cnt && batch < (1u << 20)) {
				batch *= 4; /* one bucket holds more than a batch */
				continue;
			}
			if (errno != ENOENT) {
				ret = -errno;
				break;
			}
			done = true; /* the last entries are in this batch */
		}
		for (i = 0; i < cnt; i++) {
			v[have].id = keys[i];
			v[have++].tgid = vals[i];
		}
		in = next;
		first = false;
	}
	free(keys);
	free(vals);
	if (ret) {
		free(v);
		return ret;
	}
	*out = v;
	*n = have;
	return 0;
}

int mon_status_read(int fd, struct mon_status *out)
{
	__u32 key = 0;

	if (bpf_map_lookup_elem(fd, &key, out))
		return -errno;
	return 0;
}

int mon_status_alive(const struct mon_status *st)
{
	uint64_t start = 0;
	bool zombie = false;
	struct stat ns;

	if (!mon_status_pid(st))
		return 0;
	/* its pid means nothing in another pid namespace (a container's, a service's): not told there */
	if (stat("/proc/self/ns/pid", &ns) || (uint32_t)ns.st_ino != mon_status_pidns(st))
		return 0;
	if (proc_stat_start((pid_t)mon_status_pid(st), &start, &zombie) || zombie ||
	    (uint32_t)start != mon_status_start(st))
		return -ESRCH;
	return 0;
}

int mon_pinned_alive(void)
{
	struct mon_status st;
	int fd = -1, ret;

	ret = mon_status_open_pinned(&fd);
	if (ret)
		return ret;
	ret = mon_status_read(fd, &st);
	close(fd);
	return ret ? ret : mon_status_alive(&st);
}

int mon_counters_open_live(int *fd)
{
	int ret = mon_counters_open_pinned(fd);

	if (!ret && mon_pinned_alive() == -ESRCH) {
		close(*fd);
		*fd = -1;
		ret = -ESRCH;
	}
	return ret;
}

uint32_t mon_map_id(int fd)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.id;
}

int mon_counters_read(int fd, pid_t tgid, struct mon_counts *out)
{
	__u32 key = (__u32)tgid;

	if (bpf_map_lookup_elem(fd, &key, out))
		return -errno;
	return 0;
}

int mon_counters_foreach(int fd, int (*cb)(pid_t tgid, const struct mon_counts *c, void *arg), void *arg)
{
	__u32 key, next;
	struct mon_counts c;
	bool first = true;
	int ret;

	for (;;) {
		if (bpf_map_get_next_key(fd, first ? NULL : &key, &next))
			return errno == ENOENT ? 0 : -errno;
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &c))
			continue; /* deleted meanwhile */
		ret = cb((pid_t)key, &c, arg);
		if (ret)
			return ret;
	}
}

/* Nothing live by the counts: balanced, or below zero (objects of before the monitor destroyed). */
static bool holds_nothing(const struct mon_counts *c)
{
	int t;

	for (t = 0; t < RESTRACK_NTYPES; t++)
		if (c->create[t] > c->destroy[t])
			return false;
	return true;
}

struct prune_ctx {
	__u32 keys[256];
	int n;
};

static int prune_cb(pid_t tgid, const struct mon_counts *c, void *arg)
{
	struct prune_ctx *p = arg;

	if (tgid > 0 && holds_nothing(c) && kill(tgid, 0) && errno == ESRCH)
		p->keys[p->n++] = (__u32)tgid;
	return p->n == (int)(sizeof(p->keys) / sizeof(p->keys[0]));
}

int mon_counters_prune(int fd)
{
	struct prune_ctx p;
	int i, ret, dropped = 0;

	do {
		p.n = 0;
		ret = mon_counters_foreach(fd, prune_cb, &p);
		if (ret < 0)
			return ret;
		for (i = 0; i < p.n; i++)
			if (!bpf_map_delete_elem(fd, &p.keys[i]))
				dropped++;
	} while (ret > 0);
	return dropped;
}
