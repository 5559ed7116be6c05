/* quota: the disk limit of a transaction is enforced on its layer: the
 * supervisor measures the upper directory every 100 ms while the command
 * runs (and once at the end), and kills the sandbox when it is over. The
 * per-file size is also capped by RLIMIT_FSIZE, so no single write can run
 * far past the limit between two measurements. */
#include "sandbox/quota.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Fail closed: a tree that cannot be measured (too deep, out of fds,
 * unreadable) counts as over any limit — otherwise the command could hide
 * data from the quota behind one unreadable or very deep directory. */
#define UNMEASURABLE UINT64_MAX

static uint64_t walk(int dfd, uint64_t sum, uint64_t stop_above, unsigned depth)
{
	if (depth > 4096)
		return UNMEASURABLE;
	int dupfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* own offset: never share a readdir position */
	if (dupfd < 0)
		return UNMEASURABLE;
	DIR *d = fdopendir(dupfd);
	if (!d) {
		close(dupfd);
		return UNMEASURABLE;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* removed meanwhile */
			sum = UNMEASURABLE;
			break;
		}
		sum += (uint64_t)st.st_blocks * 512;
		if (stop_above && sum > stop_above)
			break;
		if (S_ISDIR(st.st_mode)) {
			int c = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (c < 0) {
				sum = UNMEASURABLE;
				break;
			}
			sum = walk(c, sum, stop_above, depth + 1);
			close(c);
			if (sum == UNMEASURABLE || (stop_above && sum > stop_above))
				break;
		}
	}
	closedir(d);
	return sum;
}

uint64_t quota_usage(int dirfd, uint64_t stop_above)
{
	return walk(dirfd, 0, stop_above, 0);
}
