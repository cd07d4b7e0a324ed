// running_limits.cpp: a queue's concurrency limit (see running_limits.hpp).
#include "pg/running_limits.hpp"

#include "pg/counters.hpp"
#include "pg/lane_locks.hpp"
#include "pg/spi_plans.hpp"

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
};
static_assert(std::is_trivially_destructible_v<Reservation>, "lives across PostgreSQL errors");
constexpr int kMaxReservations = 64;
Reservation reservations[kMaxReservations];
int reservation_count = 0;

bool
SameQueue(const text *a, const text *b)
{
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
	       memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

// The queue's running attempts counted exactly from its tables, with a fresh
// snapshot.
int64
ExactRunning(text *queue)
{
	constexpr int kRunningColumn = 2 + static_cast<int>(core::JobState::kRunning);
	Datum key[1] = {PointerGetDatum(queue)};
	ExecuteLatest(Stmt::kCountsScanOne, 0, key, NULL);
	if (SPI_processed == 0)
		return 0;
	bool isnull;
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, kRunningColumn, &isnull));
}

void
GiveBack(Reservation *r, int64 n)
{
	if (n <= 0)
		return;
	if (r->in_shared)
		(void)AddClaimsInFlight(r->queue, -n);
	r->count -= n;
}

void
ForgetAll()
{
	for (int i = 0; i < reservation_count; i++)
		GiveBack(&reservations[i], reservations[i].count);
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

	LockQueueLimit(queue);
	int64 running;
	int64 in_flight;
	bool has_entry;
	bool trusted = ReadRunning(queue, &running, &in_flight, &has_entry);
	// This transaction's own claims and ends count as committed for it (they
	// commit or roll back together with this claim): its pending moves in
	// the counters' count, its own writes in the exact one; so its own
	// reservations are taken out of those in flight.
	for (int i = 0; i < reservation_count; i++)
		if (reservations[i].in_shared && SameQueue(reservations[i].queue, queue))
			in_flight -= reservations[i].count;
	if (trusted) {
		QueueCounts counts;
		if (ReadCounters(queue, &counts))
			running = counts.count[static_cast<int>(core::JobState::kRunning)];
		else
			trusted = false;
	}
	if (!trusted)
		running = ExactRunning(queue);  // after in_flight was read (running_limits.hpp)
	int64 room = static_cast<int64>(limit) - running - in_flight;
	int granted = room <= 0 ? 0 : static_cast<int>(Min(static_cast<int64>(want), room));
	bool in_shared = false;
	if (granted > 0) {
		in_shared = has_entry && AddClaimsInFlight(queue, granted);
		if (slot == NULL) {
			slot = &reservations[reservation_count++];
			MemoryContext caller = MemoryContextSwitchTo(TopTransactionContext);
			slot->queue = static_cast<text *>(palloc(VARSIZE_ANY(queue)));
			memcpy(slot->queue, queue, VARSIZE_ANY(queue));
			MemoryContextSwitchTo(caller);
			slot->count = 0;
			slot->in_shared = in_shared;
			slot->subtransaction = subtransaction;
		}
		// (An entry that appeared since this slot's first reservation: the
		// slot keeps its first answer, so what it gives back is what it added.)
		if (slot->in_shared != in_shared && in_shared) {
			(void)AddClaimsInFlight(queue, -granted);
			in_shared = false;
		}
		slot->count += granted;
	}
	// Without a counters entry the other claims in flight are unknown: the
	// lock orders them until this transaction ends.
	if (has_entry)
		UnlockQueueLimit(queue);
	return granted;
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
		GiveBack(&r, given);
		n -= static_cast<int>(given);
	}
}

void
OnRunningLimitsTransactionEvent(XactEvent event)
{
	switch (event) {
	case XACT_EVENT_COMMIT:
	case XACT_EVENT_PARALLEL_COMMIT:
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_ABORT:
	case XACT_EVENT_PREPARE:
		// After a commit the counters have applied its running attempts
		// (callbacks.cpp calls them first): they hold the slots now.
		ForgetAll();
		break;
	default:
		break;
	}
}

void
OnRunningLimitsSubTransactionEvent(SubXactEvent event, SubTransactionId subtransaction, SubTransactionId parent)
{
	if (event == SUBXACT_EVENT_ABORT_SUB) {
		int kept = 0;
		for (int i = 0; i < reservation_count; i++) {
			if (reservations[i].subtransaction == subtransaction)
				GiveBack(&reservations[i], reservations[i].count);
			else
				reservations[kept++] = reservations[i];
		}
		reservation_count = kept;
	} else if (event == SUBXACT_EVENT_COMMIT_SUB) {
		for (int i = 0; i < reservation_count; i++)
			if (reservations[i].subtransaction == subtransaction)
				reservations[i].subtransaction = parent;
	}
}

}  // namespace awa::pg
