-- pg_temp.ready_runs: the ready rows of each lane as runs of consecutive
-- lane_seqs per slot, [first_lane_seq, next_lane_seq). A ready row is its own
-- committed range for the claim walk (docs/architecture.md, "A ready row is
-- its own committed range"); the tests read lane positions through runs.
CREATE TEMP VIEW ready_runs AS
SELECT queue, priority, lane_id, ready_generation, ready_slot,
       min(lane_seq) AS first_lane_seq, max(lane_seq) + 1 AS next_lane_seq,
       min(origin_generation) AS origin_generation, count(*) AS rows
  FROM (SELECT r.queue, r.priority, r.lane_id, r.ready_generation, r.ready_slot, r.lane_seq,
               coalesce(r.origin_generation, r.ready_generation) AS origin_generation,
               r.lane_seq - row_number() OVER (PARTITION BY r.lane_id, r.ready_slot ORDER BY r.lane_seq) AS run
          FROM awa.ready_entries r) r
 GROUP BY queue, priority, lane_id, ready_generation, ready_slot, run;
