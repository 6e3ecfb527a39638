/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Readers of /proc: a process's comm, its cgroup v2 path, its start time; the active LSMs. */
#ifndef RDMACTL_PROC_H
#define RDMACTL_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* comm of pid into buf ("?" when the process is gone or unreadable). */
void proc_comm(pid_t pid, char *buf, size_t len);
/*
 * The cgroup v2 path of pid (0: this process) as /proc/PID/cgroup's "0::" line gives it. -ESRCH when the
 * process is gone, -ENOENT when it has no such line (no cgroup v2), -errno.
 */
int proc_cgroup(pid_t pid, char *buf, size_t len);
/*
 * Start time of pid (/proc/PID/stat field 22, clock ticks since boot: with the pid, a process's identity) and
 * whether it is a zombie (zombie may be NULL). -ESRCH when gone, -EPROTO when the file is not understood.
 */
int proc_stat_start(pid_t pid, uint64_t *start, bool *zombie);
/* The process a thread id belongs to (/proc/PID/status Tgid): pid itself for a process, or when /proc cannot tell. */
pid_t proc_tgid(pid_t pid);
/* A file of /proc, /sys or the cgroup2 mount read with one read (up to len - 1 bytes) into buf, terminated:
 * its length, or -errno. */
ssize_t path_read(const char *path, char *buf, size_t len);
/* /proc/PID/FILE read whole (up to len - 1 bytes) into buf, terminated: its length, or -errno. */
ssize_t proc_read(pid_t pid, const char *file, char *buf, size_t len);
/*
 * Does process pid map a file whose name is base (a shared library: "librdmactl-preload.so")? 1 yes, 0 no,
 * -1 when /proc cannot tell (gone, another user's process, hidepid).
 */
int proc_maps_file(pid_t pid, const char *base);
/* Is the LSM named lsm active (in /sys/kernel/security/lsm, securityfs mounted if it was not)? If not, why
 * says what was found. */
bool lsm_active(const char *lsm, char *why, size_t len);

#endif
