// token_bucket.hpp: the token-bucket arithmetic of rate limits
// (docs/flow-control.md, "Rate per queue"), the one place for it: the
// per-queue bucket (src/pg/counters.cpp, TakeRateTokens) and the per-key
// buckets (core/key_scheduler.hpp) both call these functions.
//
// A rate is `count` tokens per `period_micros`, at most `burst` in the bucket,
// counting the tokens that claims in progress hold (`held`): the refill stops
// at burst - held, so the tokens in the bucket plus the held ones never exceed
// the burst, and a claim's give-back cannot add to a bucket refilled to the
// full burst meanwhile.
//
// Exact integer arithmetic: the bucket holds `whole` tokens and `part` of the
// next one, counted in 1/period_micros of a token (a microsecond of refill adds
// `count` such units). Products (elapsed × count, burst × period) are computed
// in 128 bits, so no refill overflows or loses a fraction, however long the
// bucket went unused and however slow the rate (1 per 1000 years refills at
// 3e-17 tokens per microsecond: a double would keep it; a fixed point with 32
// fractional bits would round every short refill down to nothing).
//
// The state is plain integers (trivially copyable, no pointers): it lives in
// PostgreSQL shared memory under the caller's lock. Nothing allocates or
// throws (noexcept), so src/pg calls these directly (src/pg/core_calls.hpp).
#pragma once

#include <cstdint>

namespace awa::core {

// A rate limit: `count` tokens per `period_micros` (both > 0), at most `burst`
// (>= 1) at once. The caller validates it (the SQL layer refuses the rest).
struct RateSpec {
	int64_t count;
	int64_t period_micros;
	int32_t burst;
};

struct TokenBucket {
	int64_t whole;   // whole tokens in the bucket (0 .. burst - held)
	int64_t part;    // of the next token, in 1/basis of a token (0 .. basis - 1)
	int64_t basis;   // the period_micros `part` is counted in (rescaled when the period changes)
	int64_t at;      // the instant (micros) the bucket was last refilled to
	int64_t held;    // tokens taken by claims in progress, not yet given back
	bool started;    // false: StartBucket not called yet
};

// The longest wait TakeTokens reports (a day): a waiting claim looks again by
// then (a period of thousands of years would give a wait beyond any timeout).
constexpr int64_t kMaxTokenWaitMicros = int64_t{24} * 3600 * 1000000;

// Starts a bucket at `now`: full (`burst` tokens) or empty, nothing held.
void StartBucket(TokenBucket *bucket, int64_t now, bool full, int32_t burst) noexcept;

// Refills the bucket to `now` at `rate` (an instant before the last refill
// refills nothing), then caps it at burst - held (0 at least).
void RefillBucket(TokenBucket *bucket, const RateSpec &rate, int64_t now) noexcept;

struct TokenTake {
	int32_t taken;        // 0 .. want
	int64_t wait_micros;  // when taken < want: until the next token (+1, at most a day + 1); else 0
};

// Refills to `now`, then takes up to `want` whole tokens and holds them
// (they count against the burst until GiveBackTokens). want <= 0 takes none.
TokenTake TakeTokens(TokenBucket *bucket, const RateSpec &rate, int64_t now, int32_t want) noexcept;

// Ends the hold of `held` tokens (a claim's take) and puts `unused` of them
// back (clamped to 0 .. held), the bucket capped at burst - (what others
// still hold); the others count as used.
void GiveBackTokens(TokenBucket *bucket, int64_t held, int64_t unused, int32_t burst) noexcept;

// Microseconds from the last refill (bucket->at) until the bucket holds
// `tokens` whole tokens at `rate`, ignoring the cap; 0 if it does already.
// Saturates at INT64_MAX. The bucket should be refilled to now first.
int64_t MicrosUntilTokens(const TokenBucket &bucket, const RateSpec &rate, int64_t tokens) noexcept;

// True when the bucket, refilled, holds burst - held tokens: nothing used in
// the last burst/rate is remembered, so forgetting it changes nothing.
bool BucketFull(const TokenBucket &bucket, int32_t burst) noexcept;

}  // namespace awa::core
