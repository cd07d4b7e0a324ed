// validate.hpp: argument rules of the SQL API.
//
// Each check returns true when the value is acceptable, else fills a
// Violation. Violation is trivially destructible (fixed buffers), so the
// PostgreSQL layer may keep it live while it reports the error. The checks
// allocate nothing and never throw (noexcept: messages are formatted with
// snprintf into the Violation's buffers), so src/pg calls them directly,
// without a bridge (src/pg/core_calls.hpp checks it).
#pragma once

#include <cstddef>
#include <cstdint>

namespace awa::core {

enum class ViolationCode {
	kNullValue,         // SQLSTATE 22004 null_value_not_allowed
	kInvalidParameter,  // SQLSTATE 22023 invalid_parameter_value
	kProgramLimit,      // SQLSTATE 54000 program_limit_exceeded
	kOutOfRange,        // SQLSTATE 22008 datetime_field_overflow (as PostgreSQL's "interval out of range")
};

struct Violation {
	ViolationCode code;
	char message[256];
	char hint[256];
};

constexpr size_t kMaxNameLength = 200;  // queue and kind, in characters
constexpr int64_t kMinPriority = 1;
constexpr int64_t kMaxPriority = 4;
constexpr int64_t kMaxAttemptsLimit = 1000;
// What a job that does not set them gets. awa._job_defaults() gives them to
// SQL (periodic schedules, and test/sql/enqueue.sql, which checks the
// parameter defaults of enqueue, enqueue_many and schedule_periodic).
constexpr int64_t kDefaultPriority = 2;
constexpr int64_t kDefaultMaxAttempts = 25;
constexpr int64_t kMaxJobsPerClaim = 10000;

// `chars` is the length in characters (not bytes); `value` may be null.
bool CheckKind(const void *value, size_t chars, Violation *out) noexcept;
bool CheckQueue(const void *value, size_t chars, Violation *out) noexcept;
bool CheckPriority(int64_t priority, Violation *out) noexcept;
// A job's opts.concurrency_key (and set_key_weight's key): `bytes` long,
// 1..kMaxConcurrencyKeyBytes; `value` may be null (22004). The same bound is
// the CHECK of awa.queue_lanes.concurrency_key.
constexpr size_t kMaxConcurrencyKeyBytes = 255;
bool CheckConcurrencyKey(const void *value, size_t bytes, Violation *out) noexcept;
// A key's weight in its queue's fair share (awa.set_key_weight): within
// core::kMinKeyWeight..kMaxKeyWeight (key_scheduler.hpp, which refuses any
// other); `is_null` for SQL NULL.
bool CheckKeyWeight(bool is_null, int64_t weight, Violation *out) noexcept;
bool CheckMaxAttempts(int64_t max_attempts, Violation *out) noexcept;
bool CheckMaxJobs(int64_t max_jobs, Violation *out) noexcept;
bool CheckDeadline(int64_t deadline_micros, Violation *out) noexcept;
// How long a claim may sleep for work: 0 (look once) up to kMaxClaimWaitMicros.
constexpr int64_t kMaxClaimWaitMicros = int64_t{24} * 3600 * 1000000;
bool CheckClaimWait(int64_t wait_micros, Violation *out) noexcept;
// A retry or snooze delay, as an interval's fields: at most kMaxDelayDays (100 years),
// counting a month as 30 days as PostgreSQL compares intervals (so now + delay
// is always a timestamp; '1000000 years' used to end in 22008 "timestamp out
// of range" with no hint). Its sign is judged where it is applied to now.
constexpr int64_t kMaxDelayDays = 36525;  // 100 years
bool CheckDelay(int32_t months, int32_t days, int64_t micros, Violation *out) noexcept;
// Whether a delay is negative by more than kMaxDelayDays (same counting): it
// is refused as negative before it is applied to now, where it could end
// before the first timestamp.
bool DelayFarNegative(int32_t months, int32_t days, int64_t micros) noexcept;
// A duration given as a number of seconds (the casts to awa.duration from
// numbers, docs/sql-reference.md "Durations"): finite, and within what an
// interval holds (int64 microseconds, so at most kMaxDurationSeconds either
// way); stored as that many microseconds, rounded to the nearest one. Its
// sign and size are judged later by the argument's own rule (CheckClaimWait,
// CheckDeadline, ...).
constexpr int64_t kMaxDurationSeconds = INT64_MAX / 1000000;  // 9223372036854
bool SecondsToMicros(double seconds, int64_t *micros, Violation *out) noexcept;
bool WholeSecondsToMicros(int64_t seconds, int64_t *micros, Violation *out) noexcept;
// `what` names the argument that must not be NULL; `has_default` says whether
// omitting it is an option (it shapes the hint).
bool CheckNotNull(bool is_null, const char *what, bool has_default, Violation *out) noexcept;
// Arrays passed together must have the same number of elements.
bool CheckSameLength(const char *what, size_t length, const char *reference, size_t expected, Violation *out) noexcept;
// A job's size: `bytes` (its args and metadata as stored, uncompressed) must
// not exceed `limit` (awa.max_job_bytes).
bool CheckJobBytes(int64_t bytes, int64_t limit, Violation *out) noexcept;
// A call's size: the sum of the sizes of jobs 1..`jobs` of one enqueue_many
// call, `bytes`, must not exceed `limit` (awa.max_call_bytes).
bool CheckCallBytes(int64_t bytes, size_t jobs, int64_t limit, Violation *out) noexcept;

}  // namespace awa::core
