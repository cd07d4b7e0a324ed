// token_bucket.cpp: see token_bucket.hpp.
#include "core/token_bucket.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/core_only.hpp"

namespace awa::core {

namespace {

using Wide = __int128;

// The tokens the bucket may hold: the burst less what claims in progress hold.
int64_t
CapOf(int32_t burst, int64_t held) noexcept
{
	return std::max<int64_t>(0, int64_t{burst} - held);
}

// `part` counted in 1/period_micros of a token from now on (rounded down: a
// rate change never adds a fraction).
void
Rebase(TokenBucket *bucket, int64_t period_micros) noexcept
{
	if (bucket->basis == period_micros)
		return;
	if (bucket->basis > 0 && period_micros > 0)
		bucket->part = static_cast<int64_t>(Wide{bucket->part} * period_micros / bucket->basis);
	else
		bucket->part = 0;
	bucket->basis = period_micros;
}

}  // namespace

void
StartBucket(TokenBucket *bucket, int64_t now, bool full, int32_t burst) noexcept
{
	bucket->whole = full ? std::max<int64_t>(0, burst) : 0;
	bucket->part = 0;
	bucket->basis = 0;
	bucket->at = now;
	bucket->held = 0;
	bucket->started = true;
}

void
RefillBucket(TokenBucket *bucket, const RateSpec &rate, int64_t now) noexcept
{
	Rebase(bucket, rate.period_micros);
	int64_t cap = CapOf(rate.burst, bucket->held);
	if (now > bucket->at && rate.count > 0 && rate.period_micros > 0) {
		// At most 2^64 micros × 2^63 per micro (both as 128-bit): no overflow.
		Wide units = Wide{bucket->part} + (Wide{now} - Wide{bucket->at}) * Wide{rate.count};
		Wide whole = Wide{bucket->whole} + units / rate.period_micros;
		if (whole >= cap) {
			bucket->whole = cap;
			bucket->part = 0;
		} else {
			bucket->whole = static_cast<int64_t>(whole);
			bucket->part = static_cast<int64_t>(units % rate.period_micros);
		}
		bucket->at = now;
	} else if (bucket->whole >= cap) {
		// (A lower burst, or more held: whole + part above the cap is the cap.)
		bucket->whole = cap;
		bucket->part = 0;
	}
}

TokenTake
TakeTokens(TokenBucket *bucket, const RateSpec &rate, int64_t now, int32_t want) noexcept
{
	RefillBucket(bucket, rate, now);
	TokenTake result{0, 0};
	if (want <= 0)
		return result;
	int64_t taken = std::min<int64_t>(want, bucket->whole);
	bucket->whole -= taken;
	bucket->held += taken;
	result.taken = static_cast<int32_t>(taken);
	if (taken < want) {
		// The rest of the next token, (period - part) units at `count` a micro.
		int64_t wait = rate.count > 0 ? (rate.period_micros - bucket->part) / rate.count : kMaxTokenWaitMicros;
		result.wait_micros = std::min(wait, kMaxTokenWaitMicros) + 1;
	}
	return result;
}

void
GiveBackTokens(TokenBucket *bucket, int64_t held, int64_t unused, int32_t burst) noexcept
{
	held = std::max<int64_t>(0, held);
	unused = std::clamp<int64_t>(unused, 0, held);
	bucket->held = std::max<int64_t>(0, bucket->held - held);
	int64_t cap = CapOf(burst, bucket->held);
	if (bucket->whole + unused >= cap) {
		bucket->whole = cap;
		bucket->part = 0;
	} else {
		bucket->whole += unused;
	}
}

int64_t
MicrosUntilTokens(const TokenBucket &bucket, const RateSpec &rate, int64_t tokens) noexcept
{
	if (bucket.whole >= tokens)
		return 0;
	if (rate.count <= 0 || rate.period_micros <= 0)
		return std::numeric_limits<int64_t>::max();
	Wide part = bucket.basis == rate.period_micros || bucket.basis <= 0
	                ? Wide{bucket.basis > 0 ? bucket.part : 0}
	                : Wide{bucket.part} * rate.period_micros / bucket.basis;
	Wide need = (Wide{tokens} - bucket.whole) * rate.period_micros - part;
	Wide micros = (need + rate.count - 1) / rate.count;
	if (micros > std::numeric_limits<int64_t>::max())
		return std::numeric_limits<int64_t>::max();
	return static_cast<int64_t>(micros);
}

bool
BucketFull(const TokenBucket &bucket, int32_t burst) noexcept
{
	return bucket.whole >= CapOf(burst, bucket.held);
}

}  // namespace awa::core
