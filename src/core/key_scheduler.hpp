// key_scheduler.hpp: which key a claim of a keyed queue serves next
// (docs/flow-control.md, "The core: the key scheduler"). src/pg/key_lanes.cpp
// uses it for fair share and first-come order between a priority's lanes;
// its limits per key (SetLimits, Release, SetRunning) are not used there:
// src/pg counts a key's running attempts over all its priorities in the
// counters (key_limits.hpp) and takes a key at its limit out with Block.
//
// A queue's keys with work ("active") or with attempts still running, each
// with its running attempts, its reserved ones (claims in progress), its
// token bucket (core/token_bucket.hpp) and its stride-scheduling pass. A claim
// picks the eligible key first in order (Pick) and charges it (Charge):
//   - eligible: active, running + in_flight < key_max_running (0: no limit),
//     and a whole token when a key rate limit is set;
//   - order, fair mode: the smallest pass; a charge of n jobs adds
//     n × (kStrideOne / weight) to it; a key that joins the eligible set
//     starts at max(its pass, vtime), vtime being the smallest pass among the
//     eligible keys (monotone): a new or long-idle key starts level with the
//     others, neither catching up nor starving; a key that left with a debt
//     (charged ahead of the others) keeps what the others have not caught up;
//   - order, oldest-head mode: the smallest head sequence (passes frozen).
// Ties: smaller head sequence, then smaller id.
//
// Cost: the eligible keys are a binary heap (Pick O(1) after the due timers,
// Charge and the rest O(log n)); keys out of tokens wait in a second heap
// ordered by when their next token is due, keys at key_max_running wait for a
// Release/Settle/GiveBack. `comparisons` counts heap comparisons (the unit
// tests bound it by c × log2(n)).
//
// Pass arithmetic: uint64 passes compared by wrapping difference
// (int64(a - b) < 0), never renormalised. Sound because every eligible key's
// pass lies in [vtime, vtime + kMaxLag] (kMaxLag = 2^52, a charge at most
// kMaxChargeJobs × kStrideOne = 2^50) and a key out of the heap stores its lag
// (pass - vtime, <= kMaxLag) and the vtime it left at, not its pass. So passes
// may wrap the 64 bits any number of times (10^12 claims of weight 1 advance
// them by about 2^70). A key out of the heap while vtime advanced by 2^64 or
// more rejoins with an error of at most its lag (bounded, never a starvation).
//
// Memory: one block from the caller, Size(capacity) bytes, 8-aligned: this
// header, then the per-key entries, two heaps, an id hash table and a group
// hash table (the blocked keys), all
// addressed by offsets from the header, so the block may be copied byte for
// byte (memcpy) or mapped at another address: no pointers, no allocation,
// trivially copyable. Nothing throws (noexcept): src/pg can call it under a
// lock (LWLock: the O(log n) work is too long for a spinlock).
#pragma once

#include "core/token_bucket.hpp"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace awa::core {

constexpr int32_t kMinKeyWeight = 1;
constexpr int32_t kMaxKeyWeight = 10000;
// The pass of one job of weight 1; a key of weight w has stride kStrideOne / w
// (rounded down: weight 10000 gets 107374, an error of 4e-6 relative).
constexpr uint64_t kStrideOne = uint64_t{1} << 30;
// The most jobs one charge may take (a claim takes at most 10,000).
constexpr int32_t kMaxChargeJobs = int32_t{1} << 20;
// Bound of pass - vtime (see above).
constexpr uint64_t kMaxLag = uint64_t{1} << 52;
// Pick's room when neither limit applies.
constexpr int32_t kUnlimitedRoom = INT32_MAX;
// The most keys one scheduler holds (the hash table's size stays an int32).
constexpr int32_t kMaxSchedulerKeys = int32_t{1} << 24;

enum class KeyMode : int32_t { kFair = 0, kOldestHead = 1 };

enum class KeyResult : int32_t {
	kOk = 0,
	kBadWeight,    // outside kMinKeyWeight..kMaxKeyWeight (SQL: 22023)
	kBadCount,     // a job count outside 1..kMaxChargeJobs (or negative)
	kUnknownKey,   // no entry for the id
	kTableFull,    // no free entry (SQL: 53200)
	kNotEligible,  // Charge: the key is not active, at its limit or out of tokens
	kOverRoom,     // Charge: more jobs than its room (key_max_running, tokens)
};
const char *KeyResultName(KeyResult result) noexcept;

// The limits every key of the queue has.
struct KeyLimits {
	int32_t max_running;  // 0: no limit
	bool rate_set;        // false: no key rate limit (rate ignored)
	RateSpec rate;
};

struct KeyPick {
	bool found;
	uint64_t id;
	int32_t room;          // jobs the key may take now (1.. ; kUnlimitedRoom)
	int64_t wait_micros;   // !found: until a key out of tokens gets one (-1: none waits for tokens)
};

enum class KeyState : uint8_t { kFree = 0, kActive = 1, kIdle = 2 };

struct KeyEntry {
	uint64_t id;
	uint64_t pass;        // in the eligible heap: its pass
	uint64_t lag;         // out of it: pass - vtime when it left (0..kMaxLag)
	uint64_t left_at;     // out of it: vtime when it left
	int64_t head_seq;     // its oldest job's sequence (oldest-head order, ties)
	TokenBucket bucket;   // started at activation; used while a rate is set
	int64_t due;          // in the timer heap: when to look at it again (micros)
	int32_t weight;
	int32_t running;      // attempts running (claims committed, not ended)
	int32_t in_flight;    // attempts reserved by claims in progress
	int32_t heap_pos;     // in the eligible heap, or -1
	int32_t timer_pos;    // in the timer heap, or -1
	int32_t next_free;    // free list (kFree entries), or -1
	uint32_t activations;  // Activate calls since the entry was made (DeactivateIfUnchanged)
	KeyState state;       // kIdle: no work, kept for its running attempts or its bucket
	bool blocked;         // Block: not eligible until Unblock, whatever its work and limits
	uint64_t group;       // while blocked: the group UnblockGroup finds it by (its key's hash)
};

class KeyScheduler {
public:
	// Bytes for `capacity` keys (1..kMaxSchedulerKeys); 0 if out of range.
	static size_t Size(int32_t capacity) noexcept;
	// Lays out an empty scheduler in `memory` (8-aligned, at least
	// Size(capacity) bytes): fair mode, no limits. Null if it does not fit.
	static KeyScheduler *Init(void *memory, size_t bytes, int32_t capacity) noexcept;

	// The queue's settings. SetLimits looks at every key (O(n)); a rate set
	// where none was starts every key's bucket full (the window before had no
	// limit), a changed rate keeps the buckets (rescaled to the new period).
	void SetLimits(const KeyLimits &limits, int64_t now) noexcept;
	// Rebuilds the order (O(n)); into fair mode every active key starts at vtime.
	void SetMode(KeyMode mode) noexcept;

	// The key has work (an enqueue's commit). A new key starts at vtime with a
	// full or empty bucket (bucket_full: the caller knows whether the key may
	// have used tokens it does not remember, e.g. since a restart); an idle one
	// becomes active again with its bucket and running attempts. An active one
	// takes the new head sequence if older. kBadWeight, kTableFull: nothing changes.
	KeyResult Activate(uint64_t id, int32_t weight, int64_t head_seq, int64_t now, bool bucket_full) noexcept;
	// The key has no work (its lane emptied). Its entry is freed once it has no
	// attempt running or reserved and (with a rate) its bucket is full again
	// (before that, a new activation would get tokens it used).
	KeyResult Deactivate(uint64_t id, int64_t now) noexcept;
	// Deactivate, unless the key was activated again since the caller read
	// `activations` from its entry (then kNotEligible and nothing changes): a
	// claim that found no work must not undo an enqueue's activation that came
	// after the claim looked.
	KeyResult DeactivateIfUnchanged(uint64_t id, uint32_t activations, int64_t now) noexcept;
	KeyResult SetWeight(uint64_t id, int32_t weight) noexcept;
	// Its oldest job's sequence changed (a claim took its head).
	KeyResult SetHead(uint64_t id, int64_t head_seq) noexcept;
	// Its running attempts, counted (a rebuild after a restart, a correction):
	// a key with none yet gets an idle entry (weight 1).
	KeyResult SetRunning(uint64_t id, int32_t running, int64_t now) noexcept;
	// A limit kept outside the scheduler holds the key: it leaves the eligible
	// set (keeping its pass and work) until Unblock, or UnblockGroup(group)
	// (src/pg: the group is a hash of the concurrency key, so the end of an
	// attempt brings the key's lane back without knowing its id). kUnknownKey:
	// no entry (nothing to block). Unblock of a key not blocked changes nothing.
	KeyResult Block(uint64_t id, uint64_t group, int64_t now) noexcept;
	KeyResult Unblock(uint64_t id, int64_t now) noexcept;
	// Unblocks the keys blocked with `group` (O(1) expected; several only on a
	// collision of groups, which unblocks one more: harmless) and returns how many.
	int32_t UnblockGroup(uint64_t group, int64_t now) noexcept;
	// Unblocks every key (the outside limit was lifted). O(n).
	void UnblockAll(int64_t now) noexcept;
	int32_t blocked() const noexcept { return blocked_; }

	// The eligible key first in order and how many jobs it may take. Only moves
	// keys whose token is due back into the eligible set.
	KeyPick Pick(int64_t now) noexcept;
	// A claim reserves `jobs` of the key (1..its room): in flight += jobs,
	// tokens taken (held), pass += jobs × stride (fair mode).
	KeyResult Charge(uint64_t id, int32_t jobs, int64_t now) noexcept;
	// The claim took fewer than it reserved: `unused` of `reserved` go back
	// (in flight, tokens, pass; the pass never below vtime).
	KeyResult GiveBack(uint64_t id, int32_t reserved, int32_t unused, int64_t now) noexcept;
	// The claim's transaction ended: `jobs` reserved leave in flight, and
	// become running if it committed (a rolled-back claim's tokens stay used).
	KeyResult Settle(uint64_t id, int32_t jobs, bool committed, int64_t now) noexcept;
	// `attempts` of the key ended (completed, failed, rescued...).
	KeyResult Release(uint64_t id, int32_t attempts, int64_t now) noexcept;

	// Reading (tests, metrics).
	const KeyEntry *Find(uint64_t id) const noexcept;
	int32_t capacity() const noexcept { return capacity_; }
	int32_t keys() const noexcept { return keys_; }
	int32_t eligible() const noexcept { return heap_size_; }
	int32_t waiting_for_tokens() const noexcept { return timer_size_; }
	uint64_t vtime() const noexcept { return vtime_; }
	KeyMode mode() const noexcept { return mode_; }
	const KeyLimits &limits() const noexcept { return limits_; }
	uint64_t comparisons() const noexcept { return comparisons_; }
	// Checks every invariant (heap order and positions, hash, counts); for tests.
	bool Consistent() const noexcept;

private:
	KeyEntry *entries() noexcept;
	const KeyEntry *entries() const noexcept;
	int32_t *heap() noexcept;
	const int32_t *heap() const noexcept;
	int32_t *timers() noexcept;
	const int32_t *timers() const noexcept;
	int32_t *table() noexcept;
	const int32_t *table() const noexcept;
	int32_t *groups() noexcept;
	const int32_t *groups() const noexcept;
	void GroupInsert(int32_t slot) noexcept;
	void GroupRemove(int32_t slot) noexcept;
	void ClearBlock(int32_t slot) noexcept;

	int32_t Lookup(uint64_t id) const noexcept;
	int32_t Insert(uint64_t id) noexcept;
	void Free(int32_t slot) noexcept;

	bool Before(int32_t a, int32_t b) noexcept;
	void HeapSet(int32_t pos, int32_t slot) noexcept;
	void SiftUp(int32_t pos) noexcept;
	void SiftDown(int32_t pos) noexcept;
	void HeapRemove(int32_t slot) noexcept;
	void Join(int32_t slot) noexcept;
	void Leave(int32_t slot) noexcept;
	void NoteVtime() noexcept;

	bool TimerBefore(int32_t a, int32_t b) noexcept;
	void TimerSet(int32_t pos, int32_t slot) noexcept;
	void TimerUp(int32_t pos) noexcept;
	void TimerDown(int32_t pos) noexcept;
	void TimerArm(int32_t slot, int64_t due) noexcept;
	void TimerRemove(int32_t slot) noexcept;

	void Advance(int64_t now) noexcept;
	void Reevaluate(int32_t slot, int64_t now) noexcept;
	uint64_t StrideOf(const KeyEntry &entry) const noexcept;
	int32_t RoomOf(int32_t slot, int64_t now) noexcept;

	int32_t capacity_;
	int32_t table_size_;  // a power of two >= 2 × capacity
	int32_t keys_;
	int32_t heap_size_;
	int32_t timer_size_;
	int32_t free_head_;
	int32_t blocked_;
	KeyMode mode_;
	KeyLimits limits_;
	uint64_t vtime_;
	uint64_t comparisons_;
	uint64_t entries_offset_;
	uint64_t heap_offset_;
	uint64_t timers_offset_;
	uint64_t table_offset_;
	uint64_t groups_offset_;  // the blocked keys by group: a second table like the id table
};

static_assert(std::is_trivially_copyable_v<KeyScheduler>, "KeyScheduler lives in shared memory");
static_assert(std::is_trivially_copyable_v<KeyEntry>, "KeyEntry lives in shared memory");
static_assert(std::is_trivially_copyable_v<TokenBucket>, "TokenBucket lives in shared memory");

}  // namespace awa::core
