// validate.cpp: argument rules of the SQL API (see validate.hpp).
#include "core/validate.hpp"

#include "core/key_scheduler.hpp"

#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "core/core_only.hpp"  // last: proves no PostgreSQL header came in

namespace awa::core {

namespace {

bool
Fail(Violation *out, ViolationCode code, const char *hint, const char *format, ...) noexcept
    __attribute__((format(printf, 4, 5)));

bool
Fail(Violation *out, ViolationCode code, const char *hint, const char *format, ...) noexcept
{
	out->code = code;
	va_list args;
	va_start(args, format);
	std::vsnprintf(out->message, sizeof(out->message), format, args);
	va_end(args);
	std::snprintf(out->hint, sizeof(out->hint), "%s", hint);
	return false;
}

bool
CheckName(const char *what, const void *value, size_t chars, Violation *out) noexcept
{
	if (value == nullptr)
		return Fail(out, ViolationCode::kNullValue, "Pass a non-empty name.", "%s must not be NULL", what);
	if (chars == 0)
		return Fail(out, ViolationCode::kInvalidParameter, "Pass a non-empty name.", "%s must not be empty", what);
	if (chars > kMaxNameLength)
		return Fail(out, ViolationCode::kInvalidParameter, "Use a shorter name.",
		            "%s is %zu characters long; at most %zu are allowed", what, chars, kMaxNameLength);
	return true;
}

}  // namespace

bool
CheckConcurrencyKey(const void *value, size_t bytes, Violation *out) noexcept
{
	constexpr const char *kHint = "A concurrency key names who the job is for, such as \"tenant-42\": a non-empty "
	                              "string of at most 255 bytes.";
	if (value == nullptr)
		return Fail(out, ViolationCode::kNullValue, kHint, "concurrency_key must not be NULL");
	if (bytes == 0)
		return Fail(out, ViolationCode::kInvalidParameter, kHint, "concurrency_key must not be empty");
	if (bytes > kMaxConcurrencyKeyBytes)
		return Fail(out, ViolationCode::kInvalidParameter, kHint,
		            "concurrency_key is %zu bytes long; at most %zu are allowed", bytes, kMaxConcurrencyKeyBytes);
	return true;
}

bool
CheckKeyWeight(bool is_null, int64_t weight, Violation *out) noexcept
{
	if (is_null || weight < kMinKeyWeight || weight > kMaxKeyWeight)
		return Fail(out, ViolationCode::kInvalidParameter,
		            "A key of weight 2 gets twice the claims of a key of weight 1 while both have work.",
		            "weight must be between %d and %d", static_cast<int>(kMinKeyWeight), static_cast<int>(kMaxKeyWeight));
	return true;
}

bool
CheckKind(const void *value, size_t chars, Violation *out) noexcept
{
	return CheckName("kind", value, chars, out);
}

bool
CheckQueue(const void *value, size_t chars, Violation *out) noexcept
{
	return CheckName("queue", value, chars, out);
}

namespace {

// One integer rule: `value` must lie in [low, high].
bool
CheckRange(const char *what, int64_t value, int64_t low, int64_t high, const char *hint, Violation *out) noexcept
{
	if (value < low || value > high)
		return Fail(out, ViolationCode::kInvalidParameter, hint,
		            "%s must be between %" PRId64 " and %" PRId64 ", got %" PRId64, what, low, high, value);
	return true;
}

}  // namespace

bool
CheckPriority(int64_t priority, Violation *out) noexcept
{
	return CheckRange("priority", priority, kMinPriority, kMaxPriority, "Priority 1 is the most urgent, 4 the least.",
	                  out);
}

bool
CheckMaxAttempts(int64_t max_attempts, Violation *out) noexcept
{
	return CheckRange("max_attempts", max_attempts, 1, kMaxAttemptsLimit, "Pass a number of attempts from 1 to 1000.",
	                  out);
}

bool
CheckMaxJobs(int64_t max_jobs, Violation *out) noexcept
{
	return CheckRange("max_jobs", max_jobs, 1, kMaxJobsPerClaim, "A claim takes from 1 to 10000 jobs.", out);
}

bool
CheckDeadline(int64_t deadline_micros, Violation *out) noexcept
{
	if (deadline_micros <= 0)
		return Fail(out, ViolationCode::kInvalidParameter,
		            "The deadline is how long the worker may hold the job, e.g. '5 minutes'.",
		            "deadline must be a positive interval");
	return true;
}

bool
CheckDelay(int32_t months, int32_t days, int64_t micros, Violation *out) noexcept
{
	constexpr __int128 kMicrosPerDay = __int128{86400} * 1000000;
	__int128 total = (__int128{months} * 30 + days) * kMicrosPerDay + micros;
	if (total > __int128{kMaxDelayDays} * kMicrosPerDay)
		return Fail(out, ViolationCode::kInvalidParameter,
		            "A delay is counted from now, e.g. '30 seconds'; pass one of at most 36525 days (100 years).",
		            "delay must be at most 36525 days (a month counts as 30 days)");
	return true;
}

bool
DelayFarNegative(int32_t months, int32_t days, int64_t micros) noexcept
{
	constexpr __int128 kMicrosPerDay = __int128{86400} * 1000000;
	__int128 total = (__int128{months} * 30 + days) * kMicrosPerDay + micros;
	return total < -__int128{kMaxDelayDays} * kMicrosPerDay;
}

bool
CheckClaimWait(int64_t wait_micros, Violation *out) noexcept
{
	if (wait_micros < 0 || wait_micros > kMaxClaimWaitMicros)
		return Fail(out, ViolationCode::kInvalidParameter,
		            "wait is how long the claim may sleep until a job is available, e.g. '10 seconds'; NULL or 0 "
		            "looks once and returns.",
		            "wait must be between 0 and 1 day");
	return true;
}

namespace {

constexpr const char *kSecondsHint =
    "Pass a number of seconds, such as 30 or 2.5, or an interval, such as '30 seconds'.";

bool
SecondsOutOfRange(Violation *out) noexcept
{
	char hint[160];
	std::snprintf(hint, sizeof(hint),
	              "Pass a number of seconds between -%" PRId64 " and %" PRId64 " (the argument itself may allow less).",
	              kMaxDurationSeconds, kMaxDurationSeconds);
	return Fail(out, ViolationCode::kOutOfRange, hint, "duration out of range");
}

}  // namespace

bool
SecondsToMicros(double seconds, int64_t *micros, Violation *out) noexcept
{
	if (std::isnan(seconds))
		return Fail(out, ViolationCode::kInvalidParameter, kSecondsHint,
		            "a duration must be a number of seconds, not NaN");
	if (std::isinf(seconds))
		return Fail(out, ViolationCode::kInvalidParameter, kSecondsHint,
		            "a duration must be a finite number of seconds, not %s", seconds > 0 ? "infinity" : "-infinity");
	double rounded = std::rint(seconds * 1e6);
	// The int64 range: [-2^63, 2^63), both bounds exact as doubles.
	if (!(rounded >= -9223372036854775808.0 && rounded < 9223372036854775808.0))
		return SecondsOutOfRange(out);
	*micros = static_cast<int64_t>(rounded);
	return true;
}

bool
WholeSecondsToMicros(int64_t seconds, int64_t *micros, Violation *out) noexcept
{
	if (__builtin_mul_overflow(seconds, int64_t{1000000}, micros))
		return SecondsOutOfRange(out);
	return true;
}

bool
CheckNotNull(bool is_null, const char *what, bool has_default, Violation *out) noexcept
{
	if (is_null)
		return Fail(out, ViolationCode::kNullValue,
		            has_default ? "Omit the argument to use its default." : "This argument has no default; pass a value.",
		            "%s must not be NULL", what);
	return true;
}

bool
CheckSameLength(const char *what, size_t length, const char *reference, size_t expected, Violation *out) noexcept
{
	if (length != expected)
		return Fail(out, ViolationCode::kInvalidParameter, "Pass one element per job in every array.",
		            "%s has %zu elements but %s has %zu", what, length, reference, expected);
	return true;
}

bool
CheckJobBytes(int64_t bytes, int64_t limit, Violation *out) noexcept
{
	if (bytes > limit)
		return Fail(out, ViolationCode::kProgramLimit,
		            "Store large payloads elsewhere and pass a reference, or raise awa.max_job_bytes (superuser).",
		            "args and metadata of the job are %" PRId64 " bytes; awa.max_job_bytes allows %" PRId64, bytes,
		            limit);
	return true;
}

bool
CheckCallBytes(int64_t bytes, size_t jobs, int64_t limit, Violation *out) noexcept
{
	const char *hint = "Enqueue the jobs in several calls, or raise awa.max_call_bytes (superuser).";
	if (bytes > limit && jobs == 1)
		return Fail(out, ViolationCode::kProgramLimit, hint,
		            "args and metadata of jobs[1] are %" PRId64 " bytes; awa.max_call_bytes allows %" PRId64, bytes,
		            limit);
	if (bytes > limit)
		return Fail(out, ViolationCode::kProgramLimit, hint,
		            "args and metadata of jobs[1] to jobs[%zu] are %" PRId64 " bytes; awa.max_call_bytes allows %" PRId64,
		            jobs, bytes, limit);
	return true;
}

}  // namespace awa::core
