// rings.cpp: ring positions (see rings.hpp).
#include "pg/rings.hpp"

#include "pg/spi_plans.hpp"

namespace awa::pg {

RingPositions
ReadRingPositions()
{
	Execute(Stmt::kRingPositions, 0, NULL, NULL, 1);
	if (SPI_processed != 1)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("awa: ring ledgers are empty"),
		                errhint("The extension's ring tables were modified by hand; recreate the extension.")));
	HeapTuple tuple = SPI_tuptable->vals[0];
	TupleDesc desc = SPI_tuptable->tupdesc;
	bool isnull;
	RingPositions ring;
	ring.queue_generation = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
	ring.queue_slot = DatumGetInt16(SPI_getbinval(tuple, desc, 2, &isnull));
	ring.queue_slot_count = DatumGetInt32(SPI_getbinval(tuple, desc, 3, &isnull));
	ring.claim_generation = DatumGetInt64(SPI_getbinval(tuple, desc, 4, &isnull));
	ring.claim_slot = DatumGetInt16(SPI_getbinval(tuple, desc, 5, &isnull));
	ring.claim_slot_count = DatumGetInt32(SPI_getbinval(tuple, desc, 6, &isnull));
	return ring;
}

}  // namespace awa::pg
