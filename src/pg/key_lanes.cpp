// key_lanes.cpp: see key_lanes.hpp.
#include "pg/key_lanes.hpp"

#include "core/key_scheduler.hpp"
#include "pg/gucs.hpp"
#include "pg/lane_cursors.hpp"
#include "pg/rings.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "common/hashfn.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/dsa.h"
#include "utils/hsearch.h"
#include "utils/syscache.h"
}

namespace awa::pg {

namespace {

using core::KeyMode;
using core::KeyResult;
using core::KeyScheduler;

constexpr int kMaxQueueBytes = 800;  // 200 characters of up to 4 bytes
constexpr Size kAreaInitialBytes = 1024 * 1024;

// One (database, extension incarnation, queue, priority) with keyed lanes.
struct KeyedSlot {
	bool in_use;
	bool built;  // its members were read from the lanes since it was made
	Oid database;
	Oid incarnation;
	int16 priority;
	uint32 hash;
	int length;
	char queue[kMaxQueueBytes];
	uint64 generation;  // moves when the slot is made for another queue
	dsa_pointer block;  // the KeyScheduler
	int32 key_max_running;  // as the last claim saw it (ApplyKeyLimits)
};

struct KeyLanesShared {
	int slot_count;
	uint64 next_generation;  // under table_lock
	int area_tranche;
	pg_atomic_uint32 used;  // slots in use (0: no enqueue has anything to note)
	KeyedSlot slots[FLEXIBLE_ARRAY_MEMBER];
};
static_assert(std::is_trivially_destructible_v<KeyedSlot>, "lives in shared memory");

KeyLanesShared *shared = NULL;
void *area_space = NULL;
dsa_area *area = NULL;        // this backend's attachment
LWLock *table_lock = NULL;    // the slot table
LWLockPadded *slot_locks = NULL;  // one a slot: its scheduler

Size
SharedSize()
{
	return add_size(offsetof(KeyLanesShared, slots), mul_size(sizeof(KeyedSlot), awa_max_keyed_queues));
}

Size
BlockBytes()
{
	return KeyScheduler::Size(awa_max_keys_per_queue);
}

dsa_area *
Area()
{
	if (area != NULL)
		return area;
	LWLockRegisterTranche(shared->area_tranche, "awa_key_lanes_area");
	MemoryContext caller = MemoryContextSwitchTo(TopMemoryContext);
	area = dsa_attach_in_place(area_space, NULL);
	dsa_pin_mapping(area);
	MemoryContextSwitchTo(caller);
	return area;
}

LWLock *
SlotLock(int slot)
{
	return &slot_locks[slot].lock;
}

// The slot's scheduler; the caller holds its lock and checked its generation.
// Maps the block's segment in this backend the first time (may ereport: only
// outside commit callbacks, which use addresses resolved before).
KeyScheduler *
SchedulerOf(int slot)
{
	return static_cast<KeyScheduler *>(dsa_get_address(Area(), shared->slots[slot].block));
}

bool
SameQueue(const KeyedSlot &s, Oid incarnation, text *queue, uint32 hash, int16 priority)
{
	int length = VARSIZE_ANY_EXHDR(queue);
	return s.in_use && s.database == MyDatabaseId && s.incarnation == incarnation && s.priority == priority &&
	       s.hash == hash && s.length == length && memcmp(s.queue, VARDATA_ANY(queue), length) == 0;
}

uint32
QueueHash(text *queue)
{
	return hash_any(reinterpret_cast<const unsigned char *>(VARDATA_ANY(queue)), VARSIZE_ANY_EXHDR(queue));
}

// The slot of (queue, priority) in this database, or -1. Takes the table lock
// shared; cannot fail.
int
FindSlot(Oid incarnation, text *queue, int16 priority, uint64 *generation)
{
	if (shared == NULL || pg_atomic_read_u32(&shared->used) == 0)
		return -1;
	uint32 hash = QueueHash(queue);
	int found = -1;
	LWLockAcquire(table_lock, LW_SHARED);
	for (int i = 0; i < shared->slot_count && found < 0; i++)
		if (SameQueue(shared->slots[i], incarnation, queue, hash, priority)) {
			found = i;
			*generation = shared->slots[i].generation;
		}
	LWLockRelease(table_lock);
	return found;
}

void
FreeSlot(int i)
{
	KeyedSlot &s = shared->slots[i];
	if (!s.in_use)
		return;
	dsa_free(Area(), s.block);
	s.in_use = false;
	s.block = InvalidDsaPointer;
	pg_atomic_fetch_sub_u32(&shared->used, 1);
}

// Frees the slots of databases that no longer exist, and this database's
// slots of an earlier incarnation of the extension. The catalog is read
// before the table lock is taken. May ereport.
void
FreeStaleSlots(Oid incarnation)
{
	int count = shared->slot_count;
	Oid *gone = static_cast<Oid *>(palloc(sizeof(Oid) * (count + 1)));
	int gone_count = 0;
	Oid *seen = static_cast<Oid *>(palloc(sizeof(Oid) * (count + 1)));
	int seen_count = 0;
	LWLockAcquire(table_lock, LW_SHARED);
	for (int i = 0; i < count; i++) {
		const KeyedSlot &s = shared->slots[i];
		if (!s.in_use || s.database == MyDatabaseId)
			continue;
		bool known = false;
		for (int j = 0; j < seen_count && !known; j++)
			known = seen[j] == s.database;
		if (!known)
			seen[seen_count++] = s.database;
	}
	LWLockRelease(table_lock);
	for (int j = 0; j < seen_count; j++) {
		CHECK_FOR_INTERRUPTS();
		if (!SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(seen[j])))
			gone[gone_count++] = seen[j];
	}
	LWLockAcquire(table_lock, LW_EXCLUSIVE);
	for (int i = 0; i < count; i++) {
		const KeyedSlot &s = shared->slots[i];
		if (!s.in_use)
			continue;
		bool stale = s.database == MyDatabaseId && s.incarnation != incarnation;
		for (int j = 0; j < gone_count && !stale; j++)
			stale = s.database == gone[j];
		if (stale)
			FreeSlot(i);
	}
	LWLockRelease(table_lock);
	pfree(gone);
	pfree(seen);
}

// The slot of (queue, priority), made when missing; -1 when none can be had
// (the table, this database's half of it, or the area full). May ereport.
int
MakeSlot(Oid incarnation, text *queue, int16 priority, uint64 *generation)
{
	int found = FindSlot(incarnation, queue, priority, generation);
	if (found >= 0 || shared == NULL)
		return found;
	FreeStaleSlots(incarnation);
	(void)Area();
	uint32 hash = QueueHash(queue);
	int length = VARSIZE_ANY_EXHDR(queue);
	LWLockAcquire(table_lock, LW_EXCLUSIVE);
	int free_slot = -1, mine = 0;
	for (int i = 0; i < shared->slot_count && found < 0; i++) {
		const KeyedSlot &s = shared->slots[i];
		if (SameQueue(s, incarnation, queue, hash, priority))
			found = i;
		else if (!s.in_use && free_slot < 0)
			free_slot = i;
		else if (s.in_use && s.database == MyDatabaseId)
			mine++;
	}
	// Full (the table, or this database's half of it): a scheduler without a
	// key (no lane with work, no attempt or bucket it keeps) is given up for
	// this one, its database's first when this database is at its half: else
	// the first keyed queues of a server would keep the schedulers for good
	// and every later one would be claimed by a walk over all its lanes
	// (found by bench/keys.sh: 311 jobs/s at 10,000 keys, 0.03x). Its queue
	// gets one again at its next keyed enqueue or claim, built from its lanes.
	bool mine_full = mine >= Max(1, shared->slot_count / 2);
	if (found < 0 && (free_slot < 0 || mine_full)) {
		for (int i = 0; i < shared->slot_count; i++) {
			KeyedSlot &v = shared->slots[i];
			if (!v.in_use || (mine_full && v.database != MyDatabaseId))
				continue;
			LWLockAcquire(SlotLock(i), LW_EXCLUSIVE);
			bool empty = SchedulerOf(i)->keys() == 0;
			if (empty)
				FreeSlot(i);  // (under its lock: no one is inside it; holders of its generation find it gone)
			LWLockRelease(SlotLock(i));
			if (empty) {
				free_slot = i;
				if (mine_full)
					mine--;
				break;
			}
		}
	}
	if (found < 0 && free_slot >= 0 && mine < Max(1, shared->slot_count / 2)) {
		dsa_pointer block = dsa_allocate_extended(area, BlockBytes(), DSA_ALLOC_HUGE | DSA_ALLOC_NO_OOM);
		if (DsaPointerIsValid(block)) {
			KeyScheduler *scheduler =
			    KeyScheduler::Init(dsa_get_address(area, block), BlockBytes(), awa_max_keys_per_queue);
			scheduler->SetMode(KeyMode::kOldestHead);
			KeyedSlot &s = shared->slots[free_slot];
			s.in_use = true;
			s.built = false;
			s.database = MyDatabaseId;
			s.incarnation = incarnation;
			s.priority = priority;
			s.hash = hash;
			s.length = length;
			memcpy(s.queue, VARDATA_ANY(queue), length);
			s.generation = ++shared->next_generation;
			s.block = block;
			s.key_max_running = 0;
			pg_atomic_fetch_add_u32(&shared->used, 1);
			found = free_slot;
		}
	}
	if (found >= 0)
		*generation = shared->slots[found].generation;
	LWLockRelease(table_lock);
	return found;
}

// Locks the slot's scheduler when it is still the one of `generation`.
KeyScheduler *
LockScheduler(int slot, uint64 generation, KeyScheduler *known = NULL)
{
	LWLockAcquire(SlotLock(slot), LW_EXCLUSIVE);
	const KeyedSlot &s = shared->slots[slot];
	if (!s.in_use || s.generation != generation) {
		LWLockRelease(SlotLock(slot));
		return NULL;
	}
	return known != NULL ? known : SchedulerOf(slot);
}

// A note's scheduler is gone (its slot was given up or reused since:
// MakeSlot): the queue's scheduler of now, if any, did not see what the note
// would have told it (a claim rolled back, an enqueue committed), so it is
// read from the lanes again at its next use. Any incarnation: a stale one's is
// freed anyway. Plain code that cannot fail (transaction callbacks).
void
MarkQueueSlotUnbuilt(text *queue, int16 priority)
{
	uint32 hash = QueueHash(queue);
	int length = VARSIZE_ANY_EXHDR(queue);
	LWLockAcquire(table_lock, LW_SHARED);
	for (int i = 0; i < shared->slot_count; i++) {
		KeyedSlot &s = shared->slots[i];
		if (s.in_use && s.database == MyDatabaseId && s.priority == priority && s.hash == hash && s.length == length &&
		    memcmp(s.queue, VARDATA_ANY(queue), length) == 0)
			s.built = false;  // (a flag; its readers only build more often)
	}
	LWLockRelease(table_lock);
}

// Reads the lanes of the slot's (queue, priority) and makes those with work
// members (key_lanes.hpp). Idempotent: several claims may build at once. May
// ereport.
void
Build(int slot, uint64 generation, text *queue, int16 priority)
{
	Lane *lanes;
	int32 *weights;
	Datum values[2] = {PointerGetDatum(queue), Int16GetDatum(priority)};
	Execute(Stmt::kLanesOfPriority, 0, values, NULL, 0);
	int count = static_cast<int>(SPI_processed);
	lanes = static_cast<Lane *>(palloc(sizeof(Lane) * (count + 1)));
	weights = static_cast<int32 *>(palloc(sizeof(int32) * (count + 1)));
	bool *work = static_cast<bool *>(palloc0(sizeof(bool) * (count + 1)));
	SPITupleTable *table = SPI_tuptable;
	for (int i = 0; i < count; i++) {
		bool isnull;
		lanes[i] = LaneOfRow(table->vals[i], table->tupdesc);
		weights[i] = DatumGetInt32(SPI_getbinval(table->vals[i], table->tupdesc, 4, &isnull));
	}
	for (int i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();
		LaneCursors cursors = ReadLaneCursors(lanes[i]);
		work[i] = cursors.claim < cursors.enqueue;
	}
	(void)SchedulerOf(slot);  // mapped before the lock
	KeyScheduler *scheduler = LockScheduler(slot, generation);
	if (scheduler == NULL)
		return;
	int64 now = GetCurrentTimestamp();
	bool full = false;
	for (int i = 0; i < count; i++)
		if (work[i] && scheduler->Activate(static_cast<uint64>(lanes[i].lane_id), weights[i], PG_INT64_MAX, now, true) ==
		                   KeyResult::kTableFull)
			full = true;
	shared->slots[slot].built = true;
	LWLockRelease(SlotLock(slot));
	if (full)
		ereport(WARNING, (errmsg("awa: more keys of queue \"%s\" have work than awa.max_keys_per_queue (%d)",
		                         text_to_cstring(queue), awa_max_keys_per_queue),
		                  errhint("Raise awa.max_keys_per_queue and restart: the keys beyond it are claimed "
		                          "when their next job is enqueued.")));
}

// ---------------------------------------------------------------------------
// Transaction-local notes: lanes with new work (activated at commit), lanes
// a claim took jobs from (activated again at an abort), weights to apply.
// ---------------------------------------------------------------------------
struct Note {
	int64 lane_id;  // hash key
	bool work;      // an enqueue appended to it
	bool claimed;   // a claim took jobs from it
	bool weighed;   // set_key_weight gave it `weight`
	bool keyed;
	// ResolveNotes activated it before the commit, where it was no member;
	// the activation count it left (an abort undoes it, if still its own).
	bool pre_activated;
	uint32 pre_activations;
	int16 priority;
	int32 weight;
	int64 head;
	text *queue;    // in the notes' context
	int slot;       // resolved at PRE_COMMIT (or at the claim): -1 none
	uint64 generation;
	KeyScheduler *scheduler;  // mapped in this backend
};
static_assert(std::is_trivially_destructible_v<Note>, "lives in a dynahash");

MemoryContext notes_context = NULL;
HTAB *notes = NULL;

// A pick charged and not settled yet: an error in between (a cancel, a
// timeout during the walk) gives its reservation back at the abort, or the
// member would keep it, and its entry, for good.
struct PendingPick {
	int slot;  // -1: none
	uint64 generation;
	int64 lane_id;
	int charged;
	KeyScheduler *scheduler;
};
PendingPick pending_pick = {-1, 0, 0, 0, NULL};

void
GiveBackPendingPick()
{
	if (pending_pick.slot < 0)
		return;
	PendingPick pick = pending_pick;
	pending_pick.slot = -1;
	KeyScheduler *scheduler = LockScheduler(pick.slot, pick.generation, pick.scheduler);
	if (scheduler == NULL)
		return;
	(void)scheduler->GiveBack(static_cast<uint64>(pick.lane_id), pick.charged, pick.charged, GetCurrentTimestamp());
	LWLockRelease(SlotLock(pick.slot));
}

Note *
NoteOf(int64 lane_id, text *queue, int16 priority)
{
	if (notes == NULL) {
		notes_context = AllocSetContextCreate(TopTransactionContext, "awa key lane notes", ALLOCSET_SMALL_SIZES);
		HASHCTL ctl;
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(Note);
		ctl.hcxt = notes_context;
		notes = hash_create("awa key lane notes", 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	bool found;
	Note *note = static_cast<Note *>(hash_search(notes, &lane_id, HASH_ENTER, &found));
	if (!found) {
		note->work = note->claimed = note->weighed = note->keyed = note->pre_activated = false;
		note->pre_activations = 0;
		note->priority = priority;
		note->weight = 1;
		note->head = PG_INT64_MAX;
		note->queue = static_cast<text *>(MemoryContextAlloc(notes_context, VARSIZE_ANY(queue)));
		memcpy(note->queue, queue, VARSIZE_ANY(queue));
		note->slot = -1;
		note->generation = 0;
		note->scheduler = NULL;
	}
	return note;
}

void
ForgetNotes()
{
	notes = NULL;
	notes_context = NULL;  // freed with TopTransactionContext
}

// PRE_COMMIT: finds (or, for keyed work, makes) each noted lane's scheduler,
// maps it, and gives each lane with new work its entry, so that the commit
// callback cannot fail: 53200 here when the scheduler is full. May ereport.
void
ResolveNotes()
{
	Oid incarnation = ExtensionIncarnationIfPresent();
	if (!OidIsValid(incarnation))
		return;
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, notes);
	while (Note *note = static_cast<Note *>(hash_seq_search(&status))) {
		CHECK_FOR_INTERRUPTS();
		if (!note->work && !note->weighed)
			continue;
		note->slot = note->work && note->keyed ? MakeSlot(incarnation, note->queue, note->priority, &note->generation)
		                                       : FindSlot(incarnation, note->queue, note->priority, &note->generation);
		if (note->slot < 0)
			continue;
		(void)SchedulerOf(note->slot);
		note->scheduler = LockScheduler(note->slot, note->generation);
		if (note->scheduler == NULL) {
			note->slot = -1;
			continue;
		}
		KeyResult result = KeyResult::kOk;
		if (note->work) {
			uint64 id = static_cast<uint64>(note->lane_id);
			const core::KeyEntry *entry = note->scheduler->Find(id);
			bool was_member = entry != NULL && entry->state == core::KeyState::kActive;
			int32 weight = entry != NULL && !note->weighed ? entry->weight : note->weight;
			result = note->scheduler->Activate(id, weight, note->head, GetCurrentTimestamp(), true);
			if (result == KeyResult::kOk && !was_member) {
				note->pre_activated = true;
				note->pre_activations = note->scheduler->Find(id)->activations;
			}
		}
		LWLockRelease(SlotLock(note->slot));
		if (result == KeyResult::kTableFull)
			ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			                errmsg("awa: queue \"%s\" has work for awa.max_keys_per_queue (%d) keys at priority %d already",
			                       text_to_cstring(note->queue), awa_max_keys_per_queue, note->priority),
			                errhint("Raise awa.max_keys_per_queue (a restart is needed), or enqueue this key's jobs "
			                        "once others have drained; nothing was enqueued.")));
	}
}

// COMMIT (visible by now): activations and weights. Plain code that cannot
// fail: addresses were resolved at PRE_COMMIT.
void
ApplyNotesAtCommit()
{
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, notes);
	int64 now = GetCurrentTimestamp();
	while (Note *note = static_cast<Note *>(hash_seq_search(&status))) {
		if (note->slot < 0 || note->scheduler == NULL || (!note->work && !note->weighed))
			continue;
		KeyScheduler *scheduler = LockScheduler(note->slot, note->generation, note->scheduler);
		if (scheduler == NULL) {
			if (note->work)
				MarkQueueSlotUnbuilt(note->queue, note->priority);
			continue;
		}
		uint64 id = static_cast<uint64>(note->lane_id);
		if (note->weighed)
			(void)scheduler->SetWeight(id, note->weight);
		if (note->work) {
			const core::KeyEntry *entry = scheduler->Find(id);
			int32 weight = entry != NULL ? entry->weight : note->weight;
			if (scheduler->Activate(id, weight, note->head, now, true) == KeyResult::kTableFull)
				shared->slots[note->slot].built = false;  // read from the lanes again
		}
		LWLockRelease(SlotLock(note->slot));
	}
}

// An abort after PRE_COMMIT (a later commit step failed, or 53200 for a later
// lane): the lanes it made members have no work of it; it takes them out
// again unless something activated them since. Plain code that cannot fail.
void
UndoPreCommitActivations()
{
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, notes);
	int64 now = GetCurrentTimestamp();
	while (Note *note = static_cast<Note *>(hash_seq_search(&status))) {
		if (!note->pre_activated || note->scheduler == NULL)
			continue;
		KeyScheduler *scheduler = LockScheduler(note->slot, note->generation, note->scheduler);
		if (scheduler == NULL)
			continue;
		(void)scheduler->DeactivateIfUnchanged(static_cast<uint64>(note->lane_id), note->pre_activations, now);
		LWLockRelease(SlotLock(note->slot));
	}
}

// An abort (of the transaction or of a subtransaction): the lanes claims took
// jobs from have them claimable again. Plain code that cannot fail.
void
ReactivateClaimed()
{
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, notes);
	int64 now = GetCurrentTimestamp();
	while (Note *note = static_cast<Note *>(hash_seq_search(&status))) {
		if (!note->claimed || note->scheduler == NULL)
			continue;
		KeyScheduler *scheduler = LockScheduler(note->slot, note->generation, note->scheduler);
		if (scheduler == NULL) {
			// (Found from outside: a claim rolled back after its queue's
			// scheduler was given up and made again left its job unclaimed.)
			MarkQueueSlotUnbuilt(note->queue, note->priority);
			continue;
		}
		uint64 id = static_cast<uint64>(note->lane_id);
		const core::KeyEntry *entry = scheduler->Find(id);
		if (scheduler->Activate(id, entry != NULL ? entry->weight : 1, note->head, now, true) == KeyResult::kTableFull)
			shared->slots[note->slot].built = false;
		LWLockRelease(SlotLock(note->slot));
	}
}

// Keys whose lanes come out of Block at the transaction's end (key_limits.hpp):
// the keys whose room may grow then. Applied after the counters and the
// reservations (callbacks.cpp), whether it commits or aborts (an unblocked
// lane without room is blocked again by the next pick). A blocked lane is
// found by its key's hash (KeyScheduler::UnblockGroup), in each scheduler of
// the queue: no lookup of the key's lanes.
struct Unblock {
	int slot;
	uint64 generation;
	uint64 group;
	KeyScheduler *scheduler;  // mapped in this backend
};
static_assert(std::is_trivially_destructible_v<Unblock>, "lives in TopTransactionContext");
// (In TopTransactionContext; emptied by every transaction's end,
// OnKeyUnblocksTransactionEvent.)
Unblock *unblocks = NULL;
int unblock_count = 0;
int unblock_capacity = 0;

uint64
GroupOfKey(text *key)
{
	return hash_bytes_extended(reinterpret_cast<const unsigned char *>(VARDATA_ANY(key)),
	                           static_cast<int>(VARSIZE_ANY_EXHDR(key)), 0);
}

// The schedulers of the queue (one a priority with keyed lanes), mapped.
// Cannot fail but for the mapping (may ereport: out of memory).
template <typename Visit>
void
ForEachQueueScheduler(text *queue, Visit visit)
{
	if (shared == NULL || pg_atomic_read_u32(&shared->used) == 0)
		return;
	Oid incarnation = ExtensionIncarnation();
	for (int16 priority = 1; priority <= kMaxLanesPerQueue; priority++) {
		uint64 generation;
		int slot = FindSlot(incarnation, queue, priority, &generation);
		if (slot >= 0)
			visit(slot, generation, SchedulerOf(slot));
	}
}

void
ApplyUnblocks()
{
	int64 now = GetCurrentTimestamp();
	for (int i = 0; i < unblock_count; i++) {
		const Unblock &u = unblocks[i];
		KeyScheduler *scheduler = LockScheduler(u.slot, u.generation, u.scheduler);
		if (scheduler == NULL)
			continue;
		if (scheduler->blocked() > 0)
			(void)scheduler->UnblockGroup(u.group, now);
		LWLockRelease(SlotLock(u.slot));
	}
}

}  // namespace

void
RequestKeyLanesShmem()
{
	RequestAddinShmemSpace(SharedSize());
	RequestAddinShmemSpace(kAreaInitialBytes);
	RequestNamedLWLockTranche("awa_key_lanes", 1);
	RequestNamedLWLockTranche("awa_key_lanes_slots", awa_max_keyed_queues);
}

void
StartupKeyLanesShmem()
{
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	bool found;
	shared = static_cast<KeyLanesShared *>(ShmemInitStruct("awa key lanes", SharedSize(), &found));
	bool area_found;
	area_space = ShmemInitStruct("awa key lanes area", kAreaInitialBytes, &area_found);
	if (!found) {
		memset(shared, 0, SharedSize());
		shared->slot_count = awa_max_keyed_queues;
		pg_atomic_init_u32(&shared->used, 0);
		shared->area_tranche = LWLockNewTrancheId();
		dsa_area *made = dsa_create_in_place(area_space, kAreaInitialBytes, shared->area_tranche, NULL);
		dsa_set_size_limit(made, kAreaInitialBytes + static_cast<Size>(awa_max_keyed_queues) * (BlockBytes() + 65536));
		dsa_pin(made);
		dsa_detach(made);
	}
	table_lock = &(GetNamedLWLockTranche("awa_key_lanes"))->lock;
	slot_locks = GetNamedLWLockTranche("awa_key_lanes_slots");
	LWLockRelease(AddinShmemInitLock);
}

void
OnKeyLanesTransactionEvent(XactEvent event)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		GiveBackPendingPick();
	else if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PREPARE)
		pending_pick.slot = -1;  // (settled by the claim; never left across a commit)
	if (notes == NULL)
		return;
	switch (event) {
	case XACT_EVENT_PRE_COMMIT:
		ResolveNotes();  // may ereport: the transaction then aborts
		break;
	case XACT_EVENT_COMMIT:
		ApplyNotesAtCommit();
		ForgetNotes();
		break;
	case XACT_EVENT_ABORT:
		UndoPreCommitActivations();
		ReactivateClaimed();
		ForgetNotes();
		break;
	case XACT_EVENT_PARALLEL_ABORT:
	case XACT_EVENT_PARALLEL_COMMIT:
	case XACT_EVENT_PREPARE:
		ForgetNotes();
		break;
	default:
		break;
	}
}

void
RefusePrepareWithKeyLaneNotes()
{
	// The notes apply at this backend's COMMIT, which COMMIT PREPARED (in any
	// session) never reaches, and they live in this transaction's memory,
	// which PREPARE frees: a prepared set_key_weight left the next
	// transaction reading freed notes, and its weight never reached the
	// scheduler (found by the review of stop 49).
	if (notes != NULL)
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
		                errmsg("awa: a transaction that changed a concurrency key's weight cannot be prepared"),
		                errhint("Run awa's functions in transactions that are not prepared.")));
}

void
OnKeyLanesSubTransactionEvent(SubXactEvent event)
{
	// Activating a lane that has no work again costs one empty walk; so a
	// subtransaction's abort activates every lane this transaction claimed
	// from, not only its own.
	if (event == SUBXACT_EVENT_ABORT_SUB)
		GiveBackPendingPick();
	if (notes != NULL && event == SUBXACT_EVENT_ABORT_SUB)
		ReactivateClaimed();
	// (After the subtransaction's reservations were given back.)
	if (event == SUBXACT_EVENT_ABORT_SUB)
		ApplyUnblocks();
}

void
OnKeyUnblocksTransactionEvent(XactEvent event)
{
	switch (event) {
	case XACT_EVENT_COMMIT:
	case XACT_EVENT_PARALLEL_COMMIT:
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_ABORT:
	case XACT_EVENT_PREPARE:
		ApplyUnblocks();
		unblocks = NULL;  // freed with TopTransactionContext
		unblock_count = unblock_capacity = 0;
		break;
	default:
		break;
	}
}

void
UnblockKeyLanesAtEnd(text *queue, text *key)
{
	uint64 group = GroupOfKey(key);
	ForEachQueueScheduler(queue, [group](int slot, uint64 generation, KeyScheduler *scheduler) {
		for (int i = 0; i < unblock_count; i++)
			if (unblocks[i].slot == slot && unblocks[i].generation == generation && unblocks[i].group == group)
				return;
		if (unblock_count == unblock_capacity) {
			int capacity = Max(16, unblock_capacity * 2);
			Unblock *grown = static_cast<Unblock *>(MemoryContextAlloc(TopTransactionContext, sizeof(Unblock) * capacity));
			if (unblock_count > 0)
				memcpy(grown, unblocks, sizeof(Unblock) * unblock_count);
			unblocks = grown;
			unblock_capacity = capacity;
		}
		unblocks[unblock_count++] = Unblock{slot, generation, group, scheduler};
	});
}

void
UnblockKeyLanesNow(text *queue, text *key)
{
	uint64 group = GroupOfKey(key);
	int64 now = GetCurrentTimestamp();
	ForEachQueueScheduler(queue, [group, now](int slot, uint64 generation, KeyScheduler *known) {
		KeyScheduler *scheduler = LockScheduler(slot, generation, known);
		if (scheduler == NULL)
			return;
		if (scheduler->blocked() > 0)
			(void)scheduler->UnblockGroup(group, now);
		LWLockRelease(SlotLock(slot));
	});
}

bool
BlockKeyedPick(const KeyedPriority &priority, int64 lane_id, int charged, text *key)
{
	pending_pick.slot = -1;  // given back here
	KeyScheduler *scheduler = LockScheduler(priority.slot, priority.generation);
	if (scheduler == NULL)
		return false;
	int64 now = GetCurrentTimestamp();
	uint64 id = static_cast<uint64>(lane_id);
	if (charged > 0)
		(void)scheduler->GiveBack(id, charged, charged, now);
	bool blocked = scheduler->Block(id, GroupOfKey(key), now) == KeyResult::kOk;
	LWLockRelease(SlotLock(priority.slot));
	return blocked;
}

void
UnblockKeyedLane(const KeyedPriority &priority, int64 lane_id)
{
	KeyScheduler *scheduler = LockScheduler(priority.slot, priority.generation);
	if (scheduler == NULL)
		return;
	(void)scheduler->Unblock(static_cast<uint64>(lane_id), GetCurrentTimestamp());
	LWLockRelease(SlotLock(priority.slot));
}

void
ApplyKeyLimits(const KeyedPriority &priority, int32 key_max_running, int64 rate_count, int64 rate_period_micros,
               int32 rate_burst)
{
	KeyScheduler *scheduler = LockScheduler(priority.slot, priority.generation);
	if (scheduler == NULL)
		return;
	int64 now = GetCurrentTimestamp();
	KeyedSlot &s = shared->slots[priority.slot];
	if (s.key_max_running != key_max_running) {
		scheduler->UnblockAll(now);  // each is blocked again if still at the new limit
		s.key_max_running = key_max_running;
	}
	core::KeyLimits wanted{0, rate_count > 0, core::RateSpec{rate_count, rate_period_micros, rate_burst}};
	const core::KeyLimits &have = scheduler->limits();
	if (have.rate_set != wanted.rate_set ||
	    (wanted.rate_set && (have.rate.count != wanted.rate.count || have.rate.period_micros != wanted.rate.period_micros ||
	                         have.rate.burst != wanted.rate.burst)))
		scheduler->SetLimits(wanted, now);  // O(keys), once per change of the setting
	LWLockRelease(SlotLock(priority.slot));
}

int64
KeyedTokenWait(const KeyedPriority &priority)
{
	KeyScheduler *scheduler = LockScheduler(priority.slot, priority.generation);
	if (scheduler == NULL)
		return 0;
	int64 wait = 0;
	if (scheduler->limits().rate_set) {
		core::KeyPick pick = scheduler->Pick(GetCurrentTimestamp());
		wait = !pick.found && pick.wait_micros > 0 ? pick.wait_micros : 0;
	}
	LWLockRelease(SlotLock(priority.slot));
	return wait;
}

void
NoteLaneWork(text *queue, const Lane &lane, text *key, int64 head_job_id)
{
	if (shared == NULL || (key == NULL && pg_atomic_read_u32(&shared->used) == 0))
		return;
	int32 weight = 1;
	if (key != NULL) {
		Datum values[2] = {PointerGetDatum(queue), PointerGetDatum(key)};
		Execute(Stmt::kKeyWeight, 0, values, NULL, 1);
		if (SPI_processed == 1) {
			bool isnull;
			weight = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		}
	}
	Note *note = NoteOf(lane.lane_id, queue, lane.priority);
	note->work = true;
	note->keyed = note->keyed || key != NULL;
	if (!note->weighed)
		note->weight = weight;
	note->head = Min(note->head, head_job_id);
}

void
NoteKeyWeight(text *queue, text *key, int32 weight)
{
	// Without preloading there is no scheduler, and no callback would ever
	// forget the notes, which live in this transaction's memory (found by
	// the review of stop 49).
	if (shared == NULL)
		return;
	Datum values[1] = {PointerGetDatum(queue)};
	for (int16 priority = 1; priority <= kMaxLanesPerQueue; priority++) {
		Datum lane_values[3] = {values[0], Int16GetDatum(priority), PointerGetDatum(key)};
		Execute(Stmt::kKeyedLaneOf, 0, lane_values, NULL, 1);
		if (SPI_processed == 0)
			continue;
		Lane lane = LaneOfRow(SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
		Note *note = NoteOf(lane.lane_id, queue, priority);
		note->weighed = true;
		note->weight = weight;
	}
}

KeyedPriority
OpenKeyedPriority(text *queue, int16 priority, bool fair)
{
	KeyedPriority result{-1, 0, queue, priority};
	if (shared == NULL)
		return result;
	Oid incarnation = ExtensionIncarnation();
	result.slot = MakeSlot(incarnation, queue, priority, &result.generation);
	if (result.slot < 0)
		return result;
	(void)SchedulerOf(result.slot);
	if (!shared->slots[result.slot].built)
		Build(result.slot, result.generation, queue, priority);
	KeyScheduler *scheduler = LockScheduler(result.slot, result.generation);
	if (scheduler == NULL) {
		result.slot = -1;
		return result;
	}
	KeyMode mode = fair ? KeyMode::kFair : KeyMode::kOldestHead;
	if (scheduler->mode() != mode)
		scheduler->SetMode(mode);  // O(lanes with work), once per change of the setting
	LWLockRelease(SlotLock(result.slot));
	return result;
}

int
PickKeyedLane(const KeyedPriority &priority, int want, int64 *lane_id, uint32 *activations)
{
	KeyScheduler *scheduler = LockScheduler(priority.slot, priority.generation);
	if (scheduler == NULL)
		return 0;
	int64 now = GetCurrentTimestamp();
	core::KeyPick pick = scheduler->Pick(now);
	int charged = 0;
	if (pick.found) {
		charged = Min(want, pick.room);
		if (scheduler->Charge(pick.id, charged, now) != KeyResult::kOk)
			charged = 0;
		*lane_id = static_cast<int64>(pick.id);
		*activations = scheduler->Find(pick.id)->activations;
		if (charged > 0)
			pending_pick = PendingPick{priority.slot, priority.generation, *lane_id, charged, scheduler};
	}
	LWLockRelease(SlotLock(priority.slot));
	return charged;
}

void
SettleKeyedPick(const KeyedPriority &priority, int64 lane_id, int charged, int claimed, bool exhausted,
                uint32 activations, int64 next_head)
{
	if (claimed > 0) {
		// Mapped already (the pick); the note must exist before the abort
		// that needs it, so it is made first (may ereport: out of memory).
		Note *note = NoteOf(lane_id, priority.queue, priority.priority);
		note->claimed = true;
		note->slot = priority.slot;
		note->generation = priority.generation;
		note->scheduler = SchedulerOf(priority.slot);
	}
	pending_pick.slot = -1;  // settled here from now on (nothing below can fail)
	KeyScheduler *scheduler = LockScheduler(priority.slot, priority.generation);
	if (scheduler == NULL)
		return;
	int64 now = GetCurrentTimestamp();
	uint64 id = static_cast<uint64>(lane_id);
	// Unused jobs give their pass back; a pick that found nothing in a lane
	// that is not empty keeps one job's worth, so the next pick goes elsewhere.
	int unused = charged - claimed;
	if (claimed == 0 && !exhausted && charged > 0)
		unused = charged - 1;
	// (Also with nothing unused: it ends the hold of the key rate's tokens
	// the charge took, else they would hold the bucket's burst for good.)
	if (charged > 0)
		(void)scheduler->GiveBack(id, charged, unused, now);
	if (charged - unused > 0)
		(void)scheduler->Settle(id, charged - unused, false, now);
	if (exhausted)
		(void)scheduler->DeactivateIfUnchanged(id, activations, now);
	else if (scheduler->mode() == KeyMode::kOldestHead)
		// Its next job is younger than those it gave; a pick that found it busy
		// or yielding nothing moves it behind the others (in fair mode the pass
		// kept above does that), until an enqueue's commit brings its head back.
		(void)scheduler->SetHead(id, claimed > 0 ? next_head : PG_INT64_MAX);
	LWLockRelease(SlotLock(priority.slot));
}

void
ActivateKeyedLane(const KeyedPriority &priority, int64 lane_id)
{
	KeyScheduler *scheduler = LockScheduler(priority.slot, priority.generation);
	if (scheduler == NULL)
		return;
	uint64 id = static_cast<uint64>(lane_id);
	const core::KeyEntry *entry = scheduler->Find(id);
	(void)scheduler->Activate(id, entry != NULL ? entry->weight : 1, PG_INT64_MAX, GetCurrentTimestamp(), true);
	LWLockRelease(SlotLock(priority.slot));
}

void
NoteLaneHeld(text *queue, const Lane &lane)
{
	if (shared == NULL || pg_atomic_read_u32(&shared->used) == 0)
		return;
	uint64 generation;
	int slot = FindSlot(ExtensionIncarnation(), queue, lane.priority, &generation);
	if (slot < 0)
		return;
	KeyScheduler *scheduler = SchedulerOf(slot);  // mapped now: the abort cannot map
	Note *note = NoteOf(lane.lane_id, queue, lane.priority);
	note->claimed = true;
	note->slot = slot;
	note->generation = generation;
	note->scheduler = scheduler;
}

int
LanesOfPriority(text *queue, int16 priority, Lane **lanes)
{
	Datum values[2] = {PointerGetDatum(queue), Int16GetDatum(priority)};
	Execute(Stmt::kLanesOfPriority, 0, values, NULL, 0);
	int count = static_cast<int>(SPI_processed);
	*lanes = static_cast<Lane *>(palloc(sizeof(Lane) * (count + 1)));
	for (int i = 0; i < count; i++)
		(*lanes)[i] = LaneOfRow(SPI_tuptable->vals[i], SPI_tuptable->tupdesc);
	return count;
}

}  // namespace awa::pg
