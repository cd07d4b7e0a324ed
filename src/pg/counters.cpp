// counters.cpp: per-queue job counters in shared memory (see counters.hpp).
#include "pg/counters.hpp"
#include "pg/maintenance_state.hpp"

#include "pg/gucs.hpp"
#include "pg/rings.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "access/twophase.h"
#include "access/xlog.h"
#include "common/hashfn.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
}

namespace awa::pg {

namespace {

constexpr int kStates = core::kJobStateCount;
constexpr int kQueueKeyBytes = 804;  // 200 characters of up to 4 bytes, NUL, padding
constexpr int kMaxDatabases = 64;

enum DbState : int { kUntrusted = 0, kBuilding = 1, kTrusted = 2 };

struct CountersKey {
	Oid database;
	char queue[kQueueKeyBytes];
};

struct QueueCounters {
	CountersKey key;
	int db_index;
	pg_atomic_uint64 main[kStates];   // the counts, while the database is trusted
	pg_atomic_uint64 since[kStates];  // moves committed during a rebuild's pass
};

struct DbCounters {
	Oid database;  // InvalidOid: free
	Oid incarnation;
	int state;
	int builder_pid;
	bool overflow;  // more queues than awa.max_queues: never trusted
};

struct CountersShared {
	DbCounters dbs[kMaxDatabases];
	// The snapshot of the rebuild in progress (one at a time, cluster-wide).
	Oid build_database;
	TransactionId build_xmin;
	TransactionId build_xmax;
	int build_xcnt;
	TransactionId build_xip[FLEXIBLE_ARRAY_MEMBER];
};

CountersShared *shared = NULL;
HTAB *queues = NULL;
LWLock *counters_lock = NULL;
int snapshot_capacity = 0;
shmem_request_hook_type previous_request_hook = NULL;
shmem_startup_hook_type previous_startup_hook = NULL;

Size
SharedSize()
{
	return add_size(offsetof(CountersShared, build_xip), mul_size(sizeof(TransactionId), snapshot_capacity));
}

void
RequestShmem()
{
	if (previous_request_hook)
		previous_request_hook();
	snapshot_capacity = MaxBackends + max_prepared_xacts;
	RequestAddinShmemSpace(SharedSize());
	RequestAddinShmemSpace(hash_estimate_size(awa_max_queues, sizeof(QueueCounters)));
	RequestNamedLWLockTranche("awa_counters", 1);
}

void
StartupShmem()
{
	if (previous_startup_hook)
		previous_startup_hook();
	snapshot_capacity = MaxBackends + max_prepared_xacts;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	bool found;
	shared = static_cast<CountersShared *>(ShmemInitStruct("awa counters", SharedSize(), &found));
	if (!found)
		memset(shared, 0, SharedSize());
	HASHCTL info;
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(CountersKey);
	info.entrysize = sizeof(QueueCounters);
	queues = ShmemInitHash("awa queue counters", awa_max_queues, awa_max_queues, &info,
	                       HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	counters_lock = &(GetNamedLWLockTranche("awa_counters"))->lock;
	LWLockRelease(AddinShmemInitLock);
}

// ---------------------------------------------------------------------------
// Transaction-local pending moves.
// ---------------------------------------------------------------------------
constexpr int kMaxPending = 64;
struct Pending {
	QueueCounters *entry;
	int level;  // subtransaction nesting level that made the moves
	int64 delta[kStates];
};
Pending pending[kMaxPending];
int pending_count = 0;
bool pending_lost = false;  // more distinct queues than kMaxPending: distrust at commit
TransactionId pending_xid = InvalidTransactionId;

// Per-backend cache: queue name -> shared entry (entries are never removed).
constexpr int kEntryCacheSize = 64;
struct EntryCacheSlot {
	Oid database;
	uint32 hash;
	QueueCounters *entry;
};
EntryCacheSlot entry_cache[kEntryCacheSize];

void
MakeKey(CountersKey *key, const char *queue, int length)
{
	memset(key, 0, sizeof(*key));
	key->database = MyDatabaseId;
	memcpy(key->queue, queue, Min(length, kQueueKeyBytes - 1));
}

// The database's slot; creates it (exclusive lock held by the caller) when
// `create`. -1 when none.
int
DbIndex(Oid database, bool create)
{
	int free_slot = -1;
	for (int i = 0; i < kMaxDatabases; i++) {
		if (shared->dbs[i].database == database)
			return i;
		if (shared->dbs[i].database == InvalidOid && free_slot < 0)
			free_slot = i;
	}
	if (!create || free_slot < 0)
		return -1;
	DbCounters &db = shared->dbs[free_slot];
	memset(&db, 0, sizeof(db));
	db.database = database;
	db.state = kUntrusted;
	return free_slot;
}

// Zeroes every counter of the database (exclusive lock held).
void
ZeroDatabase(Oid database, bool main_too)
{
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, queues);
	while (QueueCounters *entry = static_cast<QueueCounters *>(hash_seq_search(&status))) {
		if (entry->key.database != database)
			continue;
		for (int s = 0; s < kStates; s++) {
			if (main_too)
				pg_atomic_write_u64(&entry->main[s], 0);
			pg_atomic_write_u64(&entry->since[s], 0);
		}
	}
}

// Makes sure the database's slot belongs to this incarnation of the extension
// (a dropped and re-created extension starts untrusted). Returns the slot, -1
// if there is none to be had.
int
CurrentDbIndex()
{
	Oid incarnation = ExtensionIncarnation();
	LWLockAcquire(counters_lock, LW_SHARED);
	int index = DbIndex(MyDatabaseId, false);
	bool current = index >= 0 && shared->dbs[index].incarnation == incarnation;
	LWLockRelease(counters_lock);
	if (current)
		return index;
	LWLockAcquire(counters_lock, LW_EXCLUSIVE);
	index = DbIndex(MyDatabaseId, true);
	if (index >= 0 && shared->dbs[index].incarnation != incarnation) {
		shared->dbs[index].incarnation = incarnation;
		shared->dbs[index].state = kUntrusted;
		shared->dbs[index].overflow = false;
		ZeroDatabase(MyDatabaseId, true);
	}
	LWLockRelease(counters_lock);
	return index;
}

// Creates (exclusive lock held) or finds the shared entry of a queue.
QueueCounters *
EnterQueue(const CountersKey &key, int db_index, bool *full)
{
	bool found;
	QueueCounters *entry = static_cast<QueueCounters *>(hash_search(queues, &key, HASH_ENTER_NULL, &found));
	if (entry == NULL) {
		*full = true;
		return NULL;
	}
	if (!found) {
		entry->db_index = db_index;
		for (int s = 0; s < kStates; s++) {
			pg_atomic_init_u64(&entry->main[s], 0);
			pg_atomic_init_u64(&entry->since[s], 0);
		}
	}
	return entry;
}

QueueCounters *
EntryOf(text *queue)
{
	int length = VARSIZE_ANY_EXHDR(queue);
	const char *chars = VARDATA_ANY(queue);
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(chars), length);
	EntryCacheSlot &slot = entry_cache[hash % kEntryCacheSize];
	if (slot.entry != NULL && slot.database == MyDatabaseId && slot.hash == hash &&
	    strncmp(slot.entry->key.queue, chars, length) == 0 && slot.entry->key.queue[length] == '\0')
		return slot.entry;

	int db_index = CurrentDbIndex();
	if (db_index < 0)
		return NULL;
	CountersKey key;
	MakeKey(&key, chars, length);
	LWLockAcquire(counters_lock, LW_SHARED);
	QueueCounters *entry = static_cast<QueueCounters *>(hash_search(queues, &key, HASH_FIND, NULL));
	LWLockRelease(counters_lock);
	if (entry == NULL) {
		bool full = false;
		LWLockAcquire(counters_lock, LW_EXCLUSIVE);
		entry = EnterQueue(key, db_index, &full);
		if (full && !shared->dbs[db_index].overflow) {
			shared->dbs[db_index].overflow = true;
			shared->dbs[db_index].state = kUntrusted;
		}
		LWLockRelease(counters_lock);
		static bool warned = false;  // once per backend
		if (full && !warned) {
			warned = true;
			ereport(WARNING, (errmsg("awa: more queues than awa.max_queues (%d); queue counts are counted exactly",
			                         awa_max_queues),
			                  errhint("Raise awa.max_queues (requires a restart).")));
		}
	}
	if (entry != NULL)
		slot = EntryCacheSlot{MyDatabaseId, hash, entry};
	return entry;
}

bool
VisibleToBuild(TransactionId xid)
{
	if (!TransactionIdIsValid(xid))
		return false;
	if (TransactionIdFollowsOrEquals(xid, shared->build_xmax))
		return false;
	if (TransactionIdPrecedes(xid, shared->build_xmin))
		return true;
	for (int i = 0; i < shared->build_xcnt; i++)
		if (shared->build_xip[i] == xid)
			return false;
	return true;
}

// Commit: applies the pending moves. Runs in a commit callback: plain code
// that cannot fail.
void
ApplyPending()
{
	if (pending_count == 0 && !pending_lost)
		return;
	LWLockAcquire(counters_lock, pending_lost ? LW_EXCLUSIVE : LW_SHARED);
	if (pending_lost) {
		int index = DbIndex(MyDatabaseId, false);
		if (index >= 0)
			shared->dbs[index].state = kUntrusted;
	} else {
		for (int i = 0; i < pending_count; i++) {
			QueueCounters *entry = pending[i].entry;
			const DbCounters &db = shared->dbs[entry->db_index];
			pg_atomic_uint64 *target = NULL;
			if (db.state == kTrusted)
				target = entry->main;
			else if (db.state == kBuilding && shared->build_database == db.database && !VisibleToBuild(pending_xid))
				target = entry->since;
			if (target == NULL)
				continue;
			for (int s = 0; s < kStates; s++)
				if (pending[i].delta[s] != 0)
					pg_atomic_fetch_add_u64(&target[s], pending[i].delta[s]);
		}
	}
	LWLockRelease(counters_lock);
}

void
ForgetPending()
{
	pending_count = 0;
	pending_lost = false;
	pending_xid = InvalidTransactionId;
}

void
OnTransactionEvent(XactEvent event, void *)
{
	switch (event) {
	case XACT_EVENT_PRE_COMMIT:
		pending_xid = GetTopTransactionIdIfAny();
		break;
	case XACT_EVENT_COMMIT:
		ApplyPending();
		ForgetPending();
		break;
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_ABORT:
	case XACT_EVENT_PARALLEL_COMMIT:
		ForgetPending();
		break;
	case XACT_EVENT_PRE_PREPARE:
		if (pending_count > 0 || pending_lost)
			ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			                errmsg("awa: a transaction that changed jobs cannot be prepared"),
			                errhint("Run awa's functions in transactions that are not prepared.")));
		break;
	default:
		break;
	}
}

void
OnSubTransactionEvent(SubXactEvent event, SubTransactionId, SubTransactionId, void *)
{
	int level = GetCurrentTransactionNestLevel();
	if (event == SUBXACT_EVENT_ABORT_SUB) {
		int kept = 0;
		for (int i = 0; i < pending_count; i++)
			if (pending[i].level < level)
				pending[kept++] = pending[i];
		pending_count = kept;
	} else if (event == SUBXACT_EVENT_COMMIT_SUB) {
		// Fold the level's moves into its parent's.
		for (int i = 0; i < pending_count; i++)
			if (pending[i].level >= level)
				pending[i].level = level - 1;
	}
}

void
ReleaseBuild(int db_index, bool trusted)
{
	LWLockAcquire(counters_lock, LW_EXCLUSIVE);
	if (trusted) {
		HASH_SEQ_STATUS status;
		hash_seq_init(&status, queues);
		while (QueueCounters *entry = static_cast<QueueCounters *>(hash_seq_search(&status))) {
			if (entry->key.database != MyDatabaseId)
				continue;
			for (int s = 0; s < kStates; s++)
				pg_atomic_fetch_add_u64(&entry->main[s], static_cast<int64>(pg_atomic_read_u64(&entry->since[s])));
		}
	}
	if (shared->build_database == MyDatabaseId)
		shared->build_database = InvalidOid;
	DbCounters &db = shared->dbs[db_index];
	db.state = trusted && !db.overflow ? kTrusted : kUntrusted;
	db.builder_pid = 0;
	LWLockRelease(counters_lock);
}

}  // namespace

void
InstallCounters()
{
	previous_request_hook = shmem_request_hook;
	shmem_request_hook = RequestShmem;
	previous_startup_hook = shmem_startup_hook;
	shmem_startup_hook = StartupShmem;
	RegisterXactCallback(OnTransactionEvent, NULL);
	RegisterSubXactCallback(OnSubTransactionEvent, NULL);
}

void
CountMove(text *queue, int from, int to, int64 n)
{
	if (shared == NULL || n == 0)
		return;
	QueueCounters *entry = EntryOf(queue);
	if (entry == NULL)
		return;  // overflow: this database is counted exactly
	int level = GetCurrentTransactionNestLevel();
	Pending *slot = NULL;
	for (int i = 0; i < pending_count; i++) {
		if (pending[i].entry == entry && pending[i].level == level) {
			slot = &pending[i];
			break;
		}
	}
	if (slot == NULL) {
		if (pending_count == kMaxPending) {
			pending_lost = true;
			return;
		}
		slot = &pending[pending_count++];
		memset(slot, 0, sizeof(*slot));
		slot->entry = entry;
		slot->level = level;
	}
	if (from != kNoState)
		slot->delta[from] -= n;
	if (to != kNoState)
		slot->delta[to] += n;
}

bool
EnsureCountersTrusted()
{
	if (shared == NULL || RecoveryInProgress())
		return false;
	int db_index = CurrentDbIndex();
	if (db_index < 0)
		return false;
	LWLockAcquire(counters_lock, LW_SHARED);
	bool settled = shared->dbs[db_index].state == kTrusted || shared->dbs[db_index].overflow;
	LWLockRelease(counters_lock);
	if (!settled && !TransactionIdIsValid(GetTopTransactionIdIfAny())) {
		// A rebuild must not overlap a prune: TRUNCATE is not MVCC-safe, so a
		// pass whose snapshot predates a prune's commit could read the
		// truncated (empty) slot and also receive the prune's negative moves.
		// Ring steps hold this lock for their whole transaction.
		(void)DirectFunctionCall1(pg_advisory_xact_lock_int8, Int64GetDatum(kRingMaintenanceLockKey));
	}
	LWLockAcquire(counters_lock, LW_EXCLUSIVE);
	DbCounters &db = shared->dbs[db_index];
	if (db.state == kTrusted || db.overflow) {
		bool trusted = db.state == kTrusted;
		LWLockRelease(counters_lock);
		return trusted;
	}
	// A transaction with its own writes would count them in the pass and
	// again at its commit; another rebuild may be running.
	bool builder_alive = db.state == kBuilding && db.builder_pid != 0 && BackendPidGetProc(db.builder_pid) != NULL;
	if (TransactionIdIsValid(GetTopTransactionIdIfAny()) || builder_alive ||
	    (shared->build_database != InvalidOid && shared->build_database != MyDatabaseId)) {
		LWLockRelease(counters_lock);
		return false;
	}
	db.state = kBuilding;
	db.builder_pid = MyProcPid;
	ZeroDatabase(MyDatabaseId, false);
	Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
	shared->build_database = MyDatabaseId;
	shared->build_xmin = snapshot->xmin;
	shared->build_xmax = snapshot->xmax;
	shared->build_xcnt = Min(static_cast<int>(snapshot->xcnt), snapshot_capacity);
	memcpy(shared->build_xip, snapshot->xip, sizeof(TransactionId) * shared->build_xcnt);
	LWLockRelease(counters_lock);

	PG_TRY();
	{
		if (awa_debug_counter_rebuild_lock != 0)
			(void)DirectFunctionCall1(pg_advisory_xact_lock_int8, Int64GetDatum(awa_debug_counter_rebuild_lock));
		ExecuteWithSnapshot(Stmt::kCountsScan, 0, NULL, NULL, snapshot);
		LWLockAcquire(counters_lock, LW_EXCLUSIVE);
		bool full = false;
		for (uint64 i = 0; i < SPI_processed; i++) {
			HeapTuple tuple = SPI_tuptable->vals[i];
			TupleDesc desc = SPI_tuptable->tupdesc;
			bool isnull;
			text *queue = DatumGetTextPP(SPI_getbinval(tuple, desc, 1, &isnull));
			CountersKey key;
			MakeKey(&key, VARDATA_ANY(queue), VARSIZE_ANY_EXHDR(queue));
			QueueCounters *entry = EnterQueue(key, db_index, &full);
			if (entry == NULL)
				break;
			for (int s = 0; s < kStates; s++)
				pg_atomic_write_u64(&entry->main[s],
				                    static_cast<uint64>(DatumGetInt64(SPI_getbinval(tuple, desc, s + 2, &isnull))));
		}
		// Queues the pass did not list have no jobs in the snapshot.
		HASH_SEQ_STATUS status;
		hash_seq_init(&status, queues);
		while (QueueCounters *entry = static_cast<QueueCounters *>(hash_seq_search(&status))) {
			if (entry->key.database != MyDatabaseId)
				continue;
			bool listed = false;
			for (uint64 i = 0; i < SPI_processed && !listed; i++) {
				bool isnull;
				text *queue = DatumGetTextPP(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
				int length = VARSIZE_ANY_EXHDR(queue);
				listed = strncmp(entry->key.queue, VARDATA_ANY(queue), length) == 0 && entry->key.queue[length] == '\0';
			}
			if (!listed)
				for (int s = 0; s < kStates; s++)
					pg_atomic_write_u64(&entry->main[s], 0);
		}
		if (full)
			shared->dbs[db_index].overflow = true;
		LWLockRelease(counters_lock);
	}
	PG_CATCH();
	{
		ReleaseBuild(db_index, false);
		UnregisterSnapshot(snapshot);
		PG_RE_THROW();
	}
	PG_END_TRY();
	UnregisterSnapshot(snapshot);
	ReleaseBuild(db_index, true);
	return !shared->dbs[db_index].overflow;
}

bool
RebuildCounters()
{
	if (shared == NULL)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("awa's counters need awa in shared_preload_libraries"),
		                errhint("Without it awa.queue_counts always counts exactly.")));
	if (RecoveryInProgress())
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION), errmsg("counters are not kept on a standby"),
		                errhint("awa.queue_counts counts exactly during recovery.")));
	if (TransactionIdIsValid(GetTopTransactionIdIfAny()) || pending_count > 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_TRANSACTION_STATE),
		                errmsg("awa.rebuild_counters() must run in a transaction that has changed nothing"),
		                errhint("Call it in a transaction of its own.")));
	int db_index = CurrentDbIndex();
	if (db_index < 0)
		return false;
	LWLockAcquire(counters_lock, LW_EXCLUSIVE);
	DbCounters &db = shared->dbs[db_index];
	bool builder_alive = db.state == kBuilding && db.builder_pid != 0 && BackendPidGetProc(db.builder_pid) != NULL;
	if (!builder_alive) {
		db.state = kUntrusted;
		db.overflow = false;
	}
	LWLockRelease(counters_lock);
	return EnsureCountersTrusted();
}

bool
ReadCounters(text *queue, QueueCounts *out)
{
	memset(out, 0, sizeof(*out));
	if (shared == NULL)
		return false;
	int db_index = CurrentDbIndex();
	if (db_index < 0)
		return false;
	int length = VARSIZE_ANY_EXHDR(queue);
	CountersKey key;
	MakeKey(&key, VARDATA_ANY(queue), length);
	LWLockAcquire(counters_lock, LW_SHARED);
	bool trusted = shared->dbs[db_index].state == kTrusted;
	QueueCounters *entry = static_cast<QueueCounters *>(hash_search(queues, &key, HASH_FIND, NULL));
	if (trusted && entry != NULL)
		for (int s = 0; s < kStates; s++)
			out->count[s] = static_cast<int64>(pg_atomic_read_u64(&entry->main[s]));
	LWLockRelease(counters_lock);
	if (!trusted)
		return false;
	for (int i = 0; i < pending_count; i++)
		if (entry != NULL && pending[i].entry == entry)
			for (int s = 0; s < kStates; s++)
				out->count[s] += pending[i].delta[s];
	return true;
}

}  // namespace awa::pg
