// key_scheduler_test.cpp: per-key eligibility, stride fair share and its
// cost (src/core/key_scheduler.hpp). Costs are counted comparisons, never times.
#include "core/key_scheduler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace awa::core {
namespace {

constexpr int64_t kSecond = 1000000;

// An 8-aligned block holding a scheduler of `capacity` keys.
class Block {
public:
	explicit Block(int32_t capacity) : words_((KeyScheduler::Size(capacity) + 7) / 8 + 1, 0)
	{
		scheduler_ = KeyScheduler::Init(words_.data(), words_.size() * 8, capacity);
	}
	KeyScheduler &operator*() { return *scheduler_; }
	KeyScheduler *operator->() { return scheduler_; }
	void *data() { return words_.data(); }
	size_t bytes() const { return words_.size() * 8; }

private:
	std::vector<uint64_t> words_;
	KeyScheduler *scheduler_;
};

// Picks and charges one job; the id picked (0: none).
uint64_t
PickOne(KeyScheduler &s, int64_t now = 0)
{
	KeyPick pick = s.Pick(now);
	if (!pick.found)
		return 0;
	EXPECT_EQ(s.Charge(pick.id, 1, now), KeyResult::kOk);
	return pick.id;
}

TEST(KeyScheduler, LayoutIsFixedAndRelocatable)
{
	EXPECT_EQ(KeyScheduler::Size(0), 0u);
	EXPECT_EQ(KeyScheduler::Size(kMaxSchedulerKeys + 1), 0u);
	alignas(8) static unsigned char small[64];
	EXPECT_EQ(KeyScheduler::Init(small, sizeof small, 100), nullptr);
	std::vector<uint64_t> words(KeyScheduler::Size(4) / 8 + 2);
	EXPECT_EQ(KeyScheduler::Init(reinterpret_cast<char *>(words.data()) + 4, words.size() * 8 - 4, 4), nullptr);
	static_assert(std::is_trivially_copyable_v<KeyScheduler>);
	static_assert(std::is_trivially_copyable_v<KeyEntry>);

	// Bytes per key (docs/flow-control.md quotes these figures).
	size_t per_key = (KeyScheduler::Size(10000) - KeyScheduler::Size(1)) / 9999;
	RecordProperty("bytes_per_key", std::to_string(per_key));
	RecordProperty("bytes_10000_keys", std::to_string(KeyScheduler::Size(10000)));
	std::printf("KeyEntry %zu bytes; Size(10000) = %zu bytes (%zu per key); Size(16384) = %zu bytes\n",
	            sizeof(KeyEntry), KeyScheduler::Size(10000), per_key, KeyScheduler::Size(16384));
	EXPECT_LE(per_key, 176u);

	// A byte copy at another address goes on exactly as the original.
	Block a(64);
	for (uint64_t id = 1; id <= 5; id++)
		ASSERT_EQ(a->Activate(id, static_cast<int32_t>(id), static_cast<int64_t>(id), 0, true), KeyResult::kOk);
	for (int i = 0; i < 37; i++)
		PickOne(*a);
	Block b(64);
	std::memcpy(b.data(), a.data(), a.bytes());
	for (int i = 0; i < 200; i++)
		ASSERT_EQ(PickOne(*a), PickOne(*b));
	EXPECT_TRUE(b->Consistent());
}

TEST(KeyScheduler, ExactPicksByWeight)
{
	Block s(8);
	ASSERT_EQ(s->Activate(10, 1, 1, 0, true), KeyResult::kOk);  // A
	ASSERT_EQ(s->Activate(20, 2, 2, 0, true), KeyResult::kOk);  // B, weight 2
	std::string order;
	for (int i = 0; i < 9; i++)
		order += PickOne(*s) == 10 ? 'A' : 'B';
	// Passes: A 0, B 0 (tie: A's older head); A 1, B 0.5, B 1 (tie: A), ...
	EXPECT_EQ(order, "ABBABBABB");
	EXPECT_TRUE(s->Consistent());
}

TEST(KeyScheduler, ChargeOfSeveralJobsCountsThemAll)
{
	Block s(8);
	s->Activate(1, 1, 1, 0, true);
	s->Activate(2, 1, 2, 0, true);
	KeyPick p = s->Pick(0);
	ASSERT_TRUE(p.found);
	EXPECT_EQ(p.id, 1u);
	EXPECT_EQ(p.room, kUnlimitedRoom);
	ASSERT_EQ(s->Charge(1, 3, 0), KeyResult::kOk);  // key 1 is 3 jobs ahead
	std::string order;
	for (int i = 0; i < 4; i++)
		order += static_cast<char>('0' + PickOne(*s));
	EXPECT_EQ(order, "2221");
	// A claim that reserved 3 and took 1 gives 2 back: its pass too.
	ASSERT_EQ(s->Charge(2, 3, 0), KeyResult::kOk);
	ASSERT_EQ(s->GiveBack(2, 3, 2, 0), KeyResult::kOk);
	EXPECT_EQ(s->Find(2)->in_flight, 3 + 1);
	EXPECT_EQ(s->Find(1)->pass, s->Find(2)->pass);
	EXPECT_EQ(s->Charge(2, 0, 0), KeyResult::kBadCount);
	EXPECT_EQ(s->Charge(2, kMaxChargeJobs + 1, 0), KeyResult::kBadCount);
	EXPECT_EQ(s->Charge(99, 1, 0), KeyResult::kUnknownKey);
	EXPECT_EQ(s->GiveBack(2, 1, 2, 0), KeyResult::kBadCount);
}

TEST(KeyScheduler, OldestHeadModeFollowsHeads)
{
	Block s(8);
	s->SetMode(KeyMode::kOldestHead);
	s->Activate(1, 1, 30, 0, true);
	s->Activate(2, 5, 10, 0, true);
	s->Activate(3, 1, 20, 0, true);
	EXPECT_EQ(PickOne(*s), 2u);
	EXPECT_EQ(PickOne(*s), 2u);  // its head did not move: still the oldest
	ASSERT_EQ(s->SetHead(2, 40), KeyResult::kOk);
	EXPECT_EQ(PickOne(*s), 3u);
	ASSERT_EQ(s->SetHead(3, 50), KeyResult::kOk);
	EXPECT_EQ(PickOne(*s), 1u);
	ASSERT_EQ(s->SetHead(1, 35), KeyResult::kOk);
	EXPECT_EQ(PickOne(*s), 1u);
	// Back to fair: everyone level, ties by head.
	s->SetMode(KeyMode::kFair);
	EXPECT_EQ(PickOne(*s), 1u);
	EXPECT_EQ(PickOne(*s), 2u);
	EXPECT_EQ(PickOne(*s), 3u);
	EXPECT_TRUE(s->Consistent());
}

// A key held by a limit kept outside the scheduler (key_max_running over all
// priorities) leaves the eligible set without losing its work or its pass,
// and comes back with Unblock; the others are picked meanwhile.
TEST(KeyScheduler, BlockedKeyIsSkippedUntilUnblocked)
{
	Block s(8);
	for (uint64_t id = 1; id <= 3; id++)
		ASSERT_EQ(s->Activate(id, 1, static_cast<int64_t>(id), 0, true), KeyResult::kOk);
	EXPECT_EQ(s->Block(1, 101, 0), KeyResult::kOk);
	EXPECT_EQ(s->eligible(), 2);
	EXPECT_EQ(PickOne(*s), 2u);
	EXPECT_EQ(s->Block(2, 102, 0), KeyResult::kOk);
	EXPECT_EQ(s->Block(3, 103, 0), KeyResult::kOk);
	EXPECT_EQ(s->blocked(), 3);
	EXPECT_FALSE(s->Pick(0).found);
	EXPECT_EQ(s->Pick(0).wait_micros, -1);  // nothing waits for a token
	EXPECT_EQ(s->Unblock(1, 0), KeyResult::kOk);
	EXPECT_EQ(s->Unblock(1, 0), KeyResult::kOk);  // not blocked: nothing changes
	EXPECT_EQ(s->eligible(), 1);
	EXPECT_EQ(PickOne(*s), 1u);
	// An activation does not unblock; Deactivate keeps it out; UnblockAll
	// brings back every blocked key with work.
	ASSERT_EQ(s->Activate(2, 1, 2, 0, true), KeyResult::kOk);
	EXPECT_EQ(s->Find(2)->heap_pos, -1);
	s->UnblockAll(0);
	EXPECT_EQ(s->eligible(), 3);
	EXPECT_EQ(s->Block(99, 1, 0), KeyResult::kUnknownKey);
	EXPECT_EQ(s->Unblock(99, 0), KeyResult::kUnknownKey);
	EXPECT_EQ(s->blocked(), 0);
	EXPECT_TRUE(s->Consistent());
}

// The end of an attempt brings its key's lane back by the key's hash (its
// group), without the lane's id; groups that collide both come back; a freed
// entry leaves the group table; random blocks and unblocks keep it exact.
TEST(KeyScheduler, UnblockGroupFindsTheBlockedKeysOfAGroup)
{
	Block s(64);
	for (uint64_t id = 1; id <= 6; id++)
		ASSERT_EQ(s->Activate(id, 1, static_cast<int64_t>(id), 0, true), KeyResult::kOk);
	ASSERT_EQ(s->Block(1, 7, 0), KeyResult::kOk);
	ASSERT_EQ(s->Block(2, 7, 0), KeyResult::kOk);  // a collision: same group
	ASSERT_EQ(s->Block(3, 8, 0), KeyResult::kOk);
	EXPECT_EQ(s->UnblockGroup(9, 0), 0);
	EXPECT_EQ(s->UnblockGroup(7, 0), 2);
	EXPECT_EQ(s->UnblockGroup(7, 0), 0);
	EXPECT_EQ(s->blocked(), 1);
	EXPECT_EQ(s->eligible(), 5);
	ASSERT_EQ(s->Block(3, 10, 0), KeyResult::kOk);  // blocked again under another group
	EXPECT_EQ(s->UnblockGroup(8, 0), 0);
	EXPECT_EQ(s->UnblockGroup(10, 0), 1);
	// A blocked key without work or attempts is freed, and leaves the table.
	ASSERT_EQ(s->Block(4, 11, 0), KeyResult::kOk);
	ASSERT_EQ(s->Deactivate(4, 0), KeyResult::kOk);
	EXPECT_EQ(s->Find(4), nullptr);
	EXPECT_EQ(s->blocked(), 0);
	EXPECT_EQ(s->UnblockGroup(11, 0), 0);
	EXPECT_TRUE(s->Consistent());
	std::mt19937_64 rng(21);
	for (int step = 0; step < 20000; step++) {
		uint64_t id = 1 + rng() % 6;
		uint64_t group = 1 + rng() % 5;
		switch (rng() % 4) {
		case 0:
			(void)s->Block(id, group, step);
			break;
		case 1:
			(void)s->Unblock(id, step);
			break;
		case 2:
			(void)s->UnblockGroup(group, step);
			break;
		default:
			(void)s->Activate(id, 1, static_cast<int64_t>(id), step, true);
			break;
		}
		ASSERT_TRUE(s->Consistent()) << "step " << step;
	}
}

// A claim reads the activations, finds no work, and deactivates only if no
// enqueue's commit activated the key since (else its work would be stranded).
TEST(KeyScheduler, DeactivateIfUnchangedKeepsALaterActivation)
{
	Block s(4);
	ASSERT_EQ(s->Activate(7, 1, 0, 0, true), KeyResult::kOk);
	uint32_t seen = s->Find(7)->activations;
	ASSERT_EQ(s->Activate(7, 1, 0, 0, true), KeyResult::kOk);  // an enqueue committed meanwhile
	EXPECT_EQ(s->DeactivateIfUnchanged(7, seen, 0), KeyResult::kNotEligible);
	EXPECT_EQ(s->eligible(), 1);
	EXPECT_EQ(PickOne(*s), 7u);
	seen = s->Find(7)->activations;
	EXPECT_EQ(s->Settle(7, 1, false, 0), KeyResult::kOk);
	EXPECT_EQ(s->DeactivateIfUnchanged(7, seen, 0), KeyResult::kOk);
	EXPECT_EQ(s->eligible(), 0);
	EXPECT_FALSE(s->Pick(0).found);
	EXPECT_EQ(s->DeactivateIfUnchanged(99, 0, 0), KeyResult::kUnknownKey);
	EXPECT_TRUE(s->Consistent());
}

TEST(KeyScheduler, BadWeightChangesNothing)
{
	Block s(8);
	EXPECT_EQ(s->Activate(1, 0, 1, 0, true), KeyResult::kBadWeight);
	EXPECT_EQ(s->Activate(1, kMaxKeyWeight + 1, 1, 0, true), KeyResult::kBadWeight);
	EXPECT_EQ(s->Activate(1, -3, 1, 0, true), KeyResult::kBadWeight);
	EXPECT_EQ(s->keys(), 0);
	EXPECT_EQ(s->Find(1), nullptr);
	ASSERT_EQ(s->Activate(1, kMaxKeyWeight, 1, 0, true), KeyResult::kOk);
	EXPECT_EQ(s->SetWeight(1, 0), KeyResult::kBadWeight);
	EXPECT_EQ(s->Find(1)->weight, kMaxKeyWeight);
	EXPECT_EQ(s->SetWeight(2, 5), KeyResult::kUnknownKey);
	EXPECT_STREQ(KeyResultName(KeyResult::kBadWeight), "bad weight");
}

double
Jain(const std::vector<double> &x)
{
	double sum = 0, squares = 0;
	for (double v : x) {
		sum += v;
		squares += v * v;
	}
	return sum * sum / (static_cast<double>(x.size()) * squares);
}

TEST(KeyScheduler, FairShareFollowsWeights)
{
	Block s(8);
	const int32_t weights[] = {1, 2, 3, 4};
	for (uint64_t id = 1; id <= 4; id++)
		s->Activate(id, weights[id - 1], static_cast<int64_t>(id), 0, true);
	std::map<uint64_t, int64_t> picks;
	const int64_t total = 100000;
	for (int64_t i = 0; i < total; i++)
		picks[PickOne(*s)]++;
	std::vector<double> per_weight;
	for (uint64_t id = 1; id <= 4; id++) {
		double share = static_cast<double>(picks[id]) / total;
		double expected = weights[id - 1] / 10.0;
		EXPECT_NEAR(share / expected, 1.0, 0.01) << "key " << id << " picks " << picks[id];
		per_weight.push_back(share / weights[id - 1]);
	}
	EXPECT_GE(Jain(per_weight), 0.99);
	// Stride scheduling is far tighter than 1 %: within one pick per key.
	for (uint64_t id = 1; id <= 4; id++)
		EXPECT_NEAR(picks[id], total * weights[id - 1] / 10, 1) << "key " << id;
	EXPECT_TRUE(s->Consistent());
}

TEST(KeyScheduler, LateJoinerStartsLevel)
{
	Block s(8);
	for (uint64_t id = 1; id <= 3; id++)
		s->Activate(id, 1, static_cast<int64_t>(id), 0, true);
	for (int i = 0; i < 30000; i++)
		PickOne(*s);
	ASSERT_EQ(s->Activate(4, 1, 100, 0, true), KeyResult::kOk);
	EXPECT_EQ(s->Find(4)->pass, s->vtime());
	int64_t late = 0;
	for (int64_t k = 1; k <= 4000; k++) {
		if (PickOne(*s) == 4)
			late++;
		// No burst of catch-up picks, no starvation: a quarter, within one.
		ASSERT_LE(late, (k + 3) / 4 + 1) << "after " << k << " picks";
		ASSERT_GE(late, k / 4 - 1) << "after " << k << " picks";
	}
}

TEST(KeyScheduler, IdleKeyKeepsItsDebtNotItsCredit)
{
	Block s(8);
	s->Activate(1, 1, 1, 0, true);
	s->Activate(2, 1, 2, 0, true);
	ASSERT_EQ(s->Charge(1, 10, 0), KeyResult::kOk);  // key 1: 10 jobs ahead
	s->Deactivate(1, 0);
	s->Settle(1, 10, true, 0);
	s->Activate(1, 1, 3, 0, true);  // back at once: still 10 ahead
	for (int i = 0; i < 10; i++)
		EXPECT_EQ(PickOne(*s), 2u);
	// Idle while the other one moves 100 ahead: back level, not 100 behind.
	s->Deactivate(1, 0);
	for (int i = 0; i < 100; i++)
		EXPECT_EQ(PickOne(*s), 2u);
	s->Activate(1, 1, 4, 0, true);
	int ones = 0;
	for (int i = 0; i < 10; i++)
		ones += PickOne(*s) == 1;
	EXPECT_EQ(ones, 5);
}

// key_max_running: never more outstanding (running + in flight) than the
// limit, whatever the order of claims, give-backs, commits, rollbacks, ends.
TEST(KeyScheduler, ConcurrencyLimitHolds)
{
	for (uint32_t seed = 1; seed <= 10; seed++) {
		std::mt19937_64 rng(seed);
		Block s(64);
		const int32_t limit = 1 + static_cast<int32_t>(seed % 4);
		s->SetLimits(KeyLimits{limit, false, RateSpec{}}, 0);
		for (uint64_t id = 1; id <= 40; id++)
			ASSERT_EQ(s->Activate(id, static_cast<int32_t>(1 + rng() % 10), static_cast<int64_t>(id), 0, true),
			          KeyResult::kOk);
		struct Claim {
			uint64_t id;
			int32_t jobs;
		};
		std::vector<Claim> open, running;
		for (int step = 0; step < 20000; step++) {
			switch (rng() % 4) {
			case 0: {
				KeyPick p = s->Pick(0);
				if (!p.found)
					break;
				ASSERT_GE(p.room, 1);
				ASSERT_LE(p.room, limit);
				// One more than the room is refused and changes nothing.
				ASSERT_EQ(s->Charge(p.id, p.room + 1, 0), KeyResult::kOverRoom);
				int32_t jobs = 1 + static_cast<int32_t>(rng() % p.room);
				ASSERT_EQ(s->Charge(p.id, jobs, 0), KeyResult::kOk);
				open.push_back({p.id, jobs});
				break;
			}
			case 1:
				if (!open.empty()) {
					Claim c = open.back();
					open.pop_back();
					int32_t unused = static_cast<int32_t>(rng() % (c.jobs + 1));
					s->GiveBack(c.id, c.jobs, unused, 0);
					bool commit = rng() % 4 != 0;
					s->Settle(c.id, c.jobs - unused, commit, 0);
					if (commit && c.jobs > unused)
						running.push_back({c.id, c.jobs - unused});
				}
				break;
			default:
				if (!running.empty()) {
					size_t i = rng() % running.size();
					s->Release(running[i].id, 1, 0);
					if (--running[i].jobs == 0)
						running.erase(running.begin() + static_cast<long>(i));
				}
				break;
			}
			for (uint64_t id = 1; id <= 40; id++) {
				const KeyEntry *e = s->Find(id);
				ASSERT_NE(e, nullptr);
				ASSERT_LE(e->running + e->in_flight, limit) << "seed " << seed << " key " << id;
			}
			ASSERT_TRUE(s->Consistent()) << "seed " << seed << " step " << step;
		}
	}
}

TEST(KeyScheduler, KeyAtItsLimitComesBackWhenReleased)
{
	Block s(8);
	s->SetLimits(KeyLimits{1, false, RateSpec{}}, 0);
	s->Activate(1, 1, 1, 0, true);
	ASSERT_EQ(PickOne(*s), 1u);
	EXPECT_FALSE(s->Pick(0).found);
	EXPECT_EQ(s->Pick(0).wait_micros, -1);  // nothing waits for a token
	EXPECT_EQ(s->Charge(1, 1, 0), KeyResult::kNotEligible);
	s->Settle(1, 1, true, 0);
	EXPECT_FALSE(s->Pick(0).found);  // running now
	s->Release(1, 1, 0);
	EXPECT_EQ(PickOne(*s), 1u);
	s->Settle(1, 1, false, 0);  // rolled back: nothing running
	EXPECT_EQ(s->Find(1)->running, 0);
	EXPECT_TRUE(s->Pick(0).found);
}

// O(log n) per pick at 10,000 keys, counted in comparisons.
TEST(KeyScheduler, TenThousandKeysCostLogN)
{
	const int32_t n = 10000;
	const double log2n = std::log2(static_cast<double>(n));
	std::mt19937_64 rng(7);
	{
		Block s(n);
		for (int32_t i = 0; i < n; i++)
			ASSERT_EQ(s->Activate(rng(), static_cast<int32_t>(1 + rng() % kMaxKeyWeight), i, 0, true),
			          KeyResult::kOk);
		ASSERT_EQ(s->eligible(), n);
		uint64_t worst = 0, total = 0;
		const int picks = 100000;
		for (int i = 0; i < picks; i++) {
			uint64_t before = s->comparisons();
			ASSERT_NE(PickOne(*s), 0u);
			uint64_t cost = s->comparisons() - before;
			worst = std::max(worst, cost);
			total += cost;
		}
		std::printf("10,000 keys, no limit: worst %llu comparisons per pick+charge, mean %.1f (log2 n = %.1f)\n",
		            static_cast<unsigned long long>(worst), static_cast<double>(total) / picks, log2n);
		EXPECT_LE(static_cast<double>(worst), 2 * std::ceil(log2n) + 2);
		EXPECT_TRUE(s->Consistent());
	}
	{
		// key_max_running 1: every charge takes the key out of the heap, every
		// release puts one back.
		Block s(n);
		s->SetLimits(KeyLimits{1, false, RateSpec{}}, 0);
		std::vector<uint64_t> ids;
		for (int32_t i = 0; i < n; i++) {
			ids.push_back(rng());
			ASSERT_EQ(s->Activate(ids.back(), static_cast<int32_t>(1 + rng() % kMaxKeyWeight), i, 0, true),
			          KeyResult::kOk);
		}
		std::vector<uint64_t> running;
		uint64_t worst = 0;
		for (int i = 0; i < 100000; i++) {
			uint64_t before = s->comparisons();
			uint64_t id = PickOne(*s);
			ASSERT_NE(id, 0u);
			s->Settle(id, 1, true, 0);
			running.push_back(id);
			if (running.size() > 100) {
				size_t j = rng() % running.size();
				s->Release(running[j], 1, 0);
				running[j] = running.back();
				running.pop_back();
			}
			worst = std::max(worst, s->comparisons() - before);
		}
		std::printf("10,000 keys, key_max_running 1: worst %llu comparisons per pick+charge+settle+release\n",
		            static_cast<unsigned long long>(worst));
		EXPECT_LE(static_cast<double>(worst), 6 * std::ceil(log2n));
		EXPECT_TRUE(s->Consistent());
	}
}

// key_rate_limit: over any window of t micros a key takes at most
// rate × t + burst tokens (net of what claims give back), on a seeded random
// clock; keys out of tokens come back when their token is due.
TEST(KeyScheduler, KeyRateBoundProperty)
{
	for (uint32_t seed = 1; seed <= 10; seed++) {
		std::mt19937_64 rng(seed);
		Block s(16);
		RateSpec rate{static_cast<int64_t>(1 + rng() % 20), static_cast<int64_t>(10000 + rng() % 1000000),
		              static_cast<int32_t>(1 + rng() % 5)};
		int64_t now = 1000;
		s->SetLimits(KeyLimits{0, true, rate}, now);
		for (uint64_t id = 1; id <= 5; id++)
			s->Activate(id, static_cast<int32_t>(id), static_cast<int64_t>(id), now, rng() % 2 == 0);
		struct Event {
			int64_t at;
			int64_t used;
		};
		std::map<uint64_t, std::vector<Event>> events;
		int found = 0;
		for (int step = 0; step < 3000; step++) {
			now += static_cast<int64_t>(rng() % (rate.period_micros / rate.count / 2 + 1));
			KeyPick p = s->Pick(now);
			if (!p.found) {
				ASSERT_GT(p.wait_micros, 0);
				continue;
			}
			found++;
			ASSERT_LE(p.room, rate.burst);
			int32_t jobs = 1 + static_cast<int32_t>(rng() % p.room);
			ASSERT_EQ(s->Charge(p.id, jobs, now), KeyResult::kOk);
			int32_t unused = static_cast<int32_t>(rng() % (jobs + 1));
			ASSERT_EQ(s->GiveBack(p.id, jobs, unused, now), KeyResult::kOk);
			s->Settle(p.id, jobs - unused, true, now);
			s->Release(p.id, jobs - unused, now);
			if (jobs > unused)
				events[p.id].push_back({now, jobs - unused});
			ASSERT_TRUE(s->Consistent());
		}
		EXPECT_GT(found, 100);
		for (auto &[id, list] : events) {
			for (size_t i = 0; i < list.size(); i++) {
				__int128 used = 0;
				for (size_t j = i; j < list.size(); j++) {
					used += list[j].used;
					__int128 allowed = (__int128)rate.count * (list[j].at - list[i].at) +
					                   (__int128)rate.burst * rate.period_micros;
					ASSERT_LE(used * rate.period_micros, allowed) << "seed " << seed << " key " << id;
				}
			}
		}
	}
}

TEST(KeyScheduler, KeyOutOfTokensWaitsForTheNextOne)
{
	Block s(8);
	s->SetLimits(KeyLimits{0, true, RateSpec{1, kSecond, 1}}, 0);
	s->Activate(1, 1, 1, 0, true);
	ASSERT_EQ(PickOne(*s, 0), 1u);
	// While its claim holds the token, the key has none, however long (the
	// refill stops at burst - held, as the queue's bucket does).
	EXPECT_FALSE(s->Pick(5 * kSecond).found);
	ASSERT_EQ(s->GiveBack(1, 1, 0, 5 * kSecond), KeyResult::kOk);  // used
	KeyPick p = s->Pick(5 * kSecond + 10);
	EXPECT_FALSE(p.found);
	EXPECT_EQ(p.wait_micros, kSecond - 10);
	EXPECT_EQ(s->waiting_for_tokens(), 1);
	EXPECT_FALSE(s->Pick(6 * kSecond - 1).found);
	p = s->Pick(6 * kSecond);
	EXPECT_TRUE(p.found);
	EXPECT_EQ(p.room, 1);
}

TEST(KeyScheduler, IdleKeyIsKeptUntilItsBucketRefills)
{
	Block s(2);
	s->SetLimits(KeyLimits{0, true, RateSpec{1, kSecond, 2}}, 0);
	s->Activate(1, 1, 1, 0, true);
	ASSERT_EQ(s->Charge(1, 2, 0), KeyResult::kOk);
	s->GiveBack(1, 2, 0, 0);
	s->Settle(1, 2, true, 0);
	s->Release(1, 2, 0);
	s->Deactivate(1, 0);
	// Kept: back at once, it has no fresh burst.
	ASSERT_NE(s->Find(1), nullptr);
	s->Activate(1, 1, 2, kSecond / 2, true);
	EXPECT_FALSE(s->Pick(kSecond / 2).found);
	EXPECT_EQ(s->Pick(kSecond).room, 1);
	s->Deactivate(1, kSecond);
	ASSERT_NE(s->Find(1), nullptr);
	// The table is full while it refills; then the entry is free again.
	ASSERT_EQ(s->Activate(2, 1, 3, kSecond, true), KeyResult::kOk);
	EXPECT_EQ(s->Activate(3, 1, 4, kSecond, true), KeyResult::kTableFull);
	EXPECT_EQ(s->Find(3), nullptr);
	s->Pick(2 * kSecond - 1);  // 1 token at 1 s, the 2nd due at 2 s
	EXPECT_NE(s->Find(1), nullptr);
	s->Pick(2 * kSecond);
	EXPECT_EQ(s->Find(1), nullptr);
	EXPECT_EQ(s->Activate(3, 1, 4, 2 * kSecond, true), KeyResult::kOk);
	EXPECT_TRUE(s->Consistent());
}

TEST(KeyScheduler, KeyWithoutRateIsFreedAtOnce)
{
	Block s(4);
	s->Activate(7, 1, 1, 0, true);
	PickOne(*s);
	s->Deactivate(7, 0);
	ASSERT_NE(s->Find(7), nullptr);  // its claim is still in flight
	s->Settle(7, 1, true, 0);
	ASSERT_NE(s->Find(7), nullptr);  // running
	s->Release(7, 1, 0);
	EXPECT_EQ(s->Find(7), nullptr);
	EXPECT_EQ(s->keys(), 0);
	// Running attempts counted by a rebuild make an idle entry.
	ASSERT_EQ(s->SetRunning(8, 2, 0), KeyResult::kOk);
	EXPECT_EQ(s->Find(8)->running, 2);
	EXPECT_FALSE(s->Pick(0).found);
	EXPECT_EQ(s->SetRunning(8, -1, 0), KeyResult::kBadCount);
	s->Release(8, 2, 0);
	EXPECT_EQ(s->Find(8), nullptr);
}

TEST(KeyScheduler, ManyKeysComeAndGo)
{
	std::mt19937_64 rng(11);
	Block s(500);
	std::vector<uint64_t> live;
	for (int step = 0; step < 50000; step++) {
		if (live.size() < 400 && rng() % 2 == 0) {
			uint64_t id = rng() % 2000;  // small ids: many collide in the table's home cells
			if (s->Activate(id, static_cast<int32_t>(1 + rng() % 100), step, 0, true) == KeyResult::kOk &&
			    std::find(live.begin(), live.end(), id) == live.end())
				live.push_back(id);
		} else if (!live.empty()) {
			size_t i = rng() % live.size();
			ASSERT_EQ(s->Deactivate(live[i], 0), KeyResult::kOk);
			live[i] = live.back();
			live.pop_back();
		}
		if (step % 97 == 0)
			ASSERT_TRUE(s->Consistent()) << step;
		ASSERT_EQ(s->keys(), static_cast<int32_t>(live.size()));
	}
	for (uint64_t id : live)
		ASSERT_NE(s->Find(id), nullptr);
}

// 10^12 claims of one job, as 953,675 charges of 2^20 jobs: the passes wrap
// the 64 bits several times and the shares stay those of the weights.
TEST(KeyScheduler, PassesWrapOverATrillionClaims)
{
	Block s(8);
	const int32_t weights[] = {1, 2, 3, 4};
	for (uint64_t id = 1; id <= 4; id++)
		s->Activate(id, weights[id - 1], static_cast<int64_t>(id), 0, true);
	std::map<uint64_t, int64_t> jobs;
	int64_t total = 0;
	int wraps = 0;
	uint64_t last = s->vtime();
	while (total < 1000000000000LL) {
		KeyPick p = s->Pick(0);
		ASSERT_TRUE(p.found);
		ASSERT_EQ(s->Charge(p.id, kMaxChargeJobs, 0), KeyResult::kOk);
		jobs[p.id] += kMaxChargeJobs;
		total += kMaxChargeJobs;
		if (s->vtime() < last)
			wraps++;
		last = s->vtime();
	}
	std::printf("%lld jobs, vtime wrapped %d times\n", static_cast<long long>(total), wraps);
	EXPECT_GE(wraps, 5);
	for (uint64_t id = 1; id <= 4; id++)
		EXPECT_NEAR(static_cast<double>(jobs[id]) / total / (weights[id - 1] / 10.0), 1.0, 0.001) << id;
	EXPECT_TRUE(s->Consistent());
	// A key joining after the wraps starts level.
	s->Activate(5, 1, 5, 0, true);
	EXPECT_EQ(s->Find(5)->pass, s->vtime());
	EXPECT_TRUE(s->Consistent());
}

}  // namespace
}  // namespace awa::core
