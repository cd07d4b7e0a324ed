// subtransaction.hpp: running a step in an internal subtransaction.
#pragma once

#include "pg/postgres_headers.hpp"

#include <type_traits>

namespace awa::pg {

// Runs `body` (returning an int) in an internal subtransaction, with
// `body_context` as its memory context. An error rolls the subtransaction
// back and is raised again, as PL/pgSQL's exception blocks do. Otherwise the
// subtransaction is kept (released into the caller's) when `keep_positive`
// and the result is above 0, else rolled back, which releases every lock the
// body took. The caller's memory context and resource owner are restored.
template <typename Body>
int
RunInSubtransaction(MemoryContext body_context, bool keep_positive, Body body)
{
	static_assert(std::is_trivially_destructible_v<Body>, "lives across PostgreSQL errors");
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile int result = 0;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(body_context);
	PG_TRY();
	{
		result = body();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(context);
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(context);
		CurrentResourceOwner = owner;
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (keep_positive && result > 0)
		ReleaseCurrentSubTransaction();
	else
		RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(context);
	CurrentResourceOwner = owner;
	return result;
}

}  // namespace awa::pg
