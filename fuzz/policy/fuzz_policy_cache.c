/* libFuzzer target: the compiled-policy cache reader (policy/cache.c) on a
 * damaged cache must refuse it or return a policy that decides without
 * crashing. The input patches a freshly encoded default policy — a length
 * to cut it to, then (offset, byte) pairs — so the fuzzer reaches deep
 * fields without a seed file.
 * Build: clang -fsanitize=fuzzer,address,undefined -Iinclude -Isrc ... */
#include "policy/internal.h"
#include "policy/policy.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *base;
static size_t base_len;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base) {
		policy *p = NULL;
		txbox_error err = TXBOX_ERROR_INIT;
		if (policy_load_buffer("default.yaml", policy_default_yaml, policy_default_yaml_len, &p, &err) < 0 ||
		    policy_cache_encode(p, &base, &base_len) < 0)
			abort();
		policy_free(p);
	}
	if (size < 4)
		return 0;
	uint32_t cut;
	memcpy(&cut, data, 4);
	size_t len = base_len - (cut % (base_len / 8 + 1) == 0 ? 0 : cut % base_len);
	char *blob = malloc(len ? len : 1);
	if (!blob)
		return 0;
	memcpy(blob, base, len);
	for (size_t i = 4; i + 5 <= size && len; i += 5) {
		uint32_t off;
		memcpy(&off, data + i, 4);
		blob[off % len] = (char)data[i + 4];
	}
	policy *p = policy_cache_decode(blob, len);
	if (p) {
		static const policy_ctx ctx = {"/work/ws", "/work/ws", "/home/agent", NULL};
		const char *argv[] = {"rm -rf ../x; git push -f origin +main > ~/.bashrc"};
		policy_verdict v;
		txbox_error err = TXBOX_ERROR_INIT;
		if (policy_decide(p, &ctx, argv, 1, &v, &err) == 0)
			policy_verdict_free(&v);
		txbox_error_clear(&err);
		policy_free(p);
	}
	free(blob);
	return 0;
}
