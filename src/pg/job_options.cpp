// job_options.cpp: see job_options.hpp.
#include "pg/job_options.hpp"

#include "pg/core_calls.hpp"
#include "pg/errors.hpp"
#include "pg/gucs.hpp"
#include "pg/interval_literal.hpp"
#include "pg/queue_settings.hpp"

#include <initializer_list>

extern "C" {
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "mb/pg_wchar.h"
}

namespace awa::pg {

namespace {

JsonbValue *
Field(JsonbContainer *container, const char *name)
{
	JsonbValue key;
	key.type = jbvString;
	key.val.string.val = const_cast<char *>(name);
	key.val.string.len = static_cast<int>(strlen(name));
	return findJsonbValueFromContainer(container, JB_FOBJECT, &key);
}

[[noreturn]] void
Invalid(const char *where, const char *message, const char *hint)
{
	ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s%s", where, message), errhint("%s", hint)));
	pg_unreachable();
}

// The first key of object `container` that is not one of `known`, quoted and
// cut to 64 bytes for a message; NULL when every key is known.
char *
UnknownKey(JsonbContainer *container, const char *const *known, int known_count)
{
	JsonbIterator *it = JsonbIteratorInit(container);
	JsonbValue value;
	JsonbIteratorToken token;
	while ((token = JsonbIteratorNext(&it, &value, true)) != WJB_DONE) {
		if (token != WJB_KEY)
			continue;
		bool is_known = false;
		for (int i = 0; i < known_count && !is_known; i++)
			is_known = strlen(known[i]) == static_cast<size_t>(value.val.string.len) &&
			           memcmp(known[i], value.val.string.val, value.val.string.len) == 0;
		if (!is_known) {
			int length = value.val.string.len;
			int cut = pg_mbcliplen(value.val.string.val, length, 64);
			return psprintf(" has an unknown key \"%.*s\"%s", cut, value.val.string.val, cut < length ? "..." : "");
		}
	}
	return NULL;
}

const char kUniqueHint[] =
    "Use '{\"unique\": {\"by_args\": true, \"by_queue\": false, \"period\": \"1 hour\", \"states\": "
    "[\"available\", \"scheduled\", \"retryable\", \"running\"]}}' or '{\"unique_key\": \"...\"}'.";

bool
BoolField(JsonbContainer *unique, const char *name, bool fallback, const char *where)
{
	JsonbValue *value = Field(unique, name);
	if (value == NULL)
		return fallback;
	if (value->type != jbvBool) {
		char message[96];
		snprintf(message, sizeof(message), ".unique.%s must be true or false", name);
		Invalid(where, message, kUniqueHint);
	}
	return value->val.boolean;
}

void
Append(pg_cryptohash_ctx *ctx, const char *data, size_t length)
{
	if (pg_cryptohash_update(ctx, reinterpret_cast<const uint8 *>(data), length) < 0)
		elog(ERROR, "awa: could not compute a unique key");
}

// Parses an interval literal; false if it is not one (nothing raises).
bool
ParseIntervalMicros(char *literal, int64 *micros)
{
	Interval interval;
	if (!ParseIntervalLiteral(literal, &interval))
		return false;
	*micros = IntervalMicros(&interval);
	return true;
}

// The job's size: its args and payload as they would be stored, uncompressed
// (both are detoasted values with 4-byte headers here, so this reads two
// headers). Raises 54000 past awa.max_job_bytes, naming jobs[job] when job > 0.
int64
CheckedJobBytes(int job, Jsonb *args, Jsonb *payload)
{
	int64 bytes = static_cast<int64>(VARSIZE_ANY(args)) + (payload == NULL ? 0 : static_cast<int64>(VARSIZE_ANY(payload)));
	core::Violation violation;
	if (!core::CheckJobBytes(bytes, awa_max_job_bytes, &violation)) {
		if (job > 0)
			ReportElementViolation("jobs", job, violation);
		ReportViolation(violation);
	}
	return bytes;
}

}  // namespace

JobOptions
ParseJobOptions(Jsonb *opts, const char *where, int job, text *kind, text *queue, Jsonb *args, TimestampTz now)
{
	JobOptions result{NULL, NULL, 0, false, 0};
	if (opts == NULL || (JB_ROOT_IS_OBJECT(opts) && !JB_ROOT_IS_SCALAR(opts) && JB_ROOT_COUNT(opts) == 0)) {
		result.bytes = CheckedJobBytes(job, args, NULL);
		return result;
	}
	if (!JB_ROOT_IS_OBJECT(opts) || JB_ROOT_IS_SCALAR(opts))
		Invalid(where, " must be a JSON object", "Pass options as '{\"metadata\": {...}, \"tags\": [...]}', or '{}'.");
	int pairs = JB_ROOT_COUNT(opts);

	int known = 0;
	bool payload_keys = false;
	if (JsonbValue *metadata = Field(&opts->root, "metadata")) {
		known++;
		payload_keys = true;
		if (metadata->type != jbvBinary || !JsonContainerIsObject(metadata->val.binary.data))
			Invalid(where, ".metadata must be a JSON object", "Pass metadata as '{\"metadata\": {\"key\": \"value\"}}'.");
	}
	if (JsonbValue *tags = Field(&opts->root, "tags")) {
		known++;
		payload_keys = true;
		bool valid = tags->type == jbvBinary && JsonContainerIsArray(tags->val.binary.data) &&
		             JsonContainerSize(tags->val.binary.data) <= 20;
		for (uint32 i = 0; valid && i < JsonContainerSize(tags->val.binary.data); i++) {
			JsonbValue *tag = getIthJsonbValueFromContainer(tags->val.binary.data, i);
			valid = tag != NULL && tag->type == jbvString && tag->val.string.len > 0;
		}
		if (!valid)
			Invalid(where, ".tags must be an array of at most 20 non-empty strings",
			        "Pass tags as '{\"tags\": [\"billing\", \"eu\"]}'.");
	}

	if (JsonbValue *key = Field(&opts->root, "concurrency_key")) {
		// Kept in the payload: every path that puts the job into a lane
		// (enqueue, promotion, DLQ retry) reads it there (KeyOfPayload).
		known++;
		payload_keys = true;
		core::Violation violation;
		if (key->type != jbvString)
			Invalid(where, ".concurrency_key must be a string",
			        "Pass the key as '{\"concurrency_key\": \"tenant-42\"}'.");
		if (!core::CheckConcurrencyKey(key->val.string.val, key->val.string.len, &violation))
			Invalid(where, psprintf(".%s", violation.message), violation.hint);
	}

	JsonbValue *unique = Field(&opts->root, "unique");
	JsonbValue *raw_key = Field(&opts->root, "unique_key");
	// The unique key's parts, read here and hashed once the size is checked.
	bool by_args = false;
	bool by_queue = false;
	bool has_period = false;
	int64 bucket = 0;
	core::StateMask mask = 0;
	bool skip = false;  // unique.on_conflict = "skip"
	if (unique != NULL)
		known++;
	if (raw_key != NULL)
		known++;
	static const char *const kOptsKeys[] = {"metadata", "tags", "unique", "unique_key", "concurrency_key"};
	if (known != pairs) {
		if (Field(&opts->root, "on_conflict") != NULL)
			Invalid(where, " has an unknown key \"on_conflict\"",
			        "on_conflict belongs inside unique: '{\"unique\": {\"on_conflict\": \"skip\"}}', or "
			        "'{\"unique_key\": \"...\", \"unique\": {\"on_conflict\": \"skip\"}}'.");
		char *unknown = UnknownKey(&opts->root, kOptsKeys, lengthof(kOptsKeys));
		Invalid(where, unknown != NULL ? unknown : " has an unknown key",
		        "opts accepts \"metadata\" (object), \"tags\" (array of strings), \"unique\" (object), "
		        "\"unique_key\" (string) and \"concurrency_key\" (string).");
	}

	if (unique != NULL || raw_key != NULL) {
		JsonbContainer *spec = NULL;
		if (unique != NULL) {
			if (unique->type != jbvBinary || !JsonContainerIsObject(unique->val.binary.data))
				Invalid(where, ".unique must be a JSON object", kUniqueHint);
			spec = unique->val.binary.data;
			static const char *const kUniqueKeys[] = {"by_args", "by_queue", "period", "states", "on_conflict"};
			if (char *unknown = UnknownKey(spec, kUniqueKeys, lengthof(kUniqueKeys)))
				Invalid(where, psprintf(".unique%s", unknown),
				        "unique accepts \"by_args\", \"by_queue\", \"period\", \"states\" and \"on_conflict\".");
		}
		if (JsonbValue *on_conflict = spec == NULL ? NULL : Field(spec, "on_conflict")) {
			bool is_error = on_conflict->type == jbvString && on_conflict->val.string.len == 5 &&
			                memcmp(on_conflict->val.string.val, "error", 5) == 0;
			skip = on_conflict->type == jbvString && on_conflict->val.string.len == 4 &&
			       memcmp(on_conflict->val.string.val, "skip", 4) == 0;
			if (!is_error && !skip)
				Invalid(where, ".unique.on_conflict must be \"error\" or \"skip\"",
				        "\"error\" (the default) raises 23505 on a duplicate; \"skip\" returns the id of the job "
				        "that holds the key and enqueues nothing.");
		}
		if (raw_key != NULL) {
			if (raw_key->type != jbvString || raw_key->val.string.len == 0 || raw_key->val.string.len > 1000)
				Invalid(where, ".unique_key must be a non-empty string of at most 1000 bytes", kUniqueHint);
			if (spec != NULL && (Field(spec, "by_args") != NULL || Field(spec, "by_queue") != NULL))
				Invalid(where, ".unique_key cannot be combined with unique.by_args or unique.by_queue",
				        "A unique_key is the whole identity; use unique.states and unique.period with it.");
		}
		by_args = spec == NULL ? false : BoolField(spec, "by_args", true, where);
		by_queue = spec == NULL ? false : BoolField(spec, "by_queue", false, where);

		if (JsonbValue *period = spec == NULL ? NULL : Field(spec, "period")) {
			if (period->type != jbvString)
				Invalid(where, ".unique.period must be an interval string such as \"1 hour\"", kUniqueHint);
			char *literal = pnstrdup(period->val.string.val, period->val.string.len);
			int64 micros = 0;
			bool parsed = ParseIntervalMicros(literal, &micros);
			if (!parsed)
				Invalid(where, ".unique.period is not an interval", kUniqueHint);
			if (micros <= 0)
				Invalid(where, ".unique.period must be positive", kUniqueHint);
			bucket = now / micros - (now % micros < 0 ? 1 : 0);
			has_period = true;
		}

		mask = core::kDefaultUniqueMask;
		if (JsonbValue *states = spec == NULL ? NULL : Field(spec, "states")) {
			if (states->type != jbvBinary || !JsonContainerIsArray(states->val.binary.data))
				Invalid(where, ".unique.states must be an array of state names", kUniqueHint);
			mask = 0;
			for (uint32 i = 0; i < JsonContainerSize(states->val.binary.data); i++) {
				JsonbValue *state = getIthJsonbValueFromContainer(states->val.binary.data, i);
				core::JobState parsed;
				if (state == NULL || state->type != jbvString ||
				    !core::ParseJobState(state->val.string.val, state->val.string.len, &parsed))
					Invalid(where, ".unique.states has an unknown state",
					        "States are available, scheduled, retryable, running, completed, failed, cancelled and dlq.");
				mask |= core::MaskOf(parsed);
			}
			if ((mask & core::kRequiredUniqueMask) != core::kRequiredUniqueMask)
				Invalid(where, ".unique.states must include available, scheduled, retryable and running",
				        "A unique job holds its key from enqueue until it reaches a final state outside its "
				        "states; add the final states (completed, failed, cancelled, dlq) that should also block.");
		}
	}

	// What is stored: opts without its unique keys. The job's size is checked
	// before its unique key is computed (hashing by_args reads the whole args).
	if (payload_keys) {
		Datum payload = PointerGetDatum(opts);
		if (unique != NULL)
			payload = DirectFunctionCall2(jsonb_delete, payload, CStringGetTextDatum("unique"));
		if (raw_key != NULL)
			payload = DirectFunctionCall2(jsonb_delete, payload, CStringGetTextDatum("unique_key"));
		result.payload = DatumGetJsonbP(payload);
	}
	result.bytes = CheckedJobBytes(job, args, result.payload);

	if (unique != NULL || raw_key != NULL) {
		pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);
		if (ctx == NULL || pg_cryptohash_init(ctx) < 0)
			elog(ERROR, "awa: could not compute a unique key");
		char number[32];
		if (raw_key != NULL) {
			Append(ctx, "awa-key\0", 8);
			Append(ctx, raw_key->val.string.val, raw_key->val.string.len);
		} else {
			Append(ctx, "awa-job\0", 8);
			Append(ctx, VARDATA_ANY(kind), VARSIZE_ANY_EXHDR(kind));
			Append(ctx, "\0", 1);
			if (by_queue)
				Append(ctx, VARDATA_ANY(queue), VARSIZE_ANY_EXHDR(queue));
			Append(ctx, "\0", 1);
			if (by_args) {
				char *canonical = JsonbToCString(NULL, &args->root, VARSIZE(args));
				Append(ctx, canonical, strlen(canonical));
			}
		}
		Append(ctx, "\0", 1);
		if (has_period) {
			snprintf(number, sizeof(number), INT64_FORMAT, bucket);
			Append(ctx, number, strlen(number));
		}
		bytea *key = static_cast<bytea *>(palloc(VARHDRSZ + PG_SHA256_DIGEST_LENGTH));
		SET_VARSIZE(key, VARHDRSZ + PG_SHA256_DIGEST_LENGTH);
		if (pg_cryptohash_final(ctx, reinterpret_cast<uint8 *>(VARDATA(key)), PG_SHA256_DIGEST_LENGTH) < 0)
			elog(ERROR, "awa: could not compute a unique key");
		pg_cryptohash_free(ctx);
		result.unique_key = key;
		result.unique_states = mask;
		result.unique_skip = skip;
	}

	return result;
}

text *
ConcurrencyKeyOf(Jsonb *payload)
{
	if (payload == NULL || !JB_ROOT_IS_OBJECT(payload) || JB_ROOT_IS_SCALAR(payload))
		return NULL;
	JsonbValue *key = Field(&payload->root, "concurrency_key");
	if (key == NULL || key->type != jbvString)
		return NULL;
	return cstring_to_text_with_len(key->val.string.val, key->val.string.len);
}

}  // namespace awa::pg
