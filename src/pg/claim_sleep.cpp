// claim_sleep.cpp: how a waiting claim sleeps (see claim_sleep.hpp).
#include "pg/claim_sleep.hpp"

#include "pg/wakeups.hpp"

extern "C" {
#include "executor/execdesc.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "storage/proc.h"
#include "tcop/pquery.h"
#include "utils/portal.h"
}

namespace awa::pg {

namespace {

// True when nothing will read a table with the snapshot of the statement that
// called awa.claim, once the claim has returned. Then that snapshot need not
// hold back the xmin horizon while the claim sleeps: every look for work takes
// a snapshot of its own.
bool
StatementSnapshotProtectsNothing()
{
	// A transaction block or a transaction snapshot may read tables later
	// with a snapshot as old as this statement's.
	if (IsTransactionBlock() || IsolationUsesXactSnapshot() || GetCurrentTransactionNestLevel() != 1)
		return false;
	Portal portal = ActivePortal;
	if (portal == NULL || portal->strategy != PORTAL_ONE_SELECT || portal->queryDesc == NULL)
		return false;
	// Called from the portal's own query (a function or a procedure in
	// between would have pushed a snapshot of its own).
	if (!ActiveSnapshotSet() || GetActiveSnapshot() != portal->queryDesc->snapshot)
		return false;
	const PlannedStmt *statement = portal->queryDesc->plannedstmt;
	if (statement == NULL)
		return false;
	ListCell *cell;
	foreach (cell, statement->rtable) {
		const RangeTblEntry *entry = static_cast<const RangeTblEntry *>(lfirst(cell));
		if (entry->rtekind == RTE_RELATION)
			return false;
	}
	return true;
}

}  // namespace

void
SleepWithoutSnapshot(uint32 wake_bucket, uint64 seen, int64 micros)
{
	if (StatementSnapshotProtectsNothing()) {
		// As SnapshotResetXmin does when no snapshot is left; the next look
		// for work takes a snapshot and advertises its xmin again.
		InvalidateCatalogSnapshot();
		MyProc->xmin = InvalidTransactionId;
	}
	(void)SleepForQueueWork(wake_bucket, seen, static_cast<long>((micros + 999) / 1000));
}

}  // namespace awa::pg
