#include "util/cpu.h"

#include <sched.h>

void cpu_step_aside(void)
{
	cpu_set_t allowed, other;
	int cur = sched_getcpu();
	if (cur < 0 || sched_getaffinity(0, sizeof allowed, &allowed) < 0 || CPU_COUNT(&allowed) < 2)
		return;
	int next = -1;
	for (int i = 1; i < CPU_SETSIZE && next < 0; i++) {
		int c = (cur + i) % CPU_SETSIZE;
		if (CPU_ISSET(c, &allowed))
			next = c;
	}
	CPU_ZERO(&other);
	CPU_SET(next, &other);
	/* Pinning moves the caller now; restoring the mask leaves it there. */
	if (sched_setaffinity(0, sizeof other, &other) == 0)
		sched_setaffinity(0, sizeof allowed, &allowed);
}
