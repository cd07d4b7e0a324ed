// pending_enqueues.cpp: see pending_enqueues.hpp.
#include "pg/pending_enqueues.hpp"

#include "pg/lane_cursors.hpp"

#include "pg/lanes.hpp"
#include "pg/ring_epoch.hpp"
#include "pg/rings.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "access/xlog.h"
#include "common/hashfn.h"
#include "utils/hsearch.h"
}

#include <type_traits>

namespace awa::pg {

namespace {

// A lane with pending jobs, keyed by (queue, priority); `chosen` is scratch
// space of a flush (the log positions of the lane's jobs it appends).
struct LaneKey {
	text *queue;
	int16 priority;
	text *concurrency_key;  // NULL: the lane of jobs without a key
};
struct PendingLane {
	LaneKey key;  // key.queue points at this transaction's copy
	int *chosen;
	int chosen_count;
	bool ensure;  // scratch of a flush: an unwritten lane-only entry asks for the lane
};
static_assert(std::is_trivially_destructible_v<PendingLane>, "lives in a memory context");

// Lanes are found by a linear search of lane_order while a transaction has at
// most kLinearLanes of them (most have one), through a hash table of
// LaneEntry made once it has more: creating the table was about 1,200
// instructions of each single-job enqueue's transaction.
constexpr int kLinearLanes = 8;
struct LaneEntry {
	LaneKey key;  // lane->key
	PendingLane *lane;
};
static_assert(std::is_trivially_destructible_v<LaneEntry>, "lives in a dynahash");

// A job of this transaction: the row (one palloc'd block: the JobRow and
// copies of its varlenas), its lane, the subtransaction that enqueued it, and
// the subtransaction whose writes hold its ready row (0: not written yet). An
// entry without a row asks only for its lane to exist: a scheduled job's
// (its deferred row is written at the call; its lane, like a due job's, at
// commit, so a new queue's first producer holds up no other).
//
// A flush in subtransaction C writes every unwritten job in C. A job enqueued
// in C or in a child that C has absorbed shares C's fate from then on, and is
// settled (forgotten). A job enqueued further out (id below C's) would be
// lost if C rolled back while its own subtransaction commits, so it stays,
// written by C: if C (or an ancestor up to the job's own level) aborts, the
// job is unwritten again and the next flush writes it anew; once C's writes
// belong to a subtransaction at or above the job's own level, it is settled.
// (Found by test/sql/counts.sql: "enqueue; SAVEPOINT; claim; ROLLBACK TO"
// lost the job enqueued before the savepoint.)
struct LogEntry {
	JobRow *row;
	PendingLane *lane;
	SubTransactionId enqueued_in;
	SubTransactionId written_in;
};

// What this transaction has pending. Everything lives in `context`, a child of
// TopTransactionContext, so an abort frees it even if no callback ran; the
// pointers are reset at every transaction end.
struct Pending {
	MemoryContext context;
	HTAB *lanes;  // NULL until more than kLinearLanes lanes
	// The jobs not settled yet, in the order they were enqueued.
	// Subtransaction ids grow over a transaction, so the jobs of an aborting
	// subtransaction (and of its children) are the suffix of this log whose
	// enqueued_in is not below its own.
	LogEntry *log;
	int log_count;
	int log_capacity;
	int unwritten;  // entries with written_in == 0
	// Lanes in the order of their first job (they are appended in this order).
	PendingLane **lane_order;
	int lane_count;
	int lane_capacity;
	int64 unwritten_bytes;
	// The role the jobs are appended as: the owner of awa's functions, as
	// whom awa.enqueue (SECURITY DEFINER) ran when it deferred them.
	Oid owner;
	// The extension the jobs were enqueued into (rings.hpp). Dropped (and
	// maybe created again) before the commit: the jobs went with it (found
	// in review: DROP + CREATE EXTENSION in the enqueuing transaction wrote a
	// ghost job whose job_id the new extension handed out again).
	Oid incarnation;
	// The highest subtransaction whose writes hold some job still in the log
	// (0: none): a subtransaction's end looks through the log only if it is
	// at or below it.
	SubTransactionId highest_writer;
	// A write is in progress. A job enqueued meanwhile (an event trigger on
	// the lane's DDL, found in review) waits for the next round, and no
	// write starts inside another.
	bool writing;
	// The subtransaction the write runs in: a write that fails inside a
	// savepoint rolled back (a statement_timeout or a cancel during a
	// claim's write, under a driver that wraps each statement in a savepoint)
	// is over when that subtransaction aborts. Left set, `writing` made
	// every later write return at once, COMMIT's included: the jobs enqueued
	// before it were never written (found in review). (XactReadOnly, which
	// the write lifts, PostgreSQL restores with the subtransaction.)
	SubTransactionId writing_in;
};
Pending pending;

uint32
LaneKeyHash(const void *key, Size)
{
	const LaneKey *k = static_cast<const LaneKey *>(key);
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(VARDATA_ANY(k->queue)), VARSIZE_ANY_EXHDR(k->queue));
	hash = hash_combine(hash, static_cast<uint32>(k->priority));
	if (k->concurrency_key != NULL)
		hash = hash_combine(hash, hash_any(reinterpret_cast<const unsigned char *>(VARDATA_ANY(k->concurrency_key)),
		                                   VARSIZE_ANY_EXHDR(k->concurrency_key)));
	return hash;
}

bool
SameVarlena(text *x, text *y)
{
	if (x == NULL || y == NULL)
		return x == y;
	Size length = VARSIZE_ANY_EXHDR(x);
	return length == VARSIZE_ANY_EXHDR(y) && memcmp(VARDATA_ANY(x), VARDATA_ANY(y), length) == 0;
}

int
LaneKeyCompare(const void *a, const void *b, Size)
{
	const LaneKey *x = static_cast<const LaneKey *>(a);
	const LaneKey *y = static_cast<const LaneKey *>(b);
	if (x->priority != y->priority)
		return 1;
	return SameVarlena(x->queue, y->queue) && SameVarlena(x->concurrency_key, y->concurrency_key) ? 0 : 1;
}

template <typename T>
void
Grow(T **array, int *capacity, int needed)
{
	if (needed <= *capacity)
		return;
	int next = *capacity == 0 ? 16 : *capacity * 2;
	while (next < needed)
		next *= 2;
	*array = static_cast<T *>(*array == NULL ? MemoryContextAlloc(pending.context, sizeof(T) * next)
	                                          : repalloc(*array, sizeof(T) * next));
	*capacity = next;
}

void
Begin()
{
	if (pending.context != NULL)
		return;
	pending.context = AllocSetContextCreate(TopTransactionContext, "awa pending enqueues", ALLOCSET_DEFAULT_SIZES);
}

// The hash table of the lanes so far (pending.lanes NULL before).
void
MakeLaneTable()
{
	HASHCTL ctl;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(LaneKey);
	ctl.entrysize = sizeof(LaneEntry);
	ctl.hash = LaneKeyHash;
	ctl.match = LaneKeyCompare;
	ctl.hcxt = pending.context;
	HTAB *table = hash_create("awa pending lanes", 64, &ctl, HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	for (int l = 0; l < pending.lane_count; l++) {
		PendingLane *lane = pending.lane_order[l];
		LaneEntry *entry = static_cast<LaneEntry *>(hash_search(table, &lane->key, HASH_ENTER, NULL));
		entry->key = lane->key;
		entry->lane = lane;
	}
	pending.lanes = table;
}

Size
VarlenaBytes(const void *value)
{
	return value == NULL ? 0 : MAXALIGN(VARSIZE_ANY(value));
}

char *
CopyVarlena(char *to, const void *value, void **out)
{
	if (value == NULL) {
		*out = NULL;
		return to;
	}
	memcpy(to, value, VARSIZE_ANY(value));
	*out = to;
	return to + MAXALIGN(VARSIZE_ANY(value));
}

// One block: the row, then its kind, args, unique key and payload.
JobRow *
CopyRow(const JobRow &row, text *queue)
{
	Size size = MAXALIGN(sizeof(JobRow)) + VarlenaBytes(row.kind) + VarlenaBytes(row.args) +
	            VarlenaBytes(row.unique_key) + VarlenaBytes(row.payload) + VarlenaBytes(row.concurrency_key);
	char *block = static_cast<char *>(MemoryContextAlloc(pending.context, size));
	JobRow *copy = reinterpret_cast<JobRow *>(block);
	*copy = row;
	copy->queue = queue;
	char *at = block + MAXALIGN(sizeof(JobRow));
	void *out;
	at = CopyVarlena(at, row.kind, &out);
	copy->kind = static_cast<text *>(out);
	at = CopyVarlena(at, row.args, &out);
	copy->args = static_cast<Jsonb *>(out);
	at = CopyVarlena(at, row.unique_key, &out);
	copy->unique_key = static_cast<bytea *>(out);
	at = CopyVarlena(at, row.payload, &out);
	copy->payload = static_cast<Jsonb *>(out);
	at = CopyVarlena(at, row.concurrency_key, &out);
	copy->concurrency_key = static_cast<text *>(out);
	return copy;
}

PendingLane *
LaneOf(const JobRow &row)
{
	LaneKey key{row.queue, row.priority, row.concurrency_key};
	if (pending.lanes == NULL) {
		for (int l = 0; l < pending.lane_count; l++)
			if (LaneKeyCompare(&pending.lane_order[l]->key, &key, sizeof(LaneKey)) == 0)
				return pending.lane_order[l];
		if (pending.lane_count >= kLinearLanes)
			MakeLaneTable();
	}
	if (pending.lanes != NULL) {
		LaneEntry *entry = static_cast<LaneEntry *>(hash_search(pending.lanes, &key, HASH_FIND, NULL));
		if (entry != NULL)
			return entry->lane;
	}
	// A new lane: its copies first, then (once it is complete) the table's
	// entry, so an error in between leaves no entry without its lane.
	PendingLane *lane = static_cast<PendingLane *>(MemoryContextAlloc(pending.context, sizeof(PendingLane)));
	Size size = VARSIZE_ANY(row.queue);
	text *queue = static_cast<text *>(MemoryContextAlloc(pending.context, size));
	memcpy(queue, row.queue, size);
	lane->key.queue = queue;
	lane->key.priority = row.priority;
	lane->key.concurrency_key = NULL;
	if (row.concurrency_key != NULL) {
		Size key_size = VARSIZE_ANY(row.concurrency_key);
		lane->key.concurrency_key = static_cast<text *>(MemoryContextAlloc(pending.context, key_size));
		memcpy(lane->key.concurrency_key, row.concurrency_key, key_size);
	}
	lane->chosen = NULL;
	lane->chosen_count = 0;
	lane->ensure = false;
	Grow(&pending.lane_order, &pending.lane_capacity, pending.lane_count + 1);
	pending.lane_order[pending.lane_count++] = lane;
	if (pending.lanes != NULL) {
		LaneEntry *entry = static_cast<LaneEntry *>(hash_search(pending.lanes, &lane->key, HASH_ENTER, NULL));
		entry->key = lane->key;
		entry->lane = lane;
	}
	return lane;
}

// Forgets the entries `settled` says, keeping the others in order.
template <typename Settled>
void
Compact(Settled settled)
{
	int kept = 0;
	for (int i = 0; i < pending.log_count; i++) {
		LogEntry &entry = pending.log[i];
		if (settled(entry)) {
			if (entry.row != NULL)
				pfree(entry.row);
		}
		else
			pending.log[kept++] = entry;
	}
	pending.log_count = kept;
}

// Writes every unwritten job, lane by lane in the order lanes were first
// used, each lane's jobs in the order they were enqueued. Requires SPI.
void
WriteUnwritten(SubTransactionId writer)
{
	TimestampTz now = GetCurrentTimestamp();
	// This round writes the entries logged so far; what is enqueued while it
	// writes (logged after `limit`, maybe into lanes added meanwhile) waits
	// for the next round.
	const int limit = pending.log_count;
	const int lanes = pending.lane_count;
	for (int l = 0; l < lanes; l++) {
		pending.lane_order[l]->chosen_count = 0;
		pending.lane_order[l]->ensure = false;
	}
	for (int i = 0; i < limit; i++) {
		CHECK_FOR_INTERRUPTS();
		LogEntry &entry = pending.log[i];
		if (entry.written_in != InvalidSubTransactionId)
			continue;
		if (entry.row == NULL)
			entry.lane->ensure = true;
		else
			entry.lane->chosen_count++;
	}
	for (int l = 0; l < lanes; l++) {
		CHECK_FOR_INTERRUPTS();
		PendingLane *lane = pending.lane_order[l];
		lane->chosen = lane->chosen_count == 0
		                   ? NULL
		                   : static_cast<int *>(palloc(sizeof(int) * lane->chosen_count));
		lane->chosen_count = 0;
	}
	for (int i = 0; i < limit; i++) {
		CHECK_FOR_INTERRUPTS();
		LogEntry &entry = pending.log[i];
		if (entry.written_in == InvalidSubTransactionId && entry.row != NULL)
			entry.lane->chosen[entry.lane->chosen_count++] = i;
	}
	int *order = static_cast<int *>(palloc(sizeof(int) * (kMaxPendingJobs + 1)));
	JobRow *rows = static_cast<JobRow *>(palloc(sizeof(JobRow) * (kMaxPendingJobs + 1)));
	for (int l = 0; l < lanes; l++) {
		CHECK_FOR_INTERRUPTS();
		PendingLane *lane = pending.lane_order[l];
		// Chunks of at most kMaxPendingJobs rows (one, unless the bytes
		// bound flushed first): contiguous lane_seqs unless another producer
		// of the lane interleaves.
		for (int first = 0; first < lane->chosen_count; first += kMaxPendingJobs) {
			int n = Min(lane->chosen_count - first, kMaxPendingJobs);
			for (int k = 0; k < n; k++) {
				CHECK_FOR_INTERRUPTS();
				rows[k] = *pending.log[lane->chosen[first + k]].row;
				order[k] = k;
			}
			AppendReadyRows(rows, order, n, now);
		}
		if (lane->chosen_count == 0 && lane->ensure)
			// A scheduled or parked job's lane: held, so a lane reclaim
			// cannot take it from under this commit (lane_cursors.hpp).
			(void)HoldLane(lane->key.queue, lane->key.priority, lane->key.concurrency_key);
		if (lane->chosen != NULL)
			pfree(lane->chosen);
		lane->chosen = NULL;
		lane->chosen_count = 0;
	}
	pfree(order);
	pfree(rows);
	for (int i = 0; i < limit; i++) {
		LogEntry &entry = pending.log[i];
		if (entry.written_in != InvalidSubTransactionId)
			continue;
		entry.written_in = writer;
		pending.unwritten--;
		if (entry.row != NULL)
			pending.unwritten_bytes -= GetMemoryChunkSpace(entry.row);
	}
	if (writer > pending.highest_writer)
		pending.highest_writer = writer;
	// Jobs enqueued in the writer (or in a child it absorbed) now share its
	// fate.
	Compact([writer](const LogEntry &entry) { return entry.written_in != InvalidSubTransactionId && entry.enqueued_in >= writer; });
}

}  // namespace

void
DeferReadyRows(const JobRow *rows, const int *order, int n)
{
	if (n == 0)
		return;
	// This transaction sees its own, uncommitted ring generation: said at
	// the enqueue, as before jobs waited for the commit (job_insert.cpp).
	if (RotationInThisTransaction())
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("awa: cannot enqueue in a transaction that rotated a ring"),
		                errhint("Run awa.run_maintenance in a transaction of its own.")));
	Begin();
	pending.owner = GetUserId();
	pending.incarnation = ExtensionIncarnation();
	MemoryContext caller = MemoryContextSwitchTo(pending.context);
	PendingLane *lane = LaneOf(rows[order[0]]);
	Grow(&pending.log, &pending.log_capacity, pending.log_count + n);
	SubTransactionId subtransaction = GetCurrentSubTransactionId();
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();
		JobRow *copy = CopyRow(rows[order[i]], lane->key.queue);
		pending.unwritten_bytes += GetMemoryChunkSpace(copy);
		pending.unwritten++;
		pending.log[pending.log_count++] = LogEntry{copy, lane, subtransaction, InvalidSubTransactionId};
	}
	MemoryContextSwitchTo(caller);
	if ((pending.unwritten >= kMaxPendingJobs || pending.unwritten_bytes >= kMaxPendingBytes) && !pending.writing)
		FlushPendingEnqueues();
}

void
DeferLane(const JobRow &row)
{
	Begin();
	pending.owner = GetUserId();
	pending.incarnation = ExtensionIncarnation();
	MemoryContext caller = MemoryContextSwitchTo(pending.context);
	PendingLane *lane = LaneOf(row);
	Grow(&pending.log, &pending.log_capacity, pending.log_count + 1);
	pending.log[pending.log_count++] = LogEntry{NULL, lane, GetCurrentSubTransactionId(), InvalidSubTransactionId};
	pending.unwritten++;
	MemoryContextSwitchTo(caller);
	if (pending.unwritten >= kMaxPendingJobs && !pending.writing)
		FlushPendingEnqueues();
}

int
FlushPendingEnqueues()
{
	if (pending.context == NULL || pending.unwritten == 0 || pending.writing)
		return 0;
	if (ExtensionIncarnationIfPresent() != pending.incarnation) {
		// The extension these jobs were enqueued into was dropped in this
		// transaction: they went with it, as its rows did.
		MemoryContextDelete(pending.context);
		pending = Pending{};
		return 0;
	}
	// At PRE_COMMIT the session's role and search_path are in force, not
	// awa.enqueue's: append as its owner under awa's search_path, as
	// SECURITY DEFINER with a SET clause does (fmgr_security_definer); the
	// search_path only once a statement runs (DeferSearchPath, spi_plans.hpp).
	// An error restores both with the transaction's abort.
	Oid saved_user;
	int saved_context;
	GetUserIdAndSecContext(&saved_user, &saved_context);
	SetUserIdAndSecContext(pending.owner, saved_context | SECURITY_LOCAL_USERID_CHANGE);
	DeferSearchPath();
	// A transaction that enqueued and then became READ ONLY (SET TRANSACTION
	// READ ONLY is allowed after writes) wrote its jobs before, and still
	// does (found in review: its COMMIT failed in nextval).
	bool read_only = XactReadOnly;
	if (!RecoveryInProgress())
		XactReadOnly = false;
	bool snapshot = !ActiveSnapshotSet();
	if (snapshot)
		PushActiveSnapshot(GetTransactionSnapshot());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	// Rounds until nothing is left: a round's writes may enqueue more (an
	// event trigger on a new lane's DDL that calls awa.enqueue).
	int written = 0;  // jobs (lane-only entries are not counted)
	pending.writing = true;
	pending.writing_in = GetCurrentSubTransactionId();
	while (pending.unwritten > 0) {
		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < pending.log_count; i++)
			if (pending.log[i].written_in == InvalidSubTransactionId && pending.log[i].row != NULL)
				written++;
		WriteUnwritten(GetCurrentSubTransactionId());
	}
	pending.writing = false;
	pending.writing_in = InvalidSubTransactionId;
	// Everything settled (a write at the top level): start afresh, so that
	// the next write goes through the lanes used since, not every lane of
	// the transaction (a transaction that enqueues into many queues and
	// claims between them would otherwise pay for all its lanes at each
	// claim).
	if (pending.log_count == 0) {
		MemoryContextDelete(pending.context);
		pending = Pending{};
	}
	SPI_finish();
	if (snapshot)
		PopActiveSnapshot();
	XactReadOnly = read_only;
	EndDeferredSearchPath();
	SetUserIdAndSecContext(saved_user, saved_context);
	return written;
}

void
OnPendingEnqueuesTransactionEvent(XactEvent event)
{
	switch (event) {
	case XACT_EVENT_PRE_COMMIT:
	case XACT_EVENT_PRE_PREPARE:
		// May ereport: the transaction then aborts. (Counters refuse to
		// prepare a transaction that enqueued, callbacks.cpp; should that
		// change, the jobs are in before PREPARE.)
		FlushPendingEnqueues();
		break;
	case XACT_EVENT_COMMIT:
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_COMMIT:
	case XACT_EVENT_PARALLEL_ABORT:
	case XACT_EVENT_PREPARE:
		// TopTransactionContext, and the pending context with it, is gone
		// or about to go.
		pending = Pending{};
		break;
	default:
		break;
	}
}

// Runs in subtransaction commit and abort processing: nothing here checks
// for interrupts or can raise (pfree of chunks of our own context only).
void
OnPendingEnqueuesSubTransactionEvent(SubXactEvent event, SubTransactionId subtransaction,
                                     SubTransactionId parent)
{
	if (pending.context == NULL)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB) {
		// A write it runs (or its parent runs) ends with it, unfinished: what
		// it wrote is unwritten again (below). A subtransaction that began
		// inside the write (a trigger's exception block) leaves it running.
		if (pending.writing && subtransaction <= pending.writing_in) {
			pending.writing = false;
			pending.writing_in = InvalidSubTransactionId;
		}
		// Its jobs (and its children's): the log's suffix.
		while (pending.log_count > 0 && pending.log[pending.log_count - 1].enqueued_in >= subtransaction) {
			LogEntry &entry = pending.log[--pending.log_count];
			if (entry.written_in == InvalidSubTransactionId) {
				pending.unwritten--;
				if (entry.row != NULL)
					pending.unwritten_bytes -= GetMemoryChunkSpace(entry.row);
			}
			if (entry.row != NULL)
				pfree(entry.row);
		}
		// Older jobs it wrote are unwritten again.
		for (int i = 0; i < pending.log_count && pending.highest_writer >= subtransaction; i++) {
			LogEntry &entry = pending.log[i];
			if (entry.written_in >= subtransaction) {
				entry.written_in = InvalidSubTransactionId;
				pending.unwritten++;
				if (entry.row != NULL)
					pending.unwritten_bytes += GetMemoryChunkSpace(entry.row);
			}
		}
	} else if (event == SUBXACT_EVENT_COMMIT_SUB && pending.unwritten < pending.log_count &&
	           pending.highest_writer >= subtransaction) {
		// Its writes are now its parent's.
		for (int i = 0; i < pending.log_count; i++)
			if (pending.log[i].written_in == subtransaction)
				pending.log[i].written_in = parent;
		Compact([parent](const LogEntry &entry) { return entry.written_in != InvalidSubTransactionId && entry.enqueued_in >= parent; });
	}
}

}  // namespace awa::pg
