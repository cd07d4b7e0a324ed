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
#include "pg/guard.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "storage/lwlock.h"
#include "utils/guc.h"
#include "utils/pg_lsn.h"
}

using namespace awa::pg;

namespace {

// The standbys' confirmation a commit waits for at `synchronous_commit`
// (SyncRepWaitMode, which syncrep.c keeps to itself).
int
WaitMode()
{
	switch (synchronous_commit) {
	case SYNCHRONOUS_COMMIT_REMOTE_WRITE:
		return SYNC_REP_WAIT_WRITE;
	case SYNCHRONOUS_COMMIT_REMOTE_APPLY:
		return SYNC_REP_WAIT_APPLY;
	default:
		return SYNC_REP_WAIT_FLUSH;
	}
}

// True when the synchronous standbys (if any are configured) confirmed `lsn`.
bool
StandbysConfirmed(XLogRecPtr lsn, int mode)
{
	LWLockAcquire(SyncRepLock, LW_SHARED);
#ifdef SYNC_STANDBY_DEFINED  // 15.14 and later
	bool defined = (WalSndCtl->sync_standbys_status & SYNC_STANDBY_DEFINED) != 0;
#else
	bool defined = WalSndCtl->sync_standbys_defined;
#endif
	bool confirmed = !defined || WalSndCtl->lsn[mode] >= lsn;
	LWLockRelease(SyncRepLock);
	return confirmed;
}

}  // namespace

// awa.await_durable() -> pg_lsn
AWA_FUNCTION(awa_await_durable)
{
	if (RecoveryInProgress())
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
		                errmsg("awa.await_durable() cannot run during recovery"),
		                errhint("Call it on the primary, where the claim committed.")));
	XLogRecPtr lsn = GetXLogInsertRecPtr();
	// Nothing of this statement reads a table: while it waits it holds no
	// lock of its own and, when the statement allows (claim_sleep.hpp), no
	// snapshot either.
	(void)AdvertiseNoSnapshotWhileWaiting(fcinfo->flinfo->fn_oid);
	XLogFlush(lsn);
	CHECK_FOR_INTERRUPTS();
	if (max_wal_senders > 0) {
		// As a synchronous commit would wait: at the session's level, and at
		// least for the standbys' flush when the session commits
		// asynchronously (as a claim does).
		int nest_level = NewGUCNestLevel();
		if (synchronous_commit < SYNCHRONOUS_COMMIT_REMOTE_WRITE)
			(void)set_config_option("synchronous_commit", "on", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true,
			                        0, false);
		int mode = WaitMode();
		// Returns early, with a WARNING, on a cancel or statement_timeout.
		SyncRepWaitForLSN(lsn, true);
		AtEOXact_GUC(true, nest_level);
		CHECK_FOR_INTERRUPTS();
		if (!StandbysConfirmed(lsn, mode))
			ereport(ERROR, (errcode(ERRCODE_QUERY_CANCELED),
			                errmsg("canceled the wait for the synchronous standbys to confirm %X/%X",
			                       static_cast<uint32>(lsn >> 32), static_cast<uint32>(lsn)),
			                errhint("It is flushed on this server; the standbys have not confirmed it yet.")));
	}
	PG_RETURN_LSN(lsn);
}
