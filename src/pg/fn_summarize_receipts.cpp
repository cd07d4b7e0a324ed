// fn_summarize_receipts.cpp: awa._summarize_receipts(), run by the queue
// prune each maintenance pass: summarizes the completion receipts' BRIN
// index ranges (sql/install/12_ring_partitions.sql) that have filled since
// the last pass, in every queue slot.
//
// Why: a completion receipt is found by its batch id only by awa.get_job;
// a BRIN index serves that and costs a completion no WAL while its page
// range is unsummarized (a B-tree entry cost 67 bytes per completion). But
// a look-up reads every page of every unsummarized range, and only VACUUM
// summarizes, which seldom reaches a ring slot before its prune truncates
// it: unsummarized, a get_job of a completed job read its whole slot. Here a
// range is summarized once every page of it lies before the partition's last
// page (a completion is appended to the last page; an earlier one gets a row
// only from free space VACUUM recorded, which then widens the summary once).
// The range being filled is never summarized, so a completion writes no
// index WAL. Each summarization writes one small record per range (8 pages).
//
// Per slot the pass remembers the partition's relfilenode and the next range
// to summarize (a TRUNCATE gives a new relfilenode: it starts over from 0,
// which the prune left unsummarized). A slot whose partition another session
// holds a conflicting lock on (VACUUM, a prune of it) is skipped: the next
// pass takes it. Returns the number of ranges summarized.
#include "pg/core_calls.hpp"
#include "pg/direct_insert.hpp"
#include "pg/guard.hpp"
#include "pg/rings.hpp"

extern "C" {
#include "access/brin.h"
#include "catalog/pg_am_d.h"
#include "executor/spi.h"
#include "access/genam.h"
#include "access/table.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/fmgrprotos.h"
#include "utils/rel.h"
}

namespace {

struct SlotProgress {
	Oid relfilenode;   // of the slot's partition when last seen
	int64 next_range;  // the first block of the next range to summarize
};
static_assert(std::is_trivially_destructible_v<SlotProgress>, "lives across PostgreSQL errors");
SlotProgress progress[awa::core::kMaxRingSlots];

// The partition's index (its only one: 12_ring_partitions.sql) and its
// pages_per_range (the SQL that made it is the one source of that).
Oid
ReceiptIndexOf(Relation heap, int64 *pages_per_range)
{
	List *indexes = RelationGetIndexList(heap);
	Oid index = list_length(indexes) == 1 ? linitial_oid(indexes) : InvalidOid;
	list_free(indexes);
	*pages_per_range = 0;
	if (OidIsValid(index)) {
		Relation rel = index_open(index, AccessShareLock);
		if (rel->rd_rel->relam == BRIN_AM_OID)
			*pages_per_range = BrinGetPagesPerRange(rel);
		index_close(rel, AccessShareLock);
	}
	return *pages_per_range > 0 ? index : InvalidOid;
}

}  // namespace

// awa._summarize_receipts() -> integer
AWA_FUNCTION(awa_internal_summarize_receipts)
{
	using namespace awa::pg;
	// (The ring's positions are read through SPI.)
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	int64 epoch;
	RingPositions ring = CurrentRings(&epoch);
	SPI_finish();
	int32 summarized = 0;
	for (int slot = 0; slot < ring.queue_slot_count; slot++) {
		CHECK_FOR_INTERRUPTS();
		Oid heap_oid = RingChildOid(RingTable::kCompletionBatches, slot);
		if (!ConditionalLockRelationOid(heap_oid, ShareUpdateExclusiveLock))
			continue;
		Relation heap = table_open(heap_oid, NoLock);
		Oid relfilenode = heap->rd_node.relNode;
		int64 blocks = RelationGetNumberOfBlocks(heap);
		int64 pages_per_range;
		Oid index = ReceiptIndexOf(heap, &pages_per_range);
		table_close(heap, NoLock);
		SlotProgress &p = progress[slot];
		if (p.relfilenode != relfilenode || p.next_range > blocks) {
			p.relfilenode = relfilenode;
			p.next_range = 0;
		}
		// Ranges wholly before the last page.
		while (OidIsValid(index) && p.next_range + pages_per_range <= blocks - 1) {
			CHECK_FOR_INTERRUPTS();
			// Takes (and releases) the partition's and the index's
			// ShareUpdateExclusiveLock again; the partition's is held here.
			summarized += DatumGetInt32(
			    DirectFunctionCall2(brin_summarize_range, ObjectIdGetDatum(index), Int64GetDatum(p.next_range)));
			p.next_range += pages_per_range;
		}
		UnlockRelationOid(heap_oid, ShareUpdateExclusiveLock);
	}
	PG_RETURN_INT32(summarized);
}
