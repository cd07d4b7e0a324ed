// cron_schedule_test.cpp: cron expressions: parsing and its messages, macros,
// names, steps, the day-of-month / day-of-week rule, next fire times across
// calendar boundaries, checked against a minute-by-minute brute force
// (src/core/cron_schedule.hpp).
#include "core/cron_schedule.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace awa::core {
namespace {

CivilTime
At(int year, int month, int day, int hour, int minute)
{
	return CivilTime{year, month, day, hour, minute};
}

std::string
Show(const CivilTime &t)
{
	char text[64];
	std::snprintf(text, sizeof(text), "%04d-%02d-%02d %02d:%02d", t.year, t.month, t.day, t.hour, t.minute);
	return text;
}

int
Compare(const CivilTime &a, const CivilTime &b)
{
	const int left[] = {a.year, a.month, a.day, a.hour, a.minute};
	const int right[] = {b.year, b.month, b.day, b.hour, b.minute};
	for (int i = 0; i < 5; i++)
		if (left[i] != right[i])
			return left[i] < right[i] ? -1 : 1;
	return 0;
}

CivilTime
PlusMinute(CivilTime t)
{
	if (++t.minute < 60)
		return t;
	t.minute = 0;
	if (++t.hour < 24)
		return t;
	t.hour = 0;
	if (++t.day <= DaysInMonth(t.year, t.month))
		return t;
	t.day = 1;
	if (++t.month <= 12)
		return t;
	t.month = 1;
	t.year++;
	return t;
}

CivilTime
PlusDays(CivilTime t, int days)
{
	for (int i = 0; i < days; i++)
		for (int m = 0; m < 24 * 60; m++)
			t = PlusMinute(t);
	return t;
}

// The day after (year, month, day).
CivilTime
NextDay(const CivilTime &t)
{
	CivilTime next = t;
	if (++next.day <= DaysInMonth(next.year, next.month))
		return next;
	next.day = 1;
	if (++next.month <= 12)
		return next;
	next.month = 1;
	next.year++;
	return next;
}

bool
TryParse(const char *text, CronSchedule *out, std::string *error)
{
	char message[256] = "";
	bool ok = CronSchedule::Parse(text, std::strlen(text), out, message, sizeof(message));
	*error = message;
	return ok;
}

CronSchedule
MustParse(const char *text)
{
	CronSchedule schedule;
	std::string error;
	EXPECT_TRUE(TryParse(text, &schedule, &error)) << "\"" << text << "\": " << error;
	return schedule;
}

// "none" when NextAfter finds nothing.
std::string
Next(const char *text, const CivilTime &after)
{
	CronSchedule schedule = MustParse(text);
	CivilTime next{};
	return schedule.NextAfter(after, &next) ? Show(next) : "none";
}

// The oracle: the first matching minute after `after`, trying each minute up to `until`.
bool
BruteNext(const CronSchedule &schedule, const CivilTime &after, const CivilTime &until, CivilTime *found)
{
	for (CivilTime t = PlusMinute(after); Compare(t, until) <= 0; t = PlusMinute(t))
		if (schedule.Matches(t)) {
			*found = t;
			return true;
		}
	return false;
}

// The `count` fire times after `after`, one NextAfter from the previous.
std::vector<std::string>
Chain(const CronSchedule &schedule, CivilTime after, int count)
{
	std::vector<std::string> times;
	for (int i = 0; i < count; i++) {
		CivilTime next{};
		if (!schedule.NextAfter(after, &next)) {
			times.push_back("none");
			break;
		}
		times.push_back(Show(next));
		after = next;
	}
	return times;
}

// Two schedules that fire at the same minutes (over `count` fires from two starts).
void
ExpectSameSchedule(const char *a, const char *b, int count = 400)
{
	CronSchedule first = MustParse(a);
	CronSchedule second = MustParse(b);
	for (CivilTime start : {At(2026, 1, 1, 0, 0), At(2099, 11, 30, 13, 7)})
		EXPECT_EQ(Chain(first, start, count), Chain(second, start, count)) << "\"" << a << "\" vs \"" << b << "\"";
}

// ---- Calendar ----

TEST(CronCalendar, DayOfWeekOfKnownDates)
{
	EXPECT_EQ(DayOfWeek(2026, 12, 2), 3);  // Wednesday
	EXPECT_EQ(DayOfWeek(2000, 1, 1), 6);   // Saturday
	EXPECT_EQ(DayOfWeek(1970, 1, 1), 4);   // Thursday
	EXPECT_EQ(DayOfWeek(2024, 2, 29), 4);  // Thursday
	EXPECT_EQ(DayOfWeek(1900, 1, 1), 1);   // Monday
	EXPECT_EQ(DayOfWeek(2100, 3, 1), 1);   // Monday
	EXPECT_EQ(DayOfWeek(2026, 3, 1), 0);   // Sunday
	EXPECT_EQ(DayOfWeek(2088, 2, 29), 0);  // Sunday
	EXPECT_EQ(DayOfWeek(1, 1, 1), 1);      // Monday (proleptic)
	EXPECT_EQ(DayOfWeek(1582, 10, 15), 5); // Friday, the first Gregorian day
}

TEST(CronCalendar, DayOfWeekAdvancesByOneEachDay)
{
	CivilTime day = At(1, 1, 1, 0, 0);
	int weekday = 1;
	while (day.year < 2500) {
		ASSERT_EQ(DayOfWeek(day.year, day.month, day.day), weekday) << Show(day);
		day = NextDay(day);
		weekday = (weekday + 1) % 7;
	}
}

TEST(CronCalendar, DayOfWeekRepeatsEvery400YearsAlsoBeforeYearOne)
{
	for (int year = -1200; year < 1200; year += 7)
		for (int month = 1; month <= 12; month++) {
			EXPECT_EQ(DayOfWeek(year, month, 1), DayOfWeek(year + 400, month, 1)) << year << "-" << month;
			EXPECT_EQ(DayOfWeek(year, month, 28), DayOfWeek(year + 800, month, 28)) << year << "-" << month;
			int weekday = DayOfWeek(year, month, 1);
			EXPECT_GE(weekday, 0);
			EXPECT_LE(weekday, 6);
		}
}

TEST(CronCalendar, DaysInMonth)
{
	EXPECT_EQ(DaysInMonth(2026, 1), 31);
	EXPECT_EQ(DaysInMonth(2026, 4), 30);
	EXPECT_EQ(DaysInMonth(2026, 12), 31);
	EXPECT_EQ(DaysInMonth(2026, 2), 28);
	EXPECT_EQ(DaysInMonth(2024, 2), 29);
	EXPECT_EQ(DaysInMonth(2000, 2), 29);
	EXPECT_EQ(DaysInMonth(1900, 2), 28);
	EXPECT_EQ(DaysInMonth(2100, 2), 28);
	EXPECT_EQ(DaysInMonth(2400, 2), 29);
	EXPECT_EQ(DaysInMonth(2026, 0), 0);
	EXPECT_EQ(DaysInMonth(2026, 13), 0);
}

// ---- Parsing ----

TEST(CronParse, AcceptsValidExpressions)
{
	const char *valid[] = {
	    "* * * * *",
	    "0 0 * * *",
	    "*/15 * * * *",
	    "0 9-17 * * MON-FRI",
	    "5,10,50 3,15 * * *",
	    "15-45/10 */6 * * *",
	    "5/20 * * * *",
	    "0-59 0-23 1-31 1-12 0-7",
	    "59 23 31 12 7",
	    "0 0 29 2 *",
	    "0 0 31 * *",
	    "0 0 30 2 1",  // day of week restricted too: OR, fires on Mondays in February
	    "0 0 * jan-mar,Dec sun,Sat",
	    "0 0 * JAN/2 *",
	    "0 0 * * FRI-SUN",
	    "0 0 * * 1/2",
	    "*/1 * * * *",
	    "*/99999999999 * * * *",  // a huge step: the first value only
	    "00 07 01 01 00",
	    "0 0 1,15 * 3",
	    "*,5 * * * *",
	    "  0 0 * * *  ",
	    "\t0\t\t0   *\t* *\n",
	    "@yearly",
	    "@annually",
	    "@monthly",
	    "@weekly",
	    "@daily",
	    "@midnight",
	    "@hourly",
	    "  @DAILY \t",
	    "@Hourly",
	};
	for (const char *text : valid) {
		CronSchedule schedule;
		std::string error;
		EXPECT_TRUE(TryParse(text, &schedule, &error)) << "\"" << text << "\": " << error;
	}
}

struct ErrorCase {
	const char *text;
	const char *message;  // a substring of the message
};

TEST(CronParse, RefusesInvalidExpressionsWithAMessage)
{
	const ErrorCase cases[] = {
	    {"", "a schedule must not be empty"},
	    {" \t \n", "a schedule must not be empty"},
	    {"* * * *", "expected 5 fields (minute hour day-of-month month day-of-week), found 4"},
	    {"* * * * * *", "found 6"},
	    {"*", "found 1"},
	    {"61 * * * *", "minute \"61\" is out of range 0-59"},
	    {"60 * * * *", "minute \"60\" is out of range 0-59"},
	    {"99999999999 * * * *", "minute \"99999999999\" is out of range 0-59"},
	    {"* 24 * * *", "hour \"24\" is out of range 0-23"},
	    {"* * 0 * *", "day-of-month \"0\" is out of range 1-31"},
	    {"* * 32 * *", "day-of-month \"32\" is out of range 1-31"},
	    {"* * * 0 *", "month \"0\" is out of range 1-12"},
	    {"* * * 13 *", "month \"13\" is out of range 1-12"},
	    {"* * * * 8", "day-of-week \"8\" is out of range 0-7"},
	    {"0-60 * * * *", "minute \"60\" is out of range"},
	    {"* 1-24/2 * * *", "hour \"24\" is out of range"},
	    {"5-1 * * * *", "minute range \"5-1\" runs backwards (5 > 1)"},
	    {"* * * DEC-JAN *", "month range \"DEC-JAN\" runs backwards"},
	    {"* * * * FRI-MON", "runs backwards"},
	    {"* * * * 5-0", "runs backwards"},
	    {"1,,2 * * * *", "minute list \"1,,2\" has an empty item"},
	    {",1 * * * *", "empty item"},
	    {"1, * * * *", "empty item"},
	    {"* * 1, * *", "day-of-month list \"1,\" has an empty item"},
	    {"*/0 * * * *", "step 0"},
	    {"1-5/0 * * * *", "step 0"},
	    {"*/ * * * *", "has no step number"},
	    {"*/x * * * *", "has no step number"},
	    {"* * * * */MON", "has no step number"},
	    {"*/-1 * * * *", "has no step number"},
	    {"5x * * * *", "minute \"5x\" is not a number"},
	    {"* x * * *", "hour \"x\" is not a number"},
	    {"* * * FOO *", "month \"FOO\" is not a number or month name (JAN-DEC)"},
	    {"* * * JANUARY *", "not a number or month name"},
	    {"* * * * MONDAY", "day-of-week \"MONDAY\" is not a number or day name (SUN-SAT)"},
	    {"* * * * MO", "not a number or day name"},
	    {"* * JAN * *", "day-of-month \"JAN\" is not a number"},
	    {"* * * * JAN", "not a number or day name"},
	    {"* * * MON *", "not a number or month name"},
	    {"5- * * * *", "minute \"5-\" has no value after \"-\""},
	    {"5-* * * * *", "has no value after"},
	    {"-5 * * * *", "minute \"-5\" must start with a number or \"*\""},
	    {"* * * /2 *", "must start with a number, a name or"},
	    {"*-5 * * * *", "minute \"*-5\" has unexpected \"-\""},
	    {"**/2 * * * *", "has unexpected \"*\""},
	    {"5-10-15 * * * *", "has unexpected \"-\""},
	    {"*/2/3 * * * *", "has unexpected \"/\""},
	    {"5? * * * *", "has unexpected \"?\""},
	    {"? * * * *", "must start with"},
	    {"*5 * * * *", "has unexpected \"5\""},
	    {"1.5 * * * *", "has unexpected \".\""},
	    {"0 0 L * *", "not a number"},
	    {"0 0 * * 5#3", "has unexpected \"#\""},
	    {"@often", "unknown macro \"@often\""},
	    {"@", "unknown macro \"@\""},
	    {"@ daily", "unknown macro \"@\""},
	    {"@dailyx", "unknown macro \"@dailyx\""},
	    {"@reboot", "@reboot is not supported"},
	    {"@REBOOT", "@reboot is not supported"},
	    {"@daily 5", "macro \"@daily\" must stand alone, found \"@daily 5\""},
	    {"@daily * * * *", "must stand alone"},
	    {"0 @daily * * *", "must start with"},
	    {"0 0 30 2 *", "\"0 0 30 2 *\" never fires: no month it names has day 30"},
	    {"0 0 31 4,6,9,11 *", "\"0 0 31 4,6,9,11 *\" never fires: no month it names has day 31"},
	    {"0 0 30,31 FEB *", "never fires: no month it names has day 30 or later"},
	    {"0 0 31 2 */7", "never fires"},  // a star-form day of week does not widen the days
	    {"  0 0 30 2 *  ", "\"0 0 30 2 *\" never fires"},
	};
	for (const ErrorCase &c : cases) {
		CronSchedule schedule;
		std::string error;
		EXPECT_FALSE(TryParse(c.text, &schedule, &error)) << "\"" << c.text << "\"";
		EXPECT_NE(error.find(c.message), std::string::npos)
		    << "\"" << c.text << "\": got \"" << error << "\", wanted \"" << c.message << "\"";
		EXPECT_EQ(error.find('\n'), std::string::npos) << error;
	}
}

TEST(CronParse, MessagesAreExactForTheDocumentedExamples)
{
	CronSchedule schedule;
	std::string error;
	EXPECT_FALSE(TryParse("61 * * * *", &schedule, &error));
	EXPECT_EQ(error, "minute \"61\" is out of range 0-59");
	EXPECT_FALSE(TryParse("* * * *", &schedule, &error));
	EXPECT_EQ(error, "expected 5 fields (minute hour day-of-month month day-of-week), found 4");
	EXPECT_FALSE(TryParse("0 0 30 2 *", &schedule, &error));
	EXPECT_EQ(error, "\"0 0 30 2 *\" never fires: no month it names has day 30");
	EXPECT_FALSE(TryParse("   ", &schedule, &error));
	EXPECT_EQ(error, "a schedule must not be empty");
	EXPECT_FALSE(TryParse("@reboot", &schedule, &error));
	EXPECT_EQ(error, "@reboot is not supported");
	EXPECT_FALSE(TryParse("@often", &schedule, &error));
	EXPECT_EQ(error.rfind("unknown macro \"@often\"", 0), 0u) << error;
}

TEST(CronParse, FailureLeavesTheScheduleUnchanged)
{
	CronSchedule schedule = MustParse("30 2 * * *");
	char error[128];
	EXPECT_FALSE(CronSchedule::Parse("61 * * * *", 10, &schedule, error, sizeof(error)));
	EXPECT_FALSE(CronSchedule::Parse("0 0 30 2 *", 10, &schedule, error, sizeof(error)));
	EXPECT_FALSE(CronSchedule::Parse("@often", 6, &schedule, error, sizeof(error)));
	CivilTime next{};
	ASSERT_TRUE(schedule.NextAfter(At(2026, 5, 10, 0, 0), &next));
	EXPECT_EQ(Show(next), "2026-05-10 02:30");
}

TEST(CronParse, ReadsExactlyLengthBytes)
{
	// Not NUL-terminated: what follows `length` is not part of the schedule.
	const char text[] = "0 0 * * 15";
	CronSchedule schedule;
	char error[128] = "";
	ASSERT_TRUE(CronSchedule::Parse(text, 9, &schedule, error, sizeof(error))) << error;
	CivilTime next{};
	ASSERT_TRUE(schedule.NextAfter(At(2026, 12, 2, 12, 0), &next));
	EXPECT_EQ(Show(next), "2026-12-07 00:00");  // the next Monday
	EXPECT_FALSE(CronSchedule::Parse(text, 10, &schedule, error, sizeof(error)));
	EXPECT_NE(std::strstr(error, "\"15\" is out of range"), nullptr) << error;
	EXPECT_FALSE(CronSchedule::Parse(text, 0, &schedule, error, sizeof(error)));
	EXPECT_STREQ(error, "a schedule must not be empty");
	EXPECT_FALSE(CronSchedule::Parse(nullptr, 0, &schedule, error, sizeof(error)));
	EXPECT_STREQ(error, "a schedule must not be empty");
	ASSERT_TRUE(CronSchedule::Parse("@dailyXYZ", 6, &schedule, error, sizeof(error)));
}

TEST(CronParse, ErrorBufferIsTruncatedAndOptional)
{
	CronSchedule schedule;
	char small[8];
	std::memset(small, 'x', sizeof(small));
	EXPECT_FALSE(CronSchedule::Parse("61 * * * *", 10, &schedule, small, sizeof(small)));
	EXPECT_STREQ(small, "minute ");
	char one[1] = {'x'};
	EXPECT_FALSE(CronSchedule::Parse("61 * * * *", 10, &schedule, one, sizeof(one)));
	EXPECT_EQ(one[0], '\0');
	EXPECT_FALSE(CronSchedule::Parse("61 * * * *", 10, &schedule, nullptr, 0));
	EXPECT_TRUE(CronSchedule::Parse("@daily", 6, &schedule, nullptr, 0));
}

TEST(CronParse, MessagesStayOnOneLineAndValidUtf8)
{
	CronSchedule schedule;
	std::string error;
	// A control character is shown as "?".
	EXPECT_FALSE(TryParse("* * * * 1\x01", &schedule, &error));
	EXPECT_EQ(error, "day-of-week \"1?\" has unexpected \"?\"");
	// A non-ASCII character is quoted whole.
	EXPECT_FALSE(TryParse("* * * * 1\xC3\xA9", &schedule, &error));
	EXPECT_EQ(error, "day-of-week \"1\xC3\xA9\" has unexpected \"\xC3\xA9\"");
	// A long item is cut at 100 bytes and marked.
	std::string long_field(150, '7');
	std::string text = long_field + " * * * *";
	EXPECT_FALSE(TryParse(text.c_str(), &schedule, &error));
	EXPECT_EQ(error, "minute \"" + std::string(100, '7') + "...\" is out of range 0-59");
	// Truncation to the buffer never leaves half a UTF-8 character.
	char buffer[15];
	EXPECT_FALSE(CronSchedule::Parse("* * * * \xC3\xA9", 10, &schedule, buffer, sizeof(buffer)));
	EXPECT_STREQ(buffer, "day-of-week \"");
	char wider[16];
	EXPECT_FALSE(CronSchedule::Parse("* * * * \xC3\xA9", 10, &schedule, wider, sizeof(wider)));
	EXPECT_STREQ(wider, "day-of-week \"\xC3\xA9");
}

// ---- Meaning: macros, names, steps, ranges, lists ----

TEST(CronMeaning, MacrosEqualTheirExpansions)
{
	ExpectSameSchedule("@yearly", "0 0 1 1 *", 30);
	ExpectSameSchedule("@annually", "0 0 1 1 *", 30);
	ExpectSameSchedule("@monthly", "0 0 1 * *");
	ExpectSameSchedule("@weekly", "0 0 * * 0");
	ExpectSameSchedule("@daily", "0 0 * * *");
	ExpectSameSchedule("@midnight", "0 0 * * *");
	ExpectSameSchedule("@hourly", "0 * * * *");
	ExpectSameSchedule(" @WeekLy\t", "0 0 * * SUN");
}

TEST(CronMeaning, NamesAreNumbers)
{
	ExpectSameSchedule("0 0 * jan-mar mon-fri", "0 0 * 1-3 1-5");
	ExpectSameSchedule("0 0 * JAN,Apr,jul,OcT *", "0 0 * 1,4,7,10 *");
	ExpectSameSchedule("0 0 * DEC *", "0 0 * 12 *");
	ExpectSameSchedule("0 0 * * SUN-SAT", "0 0 * * *");
	ExpectSameSchedule("0 0 * * tue,THU", "0 0 * * 2,4");
	ExpectSameSchedule("0 0 * JAN/2 *", "0 0 * 1,3,5,7,9,11 *");
	ExpectSameSchedule("0 0 * * WED/2", "0 0 * * 3,5,0");  // 3, 5, 7
}

TEST(CronMeaning, SevenIsSunday)
{
	ExpectSameSchedule("0 0 * * 7", "0 0 * * 0");
	ExpectSameSchedule("0 0 * * 7", "0 0 * * SUN");
	ExpectSameSchedule("0 0 * * 5-7", "0 0 * * 0,5,6");
	ExpectSameSchedule("0 0 * * FRI-SUN", "0 0 * * 5-7");
	ExpectSameSchedule("0 0 * * 0-7", "0 0 * * *");
	ExpectSameSchedule("0 0 * * 1/2", "0 0 * * 1,3,5,0");  // N/S runs to the field's maximum, 7
	ExpectSameSchedule("0 0 * * 7-7", "0 0 * * 0");
	ExpectSameSchedule("0 0 * * SUN-SUN", "0 0 * * 0");
	EXPECT_TRUE(MustParse("0 0 * * 7").Matches(At(2026, 3, 1, 0, 0)));  // a Sunday
}

TEST(CronMeaning, StepsRangesAndLists)
{
	ExpectSameSchedule("*/15 * * * *", "0,15,30,45 * * * *");
	ExpectSameSchedule("15-45/10 * * * *", "15,25,35,45 * * * *");
	ExpectSameSchedule("5/20 * * * *", "5,25,45 * * * *");
	ExpectSameSchedule("0 */6 * * *", "0 0,6,12,18 * * *");
	ExpectSameSchedule("0 0 1 */3 *", "0 0 1 1,4,7,10 *", 50);
	ExpectSameSchedule("*/60 * * * *", "0 * * * *");
	ExpectSameSchedule("*/99999999999 * * * *", "0 * * * *");
	ExpectSameSchedule("0-59 * * * *", "* * * * *");
	ExpectSameSchedule("1-1 * * * *", "1 * * * *");
	ExpectSameSchedule("1-3,2-5,40 * * * *", "1,2,3,4,5,40 * * * *");
	ExpectSameSchedule("0 0 1-31/10 * *", "0 0 1,11,21,31 * *");
}

TEST(CronMeaning, MatchesChecksEveryField)
{
	CronSchedule schedule = MustParse("30 9-17 * 3 MON-FRI");
	EXPECT_TRUE(schedule.Matches(At(2026, 3, 2, 9, 30)));    // Monday
	EXPECT_TRUE(schedule.Matches(At(2026, 3, 6, 17, 30)));   // Friday
	EXPECT_FALSE(schedule.Matches(At(2026, 3, 2, 9, 31)));   // minute
	EXPECT_FALSE(schedule.Matches(At(2026, 3, 2, 18, 30)));  // hour
	EXPECT_FALSE(schedule.Matches(At(2026, 3, 7, 9, 30)));   // Saturday
	EXPECT_FALSE(schedule.Matches(At(2026, 3, 1, 9, 30)));   // Sunday
	EXPECT_FALSE(schedule.Matches(At(2026, 4, 1, 9, 30)));   // month
}

TEST(CronMeaning, DayRuleIsOrWhenBothDayFieldsAreRestricted)
{
	CronSchedule schedule = MustParse("0 0 13 * 5");
	EXPECT_TRUE(schedule.Matches(At(2026, 4, 13, 0, 0)));   // the 13th, a Monday
	EXPECT_TRUE(schedule.Matches(At(2026, 4, 17, 0, 0)));   // a Friday, the 17th
	EXPECT_TRUE(schedule.Matches(At(2026, 3, 13, 0, 0)));   // both
	EXPECT_FALSE(schedule.Matches(At(2026, 4, 14, 0, 0)));  // neither
	EXPECT_EQ(Next("0 0 13 * 5", At(2026, 4, 10, 0, 0)), "2026-04-13 00:00");
	EXPECT_EQ(Next("0 0 13 * 5", At(2026, 4, 13, 0, 0)), "2026-04-17 00:00");
	EXPECT_EQ(Next("0 0 13 * 5", At(2026, 4, 17, 0, 0)), "2026-04-24 00:00");
	// The classic surprise: "first Monday" written this way fires on days 1-7 and on every Monday.
	EXPECT_EQ(Next("0 0 1-7 * 1", At(2026, 6, 2, 0, 0)), "2026-06-03 00:00");
	EXPECT_EQ(Next("0 0 1-7 * 1", At(2026, 6, 7, 0, 0)), "2026-06-08 00:00");
}

TEST(CronMeaning, DayRuleIsAndWhenEitherDayFieldIsStarForm)
{
	// "*/2" begins with "*": star form, so both must match: odd days that are Mondays.
	CronSchedule schedule = MustParse("0 0 */2 * 1");
	EXPECT_TRUE(schedule.Matches(At(2026, 6, 1, 0, 0)));   // Monday the 1st
	EXPECT_FALSE(schedule.Matches(At(2026, 6, 8, 0, 0)));  // Monday the 8th
	EXPECT_FALSE(schedule.Matches(At(2026, 6, 3, 0, 0)));  // Wednesday the 3rd
	EXPECT_EQ(Next("0 0 */2 * 1", At(2026, 6, 1, 0, 0)), "2026-06-15 00:00");
	// A star day of week: only the day of month decides; a star day of month: only the day of week.
	EXPECT_EQ(Next("0 0 13 * *", At(2026, 4, 10, 0, 0)), "2026-04-13 00:00");
	EXPECT_EQ(Next("0 0 * * 5", At(2026, 4, 10, 0, 0)), "2026-04-17 00:00");
	// A star-form day of week narrows a day of month: */5 is 0 and 5, so the 13th when it is a Sunday or a Friday.
	EXPECT_EQ(Next("0 0 13 * */5", At(2026, 4, 1, 0, 0)), "2026-09-13 00:00");  // a Sunday
	EXPECT_EQ(Next("0 0 13 * */5", At(2026, 9, 13, 0, 0)), "2026-11-13 00:00");  // a Friday
	// "*,5" begins with "*" too.
	EXPECT_FALSE(MustParse("0 0 13 * *,5").Matches(At(2026, 4, 17, 0, 0)));
}

// ---- NextAfter ----

struct NextCase {
	const char *schedule;
	CivilTime after;
	const char *next;
};

TEST(CronNextAfter, CrossesCalendarBoundaries)
{
	const NextCase cases[] = {
	    // minute, hour, day, month, year
	    {"* * * * *", At(2026, 5, 10, 10, 7), "2026-05-10 10:08"},
	    {"* * * * *", At(2026, 5, 10, 10, 59), "2026-05-10 11:00"},
	    {"* * * * *", At(2026, 5, 10, 23, 59), "2026-05-11 00:00"},
	    {"* * * * *", At(2026, 4, 30, 23, 59), "2026-05-01 00:00"},
	    {"* * * * *", At(2026, 12, 31, 23, 59), "2027-01-01 00:00"},
	    {"* * * * *", At(2024, 2, 28, 23, 59), "2024-02-29 00:00"},
	    {"* * * * *", At(2023, 2, 28, 23, 59), "2023-03-01 00:00"},
	    {"* * * * *", At(2100, 2, 28, 23, 59), "2100-03-01 00:00"},
	    // steps
	    {"*/15 * * * *", At(2026, 5, 10, 10, 7), "2026-05-10 10:15"},
	    {"*/15 * * * *", At(2026, 5, 10, 10, 15), "2026-05-10 10:30"},
	    {"*/15 * * * *", At(2026, 5, 10, 10, 45), "2026-05-10 11:00"},
	    {"*/15 * * * *", At(2026, 12, 31, 23, 45), "2027-01-01 00:00"},
	    {"*/15 * * * *", At(2026, 12, 31, 23, 44), "2026-12-31 23:45"},
	    // hourly and daily
	    {"0 * * * *", At(2026, 5, 10, 10, 0), "2026-05-10 11:00"},
	    {"0 * * * *", At(2026, 1, 31, 23, 0), "2026-02-01 00:00"},
	    {"30 2 * * *", At(2026, 3, 10, 2, 29), "2026-03-10 02:30"},
	    {"30 2 * * *", At(2026, 3, 10, 2, 30), "2026-03-11 02:30"},
	    {"30 2 * * *", At(2026, 3, 10, 1, 45), "2026-03-10 02:30"},
	    {"30 2 * * *", At(2026, 3, 10, 3, 0), "2026-03-11 02:30"},
	    {"5,10,50 3,15 * * *", At(2026, 3, 10, 3, 50), "2026-03-10 15:05"},
	    {"5,10,50 3,15 * * *", At(2026, 3, 10, 15, 50), "2026-03-11 03:05"},
	    {"5,10,50 3,15 * * *", At(2026, 3, 10, 15, 7), "2026-03-10 15:10"},
	    {"59 23 * * *", At(2026, 12, 31, 23, 58), "2026-12-31 23:59"},
	    {"59 23 * * *", At(2026, 12, 31, 23, 59), "2027-01-01 23:59"},
	    // monthly and yearly
	    {"0 0 1 * *", At(2026, 1, 15, 0, 0), "2026-02-01 00:00"},
	    {"0 0 1 * *", At(2026, 12, 1, 0, 0), "2027-01-01 00:00"},
	    {"0 0 1 1 *", At(2026, 1, 1, 0, 0), "2027-01-01 00:00"},
	    {"0 0 1 1 *", At(2025, 12, 31, 23, 59), "2026-01-01 00:00"},
	    {"@yearly", At(2026, 6, 1, 0, 0), "2027-01-01 00:00"},
	    {"0 12 * JAN-MAR,DEC *", At(2026, 3, 31, 12, 0), "2026-12-01 12:00"},
	    {"0 0 1 */3 *", At(2026, 1, 1, 0, 0), "2026-04-01 00:00"},
	    {"0 0 1 */3 *", At(2026, 10, 1, 0, 0), "2027-01-01 00:00"},
	    // month ends: "31" skips the short months
	    {"0 0 31 * *", At(2026, 1, 31, 0, 0), "2026-03-31 00:00"},
	    {"0 0 31 * *", At(2026, 4, 1, 0, 0), "2026-05-31 00:00"},
	    {"0 0 31 * *", At(2026, 5, 31, 0, 0), "2026-07-31 00:00"},
	    {"0 0 31 * *", At(2026, 7, 31, 0, 0), "2026-08-31 00:00"},
	    {"0 0 31 * *", At(2026, 8, 31, 0, 0), "2026-10-31 00:00"},
	    {"0 0 31 * *", At(2026, 12, 31, 0, 0), "2027-01-31 00:00"},
	    {"0 0 30 * *", At(2026, 1, 30, 0, 0), "2026-03-30 00:00"},
	    {"0 0 29 * *", At(2026, 1, 29, 0, 0), "2026-03-29 00:00"},
	    {"0 0 29 * *", At(2028, 1, 29, 0, 0), "2028-02-29 00:00"},
	    {"59 23 28-31 * *", At(2026, 2, 28, 23, 59), "2026-03-28 23:59"},
	    // February 29
	    {"0 0 29 2 *", At(2024, 2, 29, 0, 0), "2028-02-29 00:00"},
	    {"0 0 29 2 *", At(2024, 2, 28, 23, 59), "2024-02-29 00:00"},
	    {"0 0 29 2 *", At(2000, 1, 1, 0, 0), "2000-02-29 00:00"},
	    {"0 0 29 2 *", At(1900, 1, 1, 0, 0), "1904-02-29 00:00"},
	    {"0 0 29 2 *", At(2097, 3, 1, 0, 0), "2104-02-29 00:00"},  // 2100 is no leap year
	    {"0 0 29 2 *", At(2096, 2, 29, 0, 0), "2104-02-29 00:00"},
	    {"0 0 29 2 *", At(2399, 6, 1, 0, 0), "2400-02-29 00:00"},  // 2400 is
	    {"0 0 29 2 */7", At(2088, 2, 29, 0, 0), "2128-02-29 00:00"},  // Feb 29 on a Sunday: 40 years apart
	    // weekdays
	    {"0 9-17 * * MON-FRI", At(2026, 12, 4, 17, 0), "2026-12-07 09:00"},  // Friday evening -> Monday
	    {"0 9-17 * * MON-FRI", At(2026, 12, 4, 12, 30), "2026-12-04 13:00"},
	    {"0 9-17 * * MON-FRI", At(2026, 12, 5, 10, 0), "2026-12-07 09:00"},  // Saturday
	    {"0 9-17 * * MON-FRI", At(2026, 12, 7, 8, 59), "2026-12-07 09:00"},
	    {"0 9-17 * * MON-FRI", At(2026, 12, 31, 17, 0), "2027-01-01 09:00"},  // Thursday -> Friday
	    {"@weekly", At(2026, 12, 2, 0, 0), "2026-12-06 00:00"},
	    {"0 0 * * 7", At(2026, 2, 28, 12, 0), "2026-03-01 00:00"},
	    {"0 0 * * FRI-SUN", At(2026, 3, 2, 0, 0), "2026-03-06 00:00"},
	    {"0 0 * * FRI-SUN", At(2026, 3, 7, 0, 0), "2026-03-08 00:00"},
	    {"0 0 * * 1/2", At(2026, 3, 6, 0, 0), "2026-03-08 00:00"},  // 1/2 reaches 7: Sunday
	    {"0 0 1,15 * 3", At(2026, 3, 1, 0, 0), "2026-03-04 00:00"},
	    {"7 7 7 7 *", At(2026, 7, 7, 7, 7), "2027-07-07 07:07"},
	};
	for (const NextCase &c : cases)
		EXPECT_EQ(Next(c.schedule, c.after), c.next) << "\"" << c.schedule << "\" after " << Show(c.after);
}

TEST(CronNextAfter, InvalidStartOrEmptyScheduleFindsNothing)
{
	CronSchedule schedule = MustParse("* * * * *");
	CivilTime next = At(1, 1, 1, 0, 0);
	const CivilTime invalid[] = {At(2026, 0, 1, 0, 0),  At(2026, 13, 1, 0, 0), At(2026, 4, 31, 0, 0),
	                             At(2023, 2, 29, 0, 0), At(2026, 1, 0, 0, 0),  At(2026, 1, 1, 24, 0),
	                             At(2026, 1, 1, -1, 0), At(2026, 1, 1, 0, 60), At(2026, 1, 1, 0, -1)};
	for (const CivilTime &t : invalid) {
		EXPECT_FALSE(schedule.NextAfter(t, &next)) << Show(t);
		EXPECT_FALSE(schedule.Matches(t)) << Show(t);
	}
	EXPECT_EQ(Show(next), "0001-01-01 00:00");  // untouched
	CronSchedule never;  // default: no minute at all
	EXPECT_FALSE(never.NextAfter(At(2026, 1, 1, 0, 0), &next));
	EXPECT_FALSE(never.Matches(At(2026, 1, 1, 0, 0)));
}

// Every schedule of the oracle tests.
const char *const kSchedules[] = {
    "* * * * *",          "*/15 * * * *",         "0 * * * *",       "30 2 * * *",        "0 9-17 * * MON-FRI",
    "0 0 13 * 5",         "0 0 */2 * 1",          "0 0 1-7 * 1",     "5,10,50 3,15 * * *", "15-45/10 */6 * * *",
    "0 0 31 * *",         "0 12 * JAN-MAR,DEC *", "0 0 1 */3 *",     "0 0 * * 1/2",       "0 0 * * FRI-SUN",
    "59 23 28-31 * *",    "@hourly",              "@weekly",         "@daily",            "0 0 29 2 *",
    "0 0 1,15 * 3",       "7 7 7 7 *",            "*/7 */5 */9 * *", "0 0 13 * */5",      "0 0 29 2 */7",
    "0,30 8,20 * 2 0,6",
};

TEST(CronNextAfter, AgreesWithMinuteByMinuteSearch)
{
	const CivilTime starts[] = {At(2026, 12, 31, 23, 59), At(2024, 2, 28, 22, 0), At(2100, 2, 27, 12, 34),
	                            At(2026, 6, 15, 10, 7)};
	for (const char *text : kSchedules) {
		CronSchedule schedule = MustParse(text);
		for (const CivilTime &start : starts) {
			CivilTime until = PlusDays(start, 40);
			CivilTime t = start;
			for (;;) {
				CivilTime expected{}, next{};
				bool found = BruteNext(schedule, t, until, &expected);
				ASSERT_TRUE(schedule.NextAfter(t, &next)) << text << " after " << Show(t);
				if (!found) {
					EXPECT_GT(Compare(next, until), 0) << text << " after " << Show(t) << ": " << Show(next);
					break;
				}
				ASSERT_EQ(Show(next), Show(expected)) << text << " after " << Show(t);
				t = next;
			}
		}
	}
}

TEST(CronNextAfter, RareSchedulesAgreeWithDayByDaySearch)
{
	// These fire at 00:00 only, so trying each day's midnight is a complete search.
	const char *rare[] = {"0 0 29 2 *", "0 0 29 2 */7", "0 0 29 2 1", "0 0 31 * 3", "0 0 13 * */5", "@yearly"};
	const CivilTime starts[] = {At(1999, 12, 31, 23, 59), At(2088, 2, 29, 0, 0), At(2097, 3, 1, 0, 0)};
	for (const char *text : rare) {
		CronSchedule schedule = MustParse(text);
		for (const CivilTime &start : starts) {
			CivilTime t = start;
			for (int fire = 0; fire < 6; fire++) {
				CivilTime day = NextDay(At(t.year, t.month, t.day, 0, 0));
				while (!schedule.Matches(day))
					day = NextDay(day);
				CivilTime next{};
				ASSERT_TRUE(schedule.NextAfter(t, &next)) << text << " after " << Show(t);
				ASSERT_EQ(Show(next), Show(day)) << text << " after " << Show(t);
				t = next;
			}
		}
	}
}

TEST(CronNextAfter, AlwaysLaterAndMatching)
{
	const CivilTime starts[] = {At(2026, 1, 1, 0, 0), At(1999, 12, 31, 23, 59), At(2099, 7, 15, 12, 30)};
	for (const char *text : kSchedules) {
		CronSchedule schedule = MustParse(text);
		for (const CivilTime &start : starts) {
			CivilTime t = start;
			for (int i = 0; i < 3000; i++) {
				CivilTime next{};
				ASSERT_TRUE(schedule.NextAfter(t, &next)) << text << " after " << Show(t);
				ASSERT_GT(Compare(next, t), 0) << text << " after " << Show(t) << ": " << Show(next);
				ASSERT_TRUE(schedule.Matches(next)) << text << ": " << Show(next);
				t = next;
			}
		}
	}
}

}  // namespace
}  // namespace awa::core
