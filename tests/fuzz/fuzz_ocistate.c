// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: the OCI state parser on any bytes; what it accepts, json-c reads the same way. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "engines/ocistate.h"

/* A string member of o equal to want ("" = absent or not a string is fine only when want is ""). */
static void same_string(struct json_object *o, const char *key, const char *want)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string)) {
		if (*want)
			abort();
		return;
	}
	if (strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
		return; /* a NUL inside: not kept by the parser, which rejects it only where it keeps the string */
	if (strcmp(json_object_get_string(v), want))
		abort();
}

/*
 * The pod's identity: each field is what its keys say (containerd's CRI, CRI-O's; both agree when both are
 * there), "" when neither is there, and never longer than Kubernetes allows. A value too long or two that
 * disagree drop the whole identity (all three "") with the reason in pod.bad; nothing else does.
 */
static void same_pod(struct json_object *j, const struct ocistate *st)
{
	static const char *const keys[3][2] = {
		{ "io.kubernetes.cri.sandbox-name", "io.kubernetes.pod.name" },
		{ "io.kubernetes.cri.sandbox-namespace", "io.kubernetes.pod.namespace" },
		{ "io.kubernetes.cri.sandbox-uid", "io.kubernetes.pod.uid" },
	};
	static const size_t max[3] = { 253, 63, 36 };
	const char *field[3] = { st->pod.name, st->pod.ns, st->pod.uid };
	struct json_object *ann = NULL, *v[2];
	bool any, bad = false;
	int f, r;

	if (strlen(st->pod.name) > 253 || strlen(st->pod.ns) > 63 || strlen(st->pod.uid) > 36)
		abort();
	if (!json_object_object_get_ex(j, "annotations", &ann))
		ann = NULL;
	for (f = 0; f < 3; f++) {
		for (r = 0; r < 2; r++)
			if (!ann || !json_object_object_get_ex(ann, keys[f][r], &v[r]))
				v[r] = NULL;
		for (r = 0; r < 2; r++)
			if (v[r] && strlen(json_object_get_string(v[r])) > max[f])
				bad = true;
		if (v[0] && v[1] && strcmp(json_object_get_string(v[0]), json_object_get_string(v[1])))
			bad = true;
	}
	if (bad != !!st->pod.bad[0])
		abort();
	for (f = 0; f < 3; f++) {
		any = false;
		for (r = 0; r < 2; r++) {
			if (!ann || !json_object_object_get_ex(ann, keys[f][r], &v[0]))
				continue;
			any = true;
			if (strcmp(bad ? "" : json_object_get_string(v[0]), field[f]))
				abort();
		}
		if ((!any || bad) && *field[f])
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_tokener *tok;
	struct json_object *j, *v, *ann;
	struct ocistate st;
	char err[256];
	unsigned int i;

	if (ocistate_parse((const char *)data, size, &st, err, sizeof(err))) {
		if (!err[0])
			abort(); /* every refusal says why */
		return 0;
	}
	if (st.nann > OCISTATE_MAX_ANN || (st.pid && st.pid < 1))
		abort();
	/*
	 * The oracle: json-c in strict mode; where it also accepts, the fields read back the same. Not where the
	 * input escapes a NUL: json-c keeps a member's name as a C string, so a name "id\u0000p" is "id" to it
	 * and not to the parser, which matches names by their whole length (and keeps no string with a NUL).
	 */
	if (memmem(data, size, "\\u0000", 6))
		return 0;
	tok = json_tokener_new();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	j = json_tokener_parse_ex(tok, (const char *)data, (int)size);
	if (j && json_tokener_get_error(tok) == json_tokener_success && json_object_is_type(j, json_type_object) &&
	    json_tokener_get_parse_end(tok) == size) {
		same_string(j, "id", st.id);
		same_string(j, "status", st.status);
		if (st.pid && (!json_object_object_get_ex(j, "pid", &v) || json_object_get_int64(v) != st.pid))
			abort();
		for (i = 0; i < st.nann; i++) {
			if (!json_object_object_get_ex(j, "annotations", &ann) ||
			    !json_object_object_get_ex(ann, st.ann[i].key, &v) ||
			    strcmp(json_object_get_string(v), st.ann[i].value))
				abort();
		}
		same_pod(j, &st);
	}
	json_object_put(j);
	json_tokener_free(tok);
	return 0;
}
