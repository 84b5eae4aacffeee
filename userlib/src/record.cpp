// SPDX-License-Identifier: MIT
#include "record.hpp"

#include "hash.hpp"

#include <array>
#include <cstddef>
#include <cstring>

namespace tca {
namespace {

constexpr std::uint64_t kRecordSeed = 0x7463612d6d627831ull; // "tca-mbx1"
constexpr std::size_t kCoveredWords = offsetof(MailboxRecord, checksum) / 8;
static_assert(offsetof(MailboxRecord, checksum) + 8 == sizeof(MailboxRecord));

} // namespace

std::uint64_t record_checksum(const MailboxRecord &r) noexcept
{
	std::array<std::uint64_t, kCoveredWords> w{};
	std::memcpy(w.data(), &r, sizeof w);
	return hash_words(w, kRecordSeed);
}

void seal_record(MailboxRecord &r) noexcept
{
	r.magic = kRecordMagic;
	r.version = kRecordVersion;
	r.length = sizeof(MailboxRecord);
	r.checksum = record_checksum(r);
}

bool record_valid(const MailboxRecord &r) noexcept
{
	return r.magic == kRecordMagic && r.version == kRecordVersion &&
	       r.length == sizeof(MailboxRecord) && r.checksum == record_checksum(r);
}

} // namespace tca
