// errors.hpp: reporting argument violations found by the core.
#pragma once

#include "core/validate.hpp"

namespace awa::pg {

// Raises the violation as an ERROR with its SQLSTATE, message and hint.
// Longjmps; `violation` is trivially destructible, so that is safe.
[[noreturn]] void ReportViolation(const core::Violation &violation);

// Raises the violation of element `index` (1-based) of array `array`, its
// message prefixed with "array[index]: ".
[[noreturn]] void ReportElementViolation(const char *array, int index, const core::Violation &violation);

// Raises `violation` unless `ok`.
inline void
Require(bool ok, const core::Violation &violation)
{
	if (!ok)
		ReportViolation(violation);
}

}  // namespace awa::pg
