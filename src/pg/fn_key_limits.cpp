// fn_key_limits.cpp: the SQL face of the limits per key (key_limits.hpp):
// awa._key_counter_name (the one definition of a key's counters name, for the
// counter rebuild's scan) and awa._key_limit_stats (awa.key_metrics).
#include "pg/arguments.hpp"
#include "pg/counters.hpp"
#include "pg/guard.hpp"
#include "pg/key_limits.hpp"

extern "C" {
#include "funcapi.h"
}

using namespace awa::pg;

// awa._key_counter_name(queue, concurrency_key) -> text. STRICT.
AWA_FUNCTION(awa_internal_key_counter_name)
{
	PG_RETURN_TEXT_P(KeyCounterName(PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1)));
}

// awa._key_limit_stats(queue, concurrency_key) -> (claims_limited,
// claims_rate_limited): the claims the key's limits cut since the server
// started; 0 without a counters entry. STRICT.
AWA_FUNCTION(awa_internal_key_limit_stats)
{
	TupleDesc desc;
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "awa: _key_limit_stats must return a record");
	desc = BlessTupleDesc(desc);
	text *name = KeyCounterName(PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1));
	Datum values[2] = {Int64GetDatum(ReadClaimsLimited(name)), Int64GetDatum(ReadClaimsRateLimited(name))};
	bool nulls[2] = {false, false};
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
