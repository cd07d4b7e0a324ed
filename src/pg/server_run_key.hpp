// server_run_key.hpp: a key of this server run, for the claim fence
// (claim_fence.hpp).
//
// It changes at every start and crash restart (a nonce drawn when the shared
// memory is made, maintenance_shmem.hpp) and at every promotion (the WAL
// insertion timeline is mixed in), so the first claim of each run can move
// the claim batch ids past any a lost claim of an earlier run can have had.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// The key, in [1, 2^63). 0 without the preload or during recovery (it reads
// the WAL insertion timeline).
uint64 ServerRunKey();

// Since when this server run has been a primary: when its launcher first
// started (recovery finished: the start, or a standby's promotion). Before
// that, or without the preload, now: nothing set earlier counts as set in
// this run. A rate limit set before it starts with an empty bucket
// (docs/flow-control.md, "What is kept").
TimestampTz PrimaryRunSince();
// The launcher notes its start (the first one of the run counts).
void NotePrimaryRunStart();

}  // namespace awa::pg
