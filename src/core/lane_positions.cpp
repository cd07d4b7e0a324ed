// lane_positions.cpp: lane positions stored as their first (see lane_positions.hpp).
#include "core/lane_positions.hpp"

#include <limits>

#include "core/core_only.hpp"  // last: proves no PostgreSQL header came in

namespace awa::core {

bool
ExpandableFromFirst(int64_t first, int32_t count) noexcept
{
	return count >= 1 && count <= kMaxRowLanePositions && first >= 1 &&
	       first <= std::numeric_limits<int64_t>::max() - count;
}

}  // namespace awa::core
