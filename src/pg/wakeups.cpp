// wakeups.cpp: who is woken when work arrives (see wakeups.hpp).
#include "pg/wakeups.hpp"

extern "C" {
#include "common/hashfn.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
}

namespace awa::pg {

namespace {

// Databases whose maintenance worker can be woken for deferred jobs (the
// launcher serves as many).
constexpr int kMaxWorkers = 256;
constexpr int64 kLookingUp = PG_INT64_MIN;  // wake the worker at every commit

struct WakeBucket {
	pg_atomic_uint64 events;
	ConditionVariable cv;
};

struct WorkerWake {
	Oid database;  // InvalidOid: free
	int pgprocno;
	pg_atomic_uint64 next_promote_at;  // an int64 TimestampTz, or kLookingUp
};

struct WakeShared {
	WakeBucket buckets[kWakeBuckets];
	WorkerWake workers[kMaxWorkers];
};

WakeShared *shared = NULL;
LWLock *workers_lock = NULL;

// This transaction's pending wakes: a bit per bucket.
constexpr int kWords = kWakeBuckets / 64;
uint64 wake_at_end[kWords];
uint64 wake_at_commit[kWords];
bool any_pending = false;
// The earliest run_at of the deferred jobs this transaction wrote.
bool deferred_pending = false;
TimestampTz deferred_earliest = 0;
// This process is a maintenance worker registered in `workers`.
WorkerWake *my_worker = NULL;

}  // namespace

void
RequestWakeupsShmem()
{
	RequestAddinShmemSpace(sizeof(WakeShared));
	RequestNamedLWLockTranche("awa_wakeups", 1);
}

void
StartupWakeupsShmem()
{
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	bool found;
	shared = static_cast<WakeShared *>(ShmemInitStruct("awa wakeups", sizeof(WakeShared), &found));
	if (!found) {
		for (WakeBucket &bucket : shared->buckets) {
			pg_atomic_init_u64(&bucket.events, 0);
			ConditionVariableInit(&bucket.cv);
		}
		for (WorkerWake &worker : shared->workers) {
			worker.database = InvalidOid;
			worker.pgprocno = -1;
			pg_atomic_init_u64(&worker.next_promote_at, static_cast<uint64>(kLookingUp));
		}
	}
	workers_lock = &(GetNamedLWLockTranche("awa_wakeups"))->lock;
	LWLockRelease(AddinShmemInitLock);
}

namespace {

void
Mark(uint64 *bits, uint32 bucket)
{
	bits[bucket / 64] |= uint64{1} << (bucket % 64);
	any_pending = true;
}

// Broadcasts every bucket marked in `bits`. Runs in transaction callbacks:
// plain code that cannot fail.
void
WakeMarked(const uint64 *bits)
{
	for (int w = 0; w < kWords; w++)
		for (uint64 word = bits[w]; word != 0; word &= word - 1)
			WakeQueueBucket(static_cast<uint32>(w * 64 + __builtin_ctzll(word)));
}

// Sets the latch of this database's worker if it promotes later than the
// earliest deferred job this transaction committed.
void
WakeWorkerIfLate()
{
	for (WorkerWake &worker : shared->workers) {
		if (worker.database != MyDatabaseId)
			continue;
		int64 next = static_cast<int64>(pg_atomic_read_u64(&worker.next_promote_at));
		int procno = worker.pgprocno;
		if ((next == kLookingUp || deferred_earliest < next) && procno >= 0)
			SetLatch(&ProcGlobal->allProcs[procno].procLatch);
		return;
	}
}

}  // namespace

void
OnWakeupsTransactionEvent(XactEvent event)
{
	switch (event) {
	case XACT_EVENT_COMMIT:
	case XACT_EVENT_PARALLEL_COMMIT:
	case XACT_EVENT_PREPARE:
		// (A transaction that moved jobs cannot be prepared: the counters
		// refuse it. A resume_queue can be; its waiters look at PREPARE.)
		if (any_pending) {
			WakeMarked(wake_at_end);
			WakeMarked(wake_at_commit);
		}
		if (deferred_pending)
			WakeWorkerIfLate();
		break;
	case XACT_EVENT_ABORT:
	case XACT_EVENT_PARALLEL_ABORT:
		if (any_pending) {
			WakeMarked(wake_at_end);
		}
		break;
	default:
		return;
	}
	if (any_pending) {
		memset(wake_at_end, 0, sizeof(wake_at_end));
		memset(wake_at_commit, 0, sizeof(wake_at_commit));
		any_pending = false;
	}
	deferred_pending = false;
}

namespace {

void
ForgetWorker(int, Datum)
{
	if (my_worker == NULL)
		return;
	LWLockAcquire(workers_lock, LW_EXCLUSIVE);
	my_worker->database = InvalidOid;
	my_worker->pgprocno = -1;
	LWLockRelease(workers_lock);
	my_worker = NULL;
}

// Registers this process as its database's maintenance worker (once).
WorkerWake *
MyWorker()
{
	if (my_worker != NULL || shared == NULL)
		return my_worker;
	LWLockAcquire(workers_lock, LW_EXCLUSIVE);
	WorkerWake *free_entry = NULL;
	for (WorkerWake &worker : shared->workers) {
		if (worker.database == MyDatabaseId) {
			free_entry = &worker;  // left by a worker that was killed
			break;
		}
		if (free_entry == NULL && worker.database == InvalidOid)
			free_entry = &worker;
	}
	if (free_entry != NULL) {
		free_entry->database = MyDatabaseId;
		free_entry->pgprocno = MyProc->pgprocno;
		pg_atomic_write_u64(&free_entry->next_promote_at, static_cast<uint64>(kLookingUp));
		my_worker = free_entry;
	}
	LWLockRelease(workers_lock);
	if (my_worker != NULL)
		before_shmem_exit(ForgetWorker, (Datum)0);
	return my_worker;
}

}  // namespace

uint32
QueueWakeBucket(text *queue)
{
	uint32 hash = hash_bytes(reinterpret_cast<const unsigned char *>(VARDATA_ANY(queue)),
	                         static_cast<int>(VARSIZE_ANY_EXHDR(queue)));
	return hash_combine(hash, MyDatabaseId) % kWakeBuckets;
}

uint64
QueueWakeEvents(uint32 bucket)
{
	if (shared == NULL)
		return 0;
	uint64 events = pg_atomic_read_u64(&shared->buckets[bucket].events);
	// Read before the caller's look for work takes its snapshot.
	pg_memory_barrier();
	return events;
}

void
WakeQueueAtEnd(text *queue)
{
	if (shared != NULL)
		Mark(wake_at_end, QueueWakeBucket(queue));
}

void
WakeQueueAtCommit(text *queue)
{
	if (shared != NULL)
		Mark(wake_at_commit, QueueWakeBucket(queue));
}

void
WakeQueueBucketAtEnd(uint32 bucket)
{
	if (shared != NULL)
		Mark(wake_at_end, bucket);
}

void
WakeQueueBucket(uint32 bucket)
{
	if (shared == NULL)
		return;
	WakeBucket &target = shared->buckets[bucket];
	// The full barrier of the increment orders it before the broadcast's
	// reads, and after this transaction's outcome became visible.
	pg_atomic_fetch_add_u64(&target.events, 1);
	ConditionVariableBroadcast(&target.cv);
}

bool
SleepForQueueWork(uint32 bucket, uint64 seen, long timeout_ms)
{
	if (shared == NULL) {
		// No shared memory, nobody to wake us: sleep the whole wait.
		(void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, timeout_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		return false;
	}
	WakeBucket &target = shared->buckets[bucket];
	TimestampTz until = GetCurrentTimestamp() + int64{timeout_ms} * 1000;
	bool woken = false;
	ConditionVariablePrepareToSleep(&target.cv);
	for (;;) {
		if (pg_atomic_read_u64(&target.events) != seen) {
			woken = true;
			break;
		}
		long remaining = static_cast<long>((until - GetCurrentTimestamp() + 999) / 1000);
		if (remaining <= 0)
			break;
		// Checks for interrupts (cancel, statement_timeout) while it sleeps.
		(void)ConditionVariableTimedSleep(&target.cv, remaining, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return woken;
}

void
WakeWorkerForDeferred(TimestampTz run_at)
{
	if (shared == NULL)
		return;
	if (!deferred_pending || run_at < deferred_earliest)
		deferred_earliest = run_at;
	deferred_pending = true;
}

void
BeginNextPromoteLookup()
{
	WorkerWake *worker = MyWorker();
	if (worker != NULL)
		pg_atomic_write_u64(&worker->next_promote_at, static_cast<uint64>(kLookingUp));
	// Published before the lookup takes its snapshot.
	pg_memory_barrier();
}

void
PublishNextPromote(TimestampTz at)
{
	WorkerWake *worker = MyWorker();
	if (worker != NULL)
		pg_atomic_write_u64(&worker->next_promote_at, static_cast<uint64>(at));
}

}  // namespace awa::pg
