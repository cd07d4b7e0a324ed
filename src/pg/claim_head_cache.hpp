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
// ids start again in a recreated extension). All types here are trivially destructible (guard.hpp).
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// The floor known for lanes above `cursor`, or `fallback` (the oldest live
// generation) when none is known; never below `fallback`.
int64 HeadGenerationFloor(int64 lane_id, int64 cursor, int64 fallback);

// Records a floor learnt by a walk (generation < 0: nothing learnt).
void RememberHeadGenerationFloor(int64 lane_id, int64 cursor, int64 generation);

}  // namespace awa::pg
