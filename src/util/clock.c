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

void clock_utc_from_epoch(long long secs, clock_utc *out)
{
	long long days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
	long long sod = secs - days * 86400; /* [0, 86399] */
	/* days since 0000-03-01 in eras of 400 years (146097 days); March
	 * first, so the leap day ends a year */
	long long z = days + 719468;
	long long era = (z >= 0 ? z : z - 146096) / 146097;
	long long doe = z - era * 146097;                                  /* [0, 146096] */
	long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
	long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);              /* [0, 365] */
	long long mp = (5 * doy + 2) / 153;                                   /* [0, 11], March = 0 */
	out->day = (int)(doy - (153 * mp + 2) / 5 + 1);
	out->month = (int)(mp < 10 ? mp + 3 : mp - 9);
	out->year = (int)(yoe + era * 400 + (out->month <= 2));
	out->hour = (int)(sod / 3600);
	out->minute = (int)(sod / 60 % 60);
	out->second = (int)(sod % 60);
}
