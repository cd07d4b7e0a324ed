-- ---------------------------------------------------------------------------
-- awa.duration: the type of every API parameter that is a length of time
-- (claim's deadline and wait, retry's and snooze's delay, configure_queue's
-- aging_interval and default_deadline). It is an interval under another
-- name, so that those parameters also take a number of seconds
-- (docs/sql-reference.md "Durations"):
--   - the same storage as interval (16 bytes, double alignment), read and
--     written by interval's own input (_duration_in calls it and adds a hint
--     to its errors), output, receive and send functions, so
--     '3 seconds', 'PT3S' and '5' (5 seconds, as interval reads it) are
--     accepted as they always were, and the C functions read an argument as
--     an Interval;
--   - binary-coercible implicit casts to and from interval: an interval
--     argument passes as it is, and inside the API a duration is used wherever
--     an interval is (now() + wait, wait < interval '0');
--   - implicit casts from smallint, integer, bigint, real, double precision
--     and numeric: that many seconds (awa.duration_from_<type>,
--     src/pg/fn_duration.cpp; the rule is core::SecondsToMicros), so
--     wait => 5 and wait => 2.5 work.
-- Overloading the functions with a numeric parameter instead would make an
-- untyped argument ('3 seconds', or a driver's unknown-typed $1) ambiguous
-- between the two.
-- ---------------------------------------------------------------------------
CREATE TYPE awa.duration;

-- interval_in, its errors with a hint (src/pg/fn_duration.cpp).
CREATE FUNCTION awa._duration_in(cstring, oid, integer)
RETURNS awa.duration
AS 'MODULE_PATHNAME', 'awa_duration_in'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- interval_out, interval_recv and interval_send themselves.
CREATE FUNCTION awa._duration_out(awa.duration)
RETURNS cstring
AS 'MODULE_PATHNAME', 'awa_duration_out'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION awa._duration_recv(internal, oid, integer)
RETURNS awa.duration
AS 'MODULE_PATHNAME', 'awa_duration_recv'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION awa._duration_send(awa.duration)
RETURNS bytea
AS 'MODULE_PATHNAME', 'awa_duration_send'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Category T (timespan), as interval: a duration and an interval can meet in
-- CASE, COALESCE or UNION (types of different categories cannot).
CREATE TYPE awa.duration (
    INPUT = awa._duration_in,
    OUTPUT = awa._duration_out,
    RECEIVE = awa._duration_recv,
    SEND = awa._duration_send,
    INTERNALLENGTH = 16,
    ALIGNMENT = double,
    STORAGE = plain,
    CATEGORY = 'T');
COMMENT ON TYPE awa.duration IS 'an interval, or a number of seconds';

CREATE CAST (interval AS awa.duration) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (awa.duration AS interval) WITHOUT FUNCTION AS IMPLICIT;

CREATE FUNCTION awa.duration_from_int2(smallint) RETURNS awa.duration
AS 'MODULE_PATHNAME', 'awa_duration_from_int2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION awa.duration_from_int4(integer) RETURNS awa.duration
AS 'MODULE_PATHNAME', 'awa_duration_from_int4' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION awa.duration_from_int8(bigint) RETURNS awa.duration
AS 'MODULE_PATHNAME', 'awa_duration_from_int8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION awa.duration_from_float4(real) RETURNS awa.duration
AS 'MODULE_PATHNAME', 'awa_duration_from_float4' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION awa.duration_from_float8(double precision) RETURNS awa.duration
AS 'MODULE_PATHNAME', 'awa_duration_from_float8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION awa.duration_from_numeric(numeric) RETURNS awa.duration
AS 'MODULE_PATHNAME', 'awa_duration_from_numeric' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE CAST (smallint AS awa.duration) WITH FUNCTION awa.duration_from_int2(smallint) AS IMPLICIT;
CREATE CAST (integer AS awa.duration) WITH FUNCTION awa.duration_from_int4(integer) AS IMPLICIT;
CREATE CAST (bigint AS awa.duration) WITH FUNCTION awa.duration_from_int8(bigint) AS IMPLICIT;
CREATE CAST (real AS awa.duration) WITH FUNCTION awa.duration_from_float4(real) AS IMPLICIT;
CREATE CAST (double precision AS awa.duration) WITH FUNCTION awa.duration_from_float8(double precision) AS IMPLICIT;
CREATE CAST (numeric AS awa.duration) WITH FUNCTION awa.duration_from_numeric(numeric) AS IMPLICIT;
