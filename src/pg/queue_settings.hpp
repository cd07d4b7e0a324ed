// queue_settings.hpp: per-queue settings (awa.queue_meta) as claims and
// promotion see them: paused, priority aging, default deadline, DLQ,
// concurrency and rate limits, fairness between keys.
//
// Served from a per-backend cache. awa.configure_queue, pause_queue and
// resume_queue send a relcache invalidation for awa.queue_meta with their
// commit (awa._queue_meta_changed), which empties every backend's cache at its
// next transaction start, so a committed pause holds for every claim that
// starts after it. The settings are read from the latest committed state, not
// the transaction's snapshot: they outlive the transaction in the cache. A
// queue without a row has the defaults.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

struct QueueSettings {
	bool paused;
	bool dlq_enabled;
	int64 aging_micros;      // 0: strict priorities
	bool has_deadline;       // default_deadline set
	Interval deadline;       // ... its value
	int32 max_running;       // concurrency limit (running_limits.hpp); 0: none
	int64 rate_count;        // rate limit: attempts per rate_period (0: none)
	int64 rate_period_micros;
	int32 rate_burst;        // ... at most this many at once
	TimestampTz rate_set_at;  // when the rate limit (or its burst) was last set; 0: never
	bool fair_keys;          // fairness 'key' (key_lanes.hpp)
	// The same limits for each concurrency key (key_limits.hpp).
	int32 key_max_running;   // 0: none
	int64 key_rate_count;    // 0: none
	int64 key_rate_period_micros;
	int32 key_rate_burst;
	TimestampTz key_rate_set_at;
};

constexpr int64 kDefaultAgingMicros = 60 * USECS_PER_SEC;

// From _PG_init: registers the cache's invalidation callback.
void InstallQueueSettingsCache();

// The settings of `queue`. Requires SPI. May ereport.
QueueSettings SettingsOf(text *queue);
// Whether `queue` is paused, for an enqueue deciding to park its jobs
// (job_insert.hpp). A hint that is cheap while no queue of the database is
// paused: whether any is comes from a per-backend flag that the same
// invalidation clears, kept also in a transaction that has an xid (unlike
// the settings: a transaction that pauses or resumes a queue clears it at its
// next command, and its abort clears it again). A wrong answer costs no job:
// a paused queue's job in its lane waits for the resume as before, a parked
// job of a queue that is not paused is promoted (awa.promote_due). Requires
// SPI. May ereport.
bool QueueMayBePaused(text *queue);
// Empties this backend's settings cache (a waiting claim that wakes may be
// ahead of the invalidation of a resumed queue; see ForgetCachedLanes).
void ForgetCachedSettings();

// Interval as microseconds (a month counts 30 days), clamped to int64's range.
int64 IntervalMicros(const Interval *interval);

}  // namespace awa::pg
