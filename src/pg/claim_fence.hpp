// claim_fence.hpp: a lost claim's worker is refused (issue 11 §1).
//
// A claim commits asynchronously. A crash (or a failover) before its WAL
// flush loses the claim and, with it, the advance of claim_batch_id_seq that
// gave the claim its batch id: after recovery the sequence can hand out the
// same batch id again, and a re-claim of the same job then gets the same
// (job_id, run_lease, receipt_id). The worker still running the lost attempt
// could complete or heartbeat the new one.
//
// The fence: once per server run (ServerRunKey changes at every start, crash
// restart and promotion) and database, before the run's first claim batch id
// is drawn, claim_batch_id_seq is moved kClaimFenceStride past its recovered
// value, the run's key is written to awa.claim_fence_seq, and both are
// flushed before the id is used. Every batch id of the new run is above every
// id a lost claim can have had (fewer than kClaimFenceStride ids are drawn
// between two WAL flushes, which happen at least every 3 × wal_writer_delay
// and at every synchronous commit), so the lost attempt's receipt names no
// claim evidence and is refused as stale, while the new attempt's is
// accepted. On the claim path this costs one comparison per claim; the first
// claim of each backend in a run reads awa.claim_fence_seq once.
//
// The fence is also waited for on the synchronous standbys (as a synchronous
// commit would). An asynchronous standby may not have received the old run's
// fence when it is promoted; the stride is then 2^28 on one timeline parity
// and 2^29 on the other, so the new run (timeline T + 1) still fences to
// another place than the old run (T) did. What remains: ids repeat only if
// the standby lagged by more than 2^28 claims.
//
// Without shared_preload_libraries there is no run key and no fence.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// 2^28 batch ids skipped per run (2^29 on even timelines): 2^45 batch ids
// allow at least 65,536 fences.
constexpr int64 kClaimFenceStride = int64{1} << 28;

// Call before drawing a claim batch id. May ereport (54000 when the fence
// would pass the last batch id).
void FenceClaimBatchIds();

}  // namespace awa::pg
