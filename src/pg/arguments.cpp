// arguments.cpp: argument checks (see arguments.hpp).
#include "pg/arguments.hpp"

#include "pg/core_calls.hpp"
#include "pg/errors.hpp"

extern "C" {
#include "mb/pg_wchar.h"
}

namespace awa::pg {

size_t
TextChars(text *value)
{
	return static_cast<size_t>(pg_mbstrlen_with_len(VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value)));
}

void
RequireArgument(FunctionCallInfo fcinfo, int index, const char *name, bool has_default)
{
	core::Violation violation;
	Require(core::CheckNotNull(PG_ARGISNULL(index), name, has_default, &violation), violation);
}

text *
QueueArgument(FunctionCallInfo fcinfo, int index)
{
	core::Violation violation;
	text *queue = PG_ARGISNULL(index) ? NULL : PG_GETARG_TEXT_PP(index);
	Require(core::CheckQueue(queue, queue ? TextChars(queue) : 0, &violation), violation);
	return queue;
}

text *
KindArgument(FunctionCallInfo fcinfo, int index)
{
	core::Violation violation;
	text *kind = PG_ARGISNULL(index) ? NULL : PG_GETARG_TEXT_PP(index);
	Require(core::CheckKind(kind, kind ? TextChars(kind) : 0, &violation), violation);
	return kind;
}

namespace {

// Argument `index` as an integer that must not be NULL and must pass `check`.
int32
CheckedIntArgument(FunctionCallInfo fcinfo, int index, const char *name, bool (*check)(int64_t, core::Violation *))
{
	core::Violation violation;
	RequireArgument(fcinfo, index, name, true);
	int32 value = PG_GETARG_INT32(index);
	Require(check(value, &violation), violation);
	return value;
}

}  // namespace

int16
PriorityArgument(FunctionCallInfo fcinfo, int index)
{
	return static_cast<int16>(CheckedIntArgument(fcinfo, index, "priority", core::CheckPriority));
}

int16
MaxAttemptsArgument(FunctionCallInfo fcinfo, int index)
{
	return static_cast<int16>(CheckedIntArgument(fcinfo, index, "max_attempts", core::CheckMaxAttempts));
}

int32
MaxJobsArgument(FunctionCallInfo fcinfo, int index)
{
	return CheckedIntArgument(fcinfo, index, "max_jobs", core::CheckMaxJobs);
}

void
RequireJsonObject(Jsonb *value, const char *name)
{
	if (!JB_ROOT_IS_OBJECT(value) || JB_ROOT_IS_SCALAR(value))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s must be a JSON object", name),
		                errhint("Pass an object such as '{\"id\": 42}'.")));
}

int
ArrayElements(ArrayType *array, Oid element_type, const char *name, Datum **values, bool **nulls)
{
	if (array == NULL)
		return -1;
	if (ARR_NDIM(array) > 1)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s must be a one-dimensional array", name),
		                errhint("Pass one element per job.")));
	int16 length;
	bool by_value;
	char align;
	get_typlenbyvalalign(element_type, &length, &by_value, &align);
	int count;
	deconstruct_array(array, element_type, length, by_value, align, values, nulls, &count);
	return count;
}

}  // namespace awa::pg
