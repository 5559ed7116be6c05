/* mknod.c DIR...: device nodes (block, memory, null, overlay whiteout). */
#include "probe.h"
#include <sys/sysmacros.h>

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		static const struct {
			const char *suffix;
			mode_t type;
			unsigned maj, min;
		} d[] = {{"blk-vda", S_IFBLK, 253, 0}, {"blk-sda", S_IFBLK, 8, 0}, {"chr-mem", S_IFCHR, 1, 1},
			 {"chr-kmem", S_IFCHR, 1, 2}, {"chr-null", S_IFCHR, 1, 3}, {"chr-port", S_IFCHR, 1, 4},
			 {"chr-whiteout", S_IFCHR, 0, 0}};
		for (size_t k = 0; k < sizeof d / sizeof *d; k++) {
			char p[4096], name[256];
			snprintf(p, sizeof p, "%s/txsec-dev-%s", argv[i], d[k].suffix);
			snprintf(name, sizeof name, "mknod-%s-%s", d[k].suffix, argv[i]);
			if (d[k].maj == 0 && d[k].min == 0) {
				/* A whiteout (char 0:0) needs no privilege since Linux 5.8
				 * and is no device: opening it fails. It may be made in the
				 * private /tmp; commit must never publish one (the runner's
				 * workspace audit checks that). */
				if (mknod(p, d[k].type | 0666, 0) == 0)
					printf("INFO %s: whiteout created (unprivileged since Linux 5.8)\n", name);
				else
					blocked(name, "%s", strerror(errno));
				continue;
			}
			EXPECT_FAIL(name, mknod(p, d[k].type | 0666, makedev(d[k].maj, d[k].min)));
		}
	}
	return probe_done();
}
