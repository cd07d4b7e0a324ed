// claim_waiters.cpp: the claims waiting for work (see claim_waiters.hpp).
#include "pg/claim_waiters.hpp"

#include "pg/core_calls.hpp"

extern "C" {
#include "access/twophase.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
}

namespace awa::pg {

namespace {

// A queue name is at most kMaxNameLength characters of at most 4 bytes.
constexpr int kQueueBytes = static_cast<int>(core::kMaxNameLength) * 4 + 1;

struct WaiterSlot {
	slock_t mutex;
	int pid;  // 0: not waiting
	int queue_length;
	Oid database;
	TimestampTz since;
	char queue[kQueueBytes];
};

struct WaitersShared {
	int slot_count;
	WaiterSlot slots[FLEXIBLE_ARRAY_MEMBER];
};

WaitersShared *shared = NULL;
int slot_count = 0;
bool waiting = false;  // this backend's slot is set
// The (sub)transaction nesting level of the waiting claim: the abort of a
// subtransaction inside it (each look for work runs in one) does not end the
// wait; the abort of its own level or an outer one does.
int waiting_level = 0;

Size
SharedSize()
{
	return add_size(offsetof(WaitersShared, slots), mul_size(sizeof(WaiterSlot), slot_count));
}

}  // namespace

void
RequestClaimWaitersShmem()
{
	slot_count = MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
	RequestAddinShmemSpace(SharedSize());
}

void
StartupClaimWaitersShmem()
{
	slot_count = MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	bool found;
	shared = static_cast<WaitersShared *>(ShmemInitStruct("awa claim waiters", SharedSize(), &found));
	if (!found) {
		shared->slot_count = slot_count;
		for (int i = 0; i < slot_count; i++) {
			SpinLockInit(&shared->slots[i].mutex);
			shared->slots[i].pid = 0;
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

namespace {

WaiterSlot *
MySlot()
{
	if (shared == NULL || MyProc == NULL)
		return NULL;
	int index = MyProc->pgprocno;
	if (index < 0 || index >= shared->slot_count)
		return NULL;
	return &shared->slots[index];
}

// Plain code that cannot fail: runs in transaction callbacks and at exit.
void
Clear()
{
	if (!waiting)
		return;
	waiting = false;
	WaiterSlot *slot = MySlot();
	if (slot == NULL)
		return;
	SpinLockAcquire(&slot->mutex);
	slot->pid = 0;
	SpinLockRelease(&slot->mutex);
}

void
OnExit(int, Datum)
{
	Clear();
}

}  // namespace

void
OnClaimWaitersTransactionEvent(XactEvent event)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		Clear();
}

void
OnClaimWaitersSubTransactionEvent(SubXactEvent event)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && GetCurrentTransactionNestLevel() <= waiting_level)
		Clear();
}

void
BeginClaimWait(text *queue)
{
	if (waiting)
		return;
	WaiterSlot *slot = MySlot();
	if (slot == NULL)
		return;
	static bool registered = false;
	if (!registered) {
		before_shmem_exit(OnExit, (Datum)0);
		registered = true;
	}
	int length = Min(static_cast<int>(VARSIZE_ANY_EXHDR(queue)), kQueueBytes - 1);
	waiting_level = GetCurrentTransactionNestLevel();
	TimestampTz now = GetCurrentTimestamp();
	SpinLockAcquire(&slot->mutex);
	memcpy(slot->queue, VARDATA_ANY(queue), length);
	slot->queue[length] = '\0';
	slot->queue_length = length;
	slot->database = MyDatabaseId;
	slot->since = now;
	slot->pid = MyProcPid;
	SpinLockRelease(&slot->mutex);
	waiting = true;
}

void
EndClaimWait()
{
	Clear();
}

int
ListClaimWaiters(ClaimWaiter **out)
{
	*out = NULL;
	if (shared == NULL)
		return 0;
	int count = 0;
	ClaimWaiter *list = static_cast<ClaimWaiter *>(palloc(sizeof(ClaimWaiter) * Max(shared->slot_count, 1)));
	char *queue = static_cast<char *>(palloc(kQueueBytes));
	for (int i = 0; i < shared->slot_count; i++) {
		WaiterSlot *slot = &shared->slots[i];
		// A copy under the spinlock (the name's bytes, no call that can fail).
		SpinLockAcquire(&slot->mutex);
		int pid = slot->pid;
		bool mine = pid != 0 && slot->database == MyDatabaseId;
		TimestampTz since = slot->since;
		if (mine)
			memcpy(queue, slot->queue, slot->queue_length + 1);
		SpinLockRelease(&slot->mutex);
		if (!mine)
			continue;
		list[count++] = ClaimWaiter{pid, pstrdup(queue), since};
	}
	pfree(queue);
	*out = list;
	return count;
}

}  // namespace awa::pg
