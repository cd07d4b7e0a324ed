// errors.cpp: reporting argument violations (see errors.hpp).
#include "pg/errors.hpp"

#include "pg/postgres_headers.hpp"

namespace awa::pg {

namespace {

int
Sqlstate(core::ViolationCode code)
{
	switch (code) {
	case core::ViolationCode::kNullValue:
		return ERRCODE_NULL_VALUE_NOT_ALLOWED;
	case core::ViolationCode::kProgramLimit:
		return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
	case core::ViolationCode::kOutOfRange:
		return ERRCODE_DATETIME_VALUE_OUT_OF_RANGE;
	case core::ViolationCode::kInvalidParameter:
		break;
	}
	return ERRCODE_INVALID_PARAMETER_VALUE;
}

}  // namespace

void
ReportViolation(const core::Violation &violation)
{
	ereport(ERROR, (errcode(Sqlstate(violation.code)), errmsg("%s", violation.message), errhint("%s", violation.hint)));
	pg_unreachable();
}

void
ReportElementViolation(const char *array, int index, const core::Violation &violation)
{
	ereport(ERROR, (errcode(Sqlstate(violation.code)), errmsg("%s[%d]: %s", array, index, violation.message),
	                errhint("%s", violation.hint)));
	pg_unreachable();
}

}  // namespace awa::pg
