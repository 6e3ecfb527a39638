// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* librdmactl-preload.so: the verbs interceptor (issue #5); for now it only announces itself. */
#include <stdlib.h>

#include "util.h"

__attribute__((visibility("default"))) const char rdmactl_preload_version[] = RDMACTL_VERSION;
