#include "util/trace.h"

#include "util/clock.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TRACE_MAX 120

typedef struct trace_entry {
	uint64_t ns;
	const char *label;
	int pid;
} trace_entry;

typedef struct trace_page {
	unsigned n;
	uint64_t t0;
	trace_entry e[TRACE_MAX];
} trace_page;

static trace_page *page;

void trace_init(void)
{
	const char *v = getenv("TXBOX_TRACE");
	if (page || !v || !*v || strcmp(v, "0") == 0)
		return;
	void *p = mmap(NULL, sizeof *page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	page = p;
	page->t0 = clock_now_ns();
}

void trace_mark(const char *label)
{
	if (!page)
		return;
	unsigned i = __atomic_fetch_add(&page->n, 1, __ATOMIC_RELAXED);
	if (i >= TRACE_MAX)
		return;
	page->e[i] = (trace_entry){.ns = clock_now_ns(), .label = label, .pid = (int)getpid()};
}

void trace_dump(int fd)
{
	if (!page)
		return;
	unsigned n = page->n < TRACE_MAX ? page->n : TRACE_MAX;
	/* insertion sort by time: marks from several processes interleave */
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && page->e[j].ns < page->e[j - 1].ns; j--) {
			trace_entry t = page->e[j];
			page->e[j] = page->e[j - 1];
			page->e[j - 1] = t;
		}
	uint64_t prev = page->t0;
	for (unsigned i = 0; i < n; i++) {
		dprintf(fd, "trace %9.3f ms (+%7.3f) pid %-7d %s\n", (double)(page->e[i].ns - page->t0) / 1e6,
			(double)(page->e[i].ns - prev) / 1e6, page->e[i].pid, page->e[i].label);
		prev = page->e[i].ns;
	}
}
