// guard.hpp: the boundary between PostgreSQL and C++.
//
// Two error regimes meet here (docs/cpp-boundary.md):
//  * A C++ exception must never unwind through a PostgreSQL frame. Every SQL
//    entry point is defined with AWA_FUNCTION, whose wrapper catches every
//    exception, leaves the catch block, and only then reports an ERROR.
//  * A PostgreSQL ERROR (a longjmp) must never skip a C++ destructor. Frames in
//    src/pg that call PostgreSQL therefore own only trivially destructible
//    objects (PODs, palloc'd memory). Code that needs the C++ library runs in
//    src/core, reached through "bridge" functions that are noexcept, call no
//    PostgreSQL function, and destroy every C++ object before they return.
// PostgreSQL errors keep their SQLSTATE because nothing converts them: they
// propagate as PostgreSQL errors, untouched.
#pragma once

#include "pg/postgres_headers.hpp"

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
		char awa_error_[512];                                                                      \
		bool awa_failed_ = false;                                                                  \
		Datum awa_result_ = (Datum)0;                                                              \
		try {                                                                                      \
			awa_result_ = name##_body(fcinfo);                                                     \
		} catch (...) {                                                                            \
			awa::pg::DescribeException(std::current_exception(), awa_error_, sizeof(awa_error_)); \
			awa_failed_ = true;                                                                    \
		}                                                                                          \
		if (awa_failed_)                                                                           \
			ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("awa: %s", awa_error_)));      \
		return awa_result_;                                                                        \
	}                                                                                              \
	static Datum name##_body(FunctionCallInfo fcinfo)
