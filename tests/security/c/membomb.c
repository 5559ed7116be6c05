/* membomb.c MIB: allocate and touch MIB MiB, 1 MiB at a time. Prints
 * SURVIVED when it got all of it. */
#include "probe.h"

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 1024;
	long got = 0;
	for (; got < mib; got++) {
		char *p = malloc(1 << 20);
		if (!p)
			break;
		memset(p, 0x5a, 1 << 20);
		if (got % 64 == 0) {
			printf("INFO %ld MiB\n", got);
			fflush(stdout);
		}
	}
	printf("%s %ld MiB\n", got >= mib ? "SURVIVED" : "MALLOC-FAILED", got);
	return probe_done();
}
