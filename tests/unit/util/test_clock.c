/* clock_utc_from_epoch agrees with gmtime_r across eras, leap days and
 * negative times. */
#include "util/clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <time.h>

static void check_one(long long t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	assert_non_null(gmtime_r(&tt, &tm));
	clock_utc u;
	clock_utc_from_epoch(t, &u);
	if (u.year != tm.tm_year + 1900 || u.month != tm.tm_mon + 1 || u.day != tm.tm_mday || u.hour != tm.tm_hour ||
	    u.minute != tm.tm_min || u.second != tm.tm_sec)
		fail_msg("%lld: got %04d-%02d-%02d %02d:%02d:%02d, gmtime %04d-%02d-%02d %02d:%02d:%02d", t, u.year,
			 u.month, u.day, u.hour, u.minute, u.second, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
			 tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void test_matches_gmtime(void **state)
{
	(void)state;
	/* every day from 1600 to 2500 at a varying time of day */
	for (long long d = -135140; d <= 193000; d++)
		check_one(d * 86400 + (d * 7919) % 86400);
	static const long long edges[] = {0,          -1,         86399,      86400,       951782400 /* 2000-02-29 */,
					  951868799, 4107542399 /* 2100-02-28 23:59:59 */, 4107542400,
					  -2203891200 /* 1900-02-28 */, 253402300799 /* 9999-12-31 */};
	for (size_t i = 0; i < sizeof edges / sizeof *edges; i++)
		check_one(edges[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_matches_gmtime)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
