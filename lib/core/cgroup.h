/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cgroup v2 paths as users give them (--cgroup): one resolution for quota and run, so both name the same cgroup. */
#ifndef RDMACTL_CGROUP_H
#define RDMACTL_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CGROUP_ROOT_DEFAULT "/sys/fs/cgroup"

/* The cgroup2 mount point (the first one in /proc/self/mountinfo), else /sys/fs/cgroup. */
void cgroup2_root(char *out, size_t len);

/*
 * Resolve a cgroup path, absolute (/sys/fs/cgroup/a/b) or relative to the cgroup2 mount (a/b), into its real
 * directory (dir; symlinks, "..", repeated and trailing '/' resolved). root receives the mount point; the
 * path relative to it is dir + strlen(root) ("" for the root cgroup itself). Returns 0, -EINVAL (empty),
 * -ENAMETOOLONG, the -errno of realpath/stat (-ENOENT...), -ENOTDIR if it is not a cgroup v2 directory, or
 * -EXDEV if it is a cgroup v2 directory outside that mount.
 */
int cgroup_resolve(const char *arg, char *root, size_t rootlen, char *dir, size_t dirlen);

/*
 * The directory at or below dir (a cgroup2 directory) whose inode, the cgroup id, is id, into out (a full
 * path): true if found. Looks 32 levels deep at most.
 */
bool cgroup_dir_by_id(const char *dir, uint64_t id, char *out, size_t len);

/* Identities a cgroup path carries ("" when it carries none). */
struct cgroup_ids {
	char slurm_job_id[24];	/* ".../job_1234/..." (Slurm's cgroup plugins, v1 and v2) */
	/* Kubernetes ".../kubepods.../pod<uid>/..." or "...-pod<uid_with_underscores>.slice"; podman's pod id */
	char pod_uid[72];
	/* below the pod: "<hex>", "cri-containerd-<hex>.scope", "crio-<hex>.scope"; podman's "libpod-<hex>" */
	char container_id[72];
};

/*
 * Fill ids from a cgroup path ("/a/b"), for the cgroupfs and systemd layouts of containerd, CRI-O, Docker
 * (under Kubernetes) and podman (with or without a pod); never fails (unknown shapes give empty ids).
 */
void cgroup_ids(const char *path, struct cgroup_ids *ids);

#endif
