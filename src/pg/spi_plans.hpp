// spi_plans.hpp: every SQL statement awa runs, prepared once per backend (and
// per ring slot for statements that address one ring child directly) and kept.
//
// Statements name ring children (awa.ready_entries_3) rather than the
// partitioned parents: a generic plan over a parent locks every child at
// executor start in PostgreSQL 15, which would make every claim conflict with a
// prune of any slot.
//
// awa's functions are SECURITY DEFINER, so the caller's search_path must never
// decide what a statement means. Every relation is schema-qualified, and every
// statement is prepared and executed under a pinned override search path
// (pg_catalog only, no pg_temp). Pinning at preparation alone would not do: the
// plan cache re-parses a statement under the search_path in force at execution
// whenever it differs from the one the plan was made under. Pinning here
// rather than with a SET clause on the functions costs nothing on paths that
// run no statement (a steady-state enqueue runs none) and avoids the GUC
// save/restore of every call (9 % of enqueue CPU in perf).
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// The column of kReadyRows that holds run_at.
constexpr int kReadyRowsRunAtColumn = 10;

enum class Stmt {
	kRingPositions,
	kLaneOf,
	kKeyedLaneOf,
	kLanesOfQueue,
	kKeyedPriorities,
	kLanesOfPriority,
	kLaneById,
	kKeyOfLane,
	kKeyRunningOne,
	kKeyCountsScan,
	kKeyWeight,
	kRegisterLane,
	kInsertDeferredMany,
	kReadyRows,
	kQueueSettings,
	kDeleteAttemptState,
	kUpsertAttemptState,
	kReleaseUnique,
	kClaimUnique,
	kUniqueHolder,
	kPromoteDue,
	kPromoteParked,
	kUnparkQueue,
	kOldestParked,
	kAnyQueuePaused,
	kCountsScan,
	kCountsScanOne,
	kHoldRings,
	kQueueList,
	kPausedQueues,
	kOldestAvailableSql,
	kLaneSeqClaimed,
	kLaneSeqTombstoned,
	kInsertTombstone,
	kReadyBody,
	kAttemptProgress,
	kEndPayload,
	kInsertRetryable,
	kInsertDlq,
	kInsertFailed,
	kAllLanes,
	kAllLanesOfQueue,
	kAttemptHeartbeat,
	kReadyRowAt,
	kReadyRowOfJob,
	kLanesAfter,
	kLaneHasRingRows,
	kDeleteLane,
	kLaneMayLeaveQueue,
	kCount
};

// The prepared plan of `stmt` for ring slot `slot` (0 for slot-free
// statements). May ereport.
SPIPlanPtr Plan(Stmt stmt, int slot = 0);

// The (sub)transaction callbacks (callbacks.cpp, with or without the
// preload): the end of a transaction, or the abort of a subtransaction,
// clears the flags with which awa's planner hook recognises its own
// statements (an error may have left them set).
void OnPlannerTransactionEvent(XactEvent event);
void OnPlannerSubTransactionEvent(SubXactEvent event, SubTransactionId subtransaction);

// The search_path GUC of a flush of pending enqueues (pending_enqueues.cpp),
// which runs at PRE_COMMIT as awa's owner outside any SECURITY DEFINER call:
// "pg_catalog, pg_temp" at a new GUC nest level, as a SET clause would give,
// but set only just before the first statement (or utility) that runs after
// DeferSearchPath. Only code such a statement runs (triggers, functions) can
// see the GUC (names in the statements themselves resolve under the pinned
// override path), so a flush that runs none, the steady-state one, skips the
// GUC save and restore (about 6,400 instructions of each single-job enqueue,
// 4 %). EndDeferredSearchPath restores the GUCs if a statement set the path.
// An error in between: the (sub)transaction's abort restores the GUCs, and
// the (sub)transaction callbacks above forget the deferral.
void DeferSearchPath();
void EndDeferredSearchPath();

// Runs a prepared statement with the transaction's snapshot rules; returns the
// SPI result code after checking it. May ereport.
int Execute(Stmt stmt, int slot, Datum *values, const char *nulls, long limit = 0);

// Runs a prepared statement against the latest committed state (a fresh
// snapshot, also under REPEATABLE READ): used where a decision must see every
// commit that precedes a lock this transaction now holds. May ereport.
int ExecuteLatest(Stmt stmt, int slot, Datum *values, const char *nulls, long limit = 0);

// Runs a prepared statement (read only) under the given snapshot. May ereport.
int ExecuteWithSnapshot(Stmt stmt, int slot, Datum *values, const char *nulls, Snapshot snapshot);

// Runs a one-shot utility statement. May ereport.
void ExecuteUtility(const char *sql);

}  // namespace awa::pg
