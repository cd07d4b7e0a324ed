// core_calls.hpp: the src/core functions that src/pg calls directly, without
// a bridge, each checked at compile time to be noexcept.
//
// A C++ exception thrown in a frame that PostgreSQL called would unwind
// through PostgreSQL (docs/cpp-boundary.md, rule 1). Code that can throw (it
// allocates: vectors, sorting) is reached only through bridges such as
// PlanClaimBridge (claim_bridge.hpp), which catch everything. Everything else
// src/pg calls in src/core allocates nothing and is declared noexcept; the
// static_asserts below list every such function, so that making one of them
// throwing (dropping its noexcept) stops the build. src/pg includes the core
// headers of these functions through this header, and test/unit/
// boundary_test.cpp fails when a src/pg file calls a core:: function that is
// not listed here.
//
// The core types that live in src/pg frames, across calls that may raise a
// PostgreSQL ERROR (a longjmp that runs no destructor), are checked trivially
// destructible here too.
#pragma once

#include "core/cron_schedule.hpp"
#include "core/lane_positions.hpp"
#include "core/lifecycle.hpp"
#include "core/maintenance_outcome.hpp"
#include "core/maintenance_schedule.hpp"
#include "core/receipt.hpp"
#include "core/ring.hpp"
#include "core/token_bucket.hpp"
#include "core/validate.hpp"
#include "pg/claim_bridge.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

namespace awa::pg::core_calls {

using namespace awa::core;
using std::declval;

#define AWA_CHECK_NOEXCEPT(call) static_assert(noexcept(call), #call " is called from src/pg: it must be noexcept")

// core/lifecycle.hpp
AWA_CHECK_NOEXCEPT(JobStateName(declval<JobState>()));
AWA_CHECK_NOEXCEPT(ParseJobState(declval<const char *>(), declval<size_t>(), declval<JobState *>()));
AWA_CHECK_NOEXCEPT(JobEventName(declval<JobEvent>()));
AWA_CHECK_NOEXCEPT(EventOfMove(declval<int>(), declval<int>()));
AWA_CHECK_NOEXCEPT(MaskOf(declval<JobState>()));
AWA_CHECK_NOEXCEPT(MaskHolds(declval<StateMask>(), declval<JobState>()));
AWA_CHECK_NOEXCEPT(BackoffMicros(declval<int64_t>(), declval<double>()));
AWA_CHECK_NOEXCEPT(EffectivePriority(declval<int>(), declval<int64_t>(), declval<int64_t>()));

// core/validate.hpp
AWA_CHECK_NOEXCEPT(CheckKind(declval<const void *>(), declval<size_t>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(CheckQueue(declval<const void *>(), declval<size_t>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(CheckConcurrencyKey(declval<const void *>(), declval<size_t>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(CheckKeyWeight(declval<bool>(), declval<int64_t>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(CheckPriority(declval<int64_t>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(CheckMaxAttempts(declval<int64_t>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(CheckMaxJobs(declval<int64_t>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(CheckDeadline(declval<int64_t>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(CheckClaimWait(declval<int64_t>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(SecondsToMicros(declval<double>(), declval<int64_t *>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(WholeSecondsToMicros(declval<int64_t>(), declval<int64_t *>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(CheckNotNull(declval<bool>(), declval<const char *>(), declval<bool>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(CheckSameLength(declval<const char *>(), declval<size_t>(), declval<const char *>(),
                                   declval<size_t>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(CheckJobBytes(declval<int64_t>(), declval<int64_t>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(CheckCallBytes(declval<int64_t>(), declval<size_t>(), declval<int64_t>(), declval<Violation *>()));

// core/lane_positions.hpp
AWA_CHECK_NOEXCEPT(ValueFromFirst(declval<int64_t>(), declval<int32_t>()));
AWA_CHECK_NOEXCEPT(ExpandableFromFirst(declval<int64_t>(), declval<int32_t>()));
AWA_CHECK_NOEXCEPT(FollowFirst(declval<int32_t>(), declval<int64_t (*)(int32_t)>()));

// core/receipt.hpp
AWA_CHECK_NOEXCEPT(EncodeReceipt(declval<const Receipt &>()));
AWA_CHECK_NOEXCEPT(DecodeReceipt(declval<int64_t>(), declval<int32_t>()));
AWA_CHECK_NOEXCEPT(ClosureBatchId(declval<int64_t>(), declval<int32_t>()));
AWA_CHECK_NOEXCEPT(DelayFarNegative(declval<int32_t>(), declval<int32_t>(), declval<int64_t>()));
AWA_CHECK_NOEXCEPT(CheckDelay(declval<int32_t>(), declval<int32_t>(), declval<int64_t>(), declval<Violation *>()));
AWA_CHECK_NOEXCEPT(FirstClosureBatchId(declval<int64_t>()));
AWA_CHECK_NOEXCEPT(LastClosureBatchId(declval<int64_t>()));
AWA_CHECK_NOEXCEPT(ClosureFirstIndex(declval<int64_t>()));
AWA_CHECK_NOEXCEPT(ClaimBatchOfClosure(declval<int64_t>()));

// core/ring.hpp
AWA_CHECK_NOEXCEPT(SlotOf(declval<int64_t>(), declval<int32_t>()));
AWA_CHECK_NOEXCEPT(OldestLiveGeneration(declval<int64_t>(), declval<int32_t>()));
AWA_CHECK_NOEXCEPT(NextPosition(declval<RingPosition>(), declval<int32_t>()));
AWA_CHECK_NOEXCEPT(IsLiveGeneration(declval<int64_t>(), declval<int64_t>(), declval<int32_t>()));
AWA_CHECK_NOEXCEPT(PruneTargetGeneration(declval<int64_t>(), declval<int32_t>()));
AWA_CHECK_NOEXCEPT(FamiliesOf(declval<const char *>()));

// core/token_bucket.hpp (the per-queue rate limit, counters.cpp)
AWA_CHECK_NOEXCEPT(StartBucket(declval<TokenBucket *>(), declval<int64_t>(), declval<bool>(), declval<int32_t>()));
AWA_CHECK_NOEXCEPT(RefillBucket(declval<TokenBucket *>(), declval<const RateSpec &>(), declval<int64_t>()));
AWA_CHECK_NOEXCEPT(TakeTokens(declval<TokenBucket *>(), declval<const RateSpec &>(), declval<int64_t>(),
                              declval<int32_t>()));
AWA_CHECK_NOEXCEPT(GiveBackTokens(declval<TokenBucket *>(), declval<int64_t>(), declval<int64_t>(), declval<int32_t>()));
AWA_CHECK_NOEXCEPT(MicrosUntilTokens(declval<const TokenBucket &>(), declval<const RateSpec &>(), declval<int64_t>()));
AWA_CHECK_NOEXCEPT(BucketFull(declval<const TokenBucket &>(), declval<int32_t>()));

// core/maintenance_schedule.hpp (the maintenance worker's loop)
AWA_CHECK_NOEXCEPT(TaskName(declval<MaintenanceTask>()));
AWA_CHECK_NOEXCEPT(ParseTaskName(declval<const char *>(), declval<MaintenanceTask *>()));
AWA_CHECK_NOEXCEPT(PruneBackoff());
AWA_CHECK_NOEXCEPT(declval<PruneBackoff &>().TakeTick());
AWA_CHECK_NOEXCEPT(declval<PruneBackoff &>().Record(declval<bool>(), declval<int>()));
AWA_CHECK_NOEXCEPT(declval<const PruneBackoff &>().level());
AWA_CHECK_NOEXCEPT(declval<const PruneBackoff &>().skip_remaining());
AWA_CHECK_NOEXCEPT(TaskClock());
AWA_CHECK_NOEXCEPT(declval<const TaskClock &>().Due(declval<MaintenanceTask>(), declval<int64_t>()));
AWA_CHECK_NOEXCEPT(declval<TaskClock &>().Ran(declval<MaintenanceTask>(), declval<int64_t>(), declval<int64_t>()));
AWA_CHECK_NOEXCEPT(declval<const TaskClock &>().UntilNextDue(declval<int64_t>(), declval<int64_t>()));
AWA_CHECK_NOEXCEPT(declval<const ClockPair &>().WallAt(declval<int64_t>()));
AWA_CHECK_NOEXCEPT(DelayUntilDeadline(declval<int64_t>(), declval<int64_t>(), declval<int64_t>()));

// core/maintenance_outcome.hpp (what a step reports)
AWA_CHECK_NOEXCEPT(OutcomeName(declval<StepOutcome>()));
AWA_CHECK_NOEXCEPT(ParseOutcome(declval<const char *>(), declval<StepOutcome *>()));
AWA_CHECK_NOEXCEPT(PruneReclaimableLater(declval<StepOutcome>()));

// core/cron_schedule.hpp (periodic jobs)
AWA_CHECK_NOEXCEPT(DayOfWeek(declval<int>(), declval<int>(), declval<int>()));
AWA_CHECK_NOEXCEPT(DaysInMonth(declval<int>(), declval<int>()));
AWA_CHECK_NOEXCEPT(CronSchedule());
AWA_CHECK_NOEXCEPT(CronSchedule::Parse(declval<const char *>(), declval<size_t>(), declval<CronSchedule *>(),
                                       declval<char *>(), declval<size_t>()));
AWA_CHECK_NOEXCEPT(declval<const CronSchedule &>().Matches(declval<const CivilTime &>()));
AWA_CHECK_NOEXCEPT(declval<const CronSchedule &>().NextAfter(declval<const CivilTime &>(), declval<CivilTime *>()));

// The bridges themselves (they catch what the core throws).
AWA_CHECK_NOEXCEPT(PlanClaimBridge(declval<int64_t>(), declval<const BridgeCommitted *>(), declval<int>(),
                                   declval<const BridgeRange *>(), declval<int>(), declval<const BridgeRange *>(),
                                   declval<int>(), declval<int64_t>(), declval<BridgePlan *>(),
                                   declval<BridgeRange *>(), declval<char *>(), declval<size_t>()));

#undef AWA_CHECK_NOEXCEPT

// Core values that src/pg frames hold across PostgreSQL calls.
#define AWA_CHECK_TRIVIAL(type) \
	static_assert(std::is_trivially_destructible_v<type>, #type " lives across PostgreSQL errors")
AWA_CHECK_TRIVIAL(Violation);
AWA_CHECK_TRIVIAL(Receipt);
AWA_CHECK_TRIVIAL(std::optional<Receipt>);
AWA_CHECK_TRIVIAL(RingPosition);
AWA_CHECK_TRIVIAL(RateSpec);
AWA_CHECK_TRIVIAL(TokenBucket);
AWA_CHECK_TRIVIAL(TokenTake);
static_assert(std::is_trivially_copyable_v<TokenBucket>, "TokenBucket lives in shared memory");
AWA_CHECK_TRIVIAL(PruneBackoff);
AWA_CHECK_TRIVIAL(TaskClock);
AWA_CHECK_TRIVIAL(ClockPair);
AWA_CHECK_TRIVIAL(CivilTime);
AWA_CHECK_TRIVIAL(CronSchedule);
AWA_CHECK_TRIVIAL(BridgeRange);
AWA_CHECK_TRIVIAL(BridgeCommitted);
AWA_CHECK_TRIVIAL(BridgePlan);
#undef AWA_CHECK_TRIVIAL

}  // namespace awa::pg::core_calls
