// cron_schedule.hpp: cron expressions ("*/15 9-17 * * MON-FRI", "@daily"):
// parsing, matching a wall-clock minute, and the next minute a schedule fires.
//
// Vixie cron / POSIX semantics, as pg_cron and most job queues use them:
//   - five fields separated by spaces or tabs: minute (0-59), hour (0-23),
//     day of month (1-31), month (1-12 or JAN-DEC), day of week (0-7, 0 and 7
//     both Sunday, or SUN-SAT); names are case-insensitive;
//   - a field is a comma-separated list of items: `*`, `N`, `N-M` (N <= M),
//     each optionally followed by `/S` (step S >= 1; `N/S` runs from N to the
//     field's maximum). In day of week a range ending at 7 includes Sunday,
//     and so does a range ending at SUN (FRI-SUN is 5-7); `*` and `N/S` run
//     up to 7 there too, as in cronie (1/2 is MON, WED, FRI and SUN);
//   - a field "is star" when it begins with `*` (so `*/2` is star, as in
//     Vixie cron). When day of month and day of week are both non-star, a day
//     matches when EITHER matches; otherwise both must match;
//   - macros: @yearly = @annually = "0 0 1 1 *", @monthly = "0 0 1 * *",
//     @weekly = "0 0 * * 0", @daily = @midnight = "0 0 * * *",
//     @hourly = "0 * * * *"; @reboot is refused.
// Whitespace around the schedule (a trailing newline too) is ignored. Parse
// refuses a schedule that can never fire ("0 0 30 2 *").
//
// Times are civil (local wall-clock) minutes in the proleptic Gregorian
// calendar; the caller converts from and to its time zone. Everything here is
// noexcept, allocates nothing and throws nothing, so src/pg calls it directly.
//
// Pure C++ (no PostgreSQL header), unit-tested in test/unit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace awa::core {

// A local wall-clock minute in the proleptic Gregorian calendar (no time zone: the caller converts).
struct CivilTime {
	int year;    // e.g. 2026
	int month;   // 1..12
	int day;     // 1..31
	int hour;    // 0..23
	int minute;  // 0..59
};

// 0 = Sunday .. 6 = Saturday.
int DayOfWeek(int year, int month, int day) noexcept;
// 28..31 (Gregorian leap years); 0 for a month outside 1..12.
int DaysInMonth(int year, int month) noexcept;

class CronSchedule {
public:
	// Parses `text` (`length` bytes, not necessarily NUL-terminated). On error returns false, leaves *out unchanged,
	// and writes a one-line English message (NUL-terminated, truncated to error_size) into `error`, e.g.
	// `minute "61" is out of range 0-59`, `expected 5 fields (minute hour day-of-month month day-of-week), found 4`,
	// `unknown macro "@often"`, `"0 0 30 2 *" never fires: no month it names has day 30`. The message quotes at most
	// 100 bytes of the text, control characters as "?", and is never cut inside a UTF-8 character. `error` may be null
	// when error_size is 0.
	static bool Parse(const char *text, size_t length, CronSchedule *out, char *error, size_t error_size) noexcept;
	// True when the minute `t` matches (false for a `t` that is no valid civil minute).
	bool Matches(const CivilTime &t) const noexcept;
	// The first matching minute strictly after `after` (after's minute counts as passed). Searches a whole 400-year
	// Gregorian cycle (the calendar repeats after it, weekdays included), so false means the schedule never fires,
	// which cannot happen for a schedule Parse accepted; also false when `after` is no valid civil minute. At most
	// 4801 steps, one per month.
	bool NextAfter(const CivilTime &after, CivilTime *next) const noexcept;

private:
	uint64_t minutes_ = 0;   // bit m: minute m
	uint32_t hours_ = 0;     // bit h
	uint32_t days_ = 0;      // bit d, 1..31
	uint16_t months_ = 0;    // bit m, 1..12
	uint8_t weekdays_ = 0;   // bit w, 0..6 (Sunday 0)
	bool day_is_star_ = true;      // day-of-month field begins with "*"
	bool weekday_is_star_ = true;  // day-of-week field begins with "*"

	// The matching days (bits 1..31) of a month of `days_in_month` days whose 1st falls on `first_weekday`, from day
	// `from_day` on. Ignores months_.
	uint64_t MatchingDays(int days_in_month, int first_weekday, int from_day) const noexcept;
	// The first matching hour:minute of a day at or after from_hour:from_minute; false when none is left that day.
	bool FirstTimeFrom(int from_hour, int from_minute, int *hour, int *minute) const noexcept;
};

}  // namespace awa::core
