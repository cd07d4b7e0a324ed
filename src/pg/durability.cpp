// durability.cpp: see durability.hpp.
#include "pg/durability.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "storage/lwlock.h"
#include "utils/guc.h"
}

namespace awa::pg {

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

// True when the synchronous standbys, if any are configured, confirmed `lsn`.
// As SyncRepWaitForLSN decides whether standbys are defined: from shared
// memory once the checkpointer has published it, else from the setting.
bool
StandbysConfirmed(XLogRecPtr lsn, int mode)
{
	LWLockAcquire(SyncRepLock, LW_SHARED);
#ifdef SYNC_STANDBY_DEFINED  // 15.14 and later
	bits8 status = WalSndCtl->sync_standbys_status;
	bool defined = (status & SYNC_STANDBY_INIT) != 0
	                   ? (status & SYNC_STANDBY_DEFINED) != 0
	                   : SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0';
#else
	bool defined = WalSndCtl->sync_standbys_defined;
#endif
	bool confirmed = !defined || WalSndCtl->lsn[mode] >= lsn;
	LWLockRelease(SyncRepLock);
	return confirmed;
}

}  // namespace

void
WaitForSynchronousStandbys(XLogRecPtr lsn)
{
	if (max_wal_senders <= 0)
		return;
	int nest_level = NewGUCNestLevel();
	if (synchronous_commit < SYNCHRONOUS_COMMIT_REMOTE_WRITE)
		(void)set_config_option("synchronous_commit", "on", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
		                        false);
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

XLogRecPtr
InsertedWalEnd()
{
	XLogRecPtr lsn = GetXLogInsertRecPtr();
	if (XLogSegmentOffset(lsn, wal_segment_size) == SizeOfXLogLongPHD)
		return lsn - SizeOfXLogLongPHD;
	if (lsn % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		return lsn - SizeOfXLogShortPHD;
	return lsn;
}

}  // namespace awa::pg
