// counters.cpp: per-queue job counters in shared memory (see counters.hpp).
#include "pg/counters.hpp"

#include "pg/server_run_key.hpp"
#include "pg/core_calls.hpp"

#include "pg/gucs.hpp"
#include "pg/key_limits.hpp"
#include "pg/ring_epoch.hpp"
#include "pg/subtransaction.hpp"
#include "pg/rings.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "access/twophase.h"
#include "access/xlog.h"
#include "common/hashfn.h"
#include "lib/dshash.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/backend_status.h"
#include "utils/dsa.h"
#include "utils/syscache.h"
}

namespace awa::pg {

namespace {

constexpr int kStates = core::kJobStateCount;
// The counters live in a dynamic shared memory area that starts in this much
// of the main shared memory and grows by DSM segments as queues appear
// (issue 10 §5: a fixed table of awa.max_queues entries fell back to scans
// past 1,024 queues).
constexpr Size kAreaInitialBytes = 1024 * 1024;

enum DbState : int { kUntrusted = 0, kBuilding = 1, kTrusted = 2 };

// Keyed by a 64-bit hash of the queue name; the entry keeps the name, and a
// lookup whose name differs (a hash collision) makes the database count
// exactly (never a wrong count).
struct CountersKey {
	Oid database;
	uint32 padding;
	uint64 name_hash;
};

struct QueueCounters {
	CountersKey key;
	dsa_pointer name;  // the queue name, NUL-terminated
	int db_index;
	pg_atomic_uint64 main[kStates];   // the counts, while the database is trusted
	pg_atomic_uint64 since[kStates];  // moves committed during a rebuild's pass
	// Event totals since the server started (or the extension was created
	// again), whatever the counts' trust: events are added, never recounted.
	pg_atomic_uint64 events[core::kJobEventCount];
	// Attempts reserved by claims under a concurrency limit whose transaction
	// has not ended (running_limits.hpp), whatever the counts' trust. A
	// claim's commit applies its running count first, then takes its
	// reservation off, so running + in flight never counts one short.
	pg_atomic_uint64 claims_in_flight;
	// Claims the limit gave fewer attempts than they asked for, since the
	// server started (awa.queue_metrics' claims_limited).
	pg_atomic_uint64 claims_limited;
	// Claims the queue's rate limit gave fewer attempts than they asked for
	// (out of tokens), since the server started (claims_rate_limited).
	pg_atomic_uint64 claims_rate_limited;
	// The queue's rate-limit bucket (TakeRateTokens; docs/flow-control.md), under rate_lock.
	// rate_held: tokens taken by claims still in progress, which give back
	// what they do not use; the refill stops at burst - rate_held, so
	// rate_tokens + rate_held never exceeds the burst (a claim's give-back
	// cannot add to a bucket refilled to the full burst meanwhile).
	// The arithmetic is core/token_bucket.hpp's (exact integers).
	slock_t rate_lock;
	awa::core::TokenBucket rate_bucket;
	awa::core::RateSpec rate_spec;  // the rate of the last take (FreeIdleKeyEntries refills with it)
	// A key's entry only (key_limits.hpp): the key epoch at which
	// FreeIdleKeyEntries found it idle; 0 when live. A lookup makes it live
	// again; still retired and idle a pass later, with every key user's
	// epoch past it, the entry is freed (see "Freeing idle key entries").
	pg_atomic_uint64 retired_at;
	// The head of each lane (counters.hpp, "oldest available job"), under
	// head_lock. head_changes counts the applied events that touched the
	// queue's available jobs, head_removals those that took some out.
	slock_t head_lock;
	uint64 head_changes;
	uint64 head_removals;
	LaneHead heads[kHeadLanes];
};

struct DbCounters {
	Oid database;  // InvalidOid: free
	Oid incarnation;
	int state;
	int builder_pid;
	bool overflow;  // no entry to be had for one of its queues (see EnterQueue): never trusted
	// A transaction whose moves were not recorded (or that asked to be
	// rebuilt: DistrustCountersAtCommit) committed while a rebuild ran: the
	// rebuild ends untrusted. (Setting kUntrusted under a rebuild made the
	// moves committed until its end go nowhere, and its end trusted: counts
	// too low for good, found from outside as available -N after a drain.)
	bool stale_build;
	// When a transaction that set a first limit per key committed (plus a
	// second: its settings' invalidation is sent after the commit callback):
	// transactions that began before it may count a key's attempts by the
	// old settings (none), so no rebuild is trusted while one of them runs
	// (OlderTransactionsRun). 0: none.
	TimestampTz distrusted_at;
	int64 entries;  // its queues' entries, at most awa.max_queues_per_database (under counters_lock)
	int64 key_entries;  // of them, keys' (key_limits.hpp): FreeIdleKeyEntries walks nothing without one
};

struct CountersShared {
	// Databases with counters at once (awa.max_counted_databases). The slot
	// of a dropped database is freed, with its queues' entries, when another
	// database finds the table full. Placed after build_xip.
	DbCounters *dbs;
	int db_capacity;
	int area_tranche;
	int table_tranche;
	dshash_table_handle table_handle;
	int64 entry_count;  // under counters_lock
	// Freeing idle key entries (see "Freeing idle key entries"): the epoch,
	// bumped by each pass that retires entries; the cache epoch, bumped
	// before it, tells backends to forget the key entries they cached; and
	// per process (pgprocno) the epoch at which its current transaction
	// began to use key entries, 0 when it uses none.
	pg_atomic_uint64 key_epoch;
	pg_atomic_uint64 key_cache_epoch;
	// A key was reserved under its limit lock (no entry to be had) since
	// the start: reservations on keys' entries look at that lock too.
	pg_atomic_uint32 key_lock_path_used;
	int key_slot_count;
	pg_atomic_uint64 *key_slots;
	// The snapshot of the rebuild in progress (one at a time, cluster-wide).
	Oid build_database;
	int build_pid;  // the rebuilding backend (a dead one frees the rebuild)
	TransactionId build_xmin;
	TransactionId build_xmax;
	int build_xcnt;
	TransactionId build_xip[FLEXIBLE_ARRAY_MEMBER];
};

CountersShared *shared = NULL;
void *area_space = NULL;  // the area's start in the main shared memory
// This backend's attachment (Table()).
dsa_area *area = NULL;
dshash_table *queues = NULL;
LWLock *counters_lock = NULL;
int snapshot_capacity = 0;

dshash_parameters
TableParameters()
{
	dshash_parameters parameters;
	parameters.key_size = sizeof(CountersKey);
	parameters.entry_size = sizeof(QueueCounters);
	parameters.compare_function = dshash_memcmp;
	parameters.hash_function = dshash_memhash;
	parameters.tranche_id = shared->table_tranche;
	return parameters;
}

// This backend's view of the counters' hash table, attached at first use.
// May ereport (out of memory).
dshash_table *
Table()
{
	if (queues != NULL)
		return queues;
	LWLockRegisterTranche(shared->area_tranche, "awa_counters_area");
	LWLockRegisterTranche(shared->table_tranche, "awa_counters_table");
	MemoryContext caller = MemoryContextSwitchTo(TopMemoryContext);
	area = dsa_attach_in_place(area_space, NULL);
	dsa_pin_mapping(area);
	dshash_parameters parameters = TableParameters();
	queues = dshash_attach(area, &parameters, shared->table_handle, NULL);
	MemoryContextSwitchTo(caller);
	return queues;
}

const char *
NameOf(const QueueCounters *entry)
{
	return static_cast<const char *>(dsa_get_address(area, entry->name));
}

// A key's entry (key_limits.hpp), not a queue's.
bool
IsKeyEntry(QueueCounters *entry)
{
	const char *name = NameOf(entry);
	return IsKeyCounterName(name, strlen(name));
}

bool
SameName(const QueueCounters *entry, const char *chars, int length)
{
	const char *name = NameOf(entry);
	return strncmp(name, chars, length) == 0 && name[length] == '\0';
}

// Marks every lane of the queue unknown (an event whose effect on the heads
// is not known). Plain code that cannot fail.
void
ForgetHeads(QueueCounters *entry)
{
	SpinLockAcquire(&entry->head_lock);
	for (int l = 0; l < kHeadLanes; l++)
		entry->heads[l].state = kHeadUnknown;
	entry->head_changes++;
	entry->head_removals++;
	SpinLockRelease(&entry->head_lock);
}

Size
DbsOffset()
{
	return MAXALIGN(add_size(offsetof(CountersShared, build_xip), mul_size(sizeof(TransactionId), snapshot_capacity)));
}

Size
KeySlotsOffset()
{
	return MAXALIGN(add_size(DbsOffset(), mul_size(sizeof(DbCounters), awa_max_counted_databases)));
}

int
KeySlotCount()
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

Size
SharedSize()
{
	return add_size(KeySlotsOffset(), mul_size(sizeof(pg_atomic_uint64), KeySlotCount()));
}

}  // namespace

void
RequestCountersShmem()
{
	snapshot_capacity = MaxBackends + max_prepared_xacts;
	RequestAddinShmemSpace(SharedSize());
	RequestAddinShmemSpace(kAreaInitialBytes);
	RequestNamedLWLockTranche("awa_counters", 1);
}

void
StartupCountersShmem()
{
	snapshot_capacity = MaxBackends + max_prepared_xacts;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	bool found;
	shared = static_cast<CountersShared *>(ShmemInitStruct("awa counters", SharedSize(), &found));
	bool area_found;
	area_space = ShmemInitStruct("awa counters area", kAreaInitialBytes, &area_found);
	if (!found) {
		memset(shared, 0, SharedSize());
		shared->dbs = reinterpret_cast<DbCounters *>(reinterpret_cast<char *>(shared) + DbsOffset());
		shared->db_capacity = awa_max_counted_databases;
		shared->key_slots = reinterpret_cast<pg_atomic_uint64 *>(reinterpret_cast<char *>(shared) + KeySlotsOffset());
		shared->key_slot_count = KeySlotCount();
		for (int i = 0; i < shared->key_slot_count; i++)
			pg_atomic_init_u64(&shared->key_slots[i], 0);
		pg_atomic_init_u64(&shared->key_epoch, 1);
		pg_atomic_init_u32(&shared->key_lock_path_used, 0);
		pg_atomic_init_u64(&shared->key_cache_epoch, 1);
		// As PostgreSQL's shared statistics do: the area and its hash table
		// are made here, in the postmaster, and backends attach to them.
		shared->area_tranche = LWLockNewTrancheId();
		shared->table_tranche = LWLockNewTrancheId();
		dsa_area *made = dsa_create_in_place(area_space, kAreaInitialBytes, shared->area_tranche, NULL);
		dsa_pin(made);
		dshash_parameters parameters = TableParameters();
		dshash_table *table = dshash_create(made, &parameters, NULL);
		shared->table_handle = dshash_get_hash_table_handle(table);
		dshash_detach(table);
		dsa_detach(made);
	}
	counters_lock = &(GetNamedLWLockTranche("awa_counters"))->lock;
	LWLockRelease(AddinShmemInitLock);
}

namespace {

// ---------------------------------------------------------------------------
// Transaction-local pending moves.
// ---------------------------------------------------------------------------
constexpr int kMaxPending = 64;
// What a transaction (level) did to one lane's available jobs.
struct PendingLane {
	int64 add_seq;     // lowest lane_seq added (PG_INT64_MAX: none)
	TimestampTz add_at;
	int64 remove_seq;  // lowest lane_seq removed by a cancel or a claim (PG_INT64_MAX: none)
	int cancels;
	int claims;
	ClaimHeadNote claim;  // the claim's, when claims == 1
};

void
ClearLane(PendingLane *lane)
{
	memset(lane, 0, sizeof(*lane));
	lane->add_seq = PG_INT64_MAX;
	lane->remove_seq = PG_INT64_MAX;
}

void
MergeLane(PendingLane *into, const PendingLane &from)
{
	if (from.add_seq < into->add_seq) {
		into->add_seq = from.add_seq;
		into->add_at = from.add_at;
	}
	into->remove_seq = Min(into->remove_seq, from.remove_seq);
	into->cancels += from.cancels;
	if (into->claims == 0)
		into->claim = from.claim;
	into->claims += from.claims;
}

struct Pending {
	// The queue's shared entry; NULL for a queue that has none yet: the entry
	// is made at PRE_COMMIT (MakePendingEntries), so a move that rolls back
	// (its transaction, or the subtransaction that made it) takes no entry.
	QueueCounters *entry;
	char *name;     // while entry is NULL: the queue name, palloc'd in TopTransactionContext
	int length;     // of the name
	uint32 hash;    // hash_any of the name (the entry cache's)
	int level;      // subtransaction nesting level that made the moves
	int64 delta[kStates];
	int64 events[core::kJobEventCount];
	// The heads: jobs moved into or out of available (CountMove), and those of
	// them a Note* call described; the two differ when some move was recorded
	// only as a count (its lanes' heads become unknown at commit).
	int64 available_moved;
	int64 available_noted;
	PendingLane lanes[kHeadLanes];
	uint64 removals_seen;  // the entry's head_removals at PRE_COMMIT
};
Pending pending[kMaxPending];
int pending_count = 0;
bool pending_lost = false;  // more distinct queues than kMaxPending: distrust at commit
bool settings_distrust = false;  // DistrustCountersAtCommit: also wait for older transactions
TransactionId pending_xid = InvalidTransactionId;

// Per-backend cache: queue name -> shared entry (an entry is removed only with
// its dropped database, which has no backend left).
constexpr int kEntryCacheSize = 64;
struct EntryCacheSlot {
	Oid database;
	uint32 hash;
	QueueCounters *entry;
	bool key;  // a key's entry (freed when idle: see below)
};
EntryCacheSlot entry_cache[kEntryCacheSize];

// ---------------------------------------------------------------------------
// Freeing idle key entries.
//
// A queue's entry lives as long as its database; a key's would too, and keys
// come and go (a tenant's, an order's): the database's share of entries would
// fill up for good, and its keys beyond it are counted exactly. So the
// counters task frees the entries of idle keys (FreeIdleKeyEntries): no
// running attempt, no reservation, a full rate bucket, which is what a new
// entry of the key would hold. Backends keep entry pointers beyond the
// counters lock (the entry cache across transactions, the pending moves and
// the token holds within one), so an entry is freed in two passes, as epoch
// reclamation does:
//  1. A pass marks the idle entries retired at the current key epoch R, then
//     bumps the cache epoch and the epoch (R + 1).
//  2. A transaction that uses key entries first publishes the epoch it began
//     at in its process's slot (BeginKeyEntryUse), then forgets the key
//     entries it cached if the cache epoch moved; it clears the slot at its
//     end, after every callback that may touch an entry (EndKeyEntryUse). A
//     lookup under the counters lock makes a retired entry live again.
//  3. A later pass frees an entry still retired at R and still idle only when
//     every published slot is 0 or past R: every transaction that could hold
//     the pointer has ended, and any later one looked it up (and revived it)
//     or never had it. Frees and revivals are under the counters lock.
// ---------------------------------------------------------------------------
bool key_use_open = false;           // this transaction published its slot
uint64 key_cache_epoch_seen = 0;     // the cache epoch the entry cache is of
bool key_slot_exit_registered = false;

void
ForgetCachedKeyEntries()
{
	for (EntryCacheSlot &slot : entry_cache)
		if (slot.key)
			slot = EntryCacheSlot{InvalidOid, 0, NULL, false};
}

void
ClearKeySlot(int, Datum)
{
	if (shared != NULL && MyProc != NULL && MyProc->pgprocno < shared->key_slot_count)
		pg_atomic_write_u64(&shared->key_slots[MyProc->pgprocno], 0);
	key_use_open = false;
}

// Before this transaction's first key entry pointer. Plain code that cannot
// fail (after the first call: the exit callback's registration).
void
BeginKeyEntryUse()
{
	if (key_use_open || MyProc == NULL || MyProc->pgprocno >= shared->key_slot_count)
		return;
	if (!key_slot_exit_registered) {
		before_shmem_exit(ClearKeySlot, 0);
		key_slot_exit_registered = true;
	}
	pg_atomic_write_u64(&shared->key_slots[MyProc->pgprocno], pg_atomic_read_u64(&shared->key_epoch));
	pg_memory_barrier();
	uint64 cache_epoch = pg_atomic_read_u64(&shared->key_cache_epoch);
	if (cache_epoch != key_cache_epoch_seen) {
		ForgetCachedKeyEntries();
		key_cache_epoch_seen = cache_epoch;
	}
	key_use_open = true;
}

// A lookup found the entry (counters lock held): it is live again.
void
Revive(QueueCounters *entry)
{
	if (pg_atomic_read_u64(&entry->retired_at) != 0)
		pg_atomic_write_u64(&entry->retired_at, 0);
}

void
MakeKey(CountersKey *key, const char *queue, int length)
{
	memset(key, 0, sizeof(*key));
	key->database = MyDatabaseId;
	key->name_hash = hash_bytes_extended(reinterpret_cast<const unsigned char *>(queue), length, 0);
}

// Calls `visit` for every entry of the database (counters_lock held). Entries
// never move, and are removed only with their dropped database, so the
// pointers of a live database's entries stay valid.
template <typename Visit>
void
ForEachEntry(Oid database, Visit visit)
{
	dshash_seq_status status;
	dshash_seq_init(&status, Table(), false);
	while (QueueCounters *entry = static_cast<QueueCounters *>(dshash_seq_next(&status)))
		if (entry->key.database == database)
			visit(entry);
	dshash_seq_term(&status);
}

// The queue's entry, NULL if none (counters_lock held). *collision when an
// entry has the key but another name.
QueueCounters *
FindQueue(const CountersKey &key, const char *chars, int length, bool *collision)
{
	*collision = false;
	QueueCounters *entry = static_cast<QueueCounters *>(dshash_find(Table(), &key, false));
	if (entry == NULL)
		return NULL;
	bool same = SameName(entry, chars, length);
	dshash_release_lock(Table(), entry);
	if (!same) {
		*collision = true;
		return NULL;
	}
	return entry;
}

// The database's slot; creates it (exclusive lock held by the caller) when
// `create`. -1 when none.
int
DbIndex(Oid database, bool create)
{
	int free_slot = -1;
	for (int i = 0; i < shared->db_capacity; i++) {
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
	ForEachEntry(database, [main_too](QueueCounters *entry) {
		for (int s = 0; s < kStates; s++) {
			if (main_too)
				pg_atomic_write_u64(&entry->main[s], 0);
			pg_atomic_write_u64(&entry->since[s], 0);
		}
		if (main_too) {
			for (int e = 0; e < core::kJobEventCount; e++)
				pg_atomic_write_u64(&entry->events[e], 0);
			ForgetHeads(entry);  // a new incarnation of the extension: new lanes
		}
	});
}

// Frees the slots, and the queue entries, of databases that no longer exist
// (each database created with awa and dropped again would otherwise keep its
// slot for the server's lifetime). The catalog is read without counters_lock.
// Requires a transaction.
void
FreeDroppedDatabases()
{
	Oid *listed = static_cast<Oid *>(palloc(sizeof(Oid) * shared->db_capacity));
	int count = 0;
	LWLockAcquire(counters_lock, LW_SHARED);
	for (int i = 0; i < shared->db_capacity; i++)
		if (shared->dbs[i].database != InvalidOid && shared->dbs[i].database != MyDatabaseId)
			listed[count++] = shared->dbs[i].database;
	LWLockRelease(counters_lock);
	int dropped = 0;
	for (int i = 0; i < count; i++)
		if (!SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(listed[i])))
			listed[dropped++] = listed[i];
	if (dropped == 0) {
		pfree(listed);
		return;
	}
	LWLockAcquire(counters_lock, LW_EXCLUSIVE);
	for (int i = 0; i < dropped; i++) {
		int index = DbIndex(listed[i], false);
		if (index < 0)
			continue;
		dshash_seq_status status;
		dshash_seq_init(&status, Table(), true);
		while (QueueCounters *entry = static_cast<QueueCounters *>(dshash_seq_next(&status))) {
			if (entry->key.database != listed[i])
				continue;
			dsa_free(area, entry->name);
			dshash_delete_current(&status);
			shared->entry_count--;
		}
		dshash_seq_term(&status);
		if (shared->build_database == listed[i])
			shared->build_database = InvalidOid;
		memset(&shared->dbs[index], 0, sizeof(DbCounters));
	}
	LWLockRelease(counters_lock);
	pfree(listed);
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
	for (int attempt = 0; attempt < 2; attempt++) {
		LWLockAcquire(counters_lock, LW_EXCLUSIVE);
		index = DbIndex(MyDatabaseId, true);
		if (index >= 0 || attempt == 1)
			break;
		// Full: slots of dropped databases are freed, then one more try.
		LWLockRelease(counters_lock);
		FreeDroppedDatabases();
	}
	if (index >= 0 && shared->dbs[index].incarnation != incarnation) {
		shared->dbs[index].incarnation = incarnation;
		shared->dbs[index].state = kUntrusted;
		shared->dbs[index].overflow = false;
		ZeroDatabase(MyDatabaseId, true);
	}
	LWLockRelease(counters_lock);
	return index;
}

// Why a queue got no entry.
enum Refusal : int { kNotRefused = 0, kTableFull, kShareFull, kCollision };

// Creates (exclusive lock held) or finds the shared entry of a queue. NULL
// with *refused when awa.max_queues entries exist (all databases), the
// database holds its share (awa.max_queues_per_database), or the key is
// another name's.
QueueCounters *
EnterQueue(const char *chars, int length, int db_index, Refusal *refused)
{
	CountersKey key;
	MakeKey(&key, chars, length);
	bool collision;
	QueueCounters *entry = FindQueue(key, chars, length, &collision);
	*refused = kNotRefused;
	if (entry != NULL) {
		Revive(entry);
		return entry;
	}
	if (collision)
		*refused = kCollision;
	else if (shared->dbs[db_index].entries >= awa_max_queues_per_database)
		*refused = kShareFull;
	else if (shared->entry_count >= awa_max_queues)
		*refused = kTableFull;
	if (*refused != kNotRefused)
		return NULL;
	// The name first: an allocation that fails leaves no entry half made.
	dsa_pointer name = dsa_allocate(area, length + 1);
	char *copy = static_cast<char *>(dsa_get_address(area, name));
	memcpy(copy, chars, length);
	copy[length] = '\0';
	bool found;
	entry = static_cast<QueueCounters *>(dshash_find_or_insert(Table(), &key, &found));
	if (!found) {
		entry->name = name;
		entry->db_index = db_index;
		for (int s = 0; s < kStates; s++) {
			pg_atomic_init_u64(&entry->main[s], 0);
			pg_atomic_init_u64(&entry->since[s], 0);
		}
		for (int e = 0; e < core::kJobEventCount; e++)
			pg_atomic_init_u64(&entry->events[e], 0);
		pg_atomic_init_u64(&entry->claims_in_flight, 0);
		pg_atomic_init_u64(&entry->claims_limited, 0);
		pg_atomic_init_u64(&entry->claims_rate_limited, 0);
		SpinLockInit(&entry->rate_lock);
		entry->rate_bucket = awa::core::TokenBucket{};
		entry->rate_spec = awa::core::RateSpec{1, 1, 1};
		pg_atomic_init_u64(&entry->retired_at, 0);
		SpinLockInit(&entry->head_lock);
		entry->head_changes = 0;
		entry->head_removals = 0;
		for (int l = 0; l < kHeadLanes; l++)
			entry->heads[l] = LaneHead{kHeadUnknown, 0, 0};
		shared->entry_count++;
		shared->dbs[db_index].entries++;
		if (IsKeyCounterName(chars, length))
			shared->dbs[db_index].key_entries++;
	}
	dshash_release_lock(Table(), entry);
	if (found)
		dsa_free(area, name);  // cannot happen under the exclusive lock; kept safe
	return entry;
}

// The queue's entry from this backend's cache, or from the table; NULL when
// it has none (yet), or the database has no counters (*counted false).
QueueCounters *
FindEntry(const char *chars, int length, uint32 hash, bool *counted)
{
	*counted = true;
	bool is_key = IsKeyCounterName(chars, length);
	if (is_key)
		BeginKeyEntryUse();
	EntryCacheSlot &slot = entry_cache[hash % kEntryCacheSize];
	if (slot.entry != NULL && slot.database == MyDatabaseId && slot.hash == hash && SameName(slot.entry, chars, length) &&
	    (!is_key || pg_atomic_read_u64(&slot.entry->retired_at) == 0))
		return slot.entry;
	if (CurrentDbIndex() < 0) {
		*counted = false;
		return NULL;
	}
	CountersKey key;
	MakeKey(&key, chars, length);
	LWLockAcquire(counters_lock, LW_SHARED);
	bool collision;
	QueueCounters *entry = FindQueue(key, chars, length, &collision);
	if (entry != NULL)
		Revive(entry);
	LWLockRelease(counters_lock);
	if (entry != NULL)
		slot = EntryCacheSlot{MyDatabaseId, hash, entry, is_key};
	return entry;
}

// Makes the queue's entry (at PRE_COMMIT: the transaction is about to
// commit). NULL when none is to be had: then this database is counted
// exactly from now on (its own overflow; no other database's). May ereport
// (out of memory, the catalog read of FreeDroppedDatabases).
QueueCounters *
MakeEntry(const char *chars, int length, uint32 hash)
{
	int db_index = CurrentDbIndex();
	if (db_index < 0)
		return NULL;
	bool key = IsKeyCounterName(chars, length);
	if (key)
		BeginKeyEntryUse();
	Refusal refused = kNotRefused;
	LWLockAcquire(counters_lock, LW_EXCLUSIVE);
	QueueCounters *entry = EnterQueue(chars, length, db_index, &refused);
	if (refused == kTableFull) {
		// Dropped databases' entries count against awa.max_queues
		// until they are freed: free them, then one more try.
		LWLockRelease(counters_lock);
		FreeDroppedDatabases();
		LWLockAcquire(counters_lock, LW_EXCLUSIVE);
		entry = EnterQueue(chars, length, db_index, &refused);
	}
	if (entry == NULL && !shared->dbs[db_index].overflow) {
		shared->dbs[db_index].overflow = true;
		shared->dbs[db_index].state = kUntrusted;
	}
	LWLockRelease(counters_lock);
	static bool warned = false;  // once per backend
	if (entry == NULL && !warned) {
		warned = true;
		if (refused == kShareFull && key)
			ereport(WARNING,
			        (errmsg("awa: more queues and keys with limits per key in this database than "
			                "awa.max_queues_per_database (%d); queue counts are counted exactly",
			                awa_max_queues_per_database),
			         errdetail("Idle keys' entries are freed by the counters task; the counts are trusted again "
			                   "once there is room."),
			         errhint("Raise awa.max_queues_per_database and reload the configuration.")));
		else if (refused == kShareFull)
			ereport(WARNING,
			        (errmsg("awa: more queues in this database than awa.max_queues_per_database (%d); queue counts "
			                "are counted exactly",
			                awa_max_queues_per_database),
			         errhint("Raise awa.max_queues_per_database, reload the configuration and call "
			                 "awa.rebuild_counters().")));
		else
			ereport(WARNING, (errmsg("awa: more queues than awa.max_queues (%d); queue counts are counted exactly",
			                         awa_max_queues),
			                  errhint("Raise awa.max_queues, reload the configuration and call awa.rebuild_counters().")));
	}
	if (entry != NULL)
		entry_cache[hash % kEntryCacheSize] = EntryCacheSlot{MyDatabaseId, hash, entry, key};
	return entry;
}

// The pending moves whose queue has no entry yet get one, at PRE_COMMIT; the
// moves of a queue that gets none are dropped (its database now counts
// exactly).
void
MakePendingEntries()
{
	if (pending_lost)
		return;  // the database is made untrusted at commit: no entry needed
	int kept = 0;
	for (int i = 0; i < pending_count; i++) {
		if (pending[i].entry == NULL) {
			pending[i].entry = MakeEntry(pending[i].name, pending[i].length, pending[i].hash);
			if (pending[i].entry == NULL)
				continue;
		}
		pending[kept++] = pending[i];
	}
	pending_count = kept;
}

// Whether pending slot `p` holds moves of the queue (`entry`: its entry, or
// NULL when it has none yet).
bool
SlotOfQueue(const Pending &p, QueueCounters *entry, const char *chars, int length, uint32 hash)
{
	if (entry != NULL && p.entry == entry)
		return true;
	if (p.hash != hash || (entry != NULL && p.entry != NULL))
		return false;
	const char *name = p.entry != NULL ? NameOf(p.entry) : p.name;
	return strncmp(name, chars, length) == 0 && name[length] == '\0';
}

bool
SameQueue(const Pending &a, const Pending &b)
{
	if (a.entry != NULL)
		return SlotOfQueue(b, a.entry, NameOf(a.entry), static_cast<int>(strlen(NameOf(a.entry))), a.hash);
	return SlotOfQueue(b, NULL, a.name, a.length, a.hash);
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

// At PRE_COMMIT, before the commit is visible: what removals had been
// applied to each queue an add of this transaction touches (a removal applied
// after this may have taken the added jobs).
void
NoteRemovalsSeen()
{
	for (int i = 0; i < pending_count; i++) {
		QueueCounters *entry = pending[i].entry;
		if (entry == NULL)
			continue;
		SpinLockAcquire(&entry->head_lock);
		pending[i].removals_seen = entry->head_removals;
		SpinLockRelease(&entry->head_lock);
	}
}

// Applies a committed transaction's changes to the queue's lane heads
// (counters.hpp). Runs in a commit callback: plain code that cannot fail.
void
ApplyHeads(QueueCounters *entry, const Pending &p)
{
	if (p.available_moved == 0 && p.available_noted == 0)
		return;
	SpinLockAcquire(&entry->head_lock);
	bool removed = false;
	if (p.available_moved != p.available_noted) {
		// Some move into or out of available said nothing of its lane.
		for (int l = 0; l < kHeadLanes; l++)
			entry->heads[l].state = kHeadUnknown;
		removed = true;
	} else {
		for (int l = 0; l < kHeadLanes; l++) {
			const PendingLane &lane = p.lanes[l];
			LaneHead &head = entry->heads[l];
			bool removes = lane.remove_seq != PG_INT64_MAX;
			bool adds = lane.add_seq != PG_INT64_MAX;
			if (!removes && !adds)
				continue;
			removed = removed || removes;
			// A lone claim that took the head, whose snapshot no applied
			// event has overtaken: the head it read next is the head.
			if (lane.claims == 1 && lane.cancels == 0 && !adds && lane.claim.took_head &&
			    lane.claim.generation == entry->head_changes) {
				head = lane.claim.next;
				continue;
			}
			if (removes && head.state != kHeadUnknown && (head.state == kHeadEmpty || lane.remove_seq <= head.seq))
				head.state = kHeadUnknown;
			if (adds && head.state != kHeadUnknown && (head.state == kHeadEmpty || lane.add_seq < head.seq)) {
				if (!removes && entry->head_removals == p.removals_seen)
					head = LaneHead{kHeadKnown, lane.add_seq, lane.add_at};
				else
					head.state = kHeadUnknown;
			}
		}
	}
	entry->head_changes++;
	if (removed)
		entry->head_removals++;
	SpinLockRelease(&entry->head_lock);
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
		if (index >= 0) {
			if (shared->dbs[index].state == kBuilding)
				shared->dbs[index].stale_build = true;  // (moves keep going to `since` until it ends)
			else
				shared->dbs[index].state = kUntrusted;
			if (settings_distrust)
				shared->dbs[index].distrusted_at = GetCurrentTimestamp() + USECS_PER_SEC;
		}
		// Some moves were not recorded: no head of the database is known.
		ForEachEntry(MyDatabaseId, [](QueueCounters *entry) { ForgetHeads(entry); });
	} else {
		for (int i = 0; i < pending_count; i++) {
			QueueCounters *entry = pending[i].entry;
			if (entry == NULL)
				continue;  // (MakePendingEntries gave every slot one at PRE_COMMIT)
			ApplyHeads(entry, pending[i]);
			for (int e = 0; e < core::kJobEventCount; e++)
				if (pending[i].events[e] != 0)
					pg_atomic_fetch_add_u64(&entry->events[e], pending[i].events[e]);
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
	settings_distrust = false;
	pending_xid = InvalidTransactionId;
}

}  // namespace

void
DistrustCountersAtCommit()
{
	pending_lost = true;
	settings_distrust = true;
}

void
OnCountersTransactionEvent(XactEvent event)
{
	switch (event) {
	case XACT_EVENT_PRE_COMMIT:
		// The extension was dropped in this transaction: its jobs, and the
		// moves that counted them, went with it (its COMMIT failed here,
		// "ring_epoch_seq is missing", found in review of issue 19).
		if ((pending_count > 0 || pending_lost) && !OidIsValid(ExtensionIncarnationIfPresent())) {
			ForgetPending();
			break;
		}
		// May ereport: the transaction then aborts.
		MakePendingEntries();
		NoteRemovalsSeen();
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
OnCountersSubTransactionEvent(SubXactEvent event)
{
	int level = GetCurrentTransactionNestLevel();
	if (event == SUBXACT_EVENT_ABORT_SUB) {
		int kept = 0;
		for (int i = 0; i < pending_count; i++)
			if (pending[i].level < level)
				pending[kept++] = pending[i];
		pending_count = kept;
	} else if (event == SUBXACT_EVENT_COMMIT_SUB) {
		// Fold the level's moves into its parent's, one slot per queue and
		// level (a driver that wraps every statement in a savepoint would
		// otherwise use a slot per statement and overflow the table).
		int kept = 0;
		for (int i = 0; i < pending_count; i++) {
			if (pending[i].level >= level)
				pending[i].level = level - 1;
			Pending *same = NULL;
			for (int j = 0; j < kept && same == NULL; j++)
				if (pending[j].level == pending[i].level && SameQueue(pending[j], pending[i]))
					same = &pending[j];
			if (same == NULL) {
				pending[kept++] = pending[i];
				continue;
			}
			for (int s = 0; s < kStates; s++)
				same->delta[s] += pending[i].delta[s];
			for (int e = 0; e < core::kJobEventCount; e++)
				same->events[e] += pending[i].events[e];
			same->available_moved += pending[i].available_moved;
			same->available_noted += pending[i].available_noted;
			for (int l = 0; l < kHeadLanes; l++)
				MergeLane(&same->lanes[l], pending[i].lanes[l]);
		}
		pending_count = kept;
	}
}

namespace {

void
ReleaseBuild(int db_index, bool trusted)
{
	LWLockAcquire(counters_lock, LW_EXCLUSIVE);
	if (trusted)
		ForEachEntry(MyDatabaseId, [](QueueCounters *entry) {
			for (int s = 0; s < kStates; s++)
				pg_atomic_fetch_add_u64(&entry->main[s], static_cast<int64>(pg_atomic_read_u64(&entry->since[s])));
		});
	if (shared->build_database == MyDatabaseId)
		shared->build_database = InvalidOid;
	DbCounters &db = shared->dbs[db_index];
	db.state = trusted && !db.overflow && !db.stale_build ? kTrusted : kUntrusted;
	db.stale_build = false;
	db.builder_pid = 0;
	LWLockRelease(counters_lock);
}

}  // namespace

namespace {

// The pending slot of the queue at this (sub)transaction level, made when
// missing; NULL when the database has no counters, or the table is full
// (pending_lost is then set). May ereport (out of memory).
Pending *
SlotFor(text *queue)
{
	int length = VARSIZE_ANY_EXHDR(queue);
	const char *chars = VARDATA_ANY(queue);
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(chars), length);
	bool counted;
	QueueCounters *entry = FindEntry(chars, length, hash, &counted);
	if (!counted)
		return NULL;  // no counters for this database: it is counted exactly
	int level = GetCurrentTransactionNestLevel();
	for (int i = 0; i < pending_count; i++)
		if (pending[i].level == level && SlotOfQueue(pending[i], entry, chars, length, hash))
			return &pending[i];
	if (pending_count == kMaxPending) {
		pending_lost = true;
		return NULL;
	}
	// The name first: an allocation that fails leaves no slot half made.
	char *name = NULL;
	if (entry == NULL) {
		name = static_cast<char *>(MemoryContextAlloc(TopTransactionContext, length + 1));
		memcpy(name, chars, length);
		name[length] = '\0';
	}
	Pending *slot = &pending[pending_count++];
	memset(slot, 0, sizeof(*slot));
	slot->entry = entry;
	slot->name = name;
	slot->length = length;
	slot->hash = hash;
	slot->level = level;
	for (int l = 0; l < kHeadLanes; l++)
		ClearLane(&slot->lanes[l]);
	return slot;
}

PendingLane *
LaneOf(Pending *slot, int priority)
{
	Assert(priority >= 1 && priority <= kHeadLanes);
	return &slot->lanes[priority - 1];
}

}  // namespace

namespace {

// The queue's pending deltas for a move of n jobs; the slot, or NULL when
// there is nothing to record.
Pending *
RecordMove(text *queue, int from, int to, int64 n)
{
	if (shared == NULL || n == 0)
		return NULL;
	Pending *slot = SlotFor(queue);
	if (slot == NULL)
		return NULL;
	if (from != kNoState)
		slot->delta[from] -= n;
	if (to != kNoState)
		slot->delta[to] += n;
	constexpr int kAvailable = static_cast<int>(core::JobState::kAvailable);
	if ((from == kAvailable) != (to == kAvailable))
		slot->available_moved += n;
	return slot;
}

}  // namespace

void
CountMove(text *queue, int from, int to, int64 n, core::JobEvent event)
{
	Pending *slot = RecordMove(queue, from, to, n);
	if (slot == NULL)
		return;
	if (event == core::JobEvent::kNone)
		event = core::EventOfMove(from, to);
	if (event != core::JobEvent::kNone)
		slot->events[static_cast<int>(event)] += n;
}

void
CountTransfer(text *from_queue, int from, text *to_queue, int to, int64 n)
{
	(void)RecordMove(from_queue, from, kNoState, n);
	(void)RecordMove(to_queue, kNoState, to, n);
}

uint64
HeadGeneration(text *queue)
{
	if (shared == NULL)
		return 0;
	int length = VARSIZE_ANY_EXHDR(queue);
	const char *chars = VARDATA_ANY(queue);
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(chars), length);
	bool counted;
	QueueCounters *entry = FindEntry(chars, length, hash, &counted);
	if (entry == NULL)
		return 0;
	SpinLockAcquire(&entry->head_lock);
	uint64 generation = entry->head_changes;
	SpinLockRelease(&entry->head_lock);
	return generation;
}

namespace {

// The pending lane a head note of n jobs goes to, with the n jobs noted on
// its queue's slot; NULL when there is nothing to note (no preload, no jobs,
// no slot to be had).
PendingLane *
NotedLane(text *queue, int priority, int64 n)
{
	if (shared == NULL || n == 0)
		return NULL;
	Pending *slot = SlotFor(queue);
	if (slot == NULL)
		return NULL;
	slot->available_noted += n;
	return LaneOf(slot, priority);
}

}  // namespace

void
NoteHeadAdd(text *queue, int priority, int64 lane_seq, TimestampTz run_at, int64 n)
{
	PendingLane *lane = NotedLane(queue, priority, n);
	if (lane != NULL && lane_seq < lane->add_seq) {
		lane->add_seq = lane_seq;
		lane->add_at = run_at;
	}
}

void
NoteKeyedAvailable(text *queue, int64 n)
{
	if (shared == NULL || n == 0)
		return;
	if (Pending *slot = SlotFor(queue))
		slot->available_noted += n;
}

void
NoteHeadRemove(text *queue, int priority, int64 lane_seq, int64 n)
{
	PendingLane *lane = NotedLane(queue, priority, n);
	if (lane == NULL)
		return;
	lane->remove_seq = Min(lane->remove_seq, lane_seq);
	lane->cancels++;
}

void
NoteHeadClaim(text *queue, int priority, int64 first, int64 n, const ClaimHeadNote &note)
{
	PendingLane *lane = NotedLane(queue, priority, n);
	if (lane == NULL)
		return;
	lane->remove_seq = Min(lane->remove_seq, first);
	if (lane->claims == 0)
		lane->claim = note;
	lane->claims++;
}

int
ReadEventTotals(QueueEventTotals **out)
{
	*out = NULL;
	if (shared == NULL)
		return 0;
	int db_index = CurrentDbIndex();
	if (db_index < 0)
		return 0;
	int capacity = 16;
	int count = 0;
	QueueEventTotals *list = static_cast<QueueEventTotals *>(palloc(sizeof(QueueEventTotals) * capacity));
	LWLockAcquire(counters_lock, LW_SHARED);
	// palloc under the LWLock: an out-of-memory error releases it at abort.
	ForEachEntry(MyDatabaseId, [&](QueueCounters *entry) {
		if (IsKeyEntry(entry))
			return;  // a key's (key_limits.hpp): its queue has the events
		if (count == capacity) {
			capacity *= 2;
			list = static_cast<QueueEventTotals *>(repalloc(list, sizeof(QueueEventTotals) * capacity));
		}
		QueueEventTotals &row = list[count++];
		row.queue = pstrdup(NameOf(entry));
		for (int e = 0; e < core::kJobEventCount; e++)
			row.totals[e] = static_cast<int64>(pg_atomic_read_u64(&entry->events[e]));
	});
	LWLockRelease(counters_lock);
	*out = list;
	return count;
}

namespace {

// Whether a transaction of this database (other than this one) began before
// `since` (pg_stat_activity's xact_start; with track_activities off none is
// seen). Found from outside: a claim or an end that began before a first
// limit per key and committed after the rebuild's snapshot counted its key
// by the old settings, so the key's running count was off by one for good
// (over its limit, or blocked with room).
bool
OlderTransactionsRun(TimestampTz since)
{
	pgstat_clear_backend_activity_snapshot();
	int n = pgstat_fetch_stat_numbackends();
	for (int i = 1; i <= n; i++) {
		LocalPgBackendStatus *local = pgstat_fetch_stat_local_beentry(i);
		if (local == NULL)
			continue;
		const PgBackendStatus &b = local->backendStatus;
		if (b.st_procpid != MyProcPid && b.st_databaseid == MyDatabaseId && b.st_xact_start_timestamp != 0 &&
		    b.st_xact_start_timestamp < since)
			return true;
	}
	return false;
}

}  // namespace

namespace {
bool TrustCounters(int db_index, TimestampTz distrusted_at);
}  // namespace

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
	TimestampTz distrusted_at = shared->dbs[db_index].distrusted_at;
	LWLockRelease(counters_lock);
	// Not before every transaction that may hold the settings of before a
	// first limit per key has ended (exact counts meanwhile).
	if (!settled && distrusted_at != 0 && (GetCurrentTimestamp() < distrusted_at || OlderTransactionsRun(distrusted_at)))
		return false;
	if (!settled && !TransactionIdIsValid(GetTopTransactionIdIfAny())) {
		// A rebuild must not overlap a prune: TRUNCATE is not MVCC-safe, so a
		// pass whose snapshot predates a prune's commit could read the
		// truncated (empty) slot and also receive the prune's negative moves.
		// Ring steps hold this lock for their whole transaction and take it
		// with a try: held here, shared, for the rebuild only (a session
		// lock, released before any error goes on), so a caller left idle in
		// its transaction afterwards does not keep every ring step skipped (it
		// did, as an xact lock: test/sql/idle_locks.sql).
		Datum ring_lock = Int64GetDatum(kRingMaintenanceLockKey);
		(void)DirectFunctionCall1(pg_advisory_lock_shared_int8, ring_lock);
		volatile bool trusted = false;
		PG_TRY();
		{
			trusted = TrustCounters(db_index, distrusted_at);
		}
		PG_FINALLY();
		{
			(void)DirectFunctionCall1(pg_advisory_unlock_shared_int8, ring_lock);
		}
		PG_END_TRY();
		return trusted;
	}
	return TrustCounters(db_index, distrusted_at);
}

namespace {

// EnsureCountersTrusted's rebuild, once the ring lock is held (or the
// transaction has its own writes, and nothing is rebuilt).
bool
TrustCounters(int db_index, TimestampTz distrusted_at)
{
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
	// A rebuild whose backend is gone (it cannot have ended it) is over.
	if (shared->build_database != InvalidOid && BackendPidGetProc(shared->build_pid) == NULL)
		shared->build_database = InvalidOid;
	if (TransactionIdIsValid(GetTopTransactionIdIfAny()) || builder_alive ||
	    (shared->build_database != InvalidOid && shared->build_database != MyDatabaseId)) {
		LWLockRelease(counters_lock);
		return false;
	}
	if (db.distrusted_at != distrusted_at) {  // a later one came: look again then
		LWLockRelease(counters_lock);
		return false;
	}
	db.distrusted_at = 0;
	db.state = kBuilding;
	db.stale_build = false;
	db.builder_pid = MyProcPid;
	ZeroDatabase(MyDatabaseId, false);
	Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
	shared->build_database = MyDatabaseId;
	shared->build_pid = MyProcPid;
	shared->build_xmin = snapshot->xmin;
	shared->build_xmax = snapshot->xmax;
	shared->build_xcnt = Min(static_cast<int>(snapshot->xcnt), snapshot_capacity);
	memcpy(shared->build_xip, snapshot->xip, sizeof(TransactionId) * shared->build_xcnt);
	LWLockRelease(counters_lock);

	PG_TRY();
	{
		if (awa_debug_counter_rebuild_lock != 0)
			(void)DirectFunctionCall1(pg_advisory_xact_lock_int8, Int64GetDatum(awa_debug_counter_rebuild_lock));
		// The queues, then the keys of queues with limits per key
		// (key_limits.hpp), under the one snapshot, with the same columns;
		// copied out of each result before the next statement runs.
		struct ScanRow {
			text *name;
			int64 counts[kStates];
		};
		ScanRow *scanned = NULL;
		uint64 scanned_count = 0;
		// The pass reads the ring tables through their parents, which locks
		// every child: it runs in an internal subtransaction rolled back once
		// its rows are copied out (into this context), so those locks are
		// released with it and a caller left idle in its transaction holds
		// no ring slot (test/sql/idle_locks.sql).
		ScanRow **rows_out = &scanned;
		uint64 *count_out = &scanned_count;
		(void)RunInSubtransaction(CurrentMemoryContext, false, [rows_out, count_out, snapshot]() {
			for (Stmt stmt : {Stmt::kCountsScan, Stmt::kKeyCountsScan}) {
				ExecuteWithSnapshot(stmt, 0, NULL, NULL, snapshot);
				uint64 rows = SPI_processed;
				*rows_out = static_cast<ScanRow *>(
				    *rows_out == NULL ? palloc(sizeof(ScanRow) * (rows + 1))
				                      : repalloc(*rows_out, sizeof(ScanRow) * (*count_out + rows + 1)));
				for (uint64 i = 0; i < rows; i++) {
					HeapTuple tuple = SPI_tuptable->vals[i];
					TupleDesc desc = SPI_tuptable->tupdesc;
					bool isnull;
					ScanRow &row = (*rows_out)[(*count_out)++];
					row.name = DatumGetTextPCopy(SPI_getbinval(tuple, desc, 1, &isnull));
					for (int st = 0; st < kStates; st++)
						row.counts[st] = DatumGetInt64(SPI_getbinval(tuple, desc, st + 2, &isnull));
				}
			}
			return 0;
		});
		LWLockAcquire(counters_lock, LW_EXCLUSIVE);
		// Queues the pass does not list have no jobs in the snapshot: every
		// entry starts at zero, the listed ones get their counts (readers do
		// not trust the database meanwhile).
		ForEachEntry(MyDatabaseId, [](QueueCounters *entry) {
			for (int st = 0; st < kStates; st++)
				pg_atomic_write_u64(&entry->main[st], 0);
		});
		Refusal refused = kNotRefused;
		for (uint64 i = 0; i < scanned_count; i++) {
			const ScanRow &row = scanned[i];
			QueueCounters *entry = EnterQueue(VARDATA_ANY(row.name), VARSIZE_ANY_EXHDR(row.name), db_index, &refused);
			if (entry == NULL)
				break;
			for (int st = 0; st < kStates; st++)
				pg_atomic_write_u64(&entry->main[st], static_cast<uint64>(row.counts[st]));
		}
		if (refused != kNotRefused)
			shared->dbs[db_index].overflow = true;
		LWLockRelease(counters_lock);
	}
	PG_CATCH();
	{
		// An error raised while the pass held the lock (an allocation in
		// EnterQueue) must not make ReleaseBuild wait for itself.
		if (LWLockHeldByMe(counters_lock))
			LWLockRelease(counters_lock);
		ReleaseBuild(db_index, false);
		UnregisterSnapshot(snapshot);
		PG_RE_THROW();
	}
	PG_END_TRY();
	UnregisterSnapshot(snapshot);
	ReleaseBuild(db_index, true);
	return !shared->dbs[db_index].overflow;
}

}  // namespace

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
	bool collision;
	QueueCounters *entry = FindQueue(key, VARDATA_ANY(queue), length, &collision);
	if (trusted && entry != NULL)
		for (int s = 0; s < kStates; s++)
			out->count[s] = static_cast<int64>(pg_atomic_read_u64(&entry->main[s]));
	LWLockRelease(counters_lock);
	if (!trusted)
		return false;
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(VARDATA_ANY(queue)), length);
	for (int i = 0; i < pending_count; i++)
		if (SlotOfQueue(pending[i], entry, VARDATA_ANY(queue), length, hash))
			for (int s = 0; s < kStates; s++)
				out->count[s] += pending[i].delta[s];
	return true;
}

namespace {

// The queue's entry; with `make`, one is made when the queue has none yet
// (MakeEntry: NULL only when none is to be had). A limit's claims make it:
// after a server start no queue has an entry until the counters' rebuild or
// the commit of a move of its jobs, and a claim that reserved without one
// (under the limit lock, running_limits.cpp) would be unseen by the claims
// that reserve against the entry once it exists (test/t/040).
QueueCounters *
EntryOf(text *queue, bool make = false)
{
	if (shared == NULL)
		return NULL;
	int length = VARSIZE_ANY_EXHDR(queue);
	const char *chars = VARDATA_ANY(queue);
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(chars), length);
	bool counted;
	QueueCounters *entry = FindEntry(chars, length, hash, &counted);
	if (entry == NULL && counted && make)
		entry = MakeEntry(chars, length, hash);
	return entry;
}

}  // namespace

int64
AddClaimsInFlight(text *queue, int64 delta)
{
	QueueCounters *entry = EntryOf(queue, delta > 0);
	if (entry == NULL)
		return -1;
	if (delta >= 0)
		return static_cast<int64>(pg_atomic_add_fetch_u64(&entry->claims_in_flight, static_cast<uint64>(delta)));
	return static_cast<int64>(pg_atomic_sub_fetch_u64(&entry->claims_in_flight, static_cast<uint64>(-delta)));
}


void
NoteClaimLimited(text *queue)
{
	if (QueueCounters *entry = EntryOf(queue))
		pg_atomic_fetch_add_u64(&entry->claims_limited, 1);
}

namespace {

// The tokens this backend's claim in progress holds (TakeRateTokens until
// ReturnRateTokens; one claim at a time: one hold of the queue's bucket, one
// of a key's), so that an error between the two gives them up
// (OnRateTokensAbort) instead of holding them for good.
struct RateHold {
	QueueCounters *entry;
	int tokens;
	SubTransactionId subtransaction;
};
RateHold holds[kRateHolds] = {{NULL, 0, InvalidSubTransactionId}, {NULL, 0, InvalidSubTransactionId}};

// Ends the hold of `held` tokens and puts `unused` of them back (the others
// count as used); under the entry's rate_lock.
void
ReleaseHeld(QueueCounters *entry, int held, int unused, int32 burst)
{
	awa::core::GiveBackTokens(&entry->rate_bucket, held, unused, burst);
}

}  // namespace

int
TakeRateTokens(text *queue, const RateLimit &limit, int want, int64 *wait_micros, int hold)
{
	*wait_micros = 0;
	QueueCounters *entry = EntryOf(queue, true);
	if (entry == NULL)
		return -1;
	const awa::core::RateSpec rate{limit.count, limit.period_micros, limit.burst};
	TimestampTz now = GetCurrentTimestamp();
	SpinLockAcquire(&entry->rate_lock);
	if (!entry->rate_bucket.started)
		awa::core::StartBucket(&entry->rate_bucket, now, limit.set_at > PrimaryRunSince(), limit.burst);
	// The bucket holds at most the burst, counting the tokens other claims
	// in progress hold (they may give them back); the wait is at most a day
	// (a waiting claim looks again by then).
	awa::core::TokenTake take = awa::core::TakeTokens(&entry->rate_bucket, rate, now, want);
	entry->rate_spec = rate;
	SpinLockRelease(&entry->rate_lock);
	int taken = take.taken;
	if (taken < want) {
		*wait_micros = take.wait_micros;
		pg_atomic_fetch_add_u64(&entry->claims_rate_limited, 1);
	}
	holds[hold] = RateHold{taken > 0 ? entry : NULL, taken, GetCurrentSubTransactionId()};
	return taken;
}

void
ReturnRateTokens(int unused, int32 burst, int hold)
{
	QueueCounters *entry = holds[hold].entry;
	int held = holds[hold].tokens;
	holds[hold] = RateHold{NULL, 0, InvalidSubTransactionId};
	if (entry == NULL || held <= 0)
		return;
	SpinLockAcquire(&entry->rate_lock);
	ReleaseHeld(entry, held, Min(held, Max(0, unused)), burst);
	SpinLockRelease(&entry->rate_lock);
}

void
OnRateTokensAbort(SubTransactionId subtransaction)
{
	// A claim that failed between taking its tokens and giving back the
	// unused ones: they count as used (as a rolled-back claim's do), and
	// are no longer held. A subtransaction begun after the take (a timed
	// lock wait inside the claim) aborts without ending the hold.
	for (RateHold &h : holds) {
		if (subtransaction != InvalidSubTransactionId && h.subtransaction != InvalidSubTransactionId &&
		    subtransaction > h.subtransaction)
			continue;
		QueueCounters *entry = h.entry;
		int held = h.tokens;
		h = RateHold{NULL, 0, InvalidSubTransactionId};
		if (entry == NULL || held <= 0)
			continue;
		SpinLockAcquire(&entry->rate_lock);
		ReleaseHeld(entry, held, 0, PG_INT32_MAX);
		SpinLockRelease(&entry->rate_lock);
	}
}

int64
ReadClaimsLimited(text *queue)
{
	QueueCounters *entry = EntryOf(queue);
	return entry == NULL ? 0 : static_cast<int64>(pg_atomic_read_u64(&entry->claims_limited));
}

int64
ReadClaimsRateLimited(text *queue)
{
	QueueCounters *entry = EntryOf(queue);
	return entry == NULL ? 0 : static_cast<int64>(pg_atomic_read_u64(&entry->claims_rate_limited));
}

bool
ReadHeads(text *queue, QueueHeads *out)
{
	memset(out, 0, sizeof(*out));
	// On a standby replayed commits apply nothing: a head kept there would
	// go stale, so none is read or kept (every lane is walked).
	if (shared == NULL || RecoveryInProgress())
		return false;
	int length = VARSIZE_ANY_EXHDR(queue);
	const char *chars = VARDATA_ANY(queue);
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(chars), length);
	bool counted;
	QueueCounters *entry = FindEntry(chars, length, hash, &counted);
	if (entry == NULL)
		return false;
	SpinLockAcquire(&entry->head_lock);
	out->generation = entry->head_changes;
	for (int l = 0; l < kHeadLanes; l++)
		out->lanes[l] = entry->heads[l];
	SpinLockRelease(&entry->head_lock);
	out->storable = true;
	for (int i = 0; i < pending_count; i++)
		if (SlotOfQueue(pending[i], entry, chars, length, hash))
			out->storable = false;
	return true;
}

void
StoreHead(text *queue, int priority, uint64 generation, const LaneHead &head)
{
	if (shared == NULL || priority < 1 || priority > kHeadLanes || head.state == kHeadUnknown)
		return;
	int length = VARSIZE_ANY_EXHDR(queue);
	const char *chars = VARDATA_ANY(queue);
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(chars), length);
	bool counted;
	QueueCounters *entry = FindEntry(chars, length, hash, &counted);
	if (entry == NULL)
		return;
	SpinLockAcquire(&entry->head_lock);
	if (entry->head_changes == generation)
		entry->heads[priority - 1] = head;
	SpinLockRelease(&entry->head_lock);
}

int64
CountUnknownHeads()
{
	if (shared == NULL || CurrentDbIndex() < 0)
		return 0;
	int64 unknown = 0;
	LWLockAcquire(counters_lock, LW_SHARED);
	ForEachEntry(MyDatabaseId, [&unknown](QueueCounters *entry) {
		if (IsKeyEntry(entry))
			return;  // a key's (key_limits.hpp): it has no lanes' heads
		SpinLockAcquire(&entry->head_lock);
		bool any = false;
		for (int l = 0; l < kHeadLanes; l++)
			any = any || entry->heads[l].state == kHeadUnknown;
		SpinLockRelease(&entry->head_lock);
		unknown += any ? 1 : 0;
	});
	LWLockRelease(counters_lock);
	return unknown;
}

void
EndKeyEntryUse()
{
	if (!key_use_open)
		return;
	pg_memory_barrier();  // every use of this transaction's pointers first
	ClearKeySlot(0, 0);
}

namespace {

// Whether a rebuild of the database runs (counters lock held), whatever its
// state says: a commit refused an entry meanwhile makes it kUntrusted
// mid-build.
bool
RebuildRuns(const DbCounters &db)
{
	return db.state == kBuilding || (db.builder_pid != 0 && BackendPidGetProc(db.builder_pid) != NULL) ||
	       (shared->build_database == db.database && BackendPidGetProc(shared->build_pid) != NULL);
}

// Whether a key's entry holds nothing a new entry of the key would not: no
// running attempt counted (while the counts are trusted; otherwise the next
// rebuild counts them), no reservation, a full rate bucket. Counters lock
// held exclusively: no commit is applying moves.
bool
KeyEntryIdle(QueueCounters *entry, bool trusted, TimestampTz now)
{
	if (pg_atomic_read_u64(&entry->claims_in_flight) != 0)
		return false;
	if (trusted)
		for (int s = 0; s < kStates; s++)
			if (pg_atomic_read_u64(&entry->main[s]) != 0)
				return false;
	bool full = true;
	SpinLockAcquire(&entry->rate_lock);
	if (entry->rate_bucket.started) {
		awa::core::RefillBucket(&entry->rate_bucket, entry->rate_spec, now);
		full = entry->rate_bucket.held == 0 && awa::core::BucketFull(entry->rate_bucket, entry->rate_spec.burst);
	}
	SpinLockRelease(&entry->rate_lock);
	return full;
}

}  // namespace

KeyEntryPass
FreeIdleKeyEntries()
{
	KeyEntryPass pass{};
	if (shared == NULL || RecoveryInProgress())
		return pass;
	int db_index = CurrentDbIndex();
	if (db_index < 0)
		return pass;
	TimestampTz now = GetCurrentTimestamp();
	(void)Table();  // attached before the lock (may ereport)
	LWLockAcquire(counters_lock, LW_EXCLUSIVE);
	DbCounters &db = shared->dbs[db_index];
	// Not while a rebuild of the database runs: its moves go to entries'
	// `since`, and the overflow it must end untrusted
	// for stays set. Found by test/t/059: an entry freed with its `since`, or
	// the overflow cleared under a rebuild that then ended trusted, lost a
	// key's running attempt (one attempt over key_max_running).
	// (And nothing to walk without key entries: the walk visits every
	// entry of the table, all databases', under the exclusive lock.)
	if (RebuildRuns(db) || db.key_entries == 0) {
		LWLockRelease(counters_lock);
		return pass;
	}
	// The oldest epoch a transaction that uses key entries began at.
	uint64 oldest = PG_UINT64_MAX;
	for (int i = 0; i < shared->key_slot_count; i++) {
		uint64 began = pg_atomic_read_u64(&shared->key_slots[i]);
		if (began != 0 && began < oldest)
			oldest = began;
	}
	bool trusted = db.state == kTrusted;
	uint64 epoch = pg_atomic_read_u64(&shared->key_epoch);
	// Plain code under the lock (interrupts are held off; bounded by the
	// database's share of entries).
	dshash_seq_status status;
	dshash_seq_init(&status, Table(), true);
	while (QueueCounters *entry = static_cast<QueueCounters *>(dshash_seq_next(&status))) {
		if (entry->key.database != MyDatabaseId || !IsKeyEntry(entry))
			continue;
		bool idle = KeyEntryIdle(entry, trusted, now);
		uint64 retired = pg_atomic_read_u64(&entry->retired_at);
		if (retired != 0 && !idle)
			pg_atomic_write_u64(&entry->retired_at, 0);
		else if (retired != 0 && retired < oldest) {
			dsa_free(area, entry->name);
			dshash_delete_current(&status);
			shared->entry_count--;
			db.entries--;
			db.key_entries--;
			pass.freed++;
			continue;
		} else if (retired == 0 && idle) {
			pg_atomic_write_u64(&entry->retired_at, epoch);
			pass.retired++;
			continue;
		}
		if (retired != 0 && idle)
			pass.retired++;
		else
			pass.live++;
	}
	dshash_seq_term(&status);
	if (pass.retired > 0) {
		pg_atomic_fetch_add_u64(&shared->key_cache_epoch, 1);
		pg_atomic_fetch_add_u64(&shared->key_epoch, 1);
	}
	// Entries to be had again: a database that found none (its counts exact
	// since) is rebuilt by the next counters step, or claim that asks.
	if (pass.freed > 0 && db.overflow && db.entries < awa_max_queues_per_database)
		db.overflow = false;
	// Room in the whole table helps the databases refused for want of it
	// (awa.max_queues) too: each is rebuilt by its own next counters step
	// (found from outside: another database stayed exact for good). Not one
	// that a rebuild is running for: that rebuild must end untrusted.
	if (pass.freed > 0 && shared->entry_count < awa_max_queues)
		for (int i = 0; i < shared->db_capacity; i++) {
			DbCounters &other = shared->dbs[i];
			if (i == db_index || other.database == InvalidOid || !other.overflow || RebuildRuns(other) ||
			    other.entries >= awa_max_queues_per_database)
				continue;
			other.overflow = false;
		}
	LWLockRelease(counters_lock);
	if (pass.freed > 0)
		ForgetCachedKeyEntries();
	return pass;
}

void
NoteKeyLockPathUsed()
{
	if (shared != NULL && pg_atomic_read_u32(&shared->key_lock_path_used) == 0)
		pg_atomic_write_u32(&shared->key_lock_path_used, 1);
}

bool
KeyLockPathUsed()
{
	return shared != NULL && pg_atomic_read_u32(&shared->key_lock_path_used) != 0;
}

}  // namespace awa::pg
