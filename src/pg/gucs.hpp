// gucs.hpp: awa's configuration parameters (defined in module.cpp;
// documented in docs/operations.md).
#pragma once

extern "C" {
extern bool awa_async_claim_commit;
extern bool awa_early_lane_release;
extern int awa_gap_proof_lock_timeout_ms;
extern int awa_max_lanes;
extern int awa_max_queues;
extern int awa_debug_counter_rebuild_lock;
}
