/* bench-policy: classification latency of the default policy over the two
 * corpora (tests/corpus/high-risk.txt and benign.txt): median, p99 and
 * throughput per command line, plus the interception rate (high-risk lines
 * held or denied) and the false-positive rate (benign lines not allowed).
 * Targets: median < 50 us, p99 < 1 ms.
 * Usage: bench-policy [CORPUS_DIR [REPETITIONS]] */
#include "corpus.h"
#include "policy/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "tests/corpus";
	int reps = argc > 2 ? atoi(argv[2]) : 20;
	const char *files[2] = {"high-risk.txt", "benign.txt"};
	corpus c[2];
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	policy_ctx ctx = {.workspace = "/work/ws", .cwd = "/work/ws", .home = "/home/agent"};
	size_t flagged[2] = {0, 0};

	if (reps < 1)
		reps = 1;
	double t0 = now_us();
	if (policy_load_default(&p, &err) < 0) {
		fprintf(stderr, "bench-policy: %s\n", err.message);
		return 1;
	}
	double load_us = now_us() - t0;
	for (int f = 0; f < 2; f++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, files[f]);
		if (corpus_load(path, &c[f]) < 0) {
			fprintf(stderr, "bench-policy: cannot read %s\n", path);
			return 1;
		}
	}
	size_t total = (c[0].n + c[1].n) * (size_t)reps, k = 0;
	double *lat = malloc(total * sizeof(*lat));
	if (!lat)
		return 1;
	double start = now_us();
	for (int r = 0; r < reps; r++)
		for (int f = 0; f < 2; f++)
			for (size_t i = 0; i < c[f].n; i++) {
				const char *av[] = {c[f].lines[i]};
				policy_verdict v;
				double a = now_us();
				if (policy_decide(p, &ctx, av, 1, &v, &err) < 0) {
					fprintf(stderr, "bench-policy: %s\n", err.message);
					return 1;
				}
				lat[k++] = now_us() - a;
				if (r == 0 && v.decision != POLICY_ALLOW)
					flagged[f]++;
				policy_verdict_free(&v);
			}
	double elapsed = now_us() - start;
	qsort(lat, k, sizeof(*lat), cmp_double);
	double median = lat[k / 2], p99 = lat[(size_t)((double)k * 0.99)], max = lat[k - 1];
	printf("bench-policy: default policy, %zu high-risk + %zu benign lines x %d repetitions\n",
	       c[0].n, c[1].n, reps);
	printf("  policy load (default, %s): %.1f us\n", "compiled in", load_us);
	printf("  latency per line: median %.1f us, p99 %.1f us, max %.1f us (targets: median < 50 us, p99 < 1000 us)\n",
	       median, p99, max);
	printf("  throughput: %.0f lines/s\n", (double)k / (elapsed / 1e6));
	printf("  interception: %zu/%zu high-risk lines held or denied (%.1f%%)\n", flagged[0], c[0].n,
	       100.0 * (double)flagged[0] / (double)c[0].n);
	printf("  false positives: %zu/%zu benign lines held or denied (%.1f%%)\n", flagged[1], c[1].n,
	       100.0 * (double)flagged[1] / (double)c[1].n);
	printf("  result: %s\n", median < 50 && p99 < 1000 ? "within targets" : "OUTSIDE targets");
	free(lat);
	corpus_free(&c[0]);
	corpus_free(&c[1]);
	policy_free(p);
	return 0;
}
