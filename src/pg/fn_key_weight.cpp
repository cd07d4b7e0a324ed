// fn_key_weight.cpp: awa._key_weight_changed, set_key_weight's hand-over to
// the claims' shared memory (key_lanes.hpp).
#include "core/validate.hpp"
#include "pg/arguments.hpp"
#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/key_lanes.hpp"

using namespace awa::pg;

// awa._key_weight_changed(queue, concurrency_key, weight) -> void: checks the
// three (core/validate.hpp: the one copy of each rule) and has the key's lanes
// take `weight` when this transaction commits. Not STRICT: NULL raises.
AWA_FUNCTION(awa_internal_key_weight_changed)
{
	text *queue = QueueArgument(fcinfo, 0);
	awa::core::Violation violation;
	text *key = PG_ARGISNULL(1) ? NULL : PG_GETARG_TEXT_PP(1);
	Require(awa::core::CheckConcurrencyKey(key, key ? VARSIZE_ANY_EXHDR(key) : 0, &violation), violation);
	Require(awa::core::CheckKeyWeight(PG_ARGISNULL(2), PG_ARGISNULL(2) ? 0 : PG_GETARG_INT32(2), &violation), violation);
	int32 weight = PG_GETARG_INT32(2);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	NoteKeyWeight(queue, key, weight);
	SPI_finish();
	PG_RETURN_VOID();
}
