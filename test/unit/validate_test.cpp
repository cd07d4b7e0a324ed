// validate_test.cpp: argument rules of the SQL API (src/core/validate.hpp):
// boundaries on both sides, and the code, message and hint of every violation.
#include "core/validate.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace awa::core {
namespace {

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

const char kSomeName[] = "x";

// A Violation filled with garbage, so a check that forgets a field is caught.
Violation
Dirty()
{
	Violation v;
	std::memset(&v, 0x5a, sizeof(v));
	v.code = static_cast<ViolationCode>(77);
	return v;
}

void
ExpectViolation(const Violation &v, ViolationCode code, const std::string &message, const std::string &hint)
{
	EXPECT_EQ(v.code, code);
	ASSERT_NE(std::memchr(v.message, '\0', sizeof(v.message)), nullptr) << "message not terminated";
	ASSERT_NE(std::memchr(v.hint, '\0', sizeof(v.hint)), nullptr) << "hint not terminated";
	EXPECT_EQ(std::string(v.message), message);
	EXPECT_EQ(std::string(v.hint), hint);
	EXPECT_FALSE(std::string(v.hint).empty()) << "every error has a HINT";
}

TEST(Violation, IsTriviallyDestructible)
{
	static_assert(std::is_trivially_destructible_v<Violation>, "the PostgreSQL layer relies on this");
	SUCCEED();
}

TEST(Constants, Values)
{
	EXPECT_EQ(kMaxNameLength, 200u);
	EXPECT_EQ(kMinPriority, 1);
	EXPECT_EQ(kMaxPriority, 4);
	EXPECT_EQ(kMaxAttemptsLimit, 1000);
	EXPECT_EQ(kMaxJobsPerClaim, 10000);
}

// ---- names: kind and queue ------------------------------------------------

TEST(CheckKind, Null)
{
	Violation v = Dirty();
	EXPECT_FALSE(CheckKind(nullptr, 0, &v));
	ExpectViolation(v, ViolationCode::kNullValue, "kind must not be NULL", "Pass a non-empty name.");
	v = Dirty();
	// NULL wins over any length
	EXPECT_FALSE(CheckKind(nullptr, 5, &v));
	ExpectViolation(v, ViolationCode::kNullValue, "kind must not be NULL", "Pass a non-empty name.");
}

TEST(CheckKind, Empty)
{
	Violation v = Dirty();
	EXPECT_FALSE(CheckKind(kSomeName, 0, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "kind must not be empty", "Pass a non-empty name.");
}

TEST(CheckKind, LengthBoundaries)
{
	Violation v = Dirty();
	EXPECT_TRUE(CheckKind(kSomeName, 1, &v));
	EXPECT_TRUE(CheckKind(kSomeName, 2, &v));
	EXPECT_TRUE(CheckKind(kSomeName, 199, &v));
	EXPECT_TRUE(CheckKind(kSomeName, 200, &v));
	EXPECT_FALSE(CheckKind(kSomeName, 201, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "kind is 201 characters long; at most 200 are allowed",
	                "Use a shorter name.");
	v = Dirty();
	EXPECT_FALSE(CheckKind(kSomeName, 100000, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "kind is 100000 characters long; at most 200 are allowed",
	                "Use a shorter name.");
}

TEST(CheckQueue, Null)
{
	Violation v = Dirty();
	EXPECT_FALSE(CheckQueue(nullptr, 0, &v));
	ExpectViolation(v, ViolationCode::kNullValue, "queue must not be NULL", "Pass a non-empty name.");
}

TEST(CheckQueue, Empty)
{
	Violation v = Dirty();
	EXPECT_FALSE(CheckQueue(kSomeName, 0, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "queue must not be empty", "Pass a non-empty name.");
}

TEST(CheckQueue, LengthBoundaries)
{
	Violation v = Dirty();
	EXPECT_TRUE(CheckQueue(kSomeName, 1, &v));
	EXPECT_TRUE(CheckQueue(kSomeName, 200, &v));
	EXPECT_FALSE(CheckQueue(kSomeName, 201, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "queue is 201 characters long; at most 200 are allowed",
	                "Use a shorter name.");
}

TEST(CheckConcurrencyKey, NullEmptyAndByteBoundaries)
{
	const char *hint = "A concurrency key names who the job is for, such as \"tenant-42\": a non-empty string of "
	                   "at most 255 bytes.";
	Violation v = Dirty();
	EXPECT_FALSE(CheckConcurrencyKey(nullptr, 0, &v));
	ExpectViolation(v, ViolationCode::kNullValue, "concurrency_key must not be NULL", hint);
	EXPECT_FALSE(CheckConcurrencyKey(kSomeName, 0, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "concurrency_key must not be empty", hint);
	EXPECT_TRUE(CheckConcurrencyKey(kSomeName, 1, &v));
	EXPECT_TRUE(CheckConcurrencyKey(kSomeName, 255, &v));
	EXPECT_FALSE(CheckConcurrencyKey(kSomeName, 1048576, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "concurrency_key is 1048576 bytes long; at most 255 are allowed",
	                hint);
}

TEST(CheckKeyWeight, BoundsAndNull)
{
	const char *hint = "A key of weight 2 gets twice the claims of a key of weight 1 while both have work.";
	Violation v = Dirty();
	EXPECT_TRUE(CheckKeyWeight(false, 1, &v));
	EXPECT_TRUE(CheckKeyWeight(false, 10000, &v));
	for (int64_t bad : {int64_t{0}, int64_t{-1}, int64_t{10001}}) {
		EXPECT_FALSE(CheckKeyWeight(false, bad, &v));
		ExpectViolation(v, ViolationCode::kInvalidParameter, "weight must be between 1 and 10000", hint);
	}
	EXPECT_FALSE(CheckKeyWeight(true, 5, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "weight must be between 1 and 10000", hint);
}

// ---- numbers ---------------------------------------------------------------

TEST(CheckPriority, Boundaries)
{
	const char *hint = "Priority 1 is the most urgent, 4 the least.";
	Violation v = Dirty();
	EXPECT_TRUE(CheckPriority(1, &v));
	EXPECT_TRUE(CheckPriority(2, &v));
	EXPECT_TRUE(CheckPriority(3, &v));
	EXPECT_TRUE(CheckPriority(4, &v));
	EXPECT_FALSE(CheckPriority(0, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "priority must be between 1 and 4, got 0", hint);
	v = Dirty();
	EXPECT_FALSE(CheckPriority(5, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "priority must be between 1 and 4, got 5", hint);
	v = Dirty();
	EXPECT_FALSE(CheckPriority(-1, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "priority must be between 1 and 4, got -1", hint);
	v = Dirty();
	EXPECT_FALSE(CheckPriority(kI64Min, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter,
	                "priority must be between 1 and 4, got -9223372036854775808", hint);
	v = Dirty();
	EXPECT_FALSE(CheckPriority(kI64Max, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter,
	                "priority must be between 1 and 4, got 9223372036854775807", hint);
	// a value that only looks valid after truncation to 32 bits
	v = Dirty();
	EXPECT_FALSE(CheckPriority((int64_t{1} << 32) + 1, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "priority must be between 1 and 4, got 4294967297", hint);
}

TEST(CheckMaxAttempts, Boundaries)
{
	const char *hint = "Pass a number of attempts from 1 to 1000.";
	Violation v = Dirty();
	EXPECT_TRUE(CheckMaxAttempts(1, &v));
	EXPECT_TRUE(CheckMaxAttempts(25, &v));
	EXPECT_TRUE(CheckMaxAttempts(999, &v));
	EXPECT_TRUE(CheckMaxAttempts(1000, &v));
	EXPECT_FALSE(CheckMaxAttempts(0, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "max_attempts must be between 1 and 1000, got 0", hint);
	v = Dirty();
	EXPECT_FALSE(CheckMaxAttempts(1001, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "max_attempts must be between 1 and 1000, got 1001", hint);
	v = Dirty();
	EXPECT_FALSE(CheckMaxAttempts(-5, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "max_attempts must be between 1 and 1000, got -5", hint);
	v = Dirty();
	EXPECT_FALSE(CheckMaxAttempts(kI64Max, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter,
	                "max_attempts must be between 1 and 1000, got 9223372036854775807", hint);
	v = Dirty();
	EXPECT_FALSE(CheckMaxAttempts((int64_t{1} << 32) + 25, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter,
	                "max_attempts must be between 1 and 1000, got 4294967321", hint);
}

TEST(CheckMaxJobs, Boundaries)
{
	const char *hint = "A claim takes from 1 to 10000 jobs.";
	Violation v = Dirty();
	EXPECT_TRUE(CheckMaxJobs(1, &v));
	EXPECT_TRUE(CheckMaxJobs(2, &v));
	EXPECT_TRUE(CheckMaxJobs(9999, &v));
	EXPECT_TRUE(CheckMaxJobs(10000, &v));
	EXPECT_FALSE(CheckMaxJobs(0, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "max_jobs must be between 1 and 10000, got 0", hint);
	v = Dirty();
	EXPECT_FALSE(CheckMaxJobs(10001, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "max_jobs must be between 1 and 10000, got 10001", hint);
	v = Dirty();
	EXPECT_FALSE(CheckMaxJobs(-1, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "max_jobs must be between 1 and 10000, got -1", hint);
	v = Dirty();
	EXPECT_FALSE(CheckMaxJobs(kI64Min, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter,
	                "max_jobs must be between 1 and 10000, got -9223372036854775808", hint);
}

TEST(CheckDeadline, Boundaries)
{
	const char *hint = "The deadline is how long the worker may hold the job, e.g. '5 minutes'.";
	Violation v = Dirty();
	EXPECT_TRUE(CheckDeadline(1, &v));
	EXPECT_TRUE(CheckDeadline(300000000, &v));  // 5 minutes
	EXPECT_TRUE(CheckDeadline(kI64Max, &v));
	EXPECT_FALSE(CheckDeadline(0, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "deadline must be a positive interval", hint);
	v = Dirty();
	EXPECT_FALSE(CheckDeadline(-1, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "deadline must be a positive interval", hint);
	v = Dirty();
	EXPECT_FALSE(CheckDeadline(kI64Min, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "deadline must be a positive interval", hint);
}

TEST(CheckClaimWait, Boundaries)
{
	const char *hint = "wait is how long the claim may sleep until a job is available, e.g. '10 seconds'; NULL or 0 "
	                   "looks once and returns.";
	Violation v = Dirty();
	EXPECT_TRUE(CheckClaimWait(0, &v));
	EXPECT_TRUE(CheckClaimWait(1, &v));
	EXPECT_TRUE(CheckClaimWait(kMaxClaimWaitMicros, &v));
	EXPECT_FALSE(CheckClaimWait(kMaxClaimWaitMicros + 1, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "wait must be between 0 and 1 day", hint);
	v = Dirty();
	EXPECT_FALSE(CheckClaimWait(-1, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "wait must be between 0 and 1 day", hint);
	v = Dirty();
	EXPECT_FALSE(CheckClaimWait(kI64Min, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "wait must be between 0 and 1 day", hint);
}

TEST(CheckDelay, AtMost36525DaysCountingMonthsAsThirtyDays)
{
	const char *hint = "A delay is counted from now, e.g. '30 seconds'; pass one of at most 36525 days (100 years).";
	constexpr int64_t kDay = int64_t{86400} * 1000000;
	Violation v = Dirty();
	EXPECT_TRUE(CheckDelay(0, 0, 0, &v));
	EXPECT_TRUE(CheckDelay(0, 0, kMaxDelayDays * kDay, &v));
	EXPECT_TRUE(CheckDelay(0, kMaxDelayDays, 0, &v));
	EXPECT_TRUE(CheckDelay(1217, 15, 0, &v));  // 1217 * 30 + 15 = 36525 days
	EXPECT_TRUE(CheckDelay(0, 0, -kDay, &v));   // the sign is judged where it is applied
	EXPECT_FALSE(CheckDelay(0, 0, kMaxDelayDays * kDay + 1, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "delay must be at most 36525 days (a month counts as 30 days)", hint);
	v = Dirty();
	EXPECT_FALSE(CheckDelay(1217, 16, 0, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "delay must be at most 36525 days (a month counts as 30 days)", hint);
	v = Dirty();
	EXPECT_FALSE(CheckDelay(12000000, 0, 0, &v));  // '1000000 years'
	ExpectViolation(v, ViolationCode::kInvalidParameter, "delay must be at most 36525 days (a month counts as 30 days)", hint);
	v = Dirty();
	EXPECT_FALSE(CheckDelay(INT32_MAX, INT32_MAX, INT64_MAX, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "delay must be at most 36525 days (a month counts as 30 days)", hint);
	// Far negative delays are told apart before they are applied to now.
	EXPECT_FALSE(DelayFarNegative(0, 0, -kDay));
	EXPECT_FALSE(DelayFarNegative(0, -kMaxDelayDays, 0));
	EXPECT_TRUE(DelayFarNegative(0, -kMaxDelayDays - 1, 0));
	EXPECT_TRUE(DelayFarNegative(-12000000, 0, 0));  // '-1000000 years'
	EXPECT_TRUE(DelayFarNegative(INT32_MIN, INT32_MIN, INT64_MIN));
	EXPECT_FALSE(DelayFarNegative(INT32_MAX, 0, 0));
}

// ---- durations given as a number of seconds (awa.duration's casts) ---------

const char kSecondsHint[] = "Pass a number of seconds, such as 30 or 2.5, or an interval, such as '30 seconds'.";
const char kSecondsRangeHint[] =
    "Pass a number of seconds between -9223372036854 and 9223372036854 (the argument itself may allow less).";

TEST(SecondsToMicros, FractionsRoundToTheMicrosecond)
{
	Violation v = Dirty();
	int64_t micros = -7;
	EXPECT_TRUE(SecondsToMicros(2.5, &micros, &v));
	EXPECT_EQ(micros, 2500000);
	EXPECT_TRUE(SecondsToMicros(0.1, &micros, &v));
	EXPECT_EQ(micros, 100000);
	EXPECT_TRUE(SecondsToMicros(1.000001, &micros, &v));
	EXPECT_EQ(micros, 1000001);
	EXPECT_TRUE(SecondsToMicros(0.0000004, &micros, &v));
	EXPECT_EQ(micros, 0);
	EXPECT_TRUE(SecondsToMicros(-3, &micros, &v));  // the sign is the argument's rule to judge
	EXPECT_EQ(micros, -3000000);
	EXPECT_TRUE(SecondsToMicros(0.0, &micros, &v));
	EXPECT_EQ(micros, 0);
}

TEST(SecondsToMicros, NotFinite)
{
	int64_t micros = 0;
	Violation v = Dirty();
	EXPECT_FALSE(SecondsToMicros(std::numeric_limits<double>::quiet_NaN(), &micros, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "a duration must be a number of seconds, not NaN",
	                kSecondsHint);
	v = Dirty();
	EXPECT_FALSE(SecondsToMicros(std::numeric_limits<double>::infinity(), &micros, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "a duration must be a finite number of seconds, not infinity",
	                kSecondsHint);
	v = Dirty();
	EXPECT_FALSE(SecondsToMicros(-std::numeric_limits<double>::infinity(), &micros, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter,
	                "a duration must be a finite number of seconds, not -infinity", kSecondsHint);
}

TEST(SecondsToMicros, Range)
{
	int64_t micros = 0;
	Violation v = Dirty();
	// A double of seconds is exact to the microsecond for decades (its 53 bits
	// hold 2^31 s to 0.5 us); near the bound the product is off by < 2^11 us.
	EXPECT_TRUE(SecondsToMicros(50.0 * 365 * 86400 + 0.000001, &micros, &v));
	EXPECT_EQ(micros, int64_t{50} * 365 * 86400 * 1000000 + 1);
	EXPECT_TRUE(SecondsToMicros(static_cast<double>(kMaxDurationSeconds), &micros, &v));
	EXPECT_NEAR(static_cast<double>(micros), static_cast<double>(kMaxDurationSeconds * 1000000), 2048.0);
	EXPECT_TRUE(SecondsToMicros(-static_cast<double>(kMaxDurationSeconds), &micros, &v));
	EXPECT_NEAR(static_cast<double>(micros), static_cast<double>(-kMaxDurationSeconds * 1000000), 2048.0);
	EXPECT_FALSE(SecondsToMicros(9223372036854.776, &micros, &v));  // 2^63 microseconds
	ExpectViolation(v, ViolationCode::kOutOfRange, "duration out of range", kSecondsRangeHint);
	v = Dirty();
	EXPECT_FALSE(SecondsToMicros(-9223372036855.0, &micros, &v));
	ExpectViolation(v, ViolationCode::kOutOfRange, "duration out of range", kSecondsRangeHint);
	v = Dirty();
	EXPECT_FALSE(SecondsToMicros(std::numeric_limits<double>::max(), &micros, &v));
	ExpectViolation(v, ViolationCode::kOutOfRange, "duration out of range", kSecondsRangeHint);
}

TEST(WholeSecondsToMicros, Range)
{
	int64_t micros = 0;
	Violation v = Dirty();
	EXPECT_TRUE(WholeSecondsToMicros(5, &micros, &v));
	EXPECT_EQ(micros, 5000000);
	EXPECT_TRUE(WholeSecondsToMicros(kMaxDurationSeconds, &micros, &v));
	EXPECT_EQ(micros, kMaxDurationSeconds * 1000000);
	EXPECT_TRUE(WholeSecondsToMicros(-kMaxDurationSeconds, &micros, &v));
	EXPECT_EQ(micros, -kMaxDurationSeconds * 1000000);
	EXPECT_FALSE(WholeSecondsToMicros(kMaxDurationSeconds + 1, &micros, &v));
	ExpectViolation(v, ViolationCode::kOutOfRange, "duration out of range", kSecondsRangeHint);
	v = Dirty();
	EXPECT_FALSE(WholeSecondsToMicros(-kMaxDurationSeconds - 1, &micros, &v));
	ExpectViolation(v, ViolationCode::kOutOfRange, "duration out of range", kSecondsRangeHint);
	v = Dirty();
	EXPECT_FALSE(WholeSecondsToMicros(kI64Max, &micros, &v));
	ExpectViolation(v, ViolationCode::kOutOfRange, "duration out of range", kSecondsRangeHint);
	v = Dirty();
	EXPECT_FALSE(WholeSecondsToMicros(kI64Min, &micros, &v));
	ExpectViolation(v, ViolationCode::kOutOfRange, "duration out of range", kSecondsRangeHint);
}

// ---- NULL and array shape ---------------------------------------------------

TEST(CheckNotNull, Rule)
{
	Violation v = Dirty();
	EXPECT_TRUE(CheckNotNull(false, "args", true, &v));
	EXPECT_FALSE(CheckNotNull(true, "args", true, &v));
	ExpectViolation(v, ViolationCode::kNullValue, "args must not be NULL", "Omit the argument to use its default.");
	v = Dirty();
	EXPECT_FALSE(CheckNotNull(true, "max_jobs", true, &v));
	ExpectViolation(v, ViolationCode::kNullValue, "max_jobs must not be NULL",
	                "Omit the argument to use its default.");
}

TEST(CheckNotNull, ArgumentWithoutDefault)
{
	Violation v = Dirty();
	EXPECT_TRUE(CheckNotNull(false, "receipt_id", false, &v));
	EXPECT_FALSE(CheckNotNull(true, "receipt_id", false, &v));
	ExpectViolation(v, ViolationCode::kNullValue, "receipt_id must not be NULL",
	                "This argument has no default; pass a value.");
}

TEST(CheckNotNull, LongNameIsTruncatedNotOverflowed)
{
	std::string what(400, 'w');
	Violation v = Dirty();
	EXPECT_FALSE(CheckNotNull(true, what.c_str(), true, &v));
	EXPECT_EQ(v.code, ViolationCode::kNullValue);
	ASSERT_NE(std::memchr(v.message, '\0', sizeof(v.message)), nullptr);
	EXPECT_EQ(std::strlen(v.message), sizeof(v.message) - 1);
	EXPECT_EQ(std::string(v.message), std::string(sizeof(v.message) - 1, 'w'));
	EXPECT_EQ(std::string(v.hint), "Omit the argument to use its default.");
}

TEST(CheckSameLength, Rule)
{
	const char *hint = "Pass one element per job in every array.";
	Violation v = Dirty();
	EXPECT_TRUE(CheckSameLength("args", 0, "kinds", 0, &v));
	EXPECT_TRUE(CheckSameLength("args", 3, "kinds", 3, &v));
	EXPECT_TRUE(CheckSameLength("args", 10000, "kinds", 10000, &v));
	EXPECT_FALSE(CheckSameLength("args", 2, "kinds", 3, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "args has 2 elements but kinds has 3", hint);
	v = Dirty();
	EXPECT_FALSE(CheckSameLength("priorities", 4, "kinds", 3, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "priorities has 4 elements but kinds has 3", hint);
	v = Dirty();
	EXPECT_FALSE(CheckSameLength("run_at", 0, "kinds", 1, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "run_at has 0 elements but kinds has 1", hint);
	v = Dirty();
	EXPECT_FALSE(CheckSameLength("receipt_ids", 1, "job_ids", 0, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "receipt_ids has 1 elements but job_ids has 0", hint);
}

// ---- sizes: awa.max_job_bytes and awa.max_call_bytes ----------------------

TEST(CheckJobBytes, Rule)
{
	const char *hint = "Store large payloads elsewhere and pass a reference, or raise awa.max_job_bytes (superuser).";
	Violation v = Dirty();
	EXPECT_TRUE(CheckJobBytes(0, 1024, &v));
	EXPECT_TRUE(CheckJobBytes(1023, 1024, &v));
	EXPECT_TRUE(CheckJobBytes(1024, 1024, &v));  // at the limit: allowed
	EXPECT_FALSE(CheckJobBytes(1025, 1024, &v));
	ExpectViolation(v, ViolationCode::kProgramLimit,
	                "args and metadata of the job are 1025 bytes; awa.max_job_bytes allows 1024", hint);
	v = Dirty();
	EXPECT_FALSE(CheckJobBytes(209715200, 1048576, &v));
	ExpectViolation(v, ViolationCode::kProgramLimit,
	                "args and metadata of the job are 209715200 bytes; awa.max_job_bytes allows 1048576", hint);
	EXPECT_TRUE(CheckJobBytes(1073741824, 1073741824, &v));
	v = Dirty();
	EXPECT_FALSE(CheckJobBytes(kI64Max, 1073741824, &v));
	ExpectViolation(v, ViolationCode::kProgramLimit,
	                "args and metadata of the job are 9223372036854775807 bytes; awa.max_job_bytes allows 1073741824",
	                hint);
}

TEST(CheckCallBytes, Rule)
{
	const char *hint = "Enqueue the jobs in several calls, or raise awa.max_call_bytes (superuser).";
	Violation v = Dirty();
	EXPECT_TRUE(CheckCallBytes(0, 0, 1024, &v));
	EXPECT_TRUE(CheckCallBytes(1023, 5, 1024, &v));
	EXPECT_TRUE(CheckCallBytes(1024, 5, 1024, &v));  // at the limit: allowed
	EXPECT_FALSE(CheckCallBytes(1025, 5, 1024, &v));
	ExpectViolation(v, ViolationCode::kProgramLimit,
	                "args and metadata of jobs[1] to jobs[5] are 1025 bytes; awa.max_call_bytes allows 1024", hint);
	v = Dirty();
	EXPECT_FALSE(CheckCallBytes(2048, 1, 1024, &v));
	ExpectViolation(v, ViolationCode::kProgramLimit,
	                "args and metadata of jobs[1] are 2048 bytes; awa.max_call_bytes allows 1024", hint);
	v = Dirty();
	EXPECT_FALSE(CheckCallBytes(int64_t{3} << 31, 100000, 2147483647, &v));
	ExpectViolation(v, ViolationCode::kProgramLimit,
	                "args and metadata of jobs[1] to jobs[100000] are 6442450944 bytes; awa.max_call_bytes allows "
	                "2147483647",
	                hint);
}

// A failed check overwrites a previous violation completely (no stale text).
TEST(Violation, LaterFailureReplacesEarlierText)
{
	Violation v = Dirty();
	EXPECT_FALSE(CheckSameLength("priorities", 4, "kinds", 3, &v));
	EXPECT_FALSE(CheckPriority(0, &v));
	ExpectViolation(v, ViolationCode::kInvalidParameter, "priority must be between 1 and 4, got 0",
	                "Priority 1 is the most urgent, 4 the least.");
	EXPECT_FALSE(CheckKind(nullptr, 0, &v));
	ExpectViolation(v, ViolationCode::kNullValue, "kind must not be NULL", "Pass a non-empty name.");
}

}  // namespace
}  // namespace awa::core
