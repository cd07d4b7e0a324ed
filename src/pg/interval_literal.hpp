// interval_literal.hpp: reading an interval literal ("1 hour", "PT90M") from
// text that is not an interval argument (a job option, a schedule) without
// raising: PostgreSQL 15's interval_in has no soft errors, so this uses the
// datetime primitives it uses, which report bad input by return code.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// Parses `literal` as interval_in would (its words and ISO 8601); false when
// it is not an interval. Raises nothing.
bool ParseIntervalLiteral(const char *literal, Interval *out);

}  // namespace awa::pg
