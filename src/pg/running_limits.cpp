// running_limits.cpp: a queue's concurrency limit (see running_limits.hpp).
#include "pg/running_limits.hpp"

#include "pg/counters.hpp"
#include "pg/key_limits.hpp"
#include "pg/lane_locks.hpp"
#include "pg/ring_epoch.hpp"
#include "pg/spi_plans.hpp"
#include "pg/wakeups.hpp"

#include <type_traits>

extern "C" {
#include "utils/memutils.h"
}

namespace awa::pg {

namespace {

// This transaction's reservations: one per (queue, subtransaction) that
// reserved, in TopTransactionContext.
struct Reservation {
	text *queue;
	int64 count;
	bool in_shared;  // recorded in the counters' claims_in_flight
	SubTransactionId subtransaction;
	// The queue's claims_limited before this reservation was first added: a
	// claim limited since may have been cut by it (see WakeIfCut).
	int64 limited_before;
};
static_assert(std::is_trivially_destructible_v<Reservation>, "lives across PostgreSQL errors");
constexpr int kMaxReservations = 1024;
Reservation reservations[kMaxReservations];
int reservation_count = 0;

// What ReserveRunning has added to a queue's claims in flight and not yet
// recorded in `reservations`: an error in between (a cancel while the
// running attempts are counted exactly) gives it back with the
// (sub)transaction; it stayed added for good (test/t/044).
struct PendingAdd {
	text *queue;  // in TopTransactionContext
	int64 count;
	int64 limited_before;
};
static_assert(std::is_trivially_destructible_v<PendingAdd>, "lives across PostgreSQL errors");
PendingAdd pending_add = {NULL, 0, 0};

// A reservation given back without becoming running attempts (the claim took
// fewer, rolled back, failed) may have made other claims of the queue get
// less than there was room for, and a waiting one then sleeps until an
// attempt of the queue ends, which may not come while nothing runs. Those
// claims note that they were limited before they give their own reservation
// back; so when the queue's claims_limited moved since this reservation was
// added (`limited_before`; `own` notes of this claim excepted), the queue's
// waiting claims are woken to look again. A claim limited by a total that no
// longer holds when it gives back sees it in that total (ReserveRunning
// looks again). (test/t/045)
// The wake bucket of the claims a limit holds: its queue's (a key's limit,
// key_limits.hpp, holds claims of the key's queue).
uint32
WakeBucketOfLimit(text *limited)
{
	text *queue = QueueOfKeyCounterName(VARDATA_ANY(limited), VARSIZE_ANY_EXHDR(limited));
	return QueueWakeBucket(queue != NULL ? queue : limited);
}

void
WakeIfCut(text *queue, int64 limited_before, int64 own)
{
	if (ReadClaimsLimited(queue) - own > limited_before)
		WakeQueueBucket(WakeBucketOfLimit(queue));
}

void
GiveBackPendingAdd()
{
	if (pending_add.count > 0) {
		(void)AddClaimsInFlight(pending_add.queue, -pending_add.count);
		WakeIfCut(pending_add.queue, pending_add.limited_before, 0);
	}
	pending_add = PendingAdd{NULL, 0, 0};
}

bool
SameQueue(const text *a, const text *b)
{
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
	       memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

// The queue's running attempts counted exactly from its tables, with a fresh
// snapshot taken while no ring step runs: TRUNCATE is not MVCC-safe, so a
// count whose snapshot predates a prune's commit, and which opens the pruned
// slot after it, reads the slot empty and misses the attempts the prune
// carried forward (an attempt too few: a claim beyond its limit). The ring
// steps take this lock exclusively with a try (awa._try_ring_lock): held
// shared here for the one statement (a session lock, released before any
// error goes on), a step waits for nothing and is skipped at worst. Found by
// test/t/059 beyond the share: a key's running attempt missing from the count.
int64
ExactRunning(text *queue)
{
	constexpr int kRunningColumn = 2 + static_cast<int>(core::JobState::kRunning);
	const char *name = VARDATA_ANY(queue);
	size_t length = VARSIZE_ANY_EXHDR(queue);
	Datum ring_lock = Int64GetDatum(kRingMaintenanceLockKey);
	(void)DirectFunctionCall1(pg_advisory_lock_shared_int8, ring_lock);
	PG_TRY();
	{
		if (IsKeyCounterName(name, length)) {
			// A key's running attempts (key_limits.hpp).
			Datum values[2] = {PointerGetDatum(QueueOfKeyCounterName(name, length)),
			                   PointerGetDatum(KeyOfKeyCounterName(name, length))};
			ExecuteLatest(Stmt::kKeyRunningOne, 0, values, NULL);
		} else {
			Datum key[1] = {PointerGetDatum(queue)};
			ExecuteLatest(Stmt::kCountsScanOne, 0, key, NULL);
		}
	}
	PG_FINALLY();
	{
		(void)DirectFunctionCall1(pg_advisory_unlock_shared_int8, ring_lock);
	}
	PG_END_TRY();
	if (SPI_processed == 0)
		return 0;
	bool isnull;
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, kRunningColumn, &isnull));
}

// `unused`: the attempts were not started (else a commit made them running).
void
GiveBack(Reservation *r, int64 n, bool unused)
{
	if (n <= 0)
		return;
	if (r->in_shared) {
		(void)AddClaimsInFlight(r->queue, -n);
		if (unused)
			WakeIfCut(r->queue, r->limited_before, 0);
	}
	r->count -= n;
}

void
ForgetAll(bool unused)
{
	for (int i = 0; i < reservation_count; i++)
		GiveBack(&reservations[i], reservations[i].count, unused);
	reservation_count = 0;
}

}  // namespace

int
ReserveRunning(text *queue, int32 limit, int want)
{
	SubTransactionId subtransaction = GetCurrentSubTransactionId();
	Reservation *slot = NULL;
	for (int i = 0; i < reservation_count && slot == NULL; i++)
		if (reservations[i].subtransaction == subtransaction && SameQueue(reservations[i].queue, queue))
			slot = &reservations[i];
	if (slot == NULL && reservation_count == kMaxReservations)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
		                errmsg("awa: more than %d claims of limited queues in one transaction", kMaxReservations),
		                errhint("Claim from fewer queues with a concurrency limit per transaction.")));

	// This transaction's own claims and ends count as committed for it (they
	// commit or roll back together with this claim): its pending moves in
	// the counters' count, its own writes in the exact one; so its own
	// reservations are not counted among those in flight.
	int64 own = 0;
	for (int i = 0; i < reservation_count; i++)
		if (reservations[i].in_shared && SameQueue(reservations[i].queue, queue))
			own += reservations[i].count;
	int granted;
	bool in_shared;
	MemoryContext caller = MemoryContextSwitchTo(TopTransactionContext);
	text *copy = static_cast<text *>(palloc(VARSIZE_ANY(queue)));
	memcpy(copy, queue, VARSIZE_ANY(queue));
	MemoryContextSwitchTo(caller);
	// Noted as soon as it is added (no interrupt or error can come between
	// the addition and the note; one inside AddClaimsInFlight, making the
	// entry, comes before the addition).
	int64 limited_before = ReadClaimsLimited(queue);
	int64 after = AddClaimsInFlight(queue, want);
	if (after >= 0)
		pending_add = PendingAdd{copy, want, limited_before};
	if (after >= 0) {
		// Optimistic: take `want` first, then read running, then give back
		// what does not fit. Every other reservation either was in flight
		// when this one added (it is in `after`) or adds after it and sees
		// this one in its own total; a claim that commits counts as running
		// before it leaves the in-flight total, and running is read after
		// the add: nothing is counted short, two racing claims at worst both
		// give back.
		in_shared = true;
		int64 others = after - own - want;
		int notes = 0;
		for (int again = 0;; again++) {
			// The counters' running count (with this transaction's own
			// moves), else an exact count with a snapshot taken after the add.
			QueueCounts counts;
			int64 running = ReadCounters(queue, &counts) ? counts.count[static_cast<int>(core::JobState::kRunning)]
			                                             : ExactRunning(queue);
			int64 room = static_cast<int64>(limit) - running - others;
			granted = room <= 0 ? 0 : static_cast<int>(Min(static_cast<int64>(want), room));
			if (granted == want)
				break;
			// Noted before the give-back (see WakeIfCut).
			NoteClaimLimited(queue);
			notes++;
			int64 now_total = AddClaimsInFlight(queue, -(want - granted));
			pending_add.count = granted;
			// Others gave back since the add: the room they left is this
			// claim's to take, by adding again and reading running again
			// after that add (at most twice more).
			int64 now_others = now_total - own - granted;
			if (again == 2 || now_others >= others || static_cast<int64>(limit) - running - now_others <= granted)
				break;
			CHECK_FOR_INTERRUPTS();
			after = AddClaimsInFlight(queue, want - granted);
			pending_add.count = want;
			others = after - own - want;
		}
		// A key reserved under its limit lock by a claim still open (it had
		// no entry then; one was made since) is not in the total: while
		// such a claim holds the lock, this one takes nothing (found from
		// outside: a key one attempt over its limit once idle entries were
		// freed beside such a claim).
		if (granted > 0 && KeyLockPathUsed() && IsKeyCounterName(VARDATA_ANY(queue), VARSIZE_ANY_EXHDR(queue)) &&
		    QueueLimitHeldByOther(queue)) {
			NoteClaimLimited(queue);
			notes++;
			(void)AddClaimsInFlight(queue, -granted);
			pending_add.count = 0;
			granted = 0;
		}
		// This claim's own give-back may have cut others (its own notes
		// excepted).
		if (granted < want)
			WakeIfCut(queue, limited_before, notes);
	} else {
		// No counters entry to be had (AddClaimsInFlight makes one when it
		// can: no preload, the table or the database's share full): the
		// other claims in flight are unknown, so the claims of the queue
		// follow one another under the limit lock, held until this
		// transaction ends, and count exactly. (An entry that appears while
		// such a claim is open does not know it: a key's reservations on the
		// entry look at this lock, above; a queue's do not:
		// docs/flow-control.md.)
		in_shared = false;
		if (IsKeyCounterName(VARDATA_ANY(queue), VARSIZE_ANY_EXHDR(queue)))
			NoteKeyLockPathUsed();
		LockQueueLimit(queue);
		// An entry made since (another claim's, which looked at this lock
		// before it was taken) counts its claims in flight.
		int64 in_flight = AddClaimsInFlight(queue, 0);
		int64 room = static_cast<int64>(limit) - ExactRunning(queue) - Max(int64{0}, in_flight);
		granted = room <= 0 ? 0 : static_cast<int>(Min(static_cast<int64>(want), room));
		// A claim that reserves nothing has nothing to keep exact: it gives
		// the lock back (kept, an idle transaction or a prepared one that
		// made such a claim stopped every claim of the queue: test/t/042).
		if (granted == 0)
			UnlockQueueLimit(queue);
	}
	if (granted > 0) {
		if (slot == NULL) {
			slot = &reservations[reservation_count++];
			slot->queue = copy;
			slot->count = 0;
			slot->in_shared = in_shared;
			slot->subtransaction = subtransaction;
			slot->limited_before = limited_before;
		} else if (slot->in_shared != in_shared) {
			// (The entry appeared or went between two reservations of one
			// subtransaction: this one is refused, rather than recorded as
			// the other kind; a lock-path grant recorded as in flight would
			// be taken off a total it was never added to.)
			if (in_shared)
				(void)AddClaimsInFlight(queue, -granted);
			else
				UnlockQueueLimit(queue);
			granted = 0;
		}
		slot->count += granted;
	}
	// Recorded (or nothing kept): the transaction's end gives it back now.
	pending_add = PendingAdd{NULL, 0, 0};
	return granted;
}

int64
RoomNow(text *queue, int32 limit)
{
	int64 own = 0;
	for (int i = 0; i < reservation_count; i++)
		if (reservations[i].in_shared && SameQueue(reservations[i].queue, queue))
			own += reservations[i].count;
	// Running first, then the reservations: a claim that commits in between
	// is counted in neither (too much room: a lane unblocked once too often
	// is blocked again by its next pick), never in both.
	QueueCounts counts;
	int64 running =
	    ReadCounters(queue, &counts) ? counts.count[static_cast<int>(core::JobState::kRunning)] : ExactRunning(queue);
	int64 in_flight = AddClaimsInFlight(queue, 0);
	int64 others = in_flight < 0 ? 0 : Max(int64{0}, in_flight - own);
	return static_cast<int64>(limit) - running - others;
}

void
ReturnRunning(text *queue, int n)
{
	SubTransactionId subtransaction = GetCurrentSubTransactionId();
	for (int i = reservation_count - 1; i >= 0 && n > 0; i--) {
		Reservation &r = reservations[i];
		if (r.subtransaction != subtransaction || !SameQueue(r.queue, queue))
			continue;
		int64 given = Min(static_cast<int64>(n), r.count);
		GiveBack(&r, given, true);
		n -= static_cast<int>(given);
	}
}

void
OnRunningLimitsTransactionEvent(XactEvent event)
{
	switch (event) {
	case XACT_EVENT_COMMIT:
	case XACT_EVENT_PARALLEL_COMMIT:
	case XACT_EVENT_PREPARE:
		// After a commit the counters have applied its running attempts
		// (callbacks.cpp calls them first): they hold the slots now.
		GiveBackPendingAdd();
		ForgetAll(false);
		break;
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_ABORT:
		GiveBackPendingAdd();
		ForgetAll(true);
		break;
	default:
		break;
	}
}

void
OnRunningLimitsSubTransactionEvent(SubXactEvent event, SubTransactionId subtransaction, SubTransactionId parent)
{
	if (event == SUBXACT_EVENT_ABORT_SUB) {
		// An error in ReserveRunning aborts the subtransaction it ran in.
		GiveBackPendingAdd();
		int kept = 0;
		for (int i = 0; i < reservation_count; i++) {
			if (reservations[i].subtransaction == subtransaction)
				GiveBack(&reservations[i], reservations[i].count, true);
			else
				reservations[kept++] = reservations[i];
		}
		reservation_count = kept;
	} else if (event == SUBXACT_EVENT_COMMIT_SUB) {
		// Hand them to the parent, joining its reservation of the same queue:
		// a transaction that claims a limited queue again and again, each
		// time in a savepoint (drivers that wrap every statement in one) or
		// with `wait` (every look is a subtransaction), keeps one reservation
		// per queue and level instead of filling the table (test/sql/concurrency.sql).
		int kept = 0;
		for (int i = 0; i < reservation_count; i++) {
			Reservation r = reservations[i];
			if (r.subtransaction == subtransaction)
				r.subtransaction = parent;
			Reservation *same = NULL;
			for (int j = 0; j < kept && same == NULL; j++)
				if (reservations[j].subtransaction == r.subtransaction && reservations[j].in_shared == r.in_shared &&
				    SameQueue(reservations[j].queue, r.queue))
					same = &reservations[j];
			if (same != NULL)
				same->count += r.count;
			else
				reservations[kept++] = r;
		}
		reservation_count = kept;
	}
}

}  // namespace awa::pg
