// claim_fence.cpp: see claim_fence.hpp.
#include "pg/claim_fence.hpp"

#include "pg/core_calls.hpp"
#include "pg/durability.hpp"
#include "pg/rings.hpp"
#include "pg/sequences.hpp"
#include "pg/server_run_key.hpp"

extern "C" {
#include "access/xlog.h"
#include "storage/lmgr.h"
}

namespace awa::pg {

namespace {

// The run key whose fence this backend has seen durable (0: none yet).
uint64 fenced_key = 0;
Oid fenced_incarnation = InvalidOid;

}  // namespace

void
FenceClaimBatchIds()
{
	uint64 key = ServerRunKey();
	Oid incarnation = ExtensionIncarnation();
	if (key == fenced_key && incarnation == fenced_incarnation)
		return;
	if (RecoveryInProgress())
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION), errmsg("awa: cannot claim during recovery"),
		                errhint("Claim on the primary.")));
	if (key == 0)
		return;  // not preloaded: no run key, no fence
	Oid marker = AwaObjectOid(AwaObject::kClaimFenceSeq);
	Oid batch_seq = AwaObjectOid(AwaObject::kClaimBatchIdSeq);
	if (!OidIsValid(marker) || !OidIsValid(batch_seq))
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("awa: awa.claim_fence_seq or awa.claim_batch_id_seq is missing"),
		                errhint("The extension's objects were changed by hand; recreate the extension.")));
	if (static_cast<uint64>(SequenceValue(marker)) != key) {
		// One fence per run: the next claimer waits here until this
		// transaction ends, then finds the marker written.
		LockRelationOid(marker, ShareRowExclusiveLock);
		if (static_cast<uint64>(SequenceValue(marker)) != key) {
			// One stride on odd timelines, two on even ones: a standby
			// promoted before it received the old run's fence (timeline T)
			// fences to another place than that run did (T + 1).
			int64 stride = kClaimFenceStride * (1 + (GetWALInsertionTimeLine() % 2 == 0 ? 1 : 0));
			int64 next = SequenceValue(batch_seq) + stride;
			if (next > core::kMaxClaimBatchId)
				ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED), errmsg("awa: claim batch ids are exhausted"),
				                errhint("Each server start, crash restart and promotion uses 2^28 batch ids (2^29 on an even "
				                        "timeline).")));
			// Sequence changes are not transactional: once flushed they
			// hold, whether or not this claim commits.
			SequenceSet(batch_seq, next);
			SequenceSet(marker, static_cast<int64>(key));
			XLogFlush(XactLastRecEnd);
			// And on the synchronous standbys, if any, so that a standby
			// promoted later fences from above this fence.
			WaitForSynchronousStandbys(XactLastRecEnd);
		}
		// Not kept to the end of the claim's transaction: the fence is
		// durable already, and a long transaction must not hold up the
		// run's other first claims.
		UnlockRelationOid(marker, ShareRowExclusiveLock);
	}
	fenced_key = key;
	fenced_incarnation = incarnation;
}

}  // namespace awa::pg
