// fn_key_counter_name.cpp: awa._key_counter_name, the counters' name of a key
// of a queue for SQL (key_limits.hpp keeps the one definition).
#include "pg/guard.hpp"
#include "pg/key_limits.hpp"

using namespace awa::pg;

// awa._key_counter_name(queue, concurrency_key) -> text. STRICT.
AWA_FUNCTION(awa_internal_key_counter_name)
{
	PG_RETURN_TEXT_P(KeyCounterName(PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1)));
}
