// periodic_schedule.cpp: see periodic_schedule.hpp.
#include "pg/periodic_schedule.hpp"

#include "pg/core_calls.hpp"
#include "pg/interval_literal.hpp"

extern "C" {
#include "common/int.h"
#include "datatype/timestamp.h"
#include "utils/datetime.h"
}

namespace awa::pg {

namespace {

constexpr const char *kScheduleHint =
    "A schedule is a cron expression of 5 fields (minute hour day-of-month month day-of-week), one of @hourly, "
    "@daily, @weekly, @monthly, @yearly, or 'every <interval>' of at least 1 second, e.g. '*/15 * * * *' or "
    "'every 2 hours'.";

// A tick beyond the range of timestamptz (a huge interval, a time near the
// end of the range).
[[noreturn]] void
OutOfRange()
{
	ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("the schedule's next tick is out of range"),
	                errhint("Ticks must fall between 4713 BC and 294276 AD; use a shorter interval or an earlier time.")));
}

[[noreturn]] void
BadSchedule(const char *schedule, const char *why)
{
	ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("invalid schedule \"%s\": %s", schedule, why),
	                errhint("%s", kScheduleHint)));
}

// "every" followed by white space, in any case; the interval text after it.
const char *
EveryInterval(const char *schedule)
{
	while (*schedule == ' ' || *schedule == '\t')
		schedule++;
	if (pg_strncasecmp(schedule, "every", 5) != 0 ||
	    (schedule[5] != ' ' && schedule[5] != '\t' && schedule[5] != '\0'))
		return NULL;
	schedule += 5;
	while (*schedule == ' ' || *schedule == '\t')
		schedule++;
	return schedule;
}

// The interval of `every <text>`; PostgreSQL's interval input, its errors
// reported as a bad schedule.
void
ParseInterval(const char *schedule, const char *text, Interval *out)
{
	if (!ParseIntervalLiteral(text, out))
		BadSchedule(schedule, "the text after \"every\" is not an interval");
	if (out->month < 0 || out->day < 0 || out->time < 0 ||
	    (out->month == 0 && out->day == 0 && out->time < USECS_PER_SEC))
		BadSchedule(schedule, "the interval must be positive and at least 1 second");
}

// A UTC instant's wall-clock fields in `zone`.
void
ToLocal(TimestampTz instant, pg_tz *zone, struct pg_tm *tm, fsec_t *fsec)
{
	int offset;
	if (timestamp2tm(instant, &offset, tm, fsec, NULL, zone) != 0)
		OutOfRange();
}

// The instant of wall-clock fields in `zone`, by PostgreSQL's rules for
// skipped and repeated times (DetermineTimeZoneOffset, as AT TIME ZONE).
TimestampTz
FromLocal(struct pg_tm *tm, fsec_t fsec, pg_tz *zone)
{
	int offset = DetermineTimeZoneOffset(tm, zone);
	TimestampTz result;
	if (tm2timestamp(tm, fsec, &offset, &result) != 0)
		OutOfRange();
	return result;
}

core::CivilTime
CivilOf(const struct pg_tm &tm)
{
	return core::CivilTime{tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min};
}

TimestampTz
NextCronTick(const PeriodicSchedule &schedule, TimestampTz after)
{
	struct pg_tm tm;
	fsec_t fsec;
	ToLocal(after, schedule.zone, &tm, &fsec);
	core::CivilTime local = CivilOf(tm);
	// A wall-clock minute can map to an instant at or before `after` only
	// around a DST change; the next minute then is tried.
	for (int i = 0; i < 1000; i++) {
		core::CivilTime next;
		if (!schedule.cron.NextAfter(local, &next))
			break;
		struct pg_tm candidate;
		memset(&candidate, 0, sizeof(candidate));
		candidate.tm_year = next.year;
		candidate.tm_mon = next.month;
		candidate.tm_mday = next.day;
		candidate.tm_hour = next.hour;
		candidate.tm_min = next.minute;
		TimestampTz instant = FromLocal(&candidate, 0, schedule.zone);
		if (instant > after)
			return instant;
		local = next;
	}
	OutOfRange();
}

TimestampTz
NextIntervalTick(const PeriodicSchedule &schedule, TimestampTz after)
{
	const Interval &step = schedule.interval;
	if (step.month == 0 && step.day == 0) {
		TimestampTz next;
		if (pg_add_s64_overflow(after, step.time, &next) || !IS_VALID_TIMESTAMP(next))
			OutOfRange();
		return next;
	}
	// Days and months move the wall clock, as timestamp + interval does.
	struct pg_tm tm;
	fsec_t fsec;
	ToLocal(after, schedule.zone, &tm, &fsec);
	Timestamp local;
	if (tm2timestamp(&tm, fsec, NULL, &local) != 0)
		OutOfRange();
	// timestamp_pl_interval raises 22008 past the range: check first, with
	// room for the interval's largest possible length (months of 31 days).
	// (In floating point: the fields of a huge interval overflow int64 together.)
	double span = static_cast<double>(schedule.interval.time) +
	              (static_cast<double>(schedule.interval.day) + static_cast<double>(schedule.interval.month) * 31.0 + 2.0) *
	                  static_cast<double>(USECS_PER_DAY);
	if (static_cast<double>(after) + span >= static_cast<double>(END_TIMESTAMP))
		OutOfRange();
	Timestamp moved = DatumGetTimestamp(
	    DirectFunctionCall2(timestamp_pl_interval, TimestampGetDatum(local), IntervalPGetDatum(&schedule.interval)));
	if (timestamp2tm(moved, NULL, &tm, &fsec, NULL, NULL) != 0)
		OutOfRange();
	TimestampTz instant = FromLocal(&tm, fsec, schedule.zone);
	// A day that ends in a skipped hour could land at or before `after`.
	return instant > after ? instant : after + USECS_PER_SEC;
}

}  // namespace

void
ParsePeriodicSchedule(text *schedule_text, text *zone_name, PeriodicSchedule *out)
{
	*out = PeriodicSchedule{};
	char *schedule = text_to_cstring(schedule_text);
	char *zone = text_to_cstring(zone_name);
	out->zone = pg_tzset(zone);
	if (out->zone == NULL || zone[0] == '\0')
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown time zone \"%s\"", zone),
		                errhint("Use a name from pg_timezone_names, such as 'UTC' or 'Europe/Berlin'.")));
	if (const char *interval = EveryInterval(schedule)) {
		out->every = true;
		ParseInterval(schedule, interval, &out->interval);
		return;
	}
	char error[256];
	if (!core::CronSchedule::Parse(schedule, strlen(schedule), &out->cron, error, sizeof(error)))
		BadSchedule(schedule, error);
}

TimestampTz
NextTick(const PeriodicSchedule &schedule, TimestampTz after)
{
	if (TIMESTAMP_NOT_FINITE(after))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("the time must be finite"),
		                errhint("Pass a time such as now(), not infinity.")));
	return schedule.every ? NextIntervalTick(schedule, after) : NextCronTick(schedule, after);
}

TimestampTz
LatestTick(const PeriodicSchedule &schedule, TimestampTz from_tick, TimestampTz until)
{
	if (until <= from_tick)
		return from_tick;
	TimestampTz best = from_tick;
	if (schedule.every && schedule.interval.month == 0 && schedule.interval.day == 0) {
		int64 step = schedule.interval.time;
		return from_tick + ((until - from_tick) / step) * step;
	}
	if (!schedule.every) {
		// The smallest window before `until` that holds a tick: its ticks are
		// few, since the window before it held none.
		static const int64 kWindows[] = {USECS_PER_HOUR, USECS_PER_DAY, 32 * USECS_PER_DAY, 367 * USECS_PER_DAY,
		                                 int64{401} * 366 * USECS_PER_DAY};
		for (int64 window : kWindows) {
			TimestampTz start = until - window;
			if (start <= from_tick)
				break;
			TimestampTz tick = NextTick(schedule, start);
			if (tick <= until) {
				best = tick;
				break;
			}
		}
	}
	for (;;) {
		CHECK_FOR_INTERRUPTS();
		TimestampTz next = NextTick(schedule, best);
		if (next > until)
			return best;
		best = next;
	}
}

}  // namespace awa::pg
