// queue_settings.cpp: the per-backend cache of awa.queue_meta (see queue_settings.hpp).
#include "pg/queue_settings.hpp"

#include "pg/counters.hpp"

#include "pg/arguments.hpp"
#include "pg/wakeups.hpp"

#include "pg/guard.hpp"
#include "pg/rings.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "common/hashfn.h"
#include "utils/inval.h"
}

namespace awa::pg {

namespace {

constexpr int kCacheSize = 64;
constexpr int kMaxQueueBytes = 800;
struct CacheEntry {
	bool valid;
	uint32 hash;
	int length;
	char queue[kMaxQueueBytes];
	QueueSettings settings;
};
CacheEntry cache[kCacheSize];
Oid queue_meta_relid = InvalidOid;
// Whether a queue of the database is paused: -1 not known, 0 no, 1 yes.
int any_paused = -1;

void
Flush()
{
	for (CacheEntry &entry : cache)
		entry.valid = false;
	any_paused = -1;
	queue_meta_relid = InvalidOid;
}

void
OnRelcacheInvalidation(Datum, Oid relid)
{
	if (relid == InvalidOid || relid == queue_meta_relid || queue_meta_relid == InvalidOid)
		Flush();
}

}  // namespace

void
ForgetCachedSettings()
{
	Flush();
}

void
InstallQueueSettingsCache()
{
	CacheRegisterRelcacheCallback(OnRelcacheInvalidation, (Datum)0);
}

int64
IntervalMicros(const Interval *interval)
{
	// Computed in 128 bits and clamped: an interval of more than about
	// 292,000 years does not fit in 64, and wrapped it could read as any
	// period, a millisecond as well (test/sql/rate_limit.sql, unique.sql).
	int128 micros = static_cast<int128>(interval->time) + static_cast<int128>(interval->day) * USECS_PER_DAY +
	                static_cast<int128>(interval->month) * DAYS_PER_MONTH * USECS_PER_DAY;
	if (micros > PG_INT64_MAX)
		return PG_INT64_MAX;
	if (micros < PG_INT64_MIN)
		return PG_INT64_MIN;
	return static_cast<int64>(micros);
}

QueueSettings
SettingsOf(text *queue)
{
	int length = VARSIZE_ANY_EXHDR(queue);
	uint32 hash = hash_any(reinterpret_cast<const unsigned char *>(VARDATA_ANY(queue)), length);
	CacheEntry &entry = cache[hash % kCacheSize];
	if (entry.valid && entry.hash == hash && entry.length == length &&
	    memcmp(entry.queue, VARDATA_ANY(queue), length) == 0)
		return entry.settings;

	if (queue_meta_relid == InvalidOid)
		queue_meta_relid = AwaObjectOid(AwaObject::kQueueMeta);
	QueueSettings settings;
	memset(&settings, 0, sizeof(settings));
	settings.aging_micros = kDefaultAgingMicros;
	Datum key[1] = {PointerGetDatum(queue)};
	// The latest committed settings, not the transaction's snapshot: what is read
	// here is cached past this transaction, and a REPEATABLE READ snapshot
	// older than a pause would keep the queue unpaused in the cache after the
	// pause's invalidation was taken (test/specs/settings_cache_repeatable_read.spec).
	ExecuteLatest(Stmt::kQueueSettings, 0, key, NULL, 1);
	if (SPI_processed == 1) {
		HeapTuple tuple = SPI_tuptable->vals[0];
		TupleDesc desc = SPI_tuptable->tupdesc;
		bool isnull;
		settings.paused = DatumGetBool(SPI_getbinval(tuple, desc, 1, &isnull));
		settings.dlq_enabled = DatumGetBool(SPI_getbinval(tuple, desc, 2, &isnull));
		Datum aging = SPI_getbinval(tuple, desc, 3, &isnull);
		settings.aging_micros = isnull ? kDefaultAgingMicros : IntervalMicros(DatumGetIntervalP(aging));
		Datum deadline = SPI_getbinval(tuple, desc, 4, &isnull);
		settings.has_deadline = !isnull;
		if (!isnull)
			settings.deadline = *DatumGetIntervalP(deadline);
		Datum max_running = SPI_getbinval(tuple, desc, 5, &isnull);
		settings.max_running = isnull ? 0 : DatumGetInt32(max_running);
		Datum rate_count = SPI_getbinval(tuple, desc, 6, &isnull);
		if (!isnull) {
			settings.rate_count = DatumGetInt32(rate_count);
			settings.rate_period_micros = IntervalMicros(DatumGetIntervalP(SPI_getbinval(tuple, desc, 7, &isnull)));
			settings.rate_burst = DatumGetInt32(SPI_getbinval(tuple, desc, 8, &isnull));
			// When it was set (rate_set_at, not updated_at: a pause or
			// another setting must not refill the bucket); the claim
			// compares it with PrimaryRunSince() when it makes the bucket.
			Datum set_at = SPI_getbinval(tuple, desc, 9, &isnull);
			settings.rate_set_at = isnull ? 0 : DatumGetTimestampTz(set_at);
		}
		settings.fair_keys = DatumGetBool(SPI_getbinval(tuple, desc, 10, &isnull));
		Datum key_max_running = SPI_getbinval(tuple, desc, 11, &isnull);
		settings.key_max_running = isnull ? 0 : DatumGetInt32(key_max_running);
		Datum key_rate_count = SPI_getbinval(tuple, desc, 12, &isnull);
		if (!isnull) {
			settings.key_rate_count = DatumGetInt32(key_rate_count);
			settings.key_rate_period_micros =
			    IntervalMicros(DatumGetIntervalP(SPI_getbinval(tuple, desc, 13, &isnull)));
			settings.key_rate_burst = DatumGetInt32(SPI_getbinval(tuple, desc, 14, &isnull));
			Datum set_at = SPI_getbinval(tuple, desc, 15, &isnull);
			settings.key_rate_set_at = isnull ? 0 : DatumGetTimestampTz(set_at);
		}
	}
	// Not cached while this transaction may have changed the settings itself
	// (its invalidation reaches other backends only at commit).
	if (length <= kMaxQueueBytes && !TransactionIdIsValid(GetTopTransactionIdIfAny())) {
		entry.valid = true;
		entry.hash = hash;
		entry.length = length;
		memcpy(entry.queue, VARDATA_ANY(queue), length);
		entry.settings = settings;
	}
	return settings;
}

bool
QueueMayBePaused(text *queue)
{
	if (any_paused < 0) {
		if (queue_meta_relid == InvalidOid)
			queue_meta_relid = AwaObjectOid(AwaObject::kQueueMeta);
		// (the latest committed state, as SettingsOf above)
		ExecuteLatest(Stmt::kAnyQueuePaused, 0, NULL, NULL, 1);
		bool isnull = true;
		Datum any = SPI_processed == 1 ? SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)
		                                : (Datum)0;
		any_paused = !isnull && DatumGetBool(any) ? 1 : 0;
		// A database made by an earlier build of 0.6: its deferred_jobs
		// refuses state 'available' (a CHECK violation in every promotion,
		// for every queue, found in review). Refused here, clearly, as a
		// ring table of an earlier layout is (direct_insert.cpp).
		Datum parkable = SPI_processed == 1 ? SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull)
		                                     : (Datum)0;
		if (any_paused == 1 && (isnull || !DatumGetBool(parkable))) {
			any_paused = -1;
			ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
			                errmsg("awa: awa.deferred_jobs cannot hold the jobs of a paused queue"),
			                errdetail("Index awa.deferred_jobs_parked_idx is missing."),
			                errhint("The database was made by an earlier build of awa 0.6, whose tables had another "
			                        "layout: recreate the extension (sql/updates/README.md).")));
		}
	}
	return any_paused == 1 && SettingsOf(queue).paused;
}

}  // namespace awa::pg

using namespace awa::pg;

// awa._queue_meta_changed(queue): queues a relcache invalidation of
// awa.queue_meta with this transaction, so every backend re-reads queue
// settings after commit. A resumed queue can be claimed and its deferred jobs
// promoted again: its waiting claims and the maintenance worker are woken at
// commit (a pause or another setting only costs them a look).
AWA_FUNCTION(awa_internal_queue_meta_changed)
{
	Oid relid = AwaObjectOid(AwaObject::kQueueMeta);
	if (OidIsValid(relid))
		CacheInvalidateRelcacheByRelid(relid);
	// (An extension script from before the argument calls it without one.)
	if (PG_NARGS() > 0)
		WakeQueueAtCommit(QueueArgument(fcinfo, 0));
	// Limits per key set where none were: the running attempts of its keys
	// were not counted (key_limits.hpp); the counters are rebuilt.
	if (PG_NARGS() > 1 && !PG_ARGISNULL(1) && PG_GETARG_BOOL(1))
		DistrustCountersAtCommit();
	WakeWorkerForDeferred(GetCurrentTimestamp());
	PG_RETURN_VOID();
}
