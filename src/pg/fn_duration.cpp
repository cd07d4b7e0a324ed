// fn_duration.cpp: the casts from numbers to awa.duration (a number of
// seconds). awa.duration is an interval under another name (same storage; its
// input and output are interval's, and interval <-> awa.duration are
// binary-coercible casts), so every API parameter that is a length of time
// accepts an interval, a string, or, through these casts, a number of seconds
// (sql/install/14_duration.sql, docs/sql-reference.md "Durations"). What a
// number may be is core::SecondsToMicros / core::WholeSecondsToMicros.
#include <cmath>
#include <cstdlib>
#include <limits>

#include "pg/core_calls.hpp"
#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/postgres_headers.hpp"

extern "C" {
#include "utils/numeric.h"
}

using namespace awa::pg;

namespace {

// A duration of `micros` microseconds, all in the time field, as interval_in
// reads a bare number ('90' is 00:01:30, '172800' is 48:00:00).
Datum
DurationOfMicros(int64 micros)
{
	Interval *result = static_cast<Interval *>(palloc(sizeof(Interval)));
	result->time = micros;
	result->day = 0;
	result->month = 0;
	PG_RETURN_INTERVAL_P(result);
}

Datum
DurationOfWholeSeconds(int64 seconds)
{
	awa::core::Violation violation;
	int64_t micros = 0;
	Require(awa::core::WholeSecondsToMicros(seconds, &micros, &violation), violation);
	return DurationOfMicros(micros);
}

Datum
DurationOfSeconds(double seconds)
{
	awa::core::Violation violation;
	int64_t micros = 0;
	Require(awa::core::SecondsToMicros(seconds, &micros, &violation), violation);
	return DurationOfMicros(micros);
}

}  // namespace

// awa._duration_in(cstring, oid, integer) -> awa.duration: interval_in (a
// string is read exactly as an interval is: '3 seconds', 'PT3S', '5' is 5
// seconds). Its data errors (class 22: "invalid input syntax for type
// interval", a field out of range) keep their SQLSTATE and message and gain a
// hint saying what is accepted; any other error passes untouched.
AWA_FUNCTION(awa_duration_in)
{
	Datum text = PG_GETARG_DATUM(0);
	MemoryContext caller = CurrentMemoryContext;
	volatile Datum result = (Datum)0;
	PG_TRY();
	{
		result = DirectFunctionCall3(interval_in, text, ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(caller);
		ErrorData *error = CopyErrorData();
		if (ERRCODE_TO_CATEGORY(error->sqlerrcode) != ERRCODE_DATA_EXCEPTION)
			PG_RE_THROW();
		FlushErrorState();
		ereport(ERROR, (errcode(error->sqlerrcode), errmsg_internal("%s", error->message),
		                error->detail != NULL ? errdetail_internal("%s", error->detail) : 0,
		                errhint("Pass an interval, such as '30 seconds', or a number of seconds, such as 30.")));
	}
	PG_END_TRY();
	return result;
}

// awa._duration_out, _duration_recv, _duration_send: interval's own.
AWA_FUNCTION(awa_duration_out)
{
	return interval_out(fcinfo);
}

AWA_FUNCTION(awa_duration_recv)
{
	return interval_recv(fcinfo);
}

AWA_FUNCTION(awa_duration_send)
{
	return interval_send(fcinfo);
}

// awa.duration_from_int2 | int4 | int8 -> awa.duration: that many seconds.
AWA_FUNCTION(awa_duration_from_int2)
{
	return DurationOfWholeSeconds(PG_GETARG_INT16(0));
}

AWA_FUNCTION(awa_duration_from_int4)
{
	return DurationOfWholeSeconds(PG_GETARG_INT32(0));
}

AWA_FUNCTION(awa_duration_from_int8)
{
	return DurationOfWholeSeconds(PG_GETARG_INT64(0));
}

// awa.duration_from_float4 | float8 -> awa.duration: that many seconds,
// rounded to the microsecond; NaN and infinities are refused.
AWA_FUNCTION(awa_duration_from_float4)
{
	return DurationOfSeconds(static_cast<double>(PG_GETARG_FLOAT4(0)));
}

AWA_FUNCTION(awa_duration_from_float8)
{
	return DurationOfSeconds(PG_GETARG_FLOAT8(0));
}

// awa.duration_from_numeric -> awa.duration. The numeric's text read as a double
// (as interval_in reads a fraction of a second): exact to the microsecond for
// decades (a double's 53 bits), far past what any argument allows. NaN and ±Infinity read as themselves; a finite
// numeric beyond a double's range is made the largest double of its sign, so
// the rule reports it out of range (not "not finite").
AWA_FUNCTION(awa_duration_from_numeric)
{
	Numeric value = PG_GETARG_NUMERIC(0);
	char *text = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(value)));
	double seconds = std::strtod(text, NULL);
	if (std::isinf(seconds) && !numeric_is_inf(value))
		seconds = std::copysign(std::numeric_limits<double>::max(), seconds);
	pfree(text);
	return DurationOfSeconds(seconds);
}
