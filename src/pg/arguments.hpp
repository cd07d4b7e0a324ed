// arguments.hpp: reading and checking SQL arguments shared by the functions.
// Every check raises a clear error (SQLSTATE 22004 or 22023, with a hint)
// before anything is written.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// Argument `index` as text, checked as a queue name / kind.
text *QueueArgument(FunctionCallInfo fcinfo, int index);
text *KindArgument(FunctionCallInfo fcinfo, int index);
// Argument `index` as an int within the rules of priority / max_attempts / max_jobs.
int16 PriorityArgument(FunctionCallInfo fcinfo, int index);
int16 MaxAttemptsArgument(FunctionCallInfo fcinfo, int index);
int32 MaxJobsArgument(FunctionCallInfo fcinfo, int index);
// Argument `index` must not be NULL; `has_default` shapes the hint.
void RequireArgument(FunctionCallInfo fcinfo, int index, const char *name, bool has_default);
// A jsonb value must be an object.
void RequireJsonObject(Jsonb *value, const char *name);
// Character length of a text value.
size_t TextChars(text *value);
// Elements of a one-dimensional array argument (NULL array -> -1 elements).
int ArrayElements(ArrayType *array, Oid element_type, const char *name, Datum **values, bool **nulls);

}  // namespace awa::pg
