// errors.cpp: reporting argument violations (see errors.hpp).
#include "pg/errors.hpp"

#include "pg/postgres_headers.hpp"

namespace awa::pg {

void
ReportViolation(const core::Violation &violation)
{
	int sqlstate = violation.code == core::ViolationCode::kNullValue ? ERRCODE_NULL_VALUE_NOT_ALLOWED
	                                                                 : ERRCODE_INVALID_PARAMETER_VALUE;
	ereport(ERROR, (errcode(sqlstate), errmsg("%s", violation.message), errhint("%s", violation.hint)));
	pg_unreachable();
}

}  // namespace awa::pg
