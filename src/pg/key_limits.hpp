// key_limits.hpp: limits per concurrency key (awa.configure_queue's
// key_max_running, key_rate_limit and key_burst; docs/flow-control.md,
// "Limits per key").
//
// A key's running attempts and its rate bucket are kept where the queue's are:
// in the counters (counters.hpp), under an entry of their own whose name is
// KeyCounterName(queue, key). So the queue's protocols apply unchanged, once
// for the queue and once for the key: ReserveRunning (running_limits.hpp:
// optimistic reservation against the counted running attempts, exact under
// races; an exact count when the counters are not trusted) and TakeRateTokens.
// The counters count a key's running attempts while its queue has a limit per
// key: a claim from a keyed lane moves its attempts into the key's running, the
// end of each (complete, retry, snooze, fail, cancel, rescue) out, at commit;
// the rebuild after a start or a promotion counts them from the claim ring
// (awa._key_running_scan) under the snapshot it publishes. Setting a limit
// per key where none was makes the counters of the database untrusted at the
// commit (exact counts meanwhile), since the attempts running then were not
// counted; they are rebuilt once every transaction that began before that
// commit has ended (counters.cpp, OlderTransactionsRun): those count a key's
// attempts by the settings they read.
//
// A key at its limit leaves its priority's key scheduler (KeyScheduler::Block)
// so claims go to the other keys, and comes back when its room may have grown:
// after an attempt of the key ends (commit) or a reservation of it is given
// back (at once, or at the transaction's end). A blocker looks at the key's
// room again after blocking it, so a room that grew in between is not missed.
#pragma once

#include "pg/postgres_headers.hpp"
#include "pg/queue_settings.hpp"

namespace awa::pg {

inline bool
HasKeyLimits(const QueueSettings &settings)
{
	return settings.key_max_running > 0 || settings.key_rate_count > 0;
}

// The counters' name for `key` of `queue`: 201 bytes 0x01 (more characters
// than a queue name may have, so never a queue's name), the queue's length in
// bytes, ':', the queue, the key. palloc'd.
text *KeyCounterName(text *queue, text *key);
// Whether a counters name is a key's (see above).
bool IsKeyCounterName(const char *name, size_t length);
// The queue of a key's counters name (a palloc'd copy); NULL if not one.
text *QueueOfKeyCounterName(const char *name, size_t length);
// Its key (a palloc'd copy); NULL if not one.
text *KeyOfKeyCounterName(const char *name, size_t length);

// The concurrency key of a lane (palloc'd); NULL for a lane of jobs without a
// key or a lane that is gone. Requires SPI. May ereport.
text *KeyOfLane(int64 lane_id);

// A claim wrote `n` attempts of `lane` of `queue` (claim_write.cpp): counted
// running for the lane's key while the queue has limits per key. Requires
// SPI. May ereport.
void CountKeyedAttemptsStarted(text *queue, int64 lane_id, bool keyed, int64 n);
// `n` attempts of a claim batch of `lane_id` ended (attempts.cpp; `settings`:
// the queue's, read there once): the key's running count drops at commit, and
// its lanes held at the limit come back after it. Requires SPI. May ereport.
void CountKeyedAttemptsEnded(text *queue, const QueueSettings &settings, int64 lane_id, int64 n);

}  // namespace awa::pg
