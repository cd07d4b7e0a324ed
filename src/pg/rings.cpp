// rings.cpp: ring positions and the ring epoch (see rings.hpp).
#include "pg/rings.hpp"

#include "pg/ring_epoch.hpp"
#include "pg/sequences.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "utils/inval.h"
#include "utils/syscache.h"
}

namespace awa::pg {

namespace {

struct RingCache {
	Oid incarnation;
	int64 epoch;
	RingPositions ring;
};
RingCache ring_cache;

// The incarnation is cached until the next pg_class invalidation (dropping
// or creating the extension sends some; they are processed at transaction
// start and, for this backend's own changes, at each command boundary).
Oid cached_incarnation = InvalidOid;
bool incarnation_callback_registered = false;

constexpr const char *kObjectNames[static_cast<int>(AwaObject::kCount)] = {
    "job_id_seq", "queue_lane_id_seq", "claim_batch_id_seq", "attempt_state", "job_unique_claims", "queue_meta", "claim_fence_seq",
    "queue_lanes", "queue_lanes_lane_id_key", "queue_lanes_identity"};
Oid cached_objects[static_cast<int>(AwaObject::kCount)];

void
ForgetIncarnation(Datum, int, uint32)
{
	cached_incarnation = InvalidOid;
	for (Oid &object : cached_objects)
		object = InvalidOid;
}

Oid
LookUpIncarnation()
{
	Oid schema = get_namespace_oid("awa", false);
	Oid epoch_seq = get_relname_relid("ring_epoch_seq", schema);
	if (!OidIsValid(epoch_seq))
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE), errmsg("awa: awa.ring_epoch_seq is missing"),
		                errhint("Recreate the extension.")));
	return epoch_seq;
}

}  // namespace

Oid
AwaObjectOid(AwaObject object)
{
	(void)ExtensionIncarnation();  // registers the invalidation callback
	Oid &cached = cached_objects[static_cast<int>(object)];
	if (!OidIsValid(cached))
		cached = get_relname_relid(kObjectNames[static_cast<int>(object)], get_namespace_oid("awa", false));
	return cached;
}

Oid
ExtensionIncarnation()
{
	if (!incarnation_callback_registered) {
		CacheRegisterSyscacheCallback(RELOID, ForgetIncarnation, (Datum)0);
		incarnation_callback_registered = true;
	}
	if (!OidIsValid(cached_incarnation))
		cached_incarnation = LookUpIncarnation();
	return cached_incarnation;
}

// From the cache when it holds the OID: the cache is as fresh as the catalog
// look-up it saves (two syscache probes, about 1,100 instructions, made twice
// by every enqueue's commit), since dropping awa.ring_epoch_seq (or the
// schema, which drops it) invalidates its pg_class entry, and the same
// invalidation that makes a syscache look-up see the drop calls
// ForgetIncarnation. A missing extension is never cached.
Oid
ExtensionIncarnationIfPresent()
{
	if (!incarnation_callback_registered) {
		CacheRegisterSyscacheCallback(RELOID, ForgetIncarnation, (Datum)0);
		incarnation_callback_registered = true;
	}
	if (OidIsValid(cached_incarnation))
		return cached_incarnation;
	Oid schema = get_namespace_oid("awa", true);
	Oid incarnation = OidIsValid(schema) ? get_relname_relid("ring_epoch_seq", schema) : InvalidOid;
	cached_incarnation = incarnation;
	return incarnation;
}

int64
RingEpoch()
{
	return SharedRingEpoch();
}

RingPositions
ReadRingPositions()
{
	// The latest committed ledgers, also under REPEATABLE READ: an older
	// snapshot could show a generation that no longer holds.
	ExecuteLatest(Stmt::kRingPositions, 0, NULL, NULL, 1);
	if (SPI_processed != 1)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("awa: ring ledgers are empty"),
		                errhint("The extension's ring tables were modified by hand; recreate the extension.")));
	HeapTuple tuple = SPI_tuptable->vals[0];
	TupleDesc desc = SPI_tuptable->tupdesc;
	bool isnull;
	RingPositions ring;
	ring.queue_generation = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
	ring.queue_slot = DatumGetInt16(SPI_getbinval(tuple, desc, 2, &isnull));
	ring.queue_slot_count = DatumGetInt32(SPI_getbinval(tuple, desc, 3, &isnull));
	ring.claim_generation = DatumGetInt64(SPI_getbinval(tuple, desc, 4, &isnull));
	ring.claim_slot = DatumGetInt16(SPI_getbinval(tuple, desc, 5, &isnull));
	ring.claim_slot_count = DatumGetInt32(SPI_getbinval(tuple, desc, 6, &isnull));
	Datum *live;
	bool *live_nulls;
	int live_count;
	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tuple, desc, 7, &isnull)), INT8OID, 8, true, TYPALIGN_DOUBLE,
	                  &live, &live_nulls, &live_count);
	if (live_count < 1 || live_count > kMaxRingSlots)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("awa: the queue ring has %d live generations", live_count),
		                errhint("The extension's ring tables were modified by hand; recreate the extension.")));
	ring.queue_live_count = live_count;
	for (int i = 0; i < live_count; i++)
		ring.queue_live[i] = DatumGetInt64(live[i]);
	return ring;
}

int64
OldestQueueGeneration(const RingPositions &ring)
{
	return ring.queue_live[0];
}

int64
NextQueueGeneration(const RingPositions &ring, int64 generation)
{
	for (int i = 0; i < ring.queue_live_count; i++)
		if (ring.queue_live[i] > generation)
			return ring.queue_live[i];
	return -1;
}

RingPositions
CurrentRings(int64 *epoch)
{
	Oid incarnation = ExtensionIncarnation();
	int64 before = RingEpoch();
	*epoch = before;
	if (before % 2 == 0 && ring_cache.incarnation == incarnation && ring_cache.epoch == before)
		return ring_cache.ring;
	RingPositions ring = ReadRingPositions();
	if (before % 2 == 0 && RingEpoch() == before)
		ring_cache = RingCache{incarnation, before, ring};
	return ring;
}

}  // namespace awa::pg
