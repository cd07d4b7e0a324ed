// gucs.hpp: awa's configuration parameters (defined in module.cpp;
// documented in docs/operations.md).
#pragma once

extern "C" {
extern bool awa_async_claim_commit;
extern bool awa_early_lane_release;
extern int awa_gap_proof_lock_timeout_ms;
extern int awa_lane_wait_timeout_ms;
extern int awa_max_lanes;
extern int awa_max_queues;
extern int awa_max_queues_per_database;
extern int awa_max_counted_databases;
extern int awa_max_keyed_queues;
extern int awa_max_keys_per_queue;
extern int awa_max_job_bytes;
extern int awa_max_call_bytes;
extern int awa_debug_counter_rebuild_lock;
extern int awa_debug_head_walk_lock;
extern int awa_debug_counts_read_lock;
extern int awa_debug_clock_offset_s;
extern bool awa_maintenance_enabled;
extern int awa_queue_rotate_interval_ms;
extern int awa_claim_rotate_interval_ms;
extern int awa_lease_rotate_interval_ms;
extern int awa_prune_max_backoff_level;
extern int awa_promote_interval_ms;
extern int awa_periodic_interval_ms;
extern int awa_rescue_interval_ms;
extern int awa_cleanup_interval_s;
extern int awa_lane_reclaim_after_s;
extern int awa_launcher_naptime_s;
}
