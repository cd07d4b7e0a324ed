// sequences.hpp: awa's database-wide sequences (job ids, batch ids, the claim
// fence), read and moved from C. A value is the sequence's last value, 0
// before the first nextval/setval.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// Current value of a cursor sequence, under AccessShareLock held to the end
// of the transaction unless `hold_lock` is false (released at once). May ereport.
int64 SequenceValue(Oid sequence, bool hold_lock = true);
// Next value (one reservation). May ereport.
int64 SequenceNext(Oid sequence);
// Moves the sequence to `value` (is_called = true). Never use to go backwards.
// May ereport.
void SequenceSet(Oid sequence, int64 value);

}  // namespace awa::pg
