'use strict';
// The overview's charts: one sample of awa's metrics surface every
// sampleSeconds (as awa_monitor), the last hour kept in memory. Throughput is
// the change of awa.job_event_totals() (counted at commit, since the server
// started) between two samples; pickup latency is the age of the oldest
// available job of the queues that are not paused
// (awa.queue_metrics().oldest_available_age_seconds), the longest any job now
// waiting has waited to be claimed.
const KEEP_SECONDS = 3600;

const SAMPLE_SQL = `
SELECT clock_timestamp() AS at, e.*, m.oldest_age
  FROM (SELECT coalesce(sum(enqueued), 0) AS enqueued, coalesce(sum(claimed), 0) AS claimed,
               coalesce(sum(completed), 0) AS completed, coalesce(sum(failed), 0) AS failed,
               coalesce(sum(retried), 0) AS retried
          FROM awa.job_event_totals()) e,
       (SELECT coalesce(max(oldest_available_age_seconds), 0) AS oldest_age FROM awa.queue_metrics() WHERE NOT paused) m`;

class Sampler {
  constructor(db, sampleSeconds) {
    this.db = db;
    this.sampleSeconds = sampleSeconds;
    this.samples = [];
    this.timer = null;
    this.lastError = null;
  }

  start() {
    const tick = async () => {
      await this.sampleOnce();
      this.timer = setTimeout(tick, this.sampleSeconds * 1000);
      this.timer.unref();
    };
    tick();
  }

  stop() {
    if (this.timer) clearTimeout(this.timer);
  }

  async sampleOnce() {
    try {
      const r = await this.db.read('awa_monitor', (c) => c.query(SAMPLE_SQL));
      const row = r.rows[0];
      this.samples.push({
        at: row.at.getTime(),
        enqueued: Number(row.enqueued),
        claimed: Number(row.claimed),
        completed: Number(row.completed),
        failed: Number(row.failed),
        retried: Number(row.retried),
        oldestAge: Number(row.oldest_age),
      });
      const keep = Math.ceil(KEEP_SECONDS / this.sampleSeconds) + 1;
      if (this.samples.length > keep) this.samples.splice(0, this.samples.length - keep);
      this.lastError = null;
    } catch (err) {
      this.lastError = err.message;
    }
  }

  // Points for the charts: per interval between samples, the events per
  // second (null across a server restart, where the totals start again) and
  // the oldest available job's age at its end.
  series() {
    const out = [];
    for (let i = 1; i < this.samples.length; i++) {
      const a = this.samples[i - 1];
      const b = this.samples[i];
      const dt = (b.at - a.at) / 1000;
      const rate = (k) => (b[k] >= a[k] && dt > 0 ? (b[k] - a[k]) / dt : null);
      out.push({
        at: b.at,
        enqueued: rate('enqueued'),
        completed: rate('completed'),
        failed: rate('failed'),
        retried: rate('retried'),
        oldestAge: b.oldestAge,
      });
    }
    return out;
  }
}

module.exports = { Sampler };
