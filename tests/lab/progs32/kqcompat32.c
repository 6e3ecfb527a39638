// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Lab helper for kernel quotas: a 32-bit program (no libc: built with -m32 -nostdlib, so that no 32-bit
 * development files are needed) that opens /dev/infiniband/uverbs0, sends one uverbs ioctl through the
 * compat path (INFO_HANDLES of the device, no attributes: the kernel answers EINVAL by itself), and exits
 * with the error number it got (0 if none, 100 if the open failed). A process with kernel limits gets
 * EDQUOT (122) from the compat hook instead.
 */
static long sys3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
	return ret;
}

struct hdr {
	unsigned short length, object_id, method_id, num_attrs;
	unsigned long long reserved1;
	unsigned int driver_id, reserved2;
};

void _start(void);
void _start(void)
{
	/* object DEVICE (0), method INFO_HANDLES (1), driver id of rxe (14) */
	static struct hdr h = { sizeof(struct hdr), 0, 1, 0, 0, 14, 0 };
	long fd = sys3(5 /* open */, (long)"/dev/infiniband/uverbs0", 2 /* O_RDWR */, 0), r;

	if (fd < 0)
		sys3(1 /* exit */, 100, 0, 0);
	r = sys3(54 /* ioctl */, fd, (long)0xc0181b01UL /* RDMA_VERBS_IOCTL */, (long)&h);
	sys3(1, r < 0 ? -r : 0, 0, 0);
	for (;;)
		;
}
