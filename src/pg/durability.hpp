// durability.hpp: waiting until WAL is durable where a synchronous commit
// would wait for it (awa.await_durable, the claim fence).
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// The end of the WAL inserted so far: GetXLogInsertRecPtr(), unless that is
// the first byte after a page's header, where the next record will start but
// nothing is written yet; then the page's start. XLogFlush of the position
// after the header fails ("xlog flush request ... is not satisfied ---
// flushed only to" the page start) until another record is inserted, and
// XLogNeedsFlush of it is true although everything inserted is flushed
// (test/sql/durable.sql failed on this once, in a local run).
XLogRecPtr InsertedWalEnd();

// Waits until the synchronous standbys named by synchronous_standby_names
// (none: returns at once) confirm `lsn`, at the session's synchronous_commit
// level and at least `on` (the standbys' flush), as a synchronous commit
// would. The caller has flushed `lsn` locally. A cancel or statement_timeout
// during the wait raises 57014 (the position is then flushed here, not
// confirmed there). Holds no lock while it waits.
void WaitForSynchronousStandbys(XLogRecPtr lsn);

}  // namespace awa::pg
