// fn_slot_children.cpp: a ring slot's partitions for the PL/pgSQL
// maintenance steps: awa._slot_children(ring, slot), the one list of a ring's
// families (src/core/ring.hpp), and awa._slot_has_no_blocks(ring, slot).
//
// Both run many times per maintenance tick (a prune looks at every slot of
// its ring): as SQL functions each call was planned again and set its
// search_path and jit, and an idle database's worker spent about 5 ms of CPU
// per second in them (docs/maintenance.md §1, "What an idle database costs").
#include "pg/core_calls.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_type_d.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace {

awa::core::RingFamilies
FamiliesArgument(FunctionCallInfo fcinfo)
{
	char *ring = text_to_cstring(PG_GETARG_TEXT_PP(0));
	awa::core::RingFamilies families = awa::core::FamiliesOf(ring);
	if (families.names == nullptr)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("awa: unknown ring \"%s\"", ring),
		                errhint("The rings are queue, claim, lease and history.")));
	return families;
}

int32
SlotArgument(FunctionCallInfo fcinfo)
{
	int32 slot = PG_GETARG_INT32(1);
	if (slot < 0 || slot >= awa::core::kMaxRingSlots)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("awa: slot must be between 0 and 63"),
		                errhint("Pass a slot of the ring: 0 to its slot_count - 1.")));
	return slot;
}

static_assert(awa::core::kMaxRingSlots == 64, "the message above spells the limit");

}  // namespace

// awa._slot_children(ring, slot) -> text[]: 'awa.<family>_<slot>' for each
// family of the ring, in lock order. STRICT.
AWA_FUNCTION(awa_internal_slot_children)
{
	awa::core::RingFamilies families = FamiliesArgument(fcinfo);
	int32 slot = SlotArgument(fcinfo);
	Datum *names = static_cast<Datum *>(palloc(sizeof(Datum) * families.count));
	for (int32 i = 0; i < families.count; i++)
		names[i] = CStringGetTextDatum(psprintf("awa.%s_%d", families.names[i], slot));
	PG_RETURN_ARRAYTYPE_P(construct_array(names, families.count, TEXTOID, -1, false, TYPALIGN_INT));
}

// awa._slot_has_no_blocks(ring, slot) -> true when no partition of the slot
// has a block in its main fork (as pg_relation_size(child) = 0 for each: the
// lock each size takes is released at once). A missing partition is an error
// (42P01). STRICT.
AWA_FUNCTION(awa_internal_slot_has_no_blocks)
{
	awa::core::RingFamilies families = FamiliesArgument(fcinfo);
	int32 slot = SlotArgument(fcinfo);
	Oid awa_namespace = get_namespace_oid("awa", false);
	bool empty = true;
	for (int32 i = 0; i < families.count && empty; i++) {
		CHECK_FOR_INTERRUPTS();
		char name[NAMEDATALEN];
		snprintf(name, sizeof(name), "%s_%d", families.names[i], slot);
		Oid child = get_relname_relid(name, awa_namespace);
		Relation rel = OidIsValid(child) ? try_relation_open(child, AccessShareLock) : NULL;
		if (rel == NULL)
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("awa: ring partition awa.%s does not exist", name),
			                errhint("Pass a slot below the ring's slot_count (awa.storage_status()); if the ring's "
			                        "tables were changed by hand, recreate the extension.")));
		empty = RelationGetNumberOfBlocks(rel) == 0;
		relation_close(rel, AccessShareLock);
	}
	PG_RETURN_BOOL(empty);
}
