// sequences.cpp: awa's database-wide sequences (see sequences.hpp).
#include "pg/sequences.hpp"

extern "C" {
#include "access/relation.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
}

namespace awa::pg {

int64
SequenceValue(Oid sequence, bool hold_lock)
{
	// Read the sequence tuple directly under AccessShareLock: unlike
	// pg_sequence_last_value (RowExclusiveLock), a reader is never taken
	// for a reserving transaction by a claim's gap proof.
	Relation relation = relation_open(sequence, AccessShareLock);
	if (relation->rd_rel->relkind != RELKIND_SEQUENCE)
		ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
		                errmsg("\"%s\" is not a sequence", RelationGetRelationName(relation)),
		                errhint("awa's lane cursors are sequences; the extension's objects were changed by hand.")));
	Buffer buffer = ReadBuffer(relation, 0);
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	Page page = BufferGetPage(buffer);
	ItemId item = PageGetItemId(page, FirstOffsetNumber);
	HeapTupleHeader header = reinterpret_cast<HeapTupleHeader>(PageGetItem(page, item));
	Form_pg_sequence_data data = reinterpret_cast<Form_pg_sequence_data>(reinterpret_cast<char *>(header) +
	                                                                     header->t_hoff);
	int64 value = data->is_called ? data->last_value : 0;
	UnlockReleaseBuffer(buffer);
	relation_close(relation, hold_lock ? NoLock : AccessShareLock);
	return value;
}

int64
SequenceNext(Oid sequence)
{
	return nextval_internal(sequence, false);
}

void
SequenceSet(Oid sequence, int64 value)
{
	DirectFunctionCall3(setval3_oid, ObjectIdGetDatum(sequence), Int64GetDatum(value), BoolGetDatum(true));
}

}  // namespace awa::pg
