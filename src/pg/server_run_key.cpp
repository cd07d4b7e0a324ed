// server_run_key.cpp: see server_run_key.hpp.
#include "pg/server_run_key.hpp"

#include "pg/maintenance_shmem.hpp"

extern "C" {
#include "access/xlog.h"
}

namespace awa::pg {

uint64
ServerRunKey()
{
	using maintenance_shmem::shared;
	if (shared == NULL || RecoveryInProgress())
		return 0;
	// A promotion starts a new timeline; a start or crash restart a new nonce.
	uint64 key = shared->run_nonce ^ (static_cast<uint64>(GetWALInsertionTimeLine()) * UINT64CONST(0x9E3779B97F4A7C15));
	key &= ~(uint64{1} << 63);
	return key == 0 ? 1 : key;
}

TimestampTz
PrimaryRunSince()
{
	using maintenance_shmem::shared;
	uint64 since = shared == NULL ? 0 : pg_atomic_read_u64(&shared->primary_since);
	return since == 0 ? GetCurrentTimestamp() : static_cast<TimestampTz>(since);
}

void
NotePrimaryRunStart()
{
	using maintenance_shmem::shared;
	if (shared == NULL)
		return;
	uint64 unset = 0;
	(void)pg_atomic_compare_exchange_u64(&shared->primary_since, &unset, static_cast<uint64>(GetCurrentTimestamp()));
}

}  // namespace awa::pg
