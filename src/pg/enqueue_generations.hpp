// enqueue_generations.hpp: the queue-ring generation each backend's enqueue
// is about to write to, published from before it reserves lane_seqs until its
// ready rows are inserted (and their child locked). Prune refuses to truncate
// a generation an enqueue may still write into (docs/maintenance.md,
// proof (d)).
//
// Each backend writes only its own slot (maintenance_shmem.hpp), without a
// lock; readers scan every slot. Without shared_preload_libraries nothing is
// published and no generation is in use.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// This backend's enqueue is about to reserve lane_seqs in `generation`.
void PublishEnqueueGeneration(int64 generation);
// Its rows are in (or its transaction ended).
void ClearEnqueueGeneration();
// True when a backend of this database published a generation <= `generation`.
bool EnqueueGenerationInUse(int64 generation);

// Which queue-ring generations enqueues and claims wrote into, for the
// rotation that leaves a ring alone when its current slot holds nothing but
// what prunes carried into it (docs/maintenance.md §3.6, "An idle backlog
// stays put"). Per database, in shared memory, for this server run: a
// rotation notes the generation it enters, every publication above the
// generation it writes into, and a claim the generation of the ready rows it
// writes evidence for (claim_write.cpp), before writing.
void NoteQueueGenerationEntered(int64 generation);
void NoteQueueGenerationClaimed(int64 generation);
// False only when `generation` was entered during this server run (so
// everything written into it was written since) and no enqueue (claim) of
// this database has published (written evidence into) it or a later one.
// True without shared memory, and whenever the entry was lost (more than 256
// databases): a rotation then goes ahead as before.
bool QueueGenerationMayHoldEnqueues(int64 generation);
bool QueueGenerationMayHoldClaims(int64 generation);

// The transaction callback (callbacks.cpp, while preloaded): the end of the
// transaction clears what it still publishes.
void OnEnqueueGenerationTransactionEvent(XactEvent event);

// The same when the backend exits (the exit callback of maintenance_shmem.cpp).
void ClearEnqueueGenerationAtExit();

}  // namespace awa::pg
