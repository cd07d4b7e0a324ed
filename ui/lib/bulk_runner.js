'use strict';
// Runs the steps of the bulk operations the UI starts: awa.bulk_step in a
// transaction of its own each (one page of at most 500 jobs), a pause
// between steps to leave the queue room, until the operation is no longer
// running. A step that fails stops the loop and changes nothing (the next
// does the same page): the DLQ screen offers Resume. A UI restart leaves the
// operation running in awa.bulk_operations, to be resumed the same way.
const STEP_JOBS = 500;
// A move or a priority change of more than 256 available jobs of one lane in
// one transaction keeps the lane's claim lock to its commit
// (docs/sql-reference.md, awa.move_jobs): their steps stay below that.
const STEP_JOBS_BY_ACTION = { move: 200, set_priority: 200 };
const PAUSE_MS = 50;

class BulkRunner {
  constructor(db) {
    this.db = db;
    this.running = new Map(); // op_id -> promise of the loop
  }

  // One loop per operation, whatever the digits' spelling (02 is 2).
  static key(opId) {
    return String(BigInt(opId));
  }

  isRunning(opId) {
    return this.running.has(BulkRunner.key(opId));
  }

  run(opId) {
    const id = BulkRunner.key(opId);
    if (this.running.has(id)) return this.running.get(id);
    const loop = (async () => {
      try {
        const a = await this.db.read('awa_admin', (c) => c.query('SELECT action FROM awa.bulk_operations WHERE op_id = $1::bigint', [id]));
        const step = (a.rows[0] && STEP_JOBS_BY_ACTION[a.rows[0].action]) || STEP_JOBS;
        for (;;) {
          const r = await this.db.write((c) => c.query('SELECT state FROM awa.bulk_step($1::bigint, $2)', [id, step]));
          if (r.rows[0].state !== 'running') break;
          await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
        }
      } catch (err) {
        console.error(`awa-ui: bulk operation ${id} stopped: ${err.message}`);
      } finally {
        this.running.delete(id);
      }
    })();
    this.running.set(id, loop);
    return loop;
  }

  async idle() {
    await Promise.all([...this.running.values()]);
  }
}

module.exports = { BulkRunner };
