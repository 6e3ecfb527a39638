/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The OCI runtime state (the JSON an OCI hook reads on stdin): a strict parser of the fields rdmactl needs. */
#ifndef RDMACTL_OCISTATE_H
#define RDMACTL_OCISTATE_H

#include <stddef.h>
#include <sys/types.h>

#define OCISTATE_MAX_INPUT (1 << 20) /* bytes of JSON accepted */
#define OCISTATE_MAX_DEPTH 32        /* nesting of arrays and objects */
#define OCISTATE_ID_MAX 256          /* container id, including NUL */
#define OCISTATE_STATUS_MAX 32
#define OCISTATE_PREFIX "rdmactl.io/" /* the annotations kept */
#define OCISTATE_MAX_ANN 32           /* annotations with that prefix */
#define OCISTATE_ANN_KEY_MAX 64
#define OCISTATE_ANN_VAL_MAX 64
/* The Kubernetes pod identity, including NUL: a name is a DNS subdomain, a namespace a DNS label, a UID a UUID */
#define OCISTATE_POD_NAME_MAX 254
#define OCISTATE_POD_NS_MAX 64
#define OCISTATE_POD_UID_MAX 37

struct ocistate_ann {
	char key[OCISTATE_ANN_KEY_MAX]; /* "rdmactl.io/max-qp" */
	char value[OCISTATE_ANN_VAL_MAX];
};

/*
 * The pod a container belongs to, as its runtime's CRI puts it in the annotations: containerd's
 * io.kubernetes.cri.sandbox-{name,namespace,uid}, CRI-O's io.kubernetes.pod.{name,namespace,uid}. "" where
 * absent; a field given by both runtimes' keys holds their common value.
 */
struct ocistate_pod {
	char name[OCISTATE_POD_NAME_MAX];
	char ns[OCISTATE_POD_NS_MAX];
	char uid[OCISTATE_POD_UID_MAX];
	/* why the pod's identity was dropped ("" when it was not): a value too long, with a NUL, or two that disagree */
	char bad[160];
};

struct ocistate {
	char id[OCISTATE_ID_MAX]; /* "" when absent */
	char status[OCISTATE_STATUS_MAX];
	pid_t pid; /* 0 when absent (poststop) */
	unsigned int nann;
	struct ocistate_ann ann[OCISTATE_MAX_ANN]; /* the annotations whose key starts with OCISTATE_PREFIX */
	struct ocistate_pod pod;
};

/*
 * Parse one JSON document (RFC 8259: one value, whitespace around it, nothing else) that must be an object;
 * read id, status, pid and annotations (a string-to-string object), skip every other member after checking
 * it. Duplicate keys among those four, or inside annotations, are errors; so are an id or status too long,
 * a pid that is not an integer in 1..INT_MAX, more than OCISTATE_MAX_ANN rdmactl.io/ annotations or one whose
 * key or value does not fit, and a pod key given twice. A pod name, namespace or UID longer than Kubernetes
 * allows (253, 63, 36 bytes) or holding a NUL, or one given by both runtimes' keys with two values, is not an
 * error: the pod's identity is dropped (all three "") and pod.bad says why. Returns 0, or -EINVAL with a
 * message in err ("at byte 17: ...").
 */
int ocistate_parse(const char *buf, size_t len, struct ocistate *out, char *err, size_t errlen);

#endif
