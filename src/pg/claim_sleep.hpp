// claim_sleep.hpp: how a waiting claim sleeps between two looks for work.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// Sleeps until an event of the wake bucket that differs from `seen`, or for
// `micros`. Interruptible. The caller holds no lock of its own (its look ran
// in a subtransaction that rolled back). While it sleeps the backend
// advertises no snapshot (pg_stat_activity.backend_xmin is NULL, VACUUM and
// prune proceed) when the statement's snapshot can protect nothing: a
// READ COMMITTED statement of its own, outside a transaction block, that reads
// no table, calls no function but built-in ones and awa.claim
// (`claim_function`), and called awa.claim directly, with no other portal of
// the transaction open. Otherwise the statement's snapshot stays, as every
// running statement's does.
void SleepWithoutSnapshot(Oid claim_function, uint32 wake_bucket, uint64 seen, int64 micros);

// The rule above for any awa function that waits without reading a table
// (awa.await_durable): stops advertising the statement's snapshot when it can
// protect nothing, and says whether it did.
bool AdvertiseNoSnapshotWhileWaiting(Oid waiting_function);

}  // namespace awa::pg
