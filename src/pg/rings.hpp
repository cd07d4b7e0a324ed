// rings.hpp: where the rings are now (highest generation of each rotation
// ledger) and how many slots each has.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

struct RingPositions {
	int64 queue_generation;
	int queue_slot;
	int queue_slot_count;
	int64 claim_generation;
	int claim_slot;
	int claim_slot_count;
};

// Reads both rings in one statement. Requires SPI. May ereport.
RingPositions ReadRingPositions();

}  // namespace awa::pg
