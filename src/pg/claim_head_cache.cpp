// claim_head_cache.cpp: see claim_head_cache.hpp.
#include "pg/claim_head_cache.hpp"

#include "pg/rings.hpp"

#include <type_traits>

namespace awa::pg {

namespace {

constexpr int kHeadCacheSize = 16384;  // a keyed queue cycles through its keys' lanes

struct HeadCacheEntry {
	Oid incarnation;
	int64 lane_id;
	int64 cursor;
	int64 generation;
};
static_assert(std::is_trivially_destructible_v<HeadCacheEntry>, "lives across PostgreSQL errors");

HeadCacheEntry head_cache[kHeadCacheSize];

}  // namespace

int64
HeadGenerationFloor(int64 lane_id, int64 cursor, int64 fallback)
{
	const HeadCacheEntry &entry = head_cache[static_cast<uint64>(lane_id) % kHeadCacheSize];
	if (entry.lane_id != lane_id || entry.incarnation != ExtensionIncarnation() || cursor < entry.cursor)
		return fallback;
	return Max(entry.generation, fallback);
}

void
RememberHeadGenerationFloor(int64 lane_id, int64 cursor, int64 generation)
{
	if (generation < 0)
		return;
	head_cache[static_cast<uint64>(lane_id) % kHeadCacheSize] =
	    HeadCacheEntry{ExtensionIncarnation(), lane_id, cursor, generation};
}

}  // namespace awa::pg
