#pragma once
#include <stdint.h>
/* Monotonic time in nanoseconds and milliseconds (as double). */
uint64_t clock_now_ns(void);
double clock_ms_since(uint64_t start_ns);

/* UTC calendar time of seconds since the epoch (proleptic Gregorian).
 * gmtime_r would do, but glibc reads /etc/localtime on its first call even
 * for UTC. */
typedef struct clock_utc {
	int year, month, day, hour, minute, second;
} clock_utc;
void clock_utc_from_epoch(long long secs, clock_utc *out);
