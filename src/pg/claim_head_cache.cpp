// claim_head_cache.cpp: see claim_head_cache.hpp.
#include "pg/claim_head_cache.hpp"

#include <type_traits>

namespace awa::pg {

namespace {

constexpr int kHeadCacheSize = 256;

struct HeadCacheEntry {
	Oid claim_seq;
	int64 cursor;
	int64 generation;
};
static_assert(std::is_trivially_destructible_v<HeadCacheEntry>, "lives across PostgreSQL errors");

HeadCacheEntry head_cache[kHeadCacheSize];

}  // namespace

int64
HeadGenerationFloor(Oid claim_seq, int64 cursor, int64 fallback)
{
	const HeadCacheEntry &entry = head_cache[claim_seq % kHeadCacheSize];
	if (entry.claim_seq != claim_seq || cursor < entry.cursor)
		return fallback;
	return Max(entry.generation, fallback);
}

void
RememberHeadGenerationFloor(Oid claim_seq, int64 cursor, int64 generation)
{
	if (generation < 0)
		return;
	head_cache[claim_seq % kHeadCacheSize] = HeadCacheEntry{claim_seq, cursor, generation};
}

}  // namespace awa::pg
