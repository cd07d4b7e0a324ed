// maintenance_schedule_test.cpp: task names, prune back-off, task due times
// and the conversion of wall-clock deadlines into delays
// (src/core/maintenance_schedule.hpp).
#include "core/maintenance_schedule.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string>

namespace awa::core {
namespace {

TEST(TaskName, EveryTaskRoundTrips)
{
	std::set<std::string> names;
	for (int i = 0; i < kMaintenanceTaskCount; i++) {
		MaintenanceTask task = static_cast<MaintenanceTask>(i);
		const char *name = TaskName(task);
		names.insert(name);
		MaintenanceTask parsed;
		ASSERT_TRUE(ParseTaskName(name, &parsed)) << name;
		EXPECT_EQ(parsed, task);
	}
	EXPECT_EQ(names.size(), static_cast<size_t>(kMaintenanceTaskCount));
}

TEST(TaskName, UnknownNamesAreRefused)
{
	MaintenanceTask parsed = MaintenanceTask::kPromote;
	EXPECT_FALSE(ParseTaskName("all", &parsed));
	EXPECT_FALSE(ParseTaskName("", &parsed));
	EXPECT_FALSE(ParseTaskName("Promote", &parsed));
	EXPECT_FALSE(ParseTaskName("prune", &parsed));
	EXPECT_EQ(parsed, MaintenanceTask::kPromote);
	EXPECT_STREQ(TaskName(MaintenanceTask::kCount), "unknown");
}

TEST(PruneBackoff, FirstTickRuns)
{
	PruneBackoff backoff;
	EXPECT_TRUE(backoff.TakeTick());
	EXPECT_EQ(backoff.level(), 0);
}

TEST(PruneBackoff, SkipsTwoToTheLevelMinusOneTicks)
{
	for (int level = 1; level <= 5; level++) {
		PruneBackoff backoff;
		for (int i = 0; i < level; i++)
			backoff.Record(true, 5);
		EXPECT_EQ(backoff.level(), level);
		int skipped = 0;
		while (!backoff.TakeTick())
			skipped++;
		EXPECT_EQ(skipped, (1 << level) - 1) << "level " << level;
		EXPECT_TRUE(backoff.TakeTick());  // no failure recorded since: runs again
	}
}

TEST(PruneBackoff, LevelIsCapped)
{
	PruneBackoff backoff;
	for (int i = 0; i < 20; i++)
		backoff.Record(true, 5);
	EXPECT_EQ(backoff.level(), 5);
	EXPECT_EQ(backoff.skip_remaining(), 31);
	PruneBackoff none;
	none.Record(true, 0);
	EXPECT_EQ(none.level(), 0);
	EXPECT_TRUE(none.TakeTick());
}

TEST(PruneBackoff, SuccessResets)
{
	PruneBackoff backoff;
	backoff.Record(true, 5);
	backoff.Record(true, 5);
	EXPECT_EQ(backoff.level(), 2);
	backoff.Record(false, 5);
	EXPECT_EQ(backoff.level(), 0);
	EXPECT_EQ(backoff.skip_remaining(), 0);
	EXPECT_TRUE(backoff.TakeTick());
}

TEST(TaskClock, EverythingIsDueAtStart)
{
	TaskClock clock;
	for (int i = 0; i < kMaintenanceTaskCount; i++)
		EXPECT_TRUE(clock.Due(static_cast<MaintenanceTask>(i), 0));
	EXPECT_EQ(clock.UntilNextDue(0, 1000), 0);
}

TEST(TaskClock, NextDueIsTheEarliest)
{
	TaskClock clock;
	for (int i = 0; i < kMaintenanceTaskCount; i++)
		clock.Ran(static_cast<MaintenanceTask>(i), 1000, 1000000);
	clock.Ran(MaintenanceTask::kPromote, 1000, 250000);
	EXPECT_FALSE(clock.Due(MaintenanceTask::kPromote, 251000 - 1));
	EXPECT_TRUE(clock.Due(MaintenanceTask::kPromote, 251000));
	EXPECT_EQ(clock.UntilNextDue(1000, 10000000), 250000);
	EXPECT_EQ(clock.UntilNextDue(1000, 100), 100);         // capped
	EXPECT_EQ(clock.UntilNextDue(999999999, 5000), 0);     // overdue
}

TEST(TaskClock, NonPositiveIntervalMeansEveryTick)
{
	TaskClock clock;
	clock.Ran(MaintenanceTask::kRescue, 500, 0);
	EXPECT_TRUE(clock.Due(MaintenanceTask::kRescue, 500));
	clock.Ran(MaintenanceTask::kRescue, 500, -7);
	EXPECT_TRUE(clock.Due(MaintenanceTask::kRescue, 500));
}

constexpr int64_t kSecond = 1000000;
constexpr int64_t kHour = 3600 * kSecond;

// Why the worker feeds the task clock a monotonic reading: the clock only
// compares the readings it is given, so a reading set back by an hour would
// leave every task not due for that hour, and one set forward would make all
// of them due at once.
TEST(TaskClock, DueTimesFollowTheReadingsFed)
{
	const int64_t t0 = 800000000 * kSecond;  // a wall-clock instant of 2025
	TaskClock wall_fed;
	for (int i = 0; i < kMaintenanceTaskCount; i++)
		wall_fed.Ran(static_cast<MaintenanceTask>(i), t0, (i + 1) * kSecond);
	const int64_t set_back = t0 + 2 * kSecond - kHour;
	for (int i = 0; i < kMaintenanceTaskCount; i++)
		EXPECT_FALSE(wall_fed.Due(static_cast<MaintenanceTask>(i), set_back));
	EXPECT_EQ(wall_fed.UntilNextDue(set_back, kSecond), kSecond);  // sleeps, wakes, finds nothing due
	for (int i = 0; i < kMaintenanceTaskCount; i++)
		EXPECT_TRUE(wall_fed.Due(static_cast<MaintenanceTask>(i), t0 + 2 * kSecond + kHour));
	// Monotonic readings only advance: two seconds later, exactly the tasks
	// whose cadence has passed are due.
	TaskClock monotonic_fed;
	const int64_t m0 = 5 * kSecond;
	for (int i = 0; i < kMaintenanceTaskCount; i++)
		monotonic_fed.Ran(static_cast<MaintenanceTask>(i), m0, (i + 1) * kSecond);
	for (int i = 0; i < kMaintenanceTaskCount; i++)
		EXPECT_EQ(monotonic_fed.Due(static_cast<MaintenanceTask>(i), m0 + 2 * kSecond), i + 1 <= 2) << i;
}

TEST(ClockPair, EstimatesWallTimeFromTheMonotonicClock)
{
	ClockPair pair{800000000 * kSecond, 42 * kSecond};
	EXPECT_EQ(pair.WallAt(42 * kSecond), 800000000 * kSecond);
	EXPECT_EQ(pair.WallAt(42 * kSecond + 1500), 800000000 * kSecond + 1500);
	// Read at the monotonic instant before the pair (a tick's start).
	EXPECT_EQ(pair.WallAt(41 * kSecond), 799999999 * kSecond);
	ClockPair zero;
	EXPECT_EQ(zero.WallAt(7), 7);
}

TEST(DelayUntilDeadline, IsTheTimeLeftWithinTheCap)
{
	const int64_t now = 800000000 * kSecond;
	EXPECT_EQ(DelayUntilDeadline(now + 100, now, kSecond), 100);
	EXPECT_EQ(DelayUntilDeadline(now + kSecond, now, kSecond), kSecond);
	EXPECT_EQ(DelayUntilDeadline(now + kSecond + 1, now, kSecond), kSecond);
	EXPECT_EQ(DelayUntilDeadline(now + 1, now, kSecond), 1);
}

TEST(DelayUntilDeadline, ReachedDeadlinesAreDueNow)
{
	const int64_t now = 800000000 * kSecond;
	EXPECT_EQ(DelayUntilDeadline(now, now, kSecond), 0);
	EXPECT_EQ(DelayUntilDeadline(now - 1, now, kSecond), 0);
	EXPECT_EQ(DelayUntilDeadline(std::numeric_limits<int64_t>::min(), now, kSecond), 0);  // -infinity
}

TEST(DelayUntilDeadline, NeverOverflowsNorGoesNegative)
{
	const int64_t max = std::numeric_limits<int64_t>::max();  // 'infinity'
	const int64_t min = std::numeric_limits<int64_t>::min();
	EXPECT_EQ(DelayUntilDeadline(max, 800000000 * kSecond, kSecond), kSecond);
	EXPECT_EQ(DelayUntilDeadline(max, min, kSecond), kSecond);
	EXPECT_EQ(DelayUntilDeadline(max, -kHour, kSecond), kSecond);
	EXPECT_EQ(DelayUntilDeadline(5, 0, -3), 0);  // a negative cap is 0
	EXPECT_EQ(DelayUntilDeadline(5, 0, 0), 0);
}

// The worker's use: a deadline chosen in a step against the step's wall
// reading (pair.wall), turned into a delay when the step has ended.
TEST(DelayUntilDeadline, ClockJumpsAfterTheStepMoveNothing)
{
	const int64_t cadence = 250000;
	const ClockPair step{800000000 * kSecond, 9 * kSecond};
	const int64_t deadline = step.wall + 100000;  // a job due 100 ms after the step began
	const int64_t ended = step.monotonic + 30000;  // the step took 30 ms
	// Whatever the system clock says by now, the estimate comes from the
	// monotonic clock: 70 ms left.
	EXPECT_EQ(DelayUntilDeadline(deadline, step.WallAt(ended), cadence), 70000);
	// A deadline far ahead waits one cadence at most, and one passed during
	// the step is due at once.
	EXPECT_EQ(DelayUntilDeadline(step.wall + kHour, step.WallAt(ended), cadence), cadence);
	EXPECT_EQ(DelayUntilDeadline(step.wall + 10000, step.WallAt(ended), cadence), 0);
}

// A step whose wall reading was set back by an hour (a jump before the step):
// its deadlines are chosen against that reading too, so a deadline an hour and
// a second ahead of it waits one cadence, not an hour; set forward by an hour,
// a deadline chosen after that reading is still ahead of it, never due at once.
TEST(DelayUntilDeadline, AJumpBeforeTheStepCostsOneCadenceAtMost)
{
	const int64_t cadence = 250000;
	const int64_t real = 800000000 * kSecond;
	const ClockPair set_back{real - kHour, 3 * kSecond};
	EXPECT_EQ(DelayUntilDeadline(real + kSecond, set_back.WallAt(3 * kSecond), cadence), cadence);
	const ClockPair set_forward{real + kHour, 3 * kSecond};
	const int64_t next_after_reading = set_forward.wall + kSecond;  // the earliest deadline after the reading
	EXPECT_EQ(DelayUntilDeadline(next_after_reading, set_forward.WallAt(3 * kSecond), cadence), cadence);
	EXPECT_EQ(DelayUntilDeadline(next_after_reading, set_forward.WallAt(3 * kSecond + 900000), cadence), 100000);
}

}  // namespace
}  // namespace awa::core
