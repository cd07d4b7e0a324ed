// periodic_schedule.hpp: the schedules of periodic jobs (awa.schedule_periodic,
// docs/periodic.md): when a schedule's ticks fall, in UTC instants.
//
// A schedule is a cron expression (src/core/cron_schedule.hpp: five fields or
// a macro such as @hourly), read as wall-clock minutes of its time zone, or
// `every <interval>` (a PostgreSQL interval of at least one second): each tick
// is the previous tick plus the interval, computed in the time zone's wall
// clock (so `every 1 day` keeps the local time across a DST change).
// Wall-clock times are turned into instants by PostgreSQL's rules (as
// `timestamp AT TIME ZONE`): a time skipped by a spring-forward jump is read
// with the offset before the jump (02:30 becomes 03:30 summer time), a time
// that occurs twice at a fall-back is read as its second occurrence
// (standard time).
#pragma once

#include "core/cron_schedule.hpp"
#include "pg/postgres_headers.hpp"

extern "C" {
#include "pgtime.h"
}

#include <type_traits>

namespace awa::pg {

struct PeriodicSchedule {
	bool every;               // `every <interval>`; else cron
	core::CronSchedule cron;  // when !every
	Interval interval;        // when every
	pg_tz *zone;              // from pg_tzset: lives as long as the backend
};
// It may live in frames that an ERROR longjmps through.
static_assert(std::is_trivially_destructible_v<PeriodicSchedule>, "PeriodicSchedule must be trivially destructible");

// Parses `schedule` in time zone `zone_name`. A bad schedule or time zone
// raises 22023 (invalid_parameter_value) with a hint.
void ParsePeriodicSchedule(text *schedule, text *zone_name, PeriodicSchedule *out);

// The first tick strictly after `after`.
TimestampTz NextTick(const PeriodicSchedule &schedule, TimestampTz after);

// The last tick in [from_tick, until], from_tick being a tick (a schedule
// that missed ticks skips to it instead of backfilling them). Its cost is
// bounded whatever the gap: a cron schedule looks back from `until`, an
// interval without days or months divides.
TimestampTz LatestTick(const PeriodicSchedule &schedule, TimestampTz from_tick, TimestampTz until);

}  // namespace awa::pg
