// fn_checks.cpp: the argument rules of src/core, for the PL/pgSQL functions
// that need them. The SQL side calls these instead of restating a rule, so a
// rule and its message exist once (src/core/validate.hpp).
#include "core/validate.hpp"
#include "pg/arguments.hpp"
#include "pg/guard.hpp"

using namespace awa::pg;

// awa._require_queue(queue text) -> void: raises what a queue argument of the
// C functions raises (22004 for NULL, 22023 for an empty or too long name).
// Not STRICT: NULL must raise.
AWA_FUNCTION(awa_internal_require_queue)
{
	(void)QueueArgument(fcinfo, 0);
	PG_RETURN_VOID();
}

// awa._job_defaults(OUT priority int, OUT max_attempts int): what a job that
// does not set them gets (core/validate.hpp holds the one copy).
AWA_FUNCTION(awa_internal_job_defaults)
{
	TupleDesc desc;
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "awa: _job_defaults must return a record");
	desc = BlessTupleDesc(desc);
	Datum values[2] = {Int32GetDatum(static_cast<int32>(awa::core::kDefaultPriority)),
	                   Int32GetDatum(static_cast<int32>(awa::core::kDefaultMaxAttempts))};
	bool nulls[2] = {false, false};
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
