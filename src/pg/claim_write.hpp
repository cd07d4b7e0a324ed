// claim_write.hpp: writes what a claim walk planned (claim_walk.hpp).
//
// Reads the planned ready rows, writes the claim evidence (one attempt batch
// in the ready rows' queue slot, one compact claim batch in the current claim
// slot), records the counter move and emits the jobs. The claim never moves
// the cursor past its own lanes: the next walk of the lane does, from this
// evidence, once it is committed and visible. All types here are trivially
// destructible (guard.hpp).
#pragma once

#include "pg/claim_walk.hpp"
#include "pg/postgres_headers.hpp"

namespace awa::pg {

// Writes the claim of walk.claim (walk.plan.claimed > 0 jobs of one
// generation) and puts one row per job into rsinfo's tuplestore. Returns the
// number of jobs; *last_job_id (when given) the highest job_id claimed.
// Requires SPI. May ereport.
int WriteClaim(text *queue, const Lane &lane, const RingPositions &ring, const LaneWalk &walk, Interval *deadline,
               ReturnSetInfo *rsinfo, int64 *last_job_id = NULL);

}  // namespace awa::pg
