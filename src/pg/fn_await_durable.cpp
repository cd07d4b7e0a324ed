// fn_await_durable.cpp: awa.await_durable(), durability on request.
//
// Claims commit asynchronously (awa.async_claim_commit): a crash before the
// WAL writer's next flush can lose one, and the job is delivered again. A
// worker about to do something it cannot undo calls awa.await_durable()
// first, and only those jobs pay for a flush (the Comdb2 idea: the commit
// hands the wait off, the client that needs the guarantee waits).
//
// The LSN waited for is the WAL insert position when the call starts, not
// this session's last commit: behind a transaction pooler the call may run
// on another server session than the claim did, and every commit that
// returned before the call is below that position.
#include "pg/claim_sleep.hpp"
#include "pg/durability.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "access/xlog.h"
#include "utils/pg_lsn.h"
}

using namespace awa::pg;

// awa.await_durable() -> pg_lsn
AWA_FUNCTION(awa_await_durable)
{
	if (RecoveryInProgress())
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
		                errmsg("awa.await_durable() cannot run during recovery"),
		                errhint("Call it on the primary, where the claim committed.")));
	XLogRecPtr lsn = InsertedWalEnd();
	// Nothing of this statement reads a table: while it waits it holds no
	// lock of its own and, when the statement allows (claim_sleep.hpp), no
	// snapshot either.
	(void)AdvertiseNoSnapshotWhileWaiting(fcinfo->flinfo->fn_oid);
	XLogFlush(lsn);
	CHECK_FOR_INTERRUPTS();
	// As a synchronous commit would wait: at the session's level, and at
	// least for the standbys' flush when the session commits asynchronously
	// (as a claim does).
	WaitForSynchronousStandbys(lsn);
	PG_RETURN_LSN(lsn);
}
