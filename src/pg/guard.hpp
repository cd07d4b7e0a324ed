// guard.hpp: the boundary between PostgreSQL and C++.
//
// Two error regimes meet here (docs/cpp-boundary.md):
//  * A C++ exception must never unwind through a PostgreSQL frame. Every SQL
//    entry point is defined with AWA_FUNCTION, whose wrapper catches every
//    exception, leaves the catch block, and only then reports an ERROR. It
//    also checks PostgreSQL's error stack, as pg_duckdb's guard does: an
//    exception that left a PG_TRY block skipped its PG_CATCH, which would
//    have restored PG_exception_stack and error_context_stack; reporting with
//    them pointing into dead frames would crash the backend, so the wrapper
//    restores the values it saw on entry and says so (a WARNING) first.
//  * A PostgreSQL ERROR (a longjmp) must never skip a C++ destructor. Frames in
//    src/pg that call PostgreSQL therefore own only trivially destructible
//    objects (PODs, palloc'd memory). Code that needs the C++ library runs in
//    src/core, reached through "bridge" functions that are noexcept, call no
//    PostgreSQL function, and destroy every C++ object before they return.
// PostgreSQL errors keep their SQLSTATE because nothing converts them: they
// propagate as PostgreSQL errors, untouched.
#pragma once

#include "pg/postgres_headers.hpp"
#include "pg/callbacks.hpp"

#include <cstdio>
#include <exception>

namespace awa::pg {

// Copies an exception's message into a fixed buffer (no allocation).
inline void
DescribeException(std::exception_ptr error, char *buffer, size_t size) noexcept
{
	try {
		std::rethrow_exception(error);
	} catch (const std::exception &e) {
		std::snprintf(buffer, size, "%s", e.what());
	} catch (...) {
		std::snprintf(buffer, size, "unknown C++ exception");
	}
}

// Reports a C++ exception caught by AWA_FUNCTION (outside the catch block):
// restores PostgreSQL's error stack if the exception left it unbalanced
// (`exception_stack` and `context_stack` are the values on entry), warns that
// it did, then raises ERROR (SQLSTATE XX000, "awa: <message>").
[[noreturn]] inline void
ReportCppException(const char *message, sigjmp_buf *exception_stack, ErrorContextCallback *context_stack)
{
	if (PG_exception_stack != exception_stack || error_context_stack != context_stack) {
		// Before any ereport: it would call the context callbacks of frames
		// that are gone and longjmp to a dead PG_TRY.
		PG_exception_stack = exception_stack;
		error_context_stack = context_stack;
		ereport(WARNING, (errmsg("awa: a C++ exception left a PG_TRY block without running its PG_CATCH"),
		                  errdetail("PostgreSQL's error stack was restored to its state at the function's entry.")));
	}
	ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("awa: %s", message)));
	pg_unreachable();
}

}  // namespace awa::pg

// Defines the C entry point `name` for a SQL function whose body is
// `static Datum name##_body(FunctionCallInfo fcinfo)`.
#define AWA_FUNCTION(name)                                                                         \
	static Datum name##_body(FunctionCallInfo fcinfo);                                             \
	extern "C" {                                                                                   \
	PGDLLEXPORT Datum name(PG_FUNCTION_ARGS);                                                      \
	PG_FUNCTION_INFO_V1(name);                                                                     \
	}                                                                                              \
	Datum name(PG_FUNCTION_ARGS)                                                                   \
	{                                                                                              \
		sigjmp_buf *awa_exception_stack_ = PG_exception_stack;                                     \
		ErrorContextCallback *awa_context_stack_ = error_context_stack;                            \
		char awa_error_[512];                                                                      \
		bool awa_failed_ = false;                                                                  \
		Datum awa_result_ = (Datum)0;                                                              \
		awa::pg::NoteAwaEntered();                                                                 \
		try {                                                                                      \
			awa_result_ = name##_body(fcinfo);                                                     \
		} catch (...) {                                                                            \
			awa::pg::DescribeException(std::current_exception(), awa_error_, sizeof(awa_error_)); \
			awa_failed_ = true;                                                                    \
		}                                                                                          \
		if (awa_failed_)                                                                           \
			awa::pg::ReportCppException(awa_error_, awa_exception_stack_, awa_context_stack_);     \
		return awa_result_;                                                                        \
	}                                                                                              \
	static Datum name##_body(FunctionCallInfo fcinfo)
