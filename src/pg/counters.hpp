// counters.hpp: per-queue job counts in shared memory, so awa.queue_counts
// costs the same at ten jobs and at ten million.
//
// Every operation that moves jobs between states records the move in
// transaction-local memory (CountMove). The moves of a subtransaction that
// aborts are dropped; at commit they are applied to the shared counters, after
// the commit is visible; an aborted transaction applies nothing. A transaction
// with pending moves cannot be prepared. A transaction that moves jobs of more
// queues than its local table holds (64, per subtransaction level) makes the
// database's counters untrusted at its commit, so they are rebuilt.
//
// The counters live in a dynamic shared memory area keyed by (database, hash
// of the queue name), so they grow with the queues up to awa.max_queues, for
// at most awa.max_counted_databases databases at once. A queue's entry is
// made at the PRE_COMMIT of the first transaction that moves its jobs (until
// then its pending moves keep the name), so a move that rolls back takes no
// entry (or by a rebuild, or by a claim of a queue with a limit:
// AddClaimsInFlight, TakeRateTokens); and a database holds at most awa.max_queues_per_database entries, so
// that one database cannot take the table from the others: a database that
// finds no entry for a queue (its share, or the whole table, is full) is
// counted exactly from then on, alone.
//
// The counters are trusted only once built: after a server start (and after
// the extension is created again) the first awa.queue_counts, or the
// maintenance worker's counters task (awa._ensure_counters), rebuilds them
// with one exact pass (awa._queue_counts_scan) under a snapshot it publishes
// in shared memory. Transactions that commit while the pass runs add their
// moves on top of it exactly when their xid is not visible to that snapshot,
// so no move is lost or counted twice. Until then, on a standby (where
// replayed changes move no counter), without shared_preload_libraries, for a
// database beyond awa.max_counted_databases, or when a queue of the database
// found no entry (more queues than awa.max_queues_per_database, or than
// awa.max_queues in all databases, or two queue names share a hash),
// awa.queue_counts answers from the exact pass.
#pragma once

#include "core/lifecycle.hpp"
#include "pg/postgres_headers.hpp"
#include <type_traits>

namespace awa::pg {

struct QueueCounts {
	int64 count[core::kJobStateCount];
};
static_assert(std::is_trivially_destructible_v<QueueCounts>, "lives across PostgreSQL errors");

// The startup hooks and the (sub)transaction callbacks, called by
// callbacks.cpp while preloaded: PRE_COMMIT makes the entries of the queues
// that have none yet (it may ereport: out of memory) and notes the xid,
// COMMIT applies the pending moves, an abort (of the transaction or of a
// subtransaction) drops its own, a subtransaction's commit folds its moves
// into its parent's, PRE_PREPARE refuses a transaction with pending moves.
void RequestCountersShmem();
void StartupCountersShmem();
void OnCountersTransactionEvent(XactEvent event);
void OnCountersSubTransactionEvent(SubXactEvent event);

// Records that `n` jobs of `queue` left `from` and entered `to` (either may be
// kNoState). Call in the transaction that makes the change. May ereport.
// Takes no shared entry (see above).
// The move also counts as the event core::EventOfMove names, or as `event`
// when given (a rescue): the totals since the server started, which
// awa.job_event_totals reads. Like the counts, they change at commit only.
constexpr int kNoState = core::kNoJobState;
void CountMove(text *queue, int from, int to, int64 n, core::JobEvent event = core::JobEvent::kNone);
// Records that `n` jobs left `from` of `from_queue` and entered `to` of
// `to_queue` (a job moved to another queue by an operator, awa.move_jobs):
// the same deltas as CountMove on each queue, and no job event on either
// (the job was neither enqueued nor did it end). May ereport.
void CountTransfer(text *from_queue, int from, text *to_queue, int to, int64 n);

// This transaction's commit makes the database's counters untrusted (they
// are rebuilt): a change they did not follow (limits per key set where none
// were: key_limits.hpp).
void DistrustCountersAtCommit();
// The event totals of every queue of this database that has counters: sets
// *out to a palloc'd array, in no particular order, and returns its length
// (0, *out NULL, without shared memory or for a database without counters).
// May ereport (out of memory).
struct QueueEventTotals {
	char *queue;  // palloc'd
	int64 totals[core::kJobEventCount];
};
int ReadEventTotals(QueueEventTotals **out);

// Makes the counters of this database trustworthy, rebuilding them if needed
// (a rebuild outside a transaction that has written first waits for the ring
// maintenance lock, so that it does not overlap a prune). False when they
// cannot be (see above), or not now (this transaction has written, another
// rebuild is running): the caller counts exactly. Requires SPI. May ereport.
bool EnsureCountersTrusted();

// Marks this database's counters untrusted (unless a live rebuild is running)
// and rebuilds them (awa.rebuild_counters); true when they are trusted
// afterwards. Requires SPI. May ereport (no shared memory, recovery, a
// transaction that has written).
bool RebuildCounters();

// The queue's counters, including this transaction's own pending moves; false
// when the counters are not trusted.
bool ReadCounters(text *queue, QueueCounts *out);

// Adds `delta` (negative: takes off) to the queue's claims in flight and
// returns the new total; -1 when it has no entry (nothing recorded). A
// positive `delta` makes the queue's entry when it has none yet (after a
// server start, before the counters' rebuild), so that every claim of a
// limited queue that can have an entry reserves in it; -1 then means that
// none is to be had (see above). May ereport (out of memory).
int64 AddClaimsInFlight(text *queue, int64 delta);
// Counts a claim that the queue's limit gave fewer attempts than it asked
// for, and reads that count (0 without an entry); since the server started.
void NoteClaimLimited(text *queue);

// A queue's rate limit (docs/flow-control.md): `count` attempts per `period_micros`,
// `burst` at once; the bucket starts full when the limit was set (`set_at`)
// since this server run became a primary (PrimaryRunSince: its start, or its
// promotion), else empty.
struct RateLimit {
	int64 count;
	int64 period_micros;
	int32 burst;
	TimestampTz set_at;  // 0: never
};
// Takes up to `want` tokens from the queue's bucket (kept next to its
// counters) and returns how many (0..want); when fewer, *wait_micros is the
// time until the next token. -1: the queue has no counters entry and none is
// to be had (it makes one as AddClaimsInFlight does). May ereport.
// A claim holds the tokens of at most two buckets at once: its queue's
// (kQueueRateHold) and its key's (kKeyRateHold; key_limits.hpp).
constexpr int kQueueRateHold = 0;
constexpr int kKeyRateHold = 1;
constexpr int kRateHolds = 2;
int TakeRateTokens(text *queue, const RateLimit &limit, int want, int64 *wait_micros, int hold = kQueueRateHold);
// Ends the hold of the tokens this backend's claim took last (TakeRateTokens):
// puts back the `unused` ones (the bucket, with the tokens other claims hold,
// at most `burst`); the others count as used. Until then the taken tokens
// count against the burst, so the refill while a claim runs cannot add to
// what it gives back.
void ReturnRateTokens(int unused, int32 burst, int hold = kQueueRateHold);
// A transaction's abort (subtransaction InvalidSubTransactionId) or a
// subtransaction's (callbacks.cpp): a claim that failed between
// TakeRateTokens and ReturnRateTokens, in it, holds its tokens no longer;
// they count as used.
void OnRateTokensAbort(SubTransactionId subtransaction);
int64 ReadClaimsLimited(text *queue);
// Claims the queue's rate limit gave fewer attempts than they asked for (a
// TakeRateTokens that found fewer tokens than wanted); 0 without an entry.
int64 ReadClaimsRateLimited(text *queue);

// ---------------------------------------------------------------------------
// The oldest available job of each queue (awa.queue_metrics,
// docs/monitoring.md): the head of each of its lanes (priority 1..4), i.e.
// the first available lane_seq in claim order, and that job's run_at, kept in
// the queue's counters entry so that reading it costs O(1) per queue.
//
// The events that change a lane's available jobs record what they know in
// the transaction's pending moves, and the commit applies it, as for the
// counts: an enqueue (or promotion, retry, rescue: every insert of ready rows)
// its lowest lane_seq and that job's run_at; a claim the lanes it took and,
// when it took the head, the next head its walk saw (read with the statement
// that reads its jobs, or one more probe), or that the lane is empty; a
// cancel its tombstone. An event that cannot know the new head (a claim whose
// view went stale before it committed, a cancel of the head, any move into or
// out of available recorded only through CountMove) marks the lane
// "unknown", and awa.queue_metrics recomputes unknown lanes (LaneHeadNow) and
// stores the result only if no event was applied to the queue meanwhile (a
// generation number). A new entry (after a server start) is unknown.
//
// Why the rules hold whatever the order in which commits are applied: the
// head is the minimum of a set of lane_seqs; an add lowers it (min), a
// removal at or below it makes it unknown; an add that some removal applied
// since the add's PRE_COMMIT may have taken is not trusted; a claim sets the
// head it computed from its snapshot only if no event at all was applied to
// the queue since before that snapshot.
// ---------------------------------------------------------------------------
constexpr int kHeadLanes = 4;  // priorities 1..4
enum HeadState : int { kHeadUnknown = 0, kHeadEmpty = 1, kHeadKnown = 2 };
struct LaneHead {
	int state;  // HeadState
	int64 seq;
	TimestampTz run_at;
};
static_assert(std::is_trivially_destructible_v<LaneHead>, "lives across PostgreSQL errors");

// What a claim learnt of its lane's head (claim_walk.cpp, claim_write.cpp).
struct ClaimHeadNote {
	uint64 generation;  // HeadGeneration before the claim's first snapshot
	bool took_head;     // the claim took the lane's head
	LaneHead next;      // the head after the claim, in its snapshot (kHeadUnknown: not known)
};
static_assert(std::is_trivially_destructible_v<ClaimHeadNote>, "lives across PostgreSQL errors");

// The queue's head generation now (0 without an entry). Cheap: a per-backend
// cache lookup and a spinlock.
uint64 HeadGeneration(text *queue);

// `n` ready rows of the lane were inserted, the lowest at `lane_seq`, due at
// `run_at`; `n` jobs left available of the lane, the lowest at `lane_seq`
// (a cancel); a claim took `n` jobs of the lane, the lowest at `first`.
// Call in the transaction that makes the change, after its CountMove. May ereport.
void NoteHeadAdd(text *queue, int priority, int64 lane_seq, TimestampTz run_at, int64 n);
void NoteHeadRemove(text *queue, int priority, int64 lane_seq, int64 n);
// n jobs entered or left a keyed lane (key_lanes.hpp): the heads kept here are
// those of the lanes without a key, which the move does not change.
void NoteKeyedAvailable(text *queue, int64 n);
void NoteHeadClaim(text *queue, int priority, int64 first, int64 n, const ClaimHeadNote &note);

struct QueueHeads {
	uint64 generation;
	bool storable;  // this transaction has no pending move of the queue
	LaneHead lanes[kHeadLanes];
};
// The kept heads of the queue's lanes; false when the queue has no entry (no
// shared memory, a database without counters, more queues than the table)
// and on a standby (replayed commits keep no head).
bool ReadHeads(text *queue, QueueHeads *out);
// Keeps a recomputed head, unless an event was applied to the queue since
// `generation` was read (before the recomputation's snapshot).
void StoreHead(text *queue, int priority, uint64 generation, const LaneHead &head);
// Queues of this database with a lane whose head is not kept (tests, bench).
int64 CountUnknownHeads();

// Freeing idle key entries (counters.cpp, "Freeing idle key entries"). The
// counters task's pass: frees the key entries of this database retired by an
// earlier pass and idle since, once no transaction that may hold them runs;
// retires the idle ones. Requires a transaction; may ereport (attaching).
struct KeyEntryPass {
	int64 live;     // key entries in use
	int64 retired;  // idle, to be freed by a later pass
	int64 freed;
};
KeyEntryPass FreeIdleKeyEntries();
// At the end of every transaction, after every callback that may touch a
// counters entry: this transaction holds no key entry pointer any more.
void EndKeyEntryUse();

// A key was reserved under its limit lock, without a counters entry
// (running_limits.cpp); since the server started.
void NoteKeyLockPathUsed();
bool KeyLockPathUsed();

}  // namespace awa::pg
