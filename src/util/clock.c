#include "util/clock.h"

#include <time.h>

uint64_t clock_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double clock_ms_since(uint64_t start_ns)
{
	return (double)(clock_now_ns() - start_ns) / 1e6;
}
