// sequences.cpp: lane cursors in sequences (see sequences.hpp).
#include "pg/sequences.hpp"

namespace awa::pg {

int64
SequenceValue(Oid sequence)
{
	LOCAL_FCINFO(fcinfo, 1);
	InitFunctionCallInfoData(*fcinfo, NULL, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = ObjectIdGetDatum(sequence);
	fcinfo->args[0].isnull = false;
	Datum value = pg_sequence_last_value(fcinfo);
	return fcinfo->isnull ? 0 : DatumGetInt64(value);
}

int64
SequenceNext(Oid sequence)
{
	return nextval_internal(sequence, false);
}

void
SequenceSet(Oid sequence, int64 value)
{
	DirectFunctionCall3(setval3_oid, ObjectIdGetDatum(sequence), Int64GetDatum(value), BoolGetDatum(true));
}

}  // namespace awa::pg
