// token_bucket_test.cpp: the rate-limit bucket arithmetic (src/core/token_bucket.hpp).
#include "core/token_bucket.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace awa::core {
namespace {

constexpr int64_t kSecond = 1000000;

TEST(TokenBucket, StartsFullOrEmpty)
{
	TokenBucket full{}, empty{};
	StartBucket(&full, 100, true, 5);
	StartBucket(&empty, 100, false, 5);
	EXPECT_TRUE(full.started);
	EXPECT_EQ(full.whole, 5);
	EXPECT_EQ(empty.whole, 0);
	EXPECT_EQ(full.held, 0);
}

TEST(TokenBucket, TakesUpToWantAndHolds)
{
	RateSpec rate{10, kSecond, 5};
	TokenBucket b{};
	StartBucket(&b, 0, true, 5);
	TokenTake t = TakeTokens(&b, rate, 0, 3);
	EXPECT_EQ(t.taken, 3);
	EXPECT_EQ(t.wait_micros, 0);
	EXPECT_EQ(b.held, 3);
	t = TakeTokens(&b, rate, 0, 3);
	EXPECT_EQ(t.taken, 2);
	// 10 per second: a token every 100,000 micros; the wait is floor + 1.
	EXPECT_EQ(t.wait_micros, 100001);
	EXPECT_EQ(TakeTokens(&b, rate, 0, 0).taken, 0);
	EXPECT_EQ(TakeTokens(&b, rate, 0, -4).taken, 0);
}

TEST(TokenBucket, RefillsExactlyAndKeepsTheFraction)
{
	// 3 per second: 333,333.33 micros a token; refills of 1 micro each add
	// up exactly (a rounding per refill would lose them).
	RateSpec rate{3, kSecond, 10};
	TokenBucket b{};
	StartBucket(&b, 0, false, 10);
	int64_t now = 0;
	for (int i = 0; i < 333333; i++)
		RefillBucket(&b, rate, ++now);
	EXPECT_EQ(b.whole, 0);
	RefillBucket(&b, rate, ++now);  // 333,334 micros: 1.000002 tokens
	EXPECT_EQ(b.whole, 1);
	EXPECT_EQ(b.part, 2);
	// The wait for the next one: (1,000,000 - 2) / 3 = 333,332 (+1).
	TakeTokens(&b, rate, now, 1);
	EXPECT_EQ(TakeTokens(&b, rate, now, 1).wait_micros, 333333);
}

TEST(TokenBucket, SlowRateIsNotRoundedAway)
{
	// 1 per 1000 years, refilled every millisecond for a simulated year and
	// then at the end of the 1000 years: exactly one token.
	const int64_t period = int64_t{1000} * 365 * 24 * 3600 * kSecond;
	RateSpec rate{1, period, 1};
	TokenBucket b{};
	StartBucket(&b, 0, false, 1);
	for (int64_t now = 0; now < 365LL * 24 * 3600 * kSecond; now += 1000LL * 3600 * kSecond)
		RefillBucket(&b, rate, now);
	EXPECT_EQ(b.whole, 0);
	RefillBucket(&b, rate, period - 1);
	EXPECT_EQ(b.whole, 0);
	RefillBucket(&b, rate, period);
	EXPECT_EQ(b.whole, 1);
	// A wait beyond a day reports a day (+1).
	EXPECT_EQ(TakeTokens(&b, rate, period, 2).wait_micros, kMaxTokenWaitMicros + 1);
}

TEST(TokenBucket, HugeElapsedDoesNotOverflow)
{
	RateSpec rate{999999999, 1, std::numeric_limits<int32_t>::max()};
	TokenBucket b{};
	StartBucket(&b, std::numeric_limits<int64_t>::min(), false, rate.burst);
	RefillBucket(&b, rate, std::numeric_limits<int64_t>::max());
	EXPECT_EQ(b.whole, rate.burst);
	EXPECT_EQ(b.part, 0);
}

TEST(TokenBucket, HeldTokensCountAgainstTheBurst)
{
	// As test/t/038_rate_limit.pl: a claim holding 9 of 10 leaves the others
	// at most 1, however long it holds them; its 9 come back.
	RateSpec rate{100, kSecond, 10};
	TokenBucket b{};
	StartBucket(&b, 0, true, 10);
	EXPECT_EQ(TakeTokens(&b, rate, 0, 9).taken, 9);
	EXPECT_EQ(TakeTokens(&b, rate, 10 * kSecond, 10).taken, 1);
	EXPECT_EQ(TakeTokens(&b, rate, 20 * kSecond, 10).taken, 0);
	GiveBackTokens(&b, 9, 9, 10);
	EXPECT_EQ(b.held, 1);
	EXPECT_EQ(b.whole, 9);  // burst 10 - 1 still held
	GiveBackTokens(&b, 1, 0, 10);
	EXPECT_EQ(b.held, 0);
	EXPECT_EQ(b.whole, 9);  // the used one is used
}

TEST(TokenBucket, GiveBackClampsAndCaps)
{
	RateSpec rate{1, kSecond, 4};
	TokenBucket b{};
	StartBucket(&b, 0, true, 4);
	TakeTokens(&b, rate, 0, 2);
	GiveBackTokens(&b, 2, 7, 4);  // more unused than held: only the 2
	EXPECT_EQ(b.whole, 4);
	EXPECT_EQ(b.held, 0);
	TakeTokens(&b, rate, 0, 2);
	GiveBackTokens(&b, 2, -3, 4);  // negative: none back
	EXPECT_EQ(b.whole, 2);
	// An abort's give-back (burst INT32_MAX, nothing unused) ends the hold only.
	TakeTokens(&b, rate, 0, 1);
	GiveBackTokens(&b, 1, 0, std::numeric_limits<int32_t>::max());
	EXPECT_EQ(b.whole, 1);
	EXPECT_EQ(b.held, 0);
}

TEST(TokenBucket, LowerBurstCapsWithoutTime)
{
	RateSpec rate{1, kSecond, 10};
	TokenBucket b{};
	StartBucket(&b, 50, true, 10);
	rate.burst = 3;
	RefillBucket(&b, rate, 40);  // before the last refill: no refill, capped
	EXPECT_EQ(b.whole, 3);
	EXPECT_EQ(b.at, 50);
}

TEST(TokenBucket, PeriodChangeRescalesTheFraction)
{
	RateSpec rate{1, 1000, 5};
	TokenBucket b{};
	StartBucket(&b, 0, false, 5);
	RefillBucket(&b, rate, 500);  // half a token
	EXPECT_EQ(b.part, 500);
	rate.period_micros = 10;
	RefillBucket(&b, rate, 500);
	EXPECT_EQ(b.part, 5);  // still half
	RefillBucket(&b, rate, 505);
	EXPECT_EQ(b.whole, 1);
	EXPECT_EQ(b.part, 0);
}

TEST(TokenBucket, MicrosUntilTokens)
{
	RateSpec rate{4, kSecond, 10};  // a token every 250,000 micros
	TokenBucket b{};
	StartBucket(&b, 0, false, 10);
	EXPECT_EQ(MicrosUntilTokens(b, rate, 0), 0);
	EXPECT_EQ(MicrosUntilTokens(b, rate, 1), 250000);
	EXPECT_EQ(MicrosUntilTokens(b, rate, 10), 2500000);
	RefillBucket(&b, rate, 100000);
	EXPECT_EQ(MicrosUntilTokens(b, rate, 1), 150000);
	EXPECT_FALSE(BucketFull(b, 10));
	RefillBucket(&b, rate, 100000 + MicrosUntilTokens(b, rate, 10));
	EXPECT_TRUE(BucketFull(b, 10));
	RateSpec slow{1, std::numeric_limits<int64_t>::max(), std::numeric_limits<int32_t>::max()};
	TokenBucket e{};
	StartBucket(&e, 0, false, slow.burst);
	EXPECT_EQ(MicrosUntilTokens(e, slow, slow.burst), std::numeric_limits<int64_t>::max());
}

// Over any window [t1, t2] the tokens taken (net of those given back) are at
// most rate × (t2 - t1) + burst: several claimers with overlapping holds,
// some giving back, on a seeded random clock.
TEST(TokenBucket, WindowBoundProperty)
{
	for (uint32_t seed = 1; seed <= 20; seed++) {
		std::mt19937_64 rng(seed);
		RateSpec rate{static_cast<int64_t>(1 + rng() % 50), static_cast<int64_t>(1000 + rng() % 2000000),
		              static_cast<int32_t>(1 + rng() % 8)};
		TokenBucket b{};
		int64_t now = static_cast<int64_t>(rng() % 1000000);
		StartBucket(&b, now, rng() % 2 == 0, rate.burst);
		struct Event {
			int64_t at;
			int64_t used;
		};
		std::vector<Event> events;
		struct Hold {
			size_t event;
			int32_t taken;
		};
		std::vector<Hold> holds;
		for (int step = 0; step < 1500; step++) {
			now += static_cast<int64_t>(rng() % (2 * rate.period_micros / rate.count + 1));
			if (holds.size() < 4 && rng() % 3 != 0) {
				TokenTake t = TakeTokens(&b, rate, now, static_cast<int32_t>(1 + rng() % 6));
				if (t.taken > 0) {
					events.push_back({now, t.taken});
					holds.push_back({events.size() - 1, t.taken});
				}
			} else if (!holds.empty()) {
				size_t i = rng() % holds.size();
				int32_t unused = static_cast<int32_t>(rng() % (holds[i].taken + 1));
				GiveBackTokens(&b, holds[i].taken, unused, rate.burst);
				events[holds[i].event].used -= unused;  // started at the take's instant
				holds.erase(holds.begin() + static_cast<long>(i));
			}
			ASSERT_LE(b.whole + b.held, rate.burst) << "seed " << seed;
		}
		for (size_t i = 0; i < events.size(); i++) {
			__int128 used = 0;
			for (size_t j = i; j < events.size(); j++) {
				used += events[j].used;
				__int128 allowed = (__int128)rate.count * (events[j].at - events[i].at) +
				                   (__int128)rate.burst * rate.period_micros;
				ASSERT_LE(used * rate.period_micros, allowed)
				    << "seed " << seed << " window " << events[i].at << ".." << events[j].at;
			}
		}
	}
}

}  // namespace
}  // namespace awa::core
