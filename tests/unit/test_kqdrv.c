// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kernel quota programs' table of driver methods (bpf/kqdrv.h) against the installed uapi headers: every
 * object and method id of the drivers' namespace that a header names has its entry, with the same value.
 * KQDRV_UAPI_DIR points at other headers (default /usr/include/rdma).
 */
#include <ctype.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/mlx5_user_ioctl_cmds.h>

#include "kq/kqdrv.h"
#include "unit.h"

struct found {
	int objects, methods, missing;
};

static bool in_table(const char *name, unsigned long value, bool object)
{
	size_t i;

	for (i = 0; i < kq_drv_nmethods; i++) {
		const struct kq_drv_method *m = &kq_drv_methods[i];

		if (object ? !strcmp(m->object_name, name) && m->object == value
			   : !strcmp(m->method_name, name) && m->method == value)
			return true;
	}
	return false;
}

/*
 * Read the enums of a header's text: members with a value of the drivers' namespace whose name says
 * _OBJECT_ or _METHOD_ (attributes and other enums are not the table's) must be in the table.
 */
static void check_text(const char *what, const char *text, struct found *f)
{
	const char *p = text;

	while ((p = strstr(p, "enum"))) {
		const char *open = strchr(p, '{'), *close = open ? strchr(open, '}') : NULL, *q;
		long value = -1;

		if (!open || !close)
			break;
		/* "enum name {" only: not a word that merely contains enum */
		if ((p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) || memchr(p, ';', open - p)) {
			p += 4;
			continue;
		}
		for (q = open + 1; q < close;) {
			char name[128], init[128] = "";
			size_t n = 0, m = 0;

			while (q < close && !isalnum((unsigned char)*q) && *q != '_')
				q++;
			if (q >= close)
				break;
			while (q < close && (isalnum((unsigned char)*q) || *q == '_') && n < sizeof(name) - 1)
				name[n++] = *q++;
			name[n] = '\0';
			while (q < close && isspace((unsigned char)*q))
				q++;
			if (*q == '=') {
				for (q++; q < close && *q != ',' && m < sizeof(init) - 1; q++)
					if (!isspace((unsigned char)*q))
						init[m++] = *q;
				init[m] = '\0';
			}
			while (q < close && *q != ',')
				q++;
			if (q < close)
				q++;
			if (!strcmp(init, "(1U<<UVERBS_ID_NS_SHIFT)") || !strcmp(init, "1U<<UVERBS_ID_NS_SHIFT"))
				value = 0x1000;
			else if (init[0] && isdigit((unsigned char)init[0]))
				value = strtol(init, NULL, 0);
			else if (init[0])
				value = -1; /* another constant: not a namespace id we can place */
			else if (value >= 0)
				value++;
			if (value < 0x1000 || value > 0xffff || (!strstr(name, "_OBJECT_") && !strstr(name, "_METHOD_")))
				continue;
			if (strstr(name, "_OBJECT_")) {
				f->objects++;
				if (!in_table(name, value, true)) {
					f->missing++;
					printf("# %s: %s = 0x%lx has no entry in bpf/kqdrv.h\n", what, name, value);
				}
			} else {
				f->methods++;
				if (!in_table(name, value, false)) {
					f->missing++;
					printf("# %s: %s = 0x%lx has no entry in bpf/kqdrv.h\n", what, name, value);
				}
			}
		}
		p = close;
	}
}

static char *slurp(const char *path)
{
	FILE *fp = fopen(path, "re");
	char *buf;
	long n;

	if (!fp)
		return NULL;
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	buf = calloc(1, n + 1);
	if (buf && fread(buf, 1, n, fp) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(fp);
	return buf;
}

static struct found check_header(const char *file)
{
	const char *dir = getenv("KQDRV_UAPI_DIR");
	char path[512];
	struct found f = { 0 };
	char *text;

	snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "/usr/include/rdma", file);
	text = slurp(path);
	CHECK(text, "cannot read %s", path);
	if (!text)
		return f;
	check_text(file, text, &f);
	free(text);
	return f;
}

static void test_headers(void)
{
	struct found f;

	/* mlx5: ten objects and about thirty methods in Debian 12's header; every one must be there */
	f = check_header("mlx5_user_ioctl_cmds.h");
	CHECK(f.objects >= 10 && f.methods >= 30, "mlx5: only %d objects and %d methods read", f.objects, f.methods);
	CHECK(!f.missing, "mlx5: %d ids without an entry", f.missing);
	/* bnxt_re and efa: older headers have none (their methods came with 6.8 and 6.9); newer ones are checked */
	f = check_header("bnxt_re-abi.h");
	CHECK(!f.missing, "bnxt_re: %d ids without an entry", f.missing);
	f = check_header("efa-abi.h");
	CHECK(!f.missing, "efa: %d ids without an entry", f.missing);
}

/* The check can fail: a header with a method the table lacks, or a value that differs. */
static void test_checker(void)
{
	struct found f = { 0 };

	check_text("synthetic", "enum mlx5_ib_uar_obj_methods {\n\tMLX5_IB_METHOD_UAR_OBJ_ALLOC = (1U << "
		   "UVERBS_ID_NS_SHIFT),\n\tMLX5_IB_METHOD_UAR_OBJ_DESTROY,\n\tMLX5_IB_METHOD_UAR_OBJ_NEW_THING,\n};\n"
		   "enum bnxt_re_objects {\n\tBNXT_RE_OBJECT_ALLOC_PAGE = (1U << UVERBS_ID_NS_SHIFT),\n"
		   "\tBNXT_RE_OBJECT_NOTIFY_DRV,\n\tBNXT_RE_OBJECT_GET_TOGGLE_MEM,\n\tBNXT_RE_OBJECT_DBR,\n};\n"
		   "enum x_attrs { MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE = (1U << UVERBS_ID_NS_SHIFT), };\n", &f);
	CHECK(f.methods == 3 && f.objects == 4, "read %d methods, %d objects", f.methods, f.objects);
	CHECK(f.missing == 2, "%d missing (NEW_THING and DBR expected)", f.missing);
	memset(&f, 0, sizeof(f));
	check_text("synthetic", "enum e {\n\tMLX5_IB_OBJECT_DEVX = 0x1000,\n\tMLX5_IB_OBJECT_UAR = 0x1009,\n};\n", &f);
	CHECK(f.objects == 2 && f.missing == 1, "a value that differs is missing (%d of %d)", f.missing, f.objects);
}

/* Debian 12's header stops at ERDMA; mana came next (Linux 6.2) */
#define RDMA_DRIVER_MANA (RDMA_DRIVER_ERDMA + 1)

/* The driver ids are enum rdma_driver_id's, the DEVX attributes mlx5's. */
static void test_ids(void)
{
#define X(NAME, id, str) CHECK((int)KQ_DRIVER_##NAME == (int)RDMA_DRIVER_##NAME, "RDMA_DRIVER_" #NAME);
	KQ_DRIVERS(X)
#undef X
	CHECK(KQ_DEVX_ATTR_CMD_IN == MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_IN &&
		      KQ_DEVX_ATTR_UMEM_LEN == MLX5_IB_ATTR_DEVX_UMEM_REG_LEN,
	      "the DEVX attributes the programs read");
	CHECK(KQ_DRV_ERRNO == EOPNOTSUPP, "the refusal's errno");
}

static void test_lookup(void)
{
	char buf[128];
	int i;

	i = kq_drv_lookup(KQ_DRIVER_MLX5, MLX5_IB_OBJECT_UAR, MLX5_IB_METHOD_UAR_OBJ_ALLOC);
	CHECK(i >= 0 && kq_drv_methods[i].action == KQ_DRV_PASS, "mlx5 UAR allocation passes");
	i = kq_drv_lookup(KQ_DRIVER_MLX5, MLX5_IB_OBJECT_DEVX_OBJ, MLX5_IB_METHOD_DEVX_OBJ_CREATE);
	CHECK(i >= 0 && kq_drv_methods[i].action == KQ_DRV_DEVX_CREATE, "DEVX create is read by opcode");
	i = kq_drv_lookup(KQ_DRIVER_MLX5, MLX5_IB_OBJECT_DEVX_UMEM, MLX5_IB_METHOD_DEVX_UMEM_REG);
	CHECK(i >= 0 && kq_drv_methods[i].action == KQ_DRV_UMEM_REG, "UMEM registration counts bytes");
	CHECK(kq_drv_lookup(KQ_DRIVER_RXE, 0x1000, 0x1000) < 0, "rxe has no driver methods");
	CHECK(kq_drv_lookup(KQ_DRIVER_BNXT_RE, 0x1002, 0x1000) >= 0, "bnxt_re toggle memory");
	kq_drv_describe(KQ_DRV_KEY(KQ_DRIVER_MLX5, 0x10aa, 0x1000), buf, sizeof(buf));
	CHECK(!strcmp(buf, "mlx5 object 0x10aa method 0x1000"), "%s", buf);
	kq_drv_describe(KQ_DRV_KEY(KQ_DRIVER_MLX5, 0x1008, 0x1005), buf, sizeof(buf));
	CHECK(!strcmp(buf, "mlx5 object 0x1008 (MLX5_IB_OBJECT_UAR) method 0x1005"), "%s", buf);
	kq_drv_describe(KQ_DRV_KEY(99, 0x1000, 0x1000), buf, sizeof(buf));
	CHECK(!strcmp(buf, "driver 99 object 0x1000 method 0x1000"), "%s", buf);
	CHECK(!strcmp(kq_drv_name(KQ_DRIVER_BNXT_RE), "bnxt_re") && !kq_drv_name(99), "driver names");
}

int main(void)
{
	RUN(test_headers);
	RUN(test_checker);
	RUN(test_ids);
	RUN(test_lookup);
	return unit_done();
}
