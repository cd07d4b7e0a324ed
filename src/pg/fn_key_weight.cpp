// fn_key_weight.cpp: awa._key_weight_changed, set_key_weight's hand-over to
// the claims' shared memory (key_lanes.hpp).
#include "pg/arguments.hpp"
#include "pg/guard.hpp"
#include "pg/key_lanes.hpp"

using namespace awa::pg;

// awa._key_weight_changed(queue, concurrency_key, weight) -> void: the key's
// lanes take `weight` when this transaction commits. STRICT; set_key_weight
// checked the arguments.
AWA_FUNCTION(awa_internal_key_weight_changed)
{
	text *queue = QueueArgument(fcinfo, 0);
	text *key = PG_GETARG_TEXT_PP(1);
	int32 weight = PG_GETARG_INT32(2);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	NoteKeyWeight(queue, key, weight);
	SPI_finish();
	PG_RETURN_VOID();
}
