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
#include "utils/syscache.h"
}

namespace awa::pg {

namespace {

// True when nothing will read a table with the snapshot of the statement that
// called awa.claim, once the claim has returned. Then that snapshot need not
// hold back the xmin horizon while the claim sleeps: every look for work takes
// a snapshot of its own.
bool
StatementSnapshotProtectsNothing(Oid claim_function)
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
	// No other portal of the transaction may read later (a suspended one of
	// the extended protocol).
	if (!ThereAreNoReadyPortals())
		return false;
	const PlannedStmt *statement = portal->queryDesc->plannedstmt;
	if (statement == NULL || statement->relationOids != NIL)
		return false;
	ListCell *cell;
	foreach (cell, statement->rtable) {
		const RangeTblEntry *entry = static_cast<const RangeTblEntry *>(lfirst(cell));
		if (entry->rtekind == RTE_RELATION)
			return false;
	}
	// The plan calls no function but built-in ones and awa.claim: the
	// planner records every other one it references (PlanInvalItem), and a
	// STABLE function there could read a table with this snapshot.
	uint32 claim_hash = GetSysCacheHashValue1(PROCOID, ObjectIdGetDatum(claim_function));
	foreach (cell, statement->invalItems) {
		const PlanInvalItem *item = static_cast<const PlanInvalItem *>(lfirst(cell));
		if (item->cacheId != PROCOID || item->hashValue != claim_hash)
			return false;
	}
	return true;
}

}  // namespace

bool
AdvertiseNoSnapshotWhileWaiting(Oid waiting_function)
{
	if (!StatementSnapshotProtectsNothing(waiting_function))
		return false;
	// As SnapshotResetXmin does when no snapshot is left; the next snapshot
	// taken (a claim's next look) advertises its xmin again.
	InvalidateCatalogSnapshot();
	MyProc->xmin = InvalidTransactionId;
	return true;
}

void
SleepWithoutSnapshot(Oid claim_function, uint32 wake_bucket, uint64 seen, int64 micros)
{
	(void)AdvertiseNoSnapshotWhileWaiting(claim_function);
	(void)SleepForQueueWork(wake_bucket, seen, static_cast<long>((micros + 999) / 1000));
}

}  // namespace awa::pg
