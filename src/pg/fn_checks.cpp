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

// awa._default_max_attempts() -> int: the max_attempts of a job that does not
// set it. IMMUTABLE, so a parameter default that calls it folds to a constant
// when the call is planned.
AWA_FUNCTION(awa_internal_default_max_attempts)
{
	PG_RETURN_INT32(static_cast<int32>(awa::core::kDefaultMaxAttempts));
}
