// key_scheduler.cpp: see key_scheduler.hpp.
#include "core/key_scheduler.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>

#include "core/core_only.hpp"

namespace awa::core {

namespace {

// The two heaps of a scheduler (eligible keys, keys waiting for a token) are
// the same binary heap of slots: `h` holds slots, `before` orders two slots,
// `set(pos, slot)` stores a slot and records its position in its entry.
template <typename BeforeFn, typename SetFn>
void
IndexHeapUp(const int32_t *h, int32_t pos, BeforeFn before, SetFn set) noexcept
{
	int32_t slot = h[pos];
	while (pos > 0) {
		int32_t parent = (pos - 1) / 2;
		if (!before(slot, h[parent]))
			break;
		set(pos, h[parent]);
		pos = parent;
	}
	set(pos, slot);
}

template <typename BeforeFn, typename SetFn>
void
IndexHeapDown(const int32_t *h, int32_t size, int32_t pos, BeforeFn before, SetFn set) noexcept
{
	int32_t slot = h[pos];
	for (;;) {
		int32_t child = 2 * pos + 1;
		if (child >= size)
			break;
		if (child + 1 < size && before(h[child + 1], h[child]))
			child++;
		if (!before(h[child], slot))
			break;
		set(pos, h[child]);
		pos = child;
	}
	set(pos, slot);
}

}  // namespace

namespace {

constexpr size_t
Align8(size_t n) noexcept
{
	return (n + 7) & ~size_t{7};
}

// splitmix64's finaliser: ids may be small slot numbers or hashes.
uint64_t
Mix(uint64_t x) noexcept
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	x ^= x >> 31;
	return x;
}

int32_t
TableSizeFor(int32_t capacity) noexcept
{
	int32_t size = 2;
	while (size < 2 * capacity)
		size <<= 1;
	return size;
}

// a - b as a signed distance on the wrapping pass circle.
int64_t
Distance(uint64_t a, uint64_t b) noexcept
{
	return static_cast<int64_t>(a - b);
}

int64_t
AddSaturated(int64_t now, int64_t micros) noexcept
{
	if (micros > std::numeric_limits<int64_t>::max() - now)
		return std::numeric_limits<int64_t>::max();
	return now + micros;
}

bool
ValidWeight(int32_t weight) noexcept
{
	return weight >= kMinKeyWeight && weight <= kMaxKeyWeight;
}

}  // namespace

const char *
KeyResultName(KeyResult result) noexcept
{
	switch (result) {
	case KeyResult::kOk:
		return "ok";
	case KeyResult::kBadWeight:
		return "bad weight";
	case KeyResult::kBadCount:
		return "bad count";
	case KeyResult::kUnknownKey:
		return "unknown key";
	case KeyResult::kTableFull:
		return "table full";
	case KeyResult::kNotEligible:
		return "not eligible";
	case KeyResult::kOverRoom:
		return "over room";
	}
	return "?";
}

// ---------------------------------------------------------------------------
// Layout

size_t
KeyScheduler::Size(int32_t capacity) noexcept
{
	if (capacity < 1 || capacity > kMaxSchedulerKeys)
		return 0;
	size_t bytes = Align8(sizeof(KeyScheduler));
	bytes += Align8(sizeof(KeyEntry) * static_cast<size_t>(capacity));
	bytes += Align8(sizeof(int32_t) * static_cast<size_t>(capacity));  // eligible heap
	bytes += Align8(sizeof(int32_t) * static_cast<size_t>(capacity));  // timer heap
	bytes += Align8(sizeof(int32_t) * static_cast<size_t>(TableSizeFor(capacity)));  // ids
	bytes += Align8(sizeof(int32_t) * static_cast<size_t>(TableSizeFor(capacity)));  // groups
	return bytes;
}

KeyScheduler *
KeyScheduler::Init(void *memory, size_t bytes, int32_t capacity) noexcept
{
	size_t need = Size(capacity);
	if (memory == nullptr || need == 0 || bytes < need || reinterpret_cast<uintptr_t>(memory) % 8 != 0)
		return nullptr;
	std::memset(memory, 0, need);
	KeyScheduler *s = new (memory) KeyScheduler;
	s->capacity_ = capacity;
	s->table_size_ = TableSizeFor(capacity);
	s->keys_ = 0;
	s->heap_size_ = 0;
	s->timer_size_ = 0;
	s->mode_ = KeyMode::kFair;
	s->limits_ = KeyLimits{0, false, RateSpec{0, 0, 0}};
	s->vtime_ = 0;
	s->comparisons_ = 0;
	s->entries_offset_ = Align8(sizeof(KeyScheduler));
	s->heap_offset_ = s->entries_offset_ + Align8(sizeof(KeyEntry) * static_cast<size_t>(capacity));
	s->timers_offset_ = s->heap_offset_ + Align8(sizeof(int32_t) * static_cast<size_t>(capacity));
	s->table_offset_ = s->timers_offset_ + Align8(sizeof(int32_t) * static_cast<size_t>(capacity));
	s->groups_offset_ = s->table_offset_ + Align8(sizeof(int32_t) * static_cast<size_t>(s->table_size_));
	s->blocked_ = 0;
	KeyEntry *entries = s->entries();
	for (int32_t i = 0; i < capacity; i++) {
		entries[i].state = KeyState::kFree;
		entries[i].heap_pos = -1;
		entries[i].timer_pos = -1;
		entries[i].next_free = i + 1 < capacity ? i + 1 : -1;
	}
	s->free_head_ = 0;
	return s;
}

KeyEntry *
KeyScheduler::entries() noexcept
{
	return reinterpret_cast<KeyEntry *>(reinterpret_cast<char *>(this) + entries_offset_);
}
const KeyEntry *
KeyScheduler::entries() const noexcept
{
	return reinterpret_cast<const KeyEntry *>(reinterpret_cast<const char *>(this) + entries_offset_);
}
int32_t *
KeyScheduler::heap() noexcept
{
	return reinterpret_cast<int32_t *>(reinterpret_cast<char *>(this) + heap_offset_);
}
const int32_t *
KeyScheduler::heap() const noexcept
{
	return reinterpret_cast<const int32_t *>(reinterpret_cast<const char *>(this) + heap_offset_);
}
int32_t *
KeyScheduler::timers() noexcept
{
	return reinterpret_cast<int32_t *>(reinterpret_cast<char *>(this) + timers_offset_);
}
const int32_t *
KeyScheduler::timers() const noexcept
{
	return reinterpret_cast<const int32_t *>(reinterpret_cast<const char *>(this) + timers_offset_);
}
int32_t *
KeyScheduler::table() noexcept
{
	return reinterpret_cast<int32_t *>(reinterpret_cast<char *>(this) + table_offset_);
}
const int32_t *
KeyScheduler::table() const noexcept
{
	return reinterpret_cast<const int32_t *>(reinterpret_cast<const char *>(this) + table_offset_);
}

int32_t *
KeyScheduler::groups() noexcept
{
	return reinterpret_cast<int32_t *>(reinterpret_cast<char *>(this) + groups_offset_);
}
const int32_t *
KeyScheduler::groups() const noexcept
{
	return reinterpret_cast<const int32_t *>(reinterpret_cast<const char *>(this) + groups_offset_);
}

// ---------------------------------------------------------------------------
// Id table: open addressing, linear probing, backward-shift deletion. A cell
// holds slot + 1 (0: empty); at most half full.

int32_t
KeyScheduler::Lookup(uint64_t id) const noexcept
{
	const int32_t *cells = table();
	const KeyEntry *e = entries();
	uint32_t mask = static_cast<uint32_t>(table_size_ - 1);
	for (uint32_t i = static_cast<uint32_t>(Mix(id)) & mask;; i = (i + 1) & mask) {
		int32_t cell = cells[i];
		if (cell == 0)
			return -1;
		if (e[cell - 1].id == id)
			return cell - 1;
	}
}

int32_t
KeyScheduler::Insert(uint64_t id) noexcept
{
	if (free_head_ < 0)
		return -1;
	int32_t slot = free_head_;
	KeyEntry &entry = entries()[slot];
	free_head_ = entry.next_free;
	int32_t *cells = table();
	uint32_t mask = static_cast<uint32_t>(table_size_ - 1);
	uint32_t i = static_cast<uint32_t>(Mix(id)) & mask;
	while (cells[i] != 0)
		i = (i + 1) & mask;
	cells[i] = slot + 1;
	entry = KeyEntry{};
	entry.id = id;
	entry.heap_pos = -1;
	entry.timer_pos = -1;
	entry.next_free = -1;
	entry.weight = 1;
	entry.pass = vtime_;
	entry.lag = 0;
	entry.left_at = vtime_;
	entry.state = KeyState::kIdle;
	keys_++;
	return slot;
}

void
KeyScheduler::Free(int32_t slot) noexcept
{
	ClearBlock(slot);
	KeyEntry *e = entries();
	int32_t *cells = table();
	uint32_t mask = static_cast<uint32_t>(table_size_ - 1);
	uint32_t i = static_cast<uint32_t>(Mix(e[slot].id)) & mask;
	while (cells[i] != slot + 1)
		i = (i + 1) & mask;
	// Backward shift: move later cells of the probe run into the hole when
	// their home is not in (hole, cell].
	for (uint32_t j = (i + 1) & mask; cells[j] != 0; j = (j + 1) & mask) {
		uint32_t home = static_cast<uint32_t>(Mix(e[cells[j] - 1].id)) & mask;
		bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!stays) {
			cells[i] = cells[j];
			i = j;
		}
	}
	cells[i] = 0;
	e[slot].state = KeyState::kFree;
	e[slot].next_free = free_head_;
	free_head_ = slot;
	keys_--;
}

const KeyEntry *
KeyScheduler::Find(uint64_t id) const noexcept
{
	int32_t slot = Lookup(id);
	return slot < 0 ? nullptr : &entries()[slot];
}

// ---------------------------------------------------------------------------
// The eligible heap.

bool
KeyScheduler::Before(int32_t a, int32_t b) noexcept
{
	comparisons_++;
	const KeyEntry &x = entries()[a];
	const KeyEntry &y = entries()[b];
	if (mode_ == KeyMode::kFair && x.pass != y.pass)
		return Distance(x.pass, y.pass) < 0;
	if (x.head_seq != y.head_seq)
		return x.head_seq < y.head_seq;
	return x.id < y.id;
}

void
KeyScheduler::HeapSet(int32_t pos, int32_t slot) noexcept
{
	heap()[pos] = slot;
	entries()[slot].heap_pos = pos;
}

void
KeyScheduler::SiftUp(int32_t pos) noexcept
{
	IndexHeapUp(heap(), pos, [this](int32_t a, int32_t b) { return Before(a, b); },
	            [this](int32_t at, int32_t slot) { HeapSet(at, slot); });
}

void
KeyScheduler::SiftDown(int32_t pos) noexcept
{
	IndexHeapDown(heap(), heap_size_, pos, [this](int32_t a, int32_t b) { return Before(a, b); },
	              [this](int32_t at, int32_t slot) { HeapSet(at, slot); });
}

void
KeyScheduler::HeapRemove(int32_t slot) noexcept
{
	KeyEntry &entry = entries()[slot];
	int32_t pos = entry.heap_pos;
	entry.heap_pos = -1;
	int32_t last = heap()[--heap_size_];
	if (pos == heap_size_)
		return;
	HeapSet(pos, last);
	if (pos > 0 && Before(last, heap()[(pos - 1) / 2]))
		SiftUp(pos);
	else
		SiftDown(pos);
}

void
KeyScheduler::NoteVtime() noexcept
{
	if (mode_ != KeyMode::kFair || heap_size_ == 0)
		return;
	uint64_t top = entries()[heap()[0]].pass;
	if (Distance(top, vtime_) > 0)
		vtime_ = top;
}

void
KeyScheduler::Join(int32_t slot) noexcept
{
	KeyEntry &entry = entries()[slot];
	if (entry.heap_pos >= 0)
		return;
	if (mode_ == KeyMode::kFair) {
		// max(pass it left with, vtime): what the others have not caught up.
		uint64_t advanced = vtime_ - entry.left_at;
		uint64_t lag = advanced >= entry.lag ? 0 : entry.lag - advanced;
		entry.pass = vtime_ + lag;
	}
	HeapSet(heap_size_++, slot);
	SiftUp(entry.heap_pos);
	NoteVtime();
}

void
KeyScheduler::Leave(int32_t slot) noexcept
{
	KeyEntry &entry = entries()[slot];
	if (entry.heap_pos < 0)
		return;
	if (mode_ == KeyMode::kFair) {
		int64_t lag = Distance(entry.pass, vtime_);
		entry.lag = lag <= 0 ? 0 : std::min(static_cast<uint64_t>(lag), kMaxLag);
		entry.left_at = vtime_;
	}
	HeapRemove(slot);
	NoteVtime();
}

// ---------------------------------------------------------------------------
// The timer heap (keys out of tokens; idle keys whose bucket is refilling).

bool
KeyScheduler::TimerBefore(int32_t a, int32_t b) noexcept
{
	comparisons_++;
	const KeyEntry &x = entries()[a];
	const KeyEntry &y = entries()[b];
	if (x.due != y.due)
		return x.due < y.due;
	return a < b;
}

void
KeyScheduler::TimerSet(int32_t pos, int32_t slot) noexcept
{
	timers()[pos] = slot;
	entries()[slot].timer_pos = pos;
}

void
KeyScheduler::TimerUp(int32_t pos) noexcept
{
	IndexHeapUp(timers(), pos, [this](int32_t a, int32_t b) { return TimerBefore(a, b); },
	            [this](int32_t at, int32_t slot) { TimerSet(at, slot); });
}

void
KeyScheduler::TimerDown(int32_t pos) noexcept
{
	IndexHeapDown(timers(), timer_size_, pos, [this](int32_t a, int32_t b) { return TimerBefore(a, b); },
	              [this](int32_t at, int32_t slot) { TimerSet(at, slot); });
}

void
KeyScheduler::TimerRemove(int32_t slot) noexcept
{
	KeyEntry &entry = entries()[slot];
	int32_t pos = entry.timer_pos;
	if (pos < 0)
		return;
	entry.timer_pos = -1;
	int32_t last = timers()[--timer_size_];
	if (pos == timer_size_)
		return;
	TimerSet(pos, last);
	if (pos > 0 && TimerBefore(last, timers()[(pos - 1) / 2]))
		TimerUp(pos);
	else
		TimerDown(pos);
}

void
KeyScheduler::TimerArm(int32_t slot, int64_t due) noexcept
{
	KeyEntry &entry = entries()[slot];
	if (entry.timer_pos >= 0) {
		if (entry.due == due)
			return;
		TimerRemove(slot);
	}
	entry.due = due;
	TimerSet(timer_size_++, slot);
	TimerUp(entry.timer_pos);
}

void
KeyScheduler::Advance(int64_t now) noexcept
{
	while (timer_size_ > 0) {
		int32_t slot = timers()[0];
		if (entries()[slot].due > now)
			break;
		TimerRemove(slot);
		Reevaluate(slot, now);  // re-arms it, due after now, if still waiting
	}
}

// ---------------------------------------------------------------------------
// Eligibility

uint64_t
KeyScheduler::StrideOf(const KeyEntry &entry) const noexcept
{
	return kStrideOne / static_cast<uint64_t>(std::clamp(entry.weight, kMinKeyWeight, kMaxKeyWeight));
}

void
KeyScheduler::Reevaluate(int32_t slot, int64_t now) noexcept
{
	KeyEntry &entry = entries()[slot];
	if (entry.state == KeyState::kFree)
		return;
	if (entry.state == KeyState::kIdle) {
		Leave(slot);
		if (entry.running > 0 || entry.in_flight > 0 || entry.bucket.held > 0) {
			TimerRemove(slot);  // kept for its attempts; they end with Release/Settle
			return;
		}
		if (limits_.rate_set) {
			RefillBucket(&entry.bucket, limits_.rate, now);
			if (!BucketFull(entry.bucket, limits_.rate.burst)) {
				int64_t wait = MicrosUntilTokens(entry.bucket, limits_.rate, limits_.rate.burst);
				TimerArm(slot, AddSaturated(now, std::max<int64_t>(1, wait)));
				return;
			}
		}
		TimerRemove(slot);
		Free(slot);
		return;
	}
	if (entry.blocked || (limits_.max_running > 0 && int64_t{entry.running} + entry.in_flight >= limits_.max_running)) {
		Leave(slot);
		TimerRemove(slot);  // back with Release, Settle or GiveBack
		return;
	}
	if (limits_.rate_set) {
		RefillBucket(&entry.bucket, limits_.rate, now);
		if (entry.bucket.whole < 1) {
			Leave(slot);
			int64_t wait = MicrosUntilTokens(entry.bucket, limits_.rate, 1);
			TimerArm(slot, AddSaturated(now, std::max<int64_t>(1, wait)));
			return;
		}
	}
	TimerRemove(slot);
	Join(slot);
}

int32_t
KeyScheduler::RoomOf(int32_t slot, int64_t now) noexcept
{
	KeyEntry &entry = entries()[slot];
	int64_t room = kUnlimitedRoom;
	if (limits_.max_running > 0)
		room = int64_t{limits_.max_running} - entry.running - entry.in_flight;
	if (limits_.rate_set) {
		RefillBucket(&entry.bucket, limits_.rate, now);
		room = std::min(room, entry.bucket.whole);
	}
	return static_cast<int32_t>(std::clamp<int64_t>(room, 0, kUnlimitedRoom));
}

// ---------------------------------------------------------------------------
// Settings

void
KeyScheduler::SetLimits(const KeyLimits &limits, int64_t now) noexcept
{
	bool rate_new = limits.rate_set && !limits_.rate_set;
	limits_ = limits;
	KeyEntry *e = entries();
	for (int32_t slot = 0; slot < capacity_; slot++) {
		if (e[slot].state == KeyState::kFree)
			continue;
		if (rate_new) {
			int64_t held = e[slot].bucket.held;
			StartBucket(&e[slot].bucket, now, true, limits.rate.burst);
			e[slot].bucket.held = held;
		}
		Reevaluate(slot, now);
	}
}

void
KeyScheduler::SetMode(KeyMode mode) noexcept
{
	bool into_fair = mode == KeyMode::kFair && mode_ != KeyMode::kFair;
	mode_ = mode;
	KeyEntry *e = entries();
	if (into_fair) {
		for (int32_t slot = 0; slot < capacity_; slot++) {
			e[slot].lag = 0;
			e[slot].left_at = vtime_;
			e[slot].pass = vtime_;
		}
	}
	for (int32_t pos = heap_size_ / 2 - 1; pos >= 0; pos--)
		SiftDown(pos);
	NoteVtime();
}

// ---------------------------------------------------------------------------
// Keys

KeyResult
KeyScheduler::Activate(uint64_t id, int32_t weight, int64_t head_seq, int64_t now, bool bucket_full) noexcept
{
	if (!ValidWeight(weight))
		return KeyResult::kBadWeight;
	Advance(now);
	int32_t slot = Lookup(id);
	if (slot < 0) {
		slot = Insert(id);
		if (slot < 0)
			return KeyResult::kTableFull;
		KeyEntry &entry = entries()[slot];
		entry.head_seq = head_seq;
		StartBucket(&entry.bucket, now, bucket_full, limits_.rate_set ? limits_.rate.burst : 0);
	}
	KeyEntry &entry = entries()[slot];
	entry.weight = weight;
	entry.activations++;
	if (entry.state == KeyState::kIdle) {
		entry.state = KeyState::kActive;
		entry.head_seq = head_seq;
	} else if (head_seq < entry.head_seq) {
		entry.head_seq = head_seq;
		if (entry.heap_pos >= 0)
			SiftUp(entry.heap_pos);
	}
	Reevaluate(slot, now);
	return KeyResult::kOk;
}

KeyResult
KeyScheduler::Deactivate(uint64_t id, int64_t now) noexcept
{
	int32_t slot = Lookup(id);
	if (slot < 0)
		return KeyResult::kUnknownKey;
	entries()[slot].state = KeyState::kIdle;
	Reevaluate(slot, now);
	Advance(now);
	return KeyResult::kOk;
}

KeyResult
KeyScheduler::DeactivateIfUnchanged(uint64_t id, uint32_t activations, int64_t now) noexcept
{
	const KeyEntry *entry = Find(id);
	if (entry == nullptr)
		return KeyResult::kUnknownKey;
	if (entry->activations != activations)
		return KeyResult::kNotEligible;
	return Deactivate(id, now);
}

KeyResult
KeyScheduler::SetWeight(uint64_t id, int32_t weight) noexcept
{
	if (!ValidWeight(weight))
		return KeyResult::kBadWeight;
	int32_t slot = Lookup(id);
	if (slot < 0)
		return KeyResult::kUnknownKey;
	entries()[slot].weight = weight;  // the strides of its next charges
	return KeyResult::kOk;
}

KeyResult
KeyScheduler::SetHead(uint64_t id, int64_t head_seq) noexcept
{
	int32_t slot = Lookup(id);
	if (slot < 0)
		return KeyResult::kUnknownKey;
	KeyEntry &entry = entries()[slot];
	int64_t old = entry.head_seq;
	entry.head_seq = head_seq;
	if (entry.heap_pos >= 0) {
		if (head_seq < old)
			SiftUp(entry.heap_pos);
		else
			SiftDown(entry.heap_pos);
		NoteVtime();
	}
	return KeyResult::kOk;
}

KeyResult
KeyScheduler::SetRunning(uint64_t id, int32_t running, int64_t now) noexcept
{
	if (running < 0)
		return KeyResult::kBadCount;
	Advance(now);
	int32_t slot = Lookup(id);
	if (slot < 0) {
		if (running == 0)
			return KeyResult::kOk;
		slot = Insert(id);
		if (slot < 0)
			return KeyResult::kTableFull;
		KeyEntry &entry = entries()[slot];
		entry.head_seq = std::numeric_limits<int64_t>::max();
		// What it used before is not known: empty, as a bucket after a restart.
		StartBucket(&entry.bucket, now, false, 0);
	}
	entries()[slot].running = running;
	Reevaluate(slot, now);
	return KeyResult::kOk;
}

// The group table: the blocked keys by group (cells hold slot + 1), open
// addressing with linear probing and backward-shift deletion, as the id table;
// a group may have several cells (a collision of two keys' hashes).
void
KeyScheduler::GroupInsert(int32_t slot) noexcept
{
	int32_t *cells = groups();
	uint32_t mask = static_cast<uint32_t>(table_size_ - 1);
	uint32_t i = static_cast<uint32_t>(Mix(entries()[slot].group)) & mask;
	while (cells[i] != 0)
		i = (i + 1) & mask;
	cells[i] = slot + 1;
}

void
KeyScheduler::GroupRemove(int32_t slot) noexcept
{
	KeyEntry *e = entries();
	int32_t *cells = groups();
	uint32_t mask = static_cast<uint32_t>(table_size_ - 1);
	uint32_t i = static_cast<uint32_t>(Mix(e[slot].group)) & mask;
	while (cells[i] != slot + 1) {
		if (cells[i] == 0)
			return;  // (not there: cannot happen while blocked)
		i = (i + 1) & mask;
	}
	for (uint32_t j = (i + 1) & mask; cells[j] != 0; j = (j + 1) & mask) {
		uint32_t home = static_cast<uint32_t>(Mix(e[cells[j] - 1].group)) & mask;
		bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!stays) {
			cells[i] = cells[j];
			i = j;
		}
	}
	cells[i] = 0;
}

void
KeyScheduler::ClearBlock(int32_t slot) noexcept
{
	KeyEntry &entry = entries()[slot];
	if (!entry.blocked)
		return;
	GroupRemove(slot);
	entry.blocked = false;
	blocked_--;
}

KeyResult
KeyScheduler::Block(uint64_t id, uint64_t group, int64_t now) noexcept
{
	int32_t slot = Lookup(id);
	if (slot < 0)
		return KeyResult::kUnknownKey;
	KeyEntry &entry = entries()[slot];
	if (entry.blocked && entry.group != group)
		ClearBlock(slot);
	if (!entry.blocked) {
		entry.blocked = true;
		entry.group = group;
		GroupInsert(slot);
		blocked_++;
	}
	Reevaluate(slot, now);
	return KeyResult::kOk;
}

KeyResult
KeyScheduler::Unblock(uint64_t id, int64_t now) noexcept
{
	int32_t slot = Lookup(id);
	if (slot < 0)
		return KeyResult::kUnknownKey;
	if (entries()[slot].blocked) {
		ClearBlock(slot);
		Reevaluate(slot, now);
	}
	return KeyResult::kOk;
}

int32_t
KeyScheduler::UnblockGroup(uint64_t group, int64_t now) noexcept
{
	int32_t done = 0;
	int32_t *cells = groups();
	uint32_t mask = static_cast<uint32_t>(table_size_ - 1);
	// Each removal may shift a later cell of the run back: look from the
	// group's home again after each.
	for (;;) {
		int32_t found = -1;
		for (uint32_t i = static_cast<uint32_t>(Mix(group)) & mask; cells[i] != 0; i = (i + 1) & mask)
			if (entries()[cells[i] - 1].group == group) {
				found = cells[i] - 1;
				break;
			}
		if (found < 0)
			return done;
		ClearBlock(found);
		Reevaluate(found, now);
		done++;
	}
}

void
KeyScheduler::UnblockAll(int64_t now) noexcept
{
	KeyEntry *e = entries();
	for (int32_t slot = 0; slot < capacity_ && blocked_ > 0; slot++) {
		if (e[slot].state == KeyState::kFree || !e[slot].blocked)
			continue;
		ClearBlock(slot);
		Reevaluate(slot, now);
	}
}

// ---------------------------------------------------------------------------
// Claims

KeyPick
KeyScheduler::Pick(int64_t now) noexcept
{
	Advance(now);
	while (heap_size_ > 0) {
		int32_t slot = heap()[0];
		Reevaluate(slot, now);  // (still eligible unless a setting moved under it)
		if (entries()[slot].heap_pos < 0)
			continue;
		int32_t room = RoomOf(slot, now);
		if (room <= 0) {  // cannot happen: Reevaluate saw room and a token
			Leave(slot);
			continue;
		}
		return KeyPick{true, entries()[slot].id, room, 0};
	}
	int64_t wait = -1;
	if (timer_size_ > 0)
		wait = std::max<int64_t>(1, entries()[timers()[0]].due - now);
	return KeyPick{false, 0, 0, wait};
}

KeyResult
KeyScheduler::Charge(uint64_t id, int32_t jobs, int64_t now) noexcept
{
	if (jobs < 1 || jobs > kMaxChargeJobs)
		return KeyResult::kBadCount;
	int32_t slot = Lookup(id);
	if (slot < 0)
		return KeyResult::kUnknownKey;
	Reevaluate(slot, now);
	KeyEntry &entry = entries()[slot];
	if (entry.heap_pos < 0)
		return KeyResult::kNotEligible;
	if (jobs > RoomOf(slot, now))
		return KeyResult::kOverRoom;
	entry.in_flight += jobs;
	if (limits_.rate_set)
		(void)TakeTokens(&entry.bucket, limits_.rate, now, jobs);
	if (mode_ == KeyMode::kFair) {
		entry.pass += static_cast<uint64_t>(jobs) * StrideOf(entry);
		if (Distance(entry.pass, vtime_) > static_cast<int64_t>(kMaxLag))
			entry.pass = vtime_ + kMaxLag;
		SiftDown(entry.heap_pos);
		NoteVtime();
	}
	Reevaluate(slot, now);
	return KeyResult::kOk;
}

KeyResult
KeyScheduler::GiveBack(uint64_t id, int32_t reserved, int32_t unused, int64_t now) noexcept
{
	if (reserved < 0 || unused < 0 || unused > reserved)
		return KeyResult::kBadCount;
	int32_t slot = Lookup(id);
	if (slot < 0)
		return KeyResult::kUnknownKey;
	KeyEntry &entry = entries()[slot];
	entry.in_flight = std::max(0, entry.in_flight - unused);
	if (limits_.rate_set)
		GiveBackTokens(&entry.bucket, reserved, unused, limits_.rate.burst);
	else
		GiveBackTokens(&entry.bucket, reserved, 0, std::numeric_limits<int32_t>::max());
	if (mode_ == KeyMode::kFair && unused > 0) {
		uint64_t refund = static_cast<uint64_t>(unused) * StrideOf(entry);
		if (entry.heap_pos >= 0) {
			uint64_t ahead = static_cast<uint64_t>(std::max<int64_t>(0, Distance(entry.pass, vtime_)));
			entry.pass = refund >= ahead ? vtime_ : entry.pass - refund;
			SiftUp(entry.heap_pos);
		} else {
			uint64_t advanced = vtime_ - entry.left_at;
			uint64_t lag = advanced >= entry.lag ? 0 : entry.lag - advanced;
			entry.lag = refund >= lag ? 0 : lag - refund;
			entry.left_at = vtime_;
		}
	}
	Reevaluate(slot, now);
	return KeyResult::kOk;
}

KeyResult
KeyScheduler::Settle(uint64_t id, int32_t jobs, bool committed, int64_t now) noexcept
{
	if (jobs < 0)
		return KeyResult::kBadCount;
	int32_t slot = Lookup(id);
	if (slot < 0)
		return KeyResult::kUnknownKey;
	KeyEntry &entry = entries()[slot];
	int32_t moved = std::min(jobs, entry.in_flight);
	entry.in_flight -= moved;
	if (committed)
		entry.running = static_cast<int32_t>(
		    std::min<int64_t>(int64_t{entry.running} + moved, std::numeric_limits<int32_t>::max()));
	Reevaluate(slot, now);
	return KeyResult::kOk;
}

KeyResult
KeyScheduler::Release(uint64_t id, int32_t attempts, int64_t now) noexcept
{
	if (attempts < 0)
		return KeyResult::kBadCount;
	int32_t slot = Lookup(id);
	if (slot < 0)
		return KeyResult::kUnknownKey;
	KeyEntry &entry = entries()[slot];
	entry.running = std::max(0, entry.running - attempts);
	Reevaluate(slot, now);
	return KeyResult::kOk;
}

// ---------------------------------------------------------------------------

bool
KeyScheduler::Consistent() const noexcept
{
	const KeyEntry *e = entries();
	const int32_t *h = heap();
	const int32_t *t = timers();
	int32_t held = 0, in_heap = 0, in_timers = 0, free_count = 0;
	for (int32_t slot = 0; slot < capacity_; slot++) {
		if (e[slot].state == KeyState::kFree) {
			free_count++;
			if (e[slot].heap_pos >= 0 || e[slot].timer_pos >= 0)
				return false;
			continue;
		}
		held++;
		if (Lookup(e[slot].id) != slot)
			return false;
		if (e[slot].heap_pos >= 0) {
			in_heap++;
			if (e[slot].heap_pos >= heap_size_ || h[e[slot].heap_pos] != slot)
				return false;
			if (e[slot].state != KeyState::kActive)
				return false;
			if (mode_ == KeyMode::kFair) {
				int64_t ahead = Distance(e[slot].pass, vtime_);
				if (ahead < 0 || static_cast<uint64_t>(ahead) > kMaxLag)
					return false;
			}
		}
		if (e[slot].timer_pos >= 0) {
			in_timers++;
			if (e[slot].timer_pos >= timer_size_ || t[e[slot].timer_pos] != slot)
				return false;
			if (e[slot].heap_pos >= 0)
				return false;
		}
		if (e[slot].lag > kMaxLag)
			return false;
	}
	if (held != keys_ || in_heap != heap_size_ || in_timers != timer_size_ || free_count != capacity_ - keys_)
		return false;
	// Heap order (checked without counting comparisons).
	for (int32_t pos = 1; pos < heap_size_; pos++) {
		const KeyEntry &child = e[h[pos]];
		const KeyEntry &parent = e[h[(pos - 1) / 2]];
		bool child_first;
		if (mode_ == KeyMode::kFair && child.pass != parent.pass)
			child_first = Distance(child.pass, parent.pass) < 0;
		else if (child.head_seq != parent.head_seq)
			child_first = child.head_seq < parent.head_seq;
		else
			child_first = child.id < parent.id;
		if (child_first)
			return false;
	}
	for (int32_t pos = 1; pos < timer_size_; pos++)
		if (e[t[pos]].due < e[t[(pos - 1) / 2]].due)
			return false;
	int32_t cells = 0, group_cells = 0, blocked = 0;
	for (int32_t i = 0; i < table_size_; i++) {
		if (table()[i] != 0)
			cells++;
		if (groups()[i] != 0) {
			group_cells++;
			if (!e[groups()[i] - 1].blocked || e[groups()[i] - 1].state == KeyState::kFree)
				return false;
		}
	}
	for (int32_t slot = 0; slot < capacity_; slot++)
		if (e[slot].state != KeyState::kFree && e[slot].blocked)
			blocked++;
	return cells == keys_ && group_cells == blocked && blocked == blocked_;
}

}  // namespace awa::core
