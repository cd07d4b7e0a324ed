// fn_periodic.cpp: the schedule arithmetic of periodic jobs in SQL
// (periodic_schedule.hpp). awa.schedule_periodic and the worker's periodic
// step (sql/install/60_periodic.sql) call these, so C++ holds the only copy of the rules.
#include "pg/arguments.hpp"
#include "pg/guard.hpp"
#include "pg/periodic_schedule.hpp"

using namespace awa::pg;

// awa.periodic_next(schedule, timezone, after) -> the first tick of the
// schedule strictly after `after`. A bad schedule or time zone: 22023.
AWA_FUNCTION(awa_periodic_next)
{
	RequireArgument(fcinfo, 0, "schedule", false);
	RequireArgument(fcinfo, 1, "timezone", true);
	RequireArgument(fcinfo, 2, "after", true);
	PeriodicSchedule schedule;
	ParsePeriodicSchedule(PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1), &schedule);
	PG_RETURN_TIMESTAMPTZ(NextTick(schedule, PG_GETARG_TIMESTAMPTZ(2)));
}

// awa._periodic_latest(schedule, timezone, from_tick, until) -> the last tick
// in [from_tick, until] (from_tick is a tick).
AWA_FUNCTION(awa_internal_periodic_latest)
{
	PeriodicSchedule schedule;
	ParsePeriodicSchedule(PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1), &schedule);
	PG_RETURN_TIMESTAMPTZ(LatestTick(schedule, PG_GETARG_TIMESTAMPTZ(2), PG_GETARG_TIMESTAMPTZ(3)));
}
