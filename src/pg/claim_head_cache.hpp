// claim_head_cache.hpp: per-backend floors for where a lane's head can be.
//
// An entry says "every lane_seq above `cursor` is in `generation` or a later
// one". It is learnt from a visible committed lane <= cursor (lanes take
// generations in lane order when enqueued, and a prune only ever carries a
// live row forward into a later generation), never from what a claim planned:
// a claim above the cursor may still roll back and leave its lanes, in an
// earlier generation, as the head (issue 9, finding 1). The claim cursor only
// moves forward, so an entry stays true while the lane's cursor is at or past
// its `cursor`. Keyed by the lane's id and the extension's incarnation (lane
// ids start again in a recreated extension). Each backend keeps its own, and
// the walks share them in shared memory (keyed by database too) once the
// lane's cursor has reached them. All types here are trivially destructible (guard.hpp).
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// The floor known for lanes above `cursor`, or `fallback` (the oldest live
// generation) when none is known; never below `fallback`.
int64 HeadGenerationFloor(int64 lane_id, int64 cursor, int64 fallback);

// Records a floor learnt by a walk (generation < 0: nothing learnt), for
// this backend.
void RememberHeadGenerationFloor(int64 lane_id, int64 cursor, int64 generation);

// Records a floor learnt by a walk for every backend of this database
// (shared memory, when the library is preloaded). Only once the lane's claim
// cursor is at or past `cursor`: other claimers read the cursor, and a walk's
// planned cursor is reached only when its claim's evidence is committed.
void ShareHeadGenerationFloor(int64 lane_id, int64 cursor, int64 generation);

// Shared memory for the shared floors (callbacks.cpp).
void RequestHeadFloorsShmem();
void StartupHeadFloorsShmem();

}  // namespace awa::pg
