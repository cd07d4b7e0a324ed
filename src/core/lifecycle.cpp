// lifecycle.cpp: see lifecycle.hpp.
#include "core/lifecycle.hpp"

#include <cmath>
#include <cstring>

#include "core/core_only.hpp"

namespace awa::core {

namespace {
constexpr const char *kStateNames[kJobStateCount] = {"available", "scheduled", "retryable", "running",
                                                     "completed", "failed",    "cancelled", "dlq"};
}  // namespace

const char *
JobStateName(JobState state) noexcept
{
	int index = static_cast<int>(state);
	return index >= 0 && index < kJobStateCount ? kStateNames[index] : "unknown";
}

bool
ParseJobState(const char *name, size_t length, JobState *out) noexcept
{
	for (int i = 0; i < kJobStateCount; i++) {
		if (std::strlen(kStateNames[i]) == length && std::memcmp(kStateNames[i], name, length) == 0) {
			*out = static_cast<JobState>(i);
			return true;
		}
	}
	return false;
}

namespace {
constexpr const char *kEventNames[kJobEventCount] = {"enqueued", "claimed", "completed", "retried",
                                                     "snoozed",  "failed",  "rescued"};
}  // namespace

const char *
JobEventName(JobEvent event) noexcept
{
	int index = static_cast<int>(event);
	return index >= 0 && index < kJobEventCount ? kEventNames[index] : "none";
}

JobEvent
EventOfMove(int from, int to) noexcept
{
	constexpr int kRunning = static_cast<int>(JobState::kRunning);
	if (from == kNoJobState && (to == static_cast<int>(JobState::kAvailable) || to == static_cast<int>(JobState::kScheduled)))
		return JobEvent::kEnqueued;
	if (to == kRunning && from != kRunning)
		return JobEvent::kClaimed;
	if (from != kRunning)
		return JobEvent::kNone;
	switch (static_cast<JobState>(to)) {
	case JobState::kCompleted:
		return JobEvent::kCompleted;
	case JobState::kRetryable:
	case JobState::kAvailable:
		return JobEvent::kRetried;
	case JobState::kScheduled:
		return JobEvent::kSnoozed;
	case JobState::kFailed:
	case JobState::kDlq:
		return JobEvent::kFailed;
	default:
		return JobEvent::kNone;
	}
}

int64_t
BackoffMicros(int64_t attempt, double jitter) noexcept
{
	if (attempt < 0)
		attempt = 0;
	if (jitter < 0)
		jitter = 0;
	if (jitter >= 1)
		jitter = 0.999999;
	// 2^17 s already exceeds 24 h: cap the exponent before it can overflow.
	if (attempt >= 17)
		return kMaxBackoffMicros;
	double base = std::ldexp(1.0, static_cast<int>(attempt));
	double seconds = base + jitter * 0.25 * base;
	int64_t micros = static_cast<int64_t>(seconds * 1e6);
	return micros > kMaxBackoffMicros ? kMaxBackoffMicros : micros;
}

int
EffectivePriority(int priority, int64_t waited_micros, int64_t aging_micros) noexcept
{
	if (aging_micros <= 0 || waited_micros <= 0)
		return priority;
	int64_t levels = waited_micros / aging_micros;
	if (levels >= priority - 1)
		return 1;
	return priority - static_cast<int>(levels);
}

}  // namespace awa::core
