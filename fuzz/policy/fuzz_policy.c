/* libFuzzer target: policy_load_buffer on arbitrary bytes must return an
 * error or a policy, never crash, leak or hang; a loaded policy is then used
 * once to classify a fixed command line.
 * Build: clang -fsanitize=fuzzer,address,undefined -Iinclude -Isrc ... */
#include "policy/policy.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	if (policy_load_buffer("fuzz.yaml", (const char *)data, size, &p, &err) == 0) {
		static const policy_ctx ctx = {"/work/ws", "/work/ws", "/home/agent"};
		const char *argv[] = {"rm -rf ../x; git push -f origin +main > ~/.bashrc"};
		policy_verdict v;
		if (policy_decide(p, &ctx, argv, 1, &v, &err) == 0)
			policy_verdict_free(&v);
		(void)policy_get_sandbox(p);
		policy_free(p);
	}
	txbox_error_clear(&err);
	return 0;
}
