// maintenance_schedule_test.cpp: task names, prune back-off and task due times
// (src/core/maintenance_schedule.hpp).
#include "core/maintenance_schedule.hpp"

#include <gtest/gtest.h>

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
	clock.MakeAllDue();
	EXPECT_TRUE(clock.Due(MaintenanceTask::kRescue, 1));
}

TEST(TaskClock, NonPositiveIntervalMeansEveryTick)
{
	TaskClock clock;
	clock.Ran(MaintenanceTask::kRescue, 500, 0);
	EXPECT_TRUE(clock.Due(MaintenanceTask::kRescue, 500));
	clock.Ran(MaintenanceTask::kRescue, 500, -7);
	EXPECT_TRUE(clock.Due(MaintenanceTask::kRescue, 500));
}

}  // namespace
}  // namespace awa::core
