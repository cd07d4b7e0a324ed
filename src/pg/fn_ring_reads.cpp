// fn_ring_reads.cpp: the SQL side of ring_truncations.hpp.
// awa._note_ring_truncation() is called by the prune and the history step
// before their TRUNCATE; awa._ring_locks_releasable() by awa._hold_rings once
// it has locked the ring tables.
#include "pg/guard.hpp"
#include "pg/ring_truncations.hpp"

AWA_FUNCTION(awa_internal_note_ring_truncation)
{
	awa::pg::NoteRingTruncation();
	PG_RETURN_VOID();
}

AWA_FUNCTION(awa_internal_ring_locks_releasable)
{
	PG_RETURN_BOOL(awa::pg::RingLocksReleasable());
}
