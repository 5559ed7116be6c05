/* result: the result object of a transaction and its JSON (DESIGN.md
 * section 3). */
#include "tx/tx.h"

#include "util/json.h"

#include <stdlib.h>
#include <string.h>

const char *txbox_outcome_name(txbox_outcome o)
{
	switch (o) {
	case TXBOX_COMMITTED: return "committed";
	case TXBOX_ROLLED_BACK: return "rolled_back";
	case TXBOX_DENIED: return "denied";
	case TXBOX_HELD: return "held";
	case TXBOX_CONFLICT: return "conflict";
	case TXBOX_ERROR: return "error";
	}
	return "error";
}

const char *txbox_change_kind_name(txbox_change_kind k)
{
	switch (k) {
	case TXBOX_CHANGE_ADDED: return "added";
	case TXBOX_CHANGE_MODIFIED: return "modified";
	case TXBOX_CHANGE_DELETED: return "deleted";
	case TXBOX_CHANGE_TYPE_CHANGED: return "type_changed";
	case TXBOX_CHANGE_METADATA: return "metadata";
	}
	return "modified";
}

txbox_result *result_new(void)
{
	txbox_result *r = calloc(1, sizeof *r);
	if (r)
		r->validation_exit_code = -1;
	return r;
}

void txbox_decision_free(txbox_decision *d)
{
	if (!d)
		return;
	free(d->decision);
	free(d->rule);
	free(d->reason);
	free(d->suggestion);
	for (size_t i = 0; i < d->ncommands; i++) {
		for (char **a = d->commands[i].argv; a && *a; a++)
			free(*a);
		free(d->commands[i].argv);
		free(d->commands[i].decision);
		free(d->commands[i].rule);
	}
	free(d->commands);
	memset(d, 0, sizeof *d);
}

void txbox_result_free(txbox_result *r)
{
	if (!r)
		return;
	free(r->tx);
	txbox_decision_free(&r->decision);
	free(r->stdout_buf);
	free(r->stderr_buf);
	for (size_t i = 0; i < r->nchanges; i++)
		free(r->changes[i].path);
	free(r->changes);
	free(r->error);
	free(r->effects.decision);
	free(r->effects.rule);
	free(r->effects.reason);
	free(r->effects.suggestion);
	free(r);
}

static void decision_fields(json_writer *w, const txbox_decision *d, bool with_commands)
{
	json_kv_str(w, "decision", d->decision);
	json_kv_str(w, "rule", d->rule);
	json_kv_str(w, "reason", d->reason);
	json_kv_str(w, "suggestion", d->suggestion);
	if (!with_commands)
		return;
	json_key(w, "commands");
	json_arr_begin(w);
	for (size_t i = 0; i < d->ncommands; i++) {
		json_obj_begin(w);
		json_key(w, "argv");
		json_arr_begin(w);
		for (char **a = d->commands[i].argv; a && *a; a++)
			json_str(w, *a);
		json_arr_end(w);
		json_kv_str(w, "decision", d->commands[i].decision);
		json_kv_str(w, "rule", d->commands[i].rule);
		json_obj_end(w);
	}
	json_arr_end(w);
	json_kv_bool(w, "unresolved", d->unresolved);
}

char *txbox_decision_to_json(const txbox_decision *d)
{
	json_writer w = JSON_WRITER_INIT;
	json_obj_begin(&w);
	decision_fields(&w, d, true);
	json_obj_end(&w);
	return json_finish(&w);
}

static const char *mechanism_name(txbox_limit_mechanism m)
{
	switch (m) {
	case TXBOX_LIMITS_CGROUP2: return "cgroup2";
	case TXBOX_LIMITS_CGROUP1: return "cgroup1";
	case TXBOX_LIMITS_RLIMIT: return "rlimit";
	}
	return "rlimit";
}

char *txbox_result_to_json(const txbox_result *r)
{
	json_writer w = JSON_WRITER_INIT;
	json_obj_begin(&w);
	json_kv_str(&w, "tx", r->tx);
	json_kv_str(&w, "outcome", txbox_outcome_name(r->outcome));
	json_key(&w, "decision");
	if (r->has_decision) {
		json_obj_begin(&w);
		decision_fields(&w, &r->decision, false);
		json_obj_end(&w);
	} else
		json_null(&w);
	json_key(&w, "exit_code");
	if (r->ran && !r->signal)
		json_int(&w, r->exit_code);
	else
		json_null(&w);
	json_key(&w, "signal");
	if (r->signal)
		json_int(&w, r->signal);
	else
		json_null(&w);
	if (r->has_validation) {
		json_key(&w, "validation_exit_code");
		if (r->validation_exit_code >= 0)
			json_int(&w, r->validation_exit_code);
		else
			json_null(&w);
	}
	json_kv_str(&w, "rollback_reason", r->rollback_reason);
	json_kv_str(&w, "limit", r->limit);
	json_key(&w, "stdout");
	json_strn(&w, r->stdout_buf ? r->stdout_buf : "", r->stdout_len);
	json_key(&w, "stderr");
	json_strn(&w, r->stderr_buf ? r->stderr_buf : "", r->stderr_len);
	json_kv_bool(&w, "stdout_truncated", r->stdout_truncated);
	json_kv_bool(&w, "stderr_truncated", r->stderr_truncated);
	json_key(&w, "changes");
	json_arr_begin(&w);
	for (size_t i = 0; i < r->nchanges; i++) {
		json_obj_begin(&w);
		json_kv_str(&w, "path", r->changes[i].path);
		json_kv_str(&w, "kind", txbox_change_kind_name(r->changes[i].kind));
		if (r->changes[i].note)
			json_kv_str(&w, "note", r->changes[i].note);
		json_obj_end(&w);
	}
	json_arr_end(&w);
	json_key(&w, "timings_ms");
	json_obj_begin(&w);
	json_key(&w, "policy");
	json_double(&w, r->timings.policy_ms);
	json_key(&w, "snapshot");
	json_double(&w, r->timings.snapshot_ms);
	json_key(&w, "exec");
	json_double(&w, r->timings.exec_ms);
	json_key(&w, "finish");
	json_double(&w, r->timings.finish_ms);
	json_key(&w, "total");
	json_double(&w, r->timings.total_ms);
	json_obj_end(&w);
	json_key(&w, "limits");
	json_obj_begin(&w);
	json_key(&w, "memory");
	json_uint(&w, r->limits.memory_bytes);
	json_key(&w, "pids");
	json_uint(&w, r->limits.pids);
	json_key(&w, "cpu");
	json_uint(&w, r->limits.cpu_seconds);
	json_key(&w, "disk");
	json_uint(&w, r->limits.disk_bytes);
	json_kv_str(&w, "mechanism", mechanism_name(r->limit_mechanism));
	json_obj_end(&w);
	json_key(&w, "effects");
	if (r->has_effects) {
		json_obj_begin(&w);
		json_kv_str(&w, "decision", r->effects.decision);
		json_kv_str(&w, "rule", r->effects.rule);
		json_kv_str(&w, "reason", r->effects.reason);
		json_kv_str(&w, "suggestion", r->effects.suggestion);
		json_obj_end(&w);
	} else
		json_null(&w);
	json_kv_str(&w, "network", r->network_host ? "host" : "none");
	json_kv_str(&w, "error", r->error);
	json_obj_end(&w);
	return json_finish(&w);
}
