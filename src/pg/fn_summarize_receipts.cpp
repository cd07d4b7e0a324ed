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
// range is summarized once it lies a range's length before the partition's
// last page, at this pass and at the previous one. A completion is written
// to its backend's current page, which it fills before it extends the
// partition; with several completers the last pages fill together, and a
// completion into a summarized range whose maximum batch id it raises writes
// a BRIN record (72 bytes). The margin and the pass of delay keep the pages
// being filled out of the summarized ranges, but for a backend that goes
// idle with its page half full and comes back (its next completions, up to a
// page's worth, widen that range; review measured 3 to 15 bytes per job with 8
// completers and no margin). Each summarization writes one small record per
// range (8 pages).
//
// And a range is summarized only once every page of it is full by the
// free-space map: completers that wait for the partition's extension lock
// make PostgreSQL extend it by up to 512 pages at once (RelationAddExtraBlocks)
// and record them as free there, so the last page says nothing about where
// completions are written. Summarized empty, those pages cost 22.5 bytes of
// BRIN WAL per job in a batch-1 drain with 16 workers (stop 44; before, the
// margin alone decided). A page a backend extended the partition with and is
// filling has no free space recorded (0): the margin and the delay keep it
// out. Stops at the first range that is not full (pages fill roughly in
// order: an extension appends them and the map hands them out from its
// search position) while it lies within an extension's reach of the last
// page (kExtensionPages); the next pass looks again. A range further back is
// summarized full or not: a page left half full there (a completer gone
// idle, pages a VACUUM freed) would otherwise hold every later range of the
// slot unsummarized until its prune, and its later completions widen the
// summary at most a page's worth each (review of stop 44).
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
#include "catalog/namespace.h"
#include "catalog/pg_am_d.h"
#include "utils/lsyscache.h"
#include "executor/spi.h"
#include "access/genam.h"
#include "access/heaptoast.h"
#include "access/table.h"
#include "storage/bufmgr.h"
#include "storage/freespace.h"
#include "storage/lmgr.h"
#include "utils/fmgrprotos.h"
#include "utils/rel.h"
}

namespace {

struct SlotProgress {
	Oid relfilenode;   // of the slot's partition when last seen
	int64 next_range;  // the first block of the next range to summarize
	int64 blocks;      // the partition's length at the previous pass
};
static_assert(std::is_trivially_destructible_v<SlotProgress>, "lives across PostgreSQL errors");
SlotProgress progress[awa::core::kMaxRingSlots];

// A page with less free space than this, by the free-space map, is full:
// a heap tuple is never larger (TOAST moves wide receipts' arrays out of line),
// so a backend moves on from a page with less than this left, and records
// what is left. A page extended ahead and recorded free has about a whole
// page free. (A page left with up to this much can still take narrow
// receipts, each widening its summarized range: the bounded cost of a
// backend's half-full page below.)
constexpr Size kFullPageFreeSpace = TOAST_TUPLE_THRESHOLD;

// The most pages PostgreSQL extends a relation by at once
// (RelationAddExtraBlocks: 512) and records as free.
constexpr int64 kExtensionPages = 512;

// Whether every page of the range [start, start + pages) is full.
bool
RangeIsFull(Relation heap, int64 start, int64 pages)
{
	for (int64 block = start; block < start + pages; block++) {
		CHECK_FOR_INTERRUPTS();
		if (GetRecordedFreeSpace(heap, static_cast<BlockNumber>(block)) >= kFullPageFreeSpace)
			return false;
	}
	return true;
}

// The slot's receipt index, by its name (12_ring_partitions.sql), and its
// pages_per_range (the SQL that made it is the one source of that).
// InvalidOid when it is missing, not a BRIN index or not valid.
Oid
ReceiptIndexOf(int slot, int64 *pages_per_range)
{
	char name[NAMEDATALEN];
	snprintf(name, sizeof(name), "receipt_completion_batches_%d_batch_id_idx", slot);
	Oid index = get_relname_relid(name, get_namespace_oid("awa", false));
	*pages_per_range = 0;
	if (OidIsValid(index)) {
		Relation rel = index_open(index, AccessShareLock);
		if (rel->rd_rel->relam == BRIN_AM_OID && rel->rd_index->indisvalid)
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
		Oid index = ReceiptIndexOf(slot, &pages_per_range);
		SlotProgress &p = progress[slot];
		if (p.relfilenode != relfilenode || p.next_range > blocks) {
			p.relfilenode = relfilenode;
			p.next_range = 0;
			p.blocks = 0;
		}
		// Ranges a range's length before the last page, now and at the
		// previous pass.
		int64 end = Min(p.blocks, blocks) - 1 - pages_per_range;
		p.blocks = blocks;
		while (OidIsValid(index) && p.next_range + pages_per_range <= end &&
		       (p.next_range + pages_per_range + kExtensionPages <= blocks ||
		        RangeIsFull(heap, p.next_range, pages_per_range))) {
			CHECK_FOR_INTERRUPTS();
			// Takes (and releases) the partition's and the index's
			// ShareUpdateExclusiveLock again; the partition's is held here.
			summarized += DatumGetInt32(
			    DirectFunctionCall2(brin_summarize_range, ObjectIdGetDatum(index), Int64GetDatum(p.next_range)));
			p.next_range += pages_per_range;
		}
		table_close(heap, NoLock);
		UnlockRelationOid(heap_oid, ShareUpdateExclusiveLock);
	}
	PG_RETURN_INT32(summarized);
}
