// cron_schedule.cpp: see cron_schedule.hpp.
#include "core/cron_schedule.hpp"

#include <climits>
#include <cstdarg>
#include <cstdio>

#include "core/core_only.hpp"  // last: proves no PostgreSQL header came in

namespace awa::core {

namespace {

constexpr int kFieldCount = 5;

// One field of the five: its name in messages, its bounds, and the names it
// accepts for its values (month and day of week only).
struct FieldSpec {
	const char *name;
	int low;
	int high;
	const char *const *names;  // null, or `name_count` three-letter names for low, low + 1, ...
	int name_count;
	const char *name_hint;  // "month name (JAN-DEC)"
};

constexpr const char *kMonthNames[12] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                         "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr const char *kWeekdayNames[7] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

enum FieldIndex { kMinuteField = 0, kHourField, kDayField, kMonthField, kWeekdayField };
constexpr FieldSpec kFields[kFieldCount] = {
    {"minute", 0, 59, nullptr, 0, nullptr},
    {"hour", 0, 23, nullptr, 0, nullptr},
    {"day-of-month", 1, 31, nullptr, 0, nullptr},
    {"month", 1, 12, kMonthNames, 12, "month name (JAN-DEC)"},
    {"day-of-week", 0, 7, kWeekdayNames, 7, "day name (SUN-SAT)"},
};

// The longest a month can be (February counts 29), for the never-fires check.
constexpr int kLongestMonth[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

// Numbers saturate here while they are read: "99999999999" is out of range
// like "60", and a step this large selects only the first value anyway.
constexpr int kSaturate = 10000;

struct Macro {
	const char *name;
	const char *expansion;
};
constexpr Macro kMacros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},  {"@midnight", "0 0 * * *"}, {"@hourly", "0 * * * *"},
};

// Separates fields.
bool
IsBlank(char c) noexcept
{
	return c == ' ' || c == '\t';
}

// Ignored around the schedule (a trailing newline too).
bool
IsSpace(char c) noexcept
{
	return IsBlank(c) || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool
IsDigit(char c) noexcept
{
	return c >= '0' && c <= '9';
}

// ASCII only, whatever the locale.
bool
IsAlnum(char c) noexcept
{
	return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

char
Lower(char c) noexcept
{
	return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// text[0, length) equals the NUL-terminated `word`, ignoring ASCII case.
bool
EqualsIgnoreCase(const char *text, size_t length, const char *word) noexcept
{
	size_t i = 0;
	for (; i < length; i++)
		if (word[i] == '\0' || Lower(text[i]) != Lower(word[i]))
			return false;
	return word[i] == '\0';
}

bool
IsUtf8Continuation(char c) noexcept
{
	return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// The user's text as a message quotes it: at most kQuoteMax bytes (cut
// between two UTF-8 characters, then "..."), control characters shown as "?"
// so that the message stays on one line.
constexpr size_t kQuoteMax = 100;
struct Quote {
	char text[kQuoteMax + 4];
};

Quote
Quoted(const char *text, size_t length) noexcept
{
	Quote quote;
	size_t n = length;
	bool cut = n > kQuoteMax;
	if (cut) {
		n = kQuoteMax;
		while (n > 0 && IsUtf8Continuation(text[n]))
			n--;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = static_cast<unsigned char>(text[i]);
		quote.text[i] = c < 0x20 || c == 0x7F ? '?' : text[i];
	}
	if (cut)
		for (int k = 0; k < 3; k++)
			quote.text[n++] = '.';
	quote.text[n] = '\0';
	return quote;
}

// The byte length of the (UTF-8) character at text[0], at most `length`.
size_t
CharLength(const char *text, size_t length) noexcept
{
	size_t n = 1;
	while (n < length && n < 4 && IsUtf8Continuation(text[n]))
		n++;
	return n;
}

bool Fail(char *error, size_t error_size, const char *format, ...) noexcept __attribute__((format(printf, 3, 4)));

// Writes the message into `error` (when it has room) and returns false.
bool
Fail(char *error, size_t error_size, const char *format, ...) noexcept
{
	if (error == nullptr || error_size == 0)
		return false;
	va_list args;
	va_start(args, format);
	int written = std::vsnprintf(error, error_size, format, args);
	va_end(args);
	if (written < 0) {
		error[0] = '\0';
	} else if (static_cast<size_t>(written) >= error_size) {
		// Truncated: drop a UTF-8 character cut in two.
		size_t end = error_size - 1;
		size_t lead = end;
		while (lead > 0 && end - lead < 3 && IsUtf8Continuation(error[lead - 1]))
			lead--;
		if (lead > 0) {
			unsigned char c = static_cast<unsigned char>(error[lead - 1]);
			size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
			if (need > 1 && need > end - lead + 1)
				error[lead - 1] = '\0';
		}
	}
	return false;
}

int
LowestBit(uint64_t bits) noexcept
{
	return __builtin_ctzll(bits);
}

// Parses one item of a field's list: `*`, `N` or `N-M`, optionally followed by `/S`.
struct ItemParser {
	const FieldSpec &spec;
	const char *item;
	size_t length;
	char *error;
	size_t error_size;

	// Reads the value (number or name) at item[*i]; `after_dash` says it ends a range starting at `range_start`.
	bool
	ReadValue(size_t *i, bool after_dash, int range_start, int *value) const noexcept
	{
		size_t begin = *i;
		size_t end = begin;
		while (end < length && IsAlnum(item[end]))
			end++;
		*i = end;
		const char *token = item + begin;
		size_t token_length = end - begin;
		if (token_length == 0) {
			if (after_dash)
				return Fail(error, error_size, "%s \"%s\" has no value after \"-\"", spec.name,
				            Quoted(item, length).text);
			return Fail(error, error_size, "%s \"%s\" must start with a number%s or \"*\"", spec.name,
			            Quoted(item, length).text, spec.names != nullptr ? ", a name" : "");
		}
		bool all_digits = true;
		int number = 0;
		for (size_t k = 0; k < token_length; k++) {
			if (!IsDigit(token[k])) {
				all_digits = false;
				break;
			}
			number = number * 10 + (token[k] - '0');
			if (number > kSaturate)
				number = kSaturate;
		}
		if (all_digits) {
			if (number < spec.low || number > spec.high)
				return Fail(error, error_size, "%s \"%s\" is out of range %d-%d", spec.name,
				            Quoted(token, token_length).text, spec.low, spec.high);
			*value = number;
			return true;
		}
		for (int n = 0; n < spec.name_count; n++)
			if (EqualsIgnoreCase(token, token_length, spec.names[n])) {
				*value = spec.low + n;
				// SUN ending a range that starts later in the week is the 7 that also means Sunday (FRI-SUN = 5-7).
				if (after_dash && spec.names == kWeekdayNames && n == 0 && range_start > 0)
					*value = 7;
				return true;
			}
		if (spec.names != nullptr)
			return Fail(error, error_size, "%s \"%s\" is not a number or %s", spec.name,
			            Quoted(token, token_length).text, spec.name_hint);
		return Fail(error, error_size, "%s \"%s\" is not a number", spec.name, Quoted(token, token_length).text);
	}

	// Parses the whole item, adding its values to `bits` (bit v: value v).
	bool
	Parse(uint64_t *bits) const noexcept
	{
		size_t i = 0;
		int first = spec.low;
		int last = spec.high;
		bool star = item[0] == '*';
		bool range = false;
		if (star) {
			i = 1;
		} else {
			if (!ReadValue(&i, false, 0, &first))
				return false;
			last = first;
			if (i < length && item[i] == '-') {
				i++;
				if (!ReadValue(&i, true, first, &last))
					return false;
				range = true;
			}
		}
		int step = 1;
		if (i < length && item[i] == '/') {
			i++;
			size_t begin = i;
			step = 0;
			while (i < length && IsDigit(item[i])) {
				step = step * 10 + (item[i] - '0');
				if (step > kSaturate)
					step = kSaturate;
				i++;
			}
			if (i == begin)
				return Fail(error, error_size, "%s \"%s\" has no step number after \"/\"", spec.name,
				            Quoted(item, length).text);
			if (step == 0)
				return Fail(error, error_size, "%s \"%s\" has step 0; a step must be at least 1", spec.name,
				            Quoted(item, length).text);
			if (!star && !range)
				last = spec.high;  // N/S: from N to the field's maximum
		}
		if (i < length)
			return Fail(error, error_size, "%s \"%s\" has unexpected \"%s\"", spec.name, Quoted(item, length).text,
			            Quoted(item + i, CharLength(item + i, length - i)).text);
		if (first > last)
			return Fail(error, error_size, "%s range \"%s\" runs backwards (%d > %d)", spec.name,
			            Quoted(item, length).text, first, last);
		for (int v = first; v <= last; v += step)
			*bits |= uint64_t{1} << v;
		return true;
	}
};

// Parses one field (a comma-separated list of items) into `bits`.
bool
ParseField(const FieldSpec &spec, const char *field, size_t length, uint64_t *bits, char *error,
           size_t error_size) noexcept
{
	*bits = 0;
	size_t begin = 0;
	for (;;) {
		size_t end = begin;
		while (end < length && field[end] != ',')
			end++;
		if (end == begin)
			return Fail(error, error_size, "%s list \"%s\" has an empty item", spec.name, Quoted(field, length).text);
		ItemParser parser{spec, field + begin, end - begin, error, error_size};
		if (!parser.Parse(bits))
			return false;
		if (end == length)
			return true;
		begin = end + 1;
	}
}

// Splits text[0, length) (no blank at either end) into its five fields and parses each: bits[f] gets field f's
// values, star[f] whether it begins with "*".
bool
ParseFields(const char *text, size_t length, uint64_t *bits, bool *star, char *error, size_t error_size) noexcept
{
	const char *field[kFieldCount] = {};
	size_t field_length[kFieldCount] = {};
	size_t count = 0;
	size_t i = 0;
	while (i < length) {
		while (i < length && IsBlank(text[i]))
			i++;
		if (i == length)
			break;
		size_t begin = i;
		while (i < length && !IsBlank(text[i]))
			i++;
		if (count < kFieldCount) {
			field[count] = text + begin;
			field_length[count] = i - begin;
		}
		count++;
	}
	if (count != kFieldCount)
		return Fail(error, error_size, "expected 5 fields (minute hour day-of-month month day-of-week), found %zu",
		            count);
	for (int f = 0; f < kFieldCount; f++) {
		if (!ParseField(kFields[f], field[f], field_length[f], &bits[f], error, error_size))
			return false;
		star[f] = field[f][0] == '*';
	}
	return true;
}

bool
IsLeapYear(int64_t year) noexcept
{
	return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
}

bool
ValidCivilTime(const CivilTime &t) noexcept
{
	return t.month >= 1 && t.month <= 12 && t.day >= 1 && t.day <= DaysInMonth(t.year, t.month) && t.hour >= 0 &&
	       t.hour <= 23 && t.minute >= 0 && t.minute <= 59;
}

}  // namespace

int
DayOfWeek(int year, int month, int day) noexcept
{
	// Days since 1970-01-01 (a Thursday), after H. Hinnant's days_from_civil.
	int64_t y = int64_t{year} - (month <= 2 ? 1 : 0);
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t year_of_era = y - era * 400;
	int64_t month_from_march = (int64_t{month} + 9) % 12;
	int64_t day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
	int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
	int64_t days = era * 146097 + day_of_era - 719468;
	return static_cast<int>(((days + 4) % 7 + 7) % 7);
}

int
DaysInMonth(int year, int month) noexcept
{
	if (month < 1 || month > 12)
		return 0;
	if (month == 2)
		return IsLeapYear(year) ? 29 : 28;
	return kLongestMonth[month];
}

bool
CronSchedule::Parse(const char *text, size_t length, CronSchedule *out, char *error, size_t error_size) noexcept
{
	if (text == nullptr)
		length = 0;
	size_t begin = 0;
	size_t end = length;
	while (begin < end && IsSpace(text[begin]))
		begin++;
	while (end > begin && IsSpace(text[end - 1]))
		end--;
	if (begin == end)
		return Fail(error, error_size, "a schedule must not be empty");
	const char *fields = text + begin;
	size_t fields_length = end - begin;

	if (fields[0] == '@') {
		size_t word = 0;
		while (word < fields_length && !IsSpace(fields[word]))
			word++;
		if (EqualsIgnoreCase(fields, word, "@reboot"))
			return Fail(error, error_size, "@reboot is not supported");
		const Macro *macro = nullptr;
		for (const Macro &m : kMacros)
			if (EqualsIgnoreCase(fields, word, m.name))
				macro = &m;
		if (macro == nullptr)
			return Fail(error, error_size,
			            "unknown macro \"%s\" (expected @yearly, @annually, @monthly, @weekly, @daily, @midnight or "
			            "@hourly)",
			            Quoted(fields, word).text);
		if (word != fields_length)
			return Fail(error, error_size, "macro \"%s\" must stand alone, found \"%s\"", Quoted(fields, word).text,
			            Quoted(fields, fields_length).text);
		fields = macro->expansion;
		fields_length = 0;
		while (fields[fields_length] != '\0')
			fields_length++;
	}

	uint64_t bits[kFieldCount] = {};
	bool star[kFieldCount] = {};
	if (!ParseFields(fields, fields_length, bits, star, error, error_size))
		return false;

	CronSchedule schedule;
	schedule.minutes_ = bits[kMinuteField];
	schedule.hours_ = static_cast<uint32_t>(bits[kHourField]);
	schedule.days_ = static_cast<uint32_t>(bits[kDayField]);
	schedule.months_ = static_cast<uint16_t>(bits[kMonthField]);
	uint64_t weekdays = bits[kWeekdayField];
	if (weekdays & (uint64_t{1} << 7))
		weekdays = (weekdays | 1) & ~(uint64_t{1} << 7);  // 7 is Sunday too
	schedule.weekdays_ = static_cast<uint8_t>(weekdays);
	schedule.day_is_star_ = star[kDayField];
	schedule.weekday_is_star_ = star[kWeekdayField];

	// Never fires: with a star day of week only the day of month picks the days (a star-form day of week such as */2
	// narrows them, but every date falls on every weekday in some year), and no month named is long enough for any
	// day listed. With both restricted, every month has each weekday; with a star day of month, every day is listed.
	if (schedule.weekday_is_star_) {
		bool fires = false;
		for (int month = 1; month <= 12; month++)
			if (schedule.months_ & (1u << month))
				fires |= (schedule.days_ & ((uint64_t{2} << kLongestMonth[month]) - 2)) != 0;
		if (!fires) {
			uint32_t days = schedule.days_;
			bool several = (days & (days - 1)) != 0;
			return Fail(error, error_size, "\"%s\" never fires: no month it names has day %d%s",
			            Quoted(text + begin, end - begin).text, LowestBit(days), several ? " or later" : "");
		}
	}

	*out = schedule;
	return true;
}

bool
CronSchedule::Matches(const CivilTime &t) const noexcept
{
	if (!ValidCivilTime(t))
		return false;
	if (!(minutes_ & (uint64_t{1} << t.minute)) || !(hours_ & (1u << t.hour)) || !(months_ & (1u << t.month)))
		return false;
	bool day = (days_ & (1u << t.day)) != 0;
	bool weekday = (weekdays_ & (1u << DayOfWeek(t.year, t.month, t.day))) != 0;
	return !day_is_star_ && !weekday_is_star_ ? day || weekday : day && weekday;
}

uint64_t
CronSchedule::MatchingDays(int days_in_month, int first_weekday, int from_day) const noexcept
{
	if (from_day > days_in_month)
		return 0;
	uint64_t in_month = (uint64_t{2} << days_in_month) - 2;  // bits 1..days_in_month
	uint64_t from = ~((uint64_t{1} << from_day) - 1);         // bits from_day..63
	uint64_t pattern = 0;                                     // bit i (i < 42): weekday i % 7 matches
	for (int week = 0; week < 6; week++)
		pattern |= uint64_t{weekdays_} << (7 * week);
	uint64_t by_weekday = (pattern >> first_weekday) << 1;  // bit d: day d's weekday matches
	uint64_t by_day = days_;
	uint64_t days = !day_is_star_ && !weekday_is_star_ ? by_day | by_weekday : by_day & by_weekday;
	return days & in_month & from;
}

bool
CronSchedule::FirstTimeFrom(int from_hour, int from_minute, int *hour, int *minute) const noexcept
{
	if (from_hour > 23)
		return false;
	if (hours_ & (1u << from_hour)) {
		uint64_t minutes = minutes_ & (~uint64_t{0} << from_minute);
		if (minutes != 0) {
			*hour = from_hour;
			*minute = LowestBit(minutes);
			return true;
		}
	}
	uint32_t hours = hours_ & (~uint32_t{0} << (from_hour + 1));
	if (hours == 0 || minutes_ == 0)
		return false;
	*hour = LowestBit(hours);
	*minute = LowestBit(minutes_);
	return true;
}

bool
CronSchedule::NextAfter(const CivilTime &after, CivilTime *next) const noexcept
{
	// The calendar, weekdays included, repeats every 400 years (146097 days, 20871 weeks), so a search of 400 years
	// and one month (from the start month's 1st) sees every case, one loop step per month: 4801 at most. (Fewer
	// would not do: "0 0 29 2 */7", Feb 29 on a Sunday, fires in 2088 and next in 2128.)
	constexpr int kMonthsSearched = 400 * 12 + 1;
	if (!ValidCivilTime(after) || after.year > INT_MAX - 402)
		return false;
	int year = after.year;
	int month = after.month;
	int from_day = after.day;
	int from_hour = after.hour;
	int from_minute = after.minute + 1;
	if (from_minute == 60) {
		from_minute = 0;
		from_hour++;
	}
	if (from_hour == 24) {  // after was 23:59: its whole day has passed
		from_hour = 0;
		from_day++;
	}
	int first_weekday = DayOfWeek(year, month, 1);
	for (int step = 0; step < kMonthsSearched; step++) {
		int days_in_month = DaysInMonth(year, month);
		if (months_ & (1u << month)) {
			uint64_t days = MatchingDays(days_in_month, first_weekday, from_day);
			while (days != 0) {
				int day = LowestBit(days);
				bool first_day = step == 0 && day == after.day;  // else the day starts at 00:00
				int hour, minute;
				if (FirstTimeFrom(first_day ? from_hour : 0, first_day ? from_minute : 0, &hour, &minute)) {
					*next = CivilTime{year, month, day, hour, minute};
					return true;
				}
				days &= days - 1;
			}
		}
		first_weekday = (first_weekday + days_in_month) % 7;
		if (++month > 12) {
			month = 1;
			year++;
		}
		from_day = 1;
	}
	return false;
}

}  // namespace awa::core
