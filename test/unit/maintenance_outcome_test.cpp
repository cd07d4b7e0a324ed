// maintenance_outcome_test.cpp: the one vocabulary of step outcomes
// (src/core/maintenance_outcome.hpp).
#include "core/maintenance_outcome.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

using awa::core::kStepOutcomeCount;
using awa::core::OutcomeName;
using awa::core::ParseOutcome;
using awa::core::PruneReclaimableLater;
using awa::core::StepOutcome;

TEST(StepOutcome, EveryNameParsesBackAndIsUnique)
{
	std::set<std::string> seen;
	for (int i = 1; i < kStepOutcomeCount; i++) {
		StepOutcome outcome = static_cast<StepOutcome>(i);
		std::string name = OutcomeName(outcome);
		ASSERT_FALSE(name.empty()) << i;
		EXPECT_TRUE(seen.insert(name).second) << name;
		StepOutcome parsed = StepOutcome::kNone;
		ASSERT_TRUE(ParseOutcome(name.c_str(), &parsed)) << name;
		EXPECT_EQ(parsed, outcome) << name;
	}
	EXPECT_EQ(seen.size(), static_cast<size_t>(kStepOutcomeCount - 1));
}

TEST(StepOutcome, TheWordsTheStepsWrite)
{
	EXPECT_STREQ(OutcomeName(StepOutcome::kSkippedActive), "skipped_active");
	EXPECT_STREQ(OutcomeName(StepOutcome::kBlocked), "blocked");
	EXPECT_STREQ(OutcomeName(StepOutcome::kEnqueued), "enqueued");
	EXPECT_STREQ(OutcomeName(StepOutcome::kTrusted), "trusted");
	EXPECT_STREQ(OutcomeName(StepOutcome::kUnavailable), "unavailable");
	EXPECT_STREQ(OutcomeName(StepOutcome::kReclaimed), "reclaimed");
	EXPECT_STREQ(OutcomeName(StepOutcome::kError), "error");
	EXPECT_STREQ(OutcomeName(StepOutcome::kNone), "");
	EXPECT_STREQ(OutcomeName(static_cast<StepOutcome>(kStepOutcomeCount)), "");
}

TEST(StepOutcome, UnknownWordsAreRefused)
{
	StepOutcome parsed = StepOutcome::kRotated;
	for (const char *word : {"", "skiped_active", "Blocked", "blocked ", "unknown"}) {
		EXPECT_FALSE(ParseOutcome(word, &parsed)) << word;
		EXPECT_EQ(parsed, StepOutcome::kRotated) << word;
	}
	EXPECT_FALSE(ParseOutcome(nullptr, &parsed));
}

TEST(StepOutcome, OnlySkippedActiveAndBlockedBackAPruneOff)
{
	for (int i = 0; i < kStepOutcomeCount; i++) {
		StepOutcome outcome = static_cast<StepOutcome>(i);
		bool expected = outcome == StepOutcome::kSkippedActive || outcome == StepOutcome::kBlocked;
		EXPECT_EQ(PruneReclaimableLater(outcome), expected) << OutcomeName(outcome);
	}
}
