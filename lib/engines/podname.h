/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The names of Kubernetes pods by UID: one file per pod, /run/rdmactl/pods/UID holding "NAMESPACE/NAME\n".
 * The OCI hook writes it from the container's state (a pod whose container it limits) and removes it with
 * the pod's last container; the exporter and quota show read it to name a cgroup's pod; quota gc removes the
 * files of pods whose cgroups are gone.
 */
#ifndef RDMACTL_PODNAME_H
#define RDMACTL_PODNAME_H

#include <stdbool.h>

#include "engines/ocistate.h"

#define PODNAME_DIR "/run/rdmactl/pods"
#define PODNAME_ENV_DIR "RDMACTL_PODS_DIR" /* another directory (tests) */

struct podname {
	char ns[OCISTATE_POD_NS_MAX];	  /* "" when unknown */
	char name[OCISTATE_POD_NAME_MAX]; /* "" when unknown */
};

/* $RDMACTL_PODS_DIR when set and not empty, else PODNAME_DIR. */
const char *podname_dir(void);

/* A pod UID as a file name: 1 to 36 of [0-9a-f-] (a UUID, or a static pod's 32 hex digits). */
bool podname_uid_ok(const char *uid);
/* A namespace: a DNS label (RFC 1123), 1 to 63 of [a-z0-9-], a letter or digit at both ends. */
bool podname_ns_ok(const char *ns);
/* A pod's name: a DNS subdomain (RFC 1123), 1 to 253 of [a-z0-9.-], a letter or digit at both ends. */
bool podname_name_ok(const char *name);

/* Write the pod's file (a temporary file renamed over it, mode 0644). 0, -EINVAL (not the forms above), -errno. */
int podname_write(const char *uid, const char *ns, const char *name);
/* Read it: 0; -ENOENT when there is none; -EINVAL for a bad uid or a file not of the form above; -errno. */
int podname_read(const char *uid, struct podname *out);
/* Remove it: 0 (also when there was none), -EINVAL for a bad uid, -errno. */
int podname_remove(const char *uid);

/*
 * Remove the files (and temporaries a killed writer left) of pods that no cgroup under cgroot (the cgroup2
 * mount) names any more, as cgroup_ids() reads pod UIDs from paths. *removed counts the pods. 0, or -errno
 * (the tree or the directory could not be read: nothing removed; a file that could not be removed).
 */
int podname_gc(const char *cgroot, unsigned int *removed);

#endif
