// core_only.hpp: included last by every .cpp file in src/core. The core is pure
// C++17: it never includes PostgreSQL headers and never calls PostgreSQL, so it
// can be unit-tested without a server and may throw freely. If a PostgreSQL
// header slipped in through another include, this stops the build.
#pragma once
#ifdef POSTGRES_H
#error "src/core must not include PostgreSQL headers"
#endif
