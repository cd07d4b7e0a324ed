// lifecycle_test.cpp: job states, unique masks, backoff and priority aging.
#include <gtest/gtest.h>

#include <cstring>

#include "core/lifecycle.hpp"

namespace awa::core {
namespace {

TEST(JobStates, NamesRoundTrip)
{
	for (int i = 0; i < kJobStateCount; i++) {
		JobState state = static_cast<JobState>(i);
		const char *name = JobStateName(state);
		JobState parsed;
		ASSERT_TRUE(ParseJobState(name, std::strlen(name), &parsed)) << name;
		EXPECT_EQ(parsed, state);
	}
	EXPECT_STREQ(JobStateName(JobState::kDlq), "dlq");
	EXPECT_STREQ(JobStateName(static_cast<JobState>(8)), "unknown");
}

TEST(JobStates, ParseRejectsUnknownAndPrefixes)
{
	JobState parsed;
	EXPECT_FALSE(ParseJobState("pending", 7, &parsed));
	EXPECT_FALSE(ParseJobState("avail", 5, &parsed));
	EXPECT_FALSE(ParseJobState("availablex", 10, &parsed));
	EXPECT_FALSE(ParseJobState("", 0, &parsed));
	EXPECT_FALSE(ParseJobState("Available", 9, &parsed));
}

TEST(UniqueMask, DefaultHoldsEveryStateThatCanStillRun)
{
	EXPECT_TRUE(MaskHolds(kDefaultUniqueMask, JobState::kAvailable));
	EXPECT_TRUE(MaskHolds(kDefaultUniqueMask, JobState::kScheduled));
	EXPECT_TRUE(MaskHolds(kDefaultUniqueMask, JobState::kRetryable));
	EXPECT_TRUE(MaskHolds(kDefaultUniqueMask, JobState::kRunning));
	EXPECT_FALSE(MaskHolds(kDefaultUniqueMask, JobState::kCompleted));
	EXPECT_FALSE(MaskHolds(kDefaultUniqueMask, JobState::kFailed));
	EXPECT_FALSE(MaskHolds(kDefaultUniqueMask, JobState::kCancelled));
	EXPECT_FALSE(MaskHolds(kDefaultUniqueMask, JobState::kDlq));
	EXPECT_EQ(kDefaultUniqueMask, 0x0F);
}

TEST(Backoff, DoublesPerAttemptWithoutJitter)
{
	EXPECT_EQ(BackoffMicros(0, 0), 1000000);
	EXPECT_EQ(BackoffMicros(1, 0), 2000000);
	EXPECT_EQ(BackoffMicros(2, 0), 4000000);
	EXPECT_EQ(BackoffMicros(10, 0), 1024000000);
}

TEST(Backoff, JitterAddsUpToAQuarter)
{
	EXPECT_EQ(BackoffMicros(2, 0.5), 4500000);
	EXPECT_LT(BackoffMicros(2, 0.9999), 5000000);
	EXPECT_GE(BackoffMicros(2, 0.9999), 4999000);
	// Out-of-range jitter is clamped, never negative or a full extra quarter.
	EXPECT_EQ(BackoffMicros(2, -1), 4000000);
	EXPECT_LT(BackoffMicros(2, 7), 5000000);
}

TEST(Backoff, CappedAtOneDay)
{
	EXPECT_LT(BackoffMicros(16, 0), kMaxBackoffMicros);   // 65536 s
	EXPECT_EQ(BackoffMicros(17, 0), kMaxBackoffMicros);   // 131072 s > 86400 s
	EXPECT_EQ(BackoffMicros(16, 0.9), BackoffMicros(16, 0.9));
	EXPECT_EQ(BackoffMicros(1000, 0.5), kMaxBackoffMicros);
	EXPECT_EQ(BackoffMicros(-3, 0), 1000000);
}

TEST(Aging, StrictWhenIntervalIsZero)
{
	EXPECT_EQ(EffectivePriority(4, int64_t{1} << 40, 0), 4);
	EXPECT_EQ(EffectivePriority(3, 1000, -5), 3);
}

TEST(Aging, OneLevelPerInterval)
{
	const int64_t minute = 60 * 1000000LL;
	EXPECT_EQ(EffectivePriority(4, 0, minute), 4);
	EXPECT_EQ(EffectivePriority(4, minute - 1, minute), 4);
	EXPECT_EQ(EffectivePriority(4, minute, minute), 3);
	EXPECT_EQ(EffectivePriority(4, 2 * minute, minute), 2);
	EXPECT_EQ(EffectivePriority(4, 3 * minute, minute), 1);
	EXPECT_EQ(EffectivePriority(4, 300 * minute, minute), 1);
	EXPECT_EQ(EffectivePriority(1, 300 * minute, minute), 1);
	EXPECT_EQ(EffectivePriority(2, -minute, minute), 2);
}

}  // namespace
}  // namespace awa::core

namespace awa::core {
namespace {

// The events of awa.job_event_totals, from the state moves that make them.
TEST(JobEvents, EveryMoveNamesItsEvent)
{
	auto s = [](JobState state) { return static_cast<int>(state); };
	EXPECT_EQ(EventOfMove(kNoJobState, s(JobState::kAvailable)), JobEvent::kEnqueued);
	EXPECT_EQ(EventOfMove(kNoJobState, s(JobState::kScheduled)), JobEvent::kEnqueued);
	EXPECT_EQ(EventOfMove(s(JobState::kAvailable), s(JobState::kRunning)), JobEvent::kClaimed);
	EXPECT_EQ(EventOfMove(s(JobState::kRunning), s(JobState::kCompleted)), JobEvent::kCompleted);
	EXPECT_EQ(EventOfMove(s(JobState::kRunning), s(JobState::kRetryable)), JobEvent::kRetried);
	EXPECT_EQ(EventOfMove(s(JobState::kRunning), s(JobState::kAvailable)), JobEvent::kRetried);
	EXPECT_EQ(EventOfMove(s(JobState::kRunning), s(JobState::kScheduled)), JobEvent::kSnoozed);
	EXPECT_EQ(EventOfMove(s(JobState::kRunning), s(JobState::kFailed)), JobEvent::kFailed);
	EXPECT_EQ(EventOfMove(s(JobState::kRunning), s(JobState::kDlq)), JobEvent::kFailed);
	// Moves that are no event of a job's run.
	EXPECT_EQ(EventOfMove(s(JobState::kScheduled), s(JobState::kAvailable)), JobEvent::kNone);  // promotion
	EXPECT_EQ(EventOfMove(s(JobState::kAvailable), s(JobState::kCancelled)), JobEvent::kNone);
	EXPECT_EQ(EventOfMove(s(JobState::kRunning), s(JobState::kCancelled)), JobEvent::kNone);
	EXPECT_EQ(EventOfMove(s(JobState::kDlq), s(JobState::kScheduled)), JobEvent::kNone);  // DLQ retry
	EXPECT_EQ(EventOfMove(s(JobState::kCompleted), kNoJobState), JobEvent::kNone);        // history forgotten
	EXPECT_EQ(EventOfMove(kNoJobState, s(JobState::kDlq)), JobEvent::kNone);
}

TEST(JobEvents, NamesAreTheColumns)
{
	const char *expected[] = {"enqueued", "claimed", "completed", "retried", "snoozed", "failed", "rescued"};
	ASSERT_EQ(kJobEventCount, 7);
	for (int e = 0; e < kJobEventCount; e++)
		EXPECT_STREQ(JobEventName(static_cast<JobEvent>(e)), expected[e]);
	EXPECT_STREQ(JobEventName(JobEvent::kNone), "none");
}

}  // namespace
}  // namespace awa::core
