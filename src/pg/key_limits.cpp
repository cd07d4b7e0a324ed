// key_limits.cpp: see key_limits.hpp.
#include "pg/key_limits.hpp"

#include "core/lifecycle.hpp"
#include "pg/counters.hpp"
#include "pg/key_lanes.hpp"
#include "pg/rings.hpp"
#include "pg/spi_plans.hpp"
#include "pg/wakeups.hpp"

#include <type_traits>

namespace awa::pg {

namespace {

constexpr size_t kKeyNamePrefix = 201;  // core::kMaxNameLength + 1
constexpr char kPrefixByte = '\x01';

// Lane -> key, per backend: a lane's key never changes and lane ids are not
// reused; a new incarnation of the extension starts over.
constexpr int kKeyCacheSize = 1024;
struct KeyCacheEntry {
	Oid incarnation;
	int64 lane_id;
	bool keyed;
	int length;
	char key[256];
};
static_assert(std::is_trivially_destructible_v<KeyCacheEntry>, "static storage");
KeyCacheEntry key_cache[kKeyCacheSize];

text *
MakeText(const char *chars, size_t length)
{
	text *t = static_cast<text *>(palloc(VARHDRSZ + length));
	SET_VARSIZE(t, VARHDRSZ + length);
	memcpy(VARDATA(t), chars, length);
	return t;
}

// The queue's part of a key counters name: *start, *length; false if the name
// is not a key's.
bool
SplitName(const char *name, size_t length, size_t *queue_start, size_t *queue_length)
{
	if (!IsKeyCounterName(name, length))
		return false;
	size_t i = kKeyNamePrefix;
	size_t value = 0;
	size_t digits = 0;  // (a queue name's length has at most 4 digits: 800 bytes)
	while (i < length && name[i] >= '0' && name[i] <= '9' && digits < 6) {
		value = value * 10 + static_cast<size_t>(name[i] - '0');
		digits++;
		i++;
	}
	if (digits == 0 || i >= length || name[i] != ':' || i + 1 + value > length)
		return false;
	*queue_start = i + 1;
	*queue_length = value;
	return true;
}

}  // namespace

text *
KeyCounterName(text *queue, text *key)
{
	size_t queue_length = VARSIZE_ANY_EXHDR(queue);
	size_t key_length = VARSIZE_ANY_EXHDR(key);
	char digits[24];
	int digit_length = snprintf(digits, sizeof(digits), "%zu:", queue_length);
	size_t length = kKeyNamePrefix + static_cast<size_t>(digit_length) + queue_length + key_length;
	text *name = static_cast<text *>(palloc(VARHDRSZ + length));
	SET_VARSIZE(name, VARHDRSZ + length);
	char *out = VARDATA(name);
	memset(out, kPrefixByte, kKeyNamePrefix);
	out += kKeyNamePrefix;
	memcpy(out, digits, digit_length);
	out += digit_length;
	memcpy(out, VARDATA_ANY(queue), queue_length);
	out += queue_length;
	memcpy(out, VARDATA_ANY(key), key_length);
	return name;
}

bool
IsKeyCounterName(const char *name, size_t length)
{
	if (length <= kKeyNamePrefix)
		return false;
	for (size_t i = 0; i < kKeyNamePrefix; i++)
		if (name[i] != kPrefixByte)
			return false;
	return name[kKeyNamePrefix] >= '0' && name[kKeyNamePrefix] <= '9';
}

text *
QueueOfKeyCounterName(const char *name, size_t length)
{
	size_t start, queue_length;
	if (!SplitName(name, length, &start, &queue_length))
		return NULL;
	return MakeText(name + start, queue_length);
}

text *
KeyOfKeyCounterName(const char *name, size_t length)
{
	size_t start, queue_length;
	if (!SplitName(name, length, &start, &queue_length))
		return NULL;
	return MakeText(name + start + queue_length, length - start - queue_length);
}

text *
KeyOfLane(int64 lane_id)
{
	Oid incarnation = ExtensionIncarnation();
	KeyCacheEntry &entry = key_cache[static_cast<uint64>(lane_id) % kKeyCacheSize];
	if (entry.incarnation == incarnation && entry.lane_id == lane_id)
		return entry.keyed ? MakeText(entry.key, entry.length) : NULL;
	Datum values[1] = {Int64GetDatum(lane_id)};
	Execute(Stmt::kKeyOfLane, 0, values, NULL, 1);
	if (SPI_processed == 0)
		return NULL;  // gone (not cached: it never comes back)
	bool isnull;
	Datum key = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	entry.incarnation = incarnation;
	entry.lane_id = lane_id;
	entry.keyed = !isnull;
	entry.length = 0;
	if (isnull)
		return NULL;
	text *copy = DatumGetTextPCopy(key);
	entry.length = static_cast<int>(Min(VARSIZE_ANY_EXHDR(copy), sizeof(entry.key)));
	memcpy(entry.key, VARDATA_ANY(copy), entry.length);
	return copy;
}

void
CountKeyedAttemptsStarted(text *queue, int64 lane_id, bool keyed, int64 n)
{
	if (!keyed || n <= 0 || !HasKeyLimits(SettingsOf(queue)))
		return;
	text *key = KeyOfLane(lane_id);
	if (key == NULL)
		return;
	CountMove(KeyCounterName(queue, key), kNoState, static_cast<int>(core::JobState::kRunning), n);
}

void
CountKeyedAttemptsEnded(text *queue, const QueueSettings &settings, int64 lane_id, int64 n)
{
	if (n <= 0 || !HasKeyLimits(settings))
		return;
	text *key = KeyOfLane(lane_id);
	if (key == NULL)
		return;
	CountMove(KeyCounterName(queue, key), static_cast<int>(core::JobState::kRunning), kNoState, n);
	// After the counters applied the end (callbacks.cpp): the key's lanes
	// held at its limit come back, and the queue's waiting claims look again.
	UnblockKeyLanesAtEnd(queue, key);
	WakeQueueAtCommit(queue);
}

}  // namespace awa::pg
