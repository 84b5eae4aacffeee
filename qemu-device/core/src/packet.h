// Link packets: encoding, validation and a stream parser (peach2_hw.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "peach2/peach2_hw.h"

namespace peach2 {

constexpr size_t kHeaderSize = sizeof(peach2_pkt_hdr);

// Serialise header + payload into `out` (little endian on the wire).
void encode_packet(const peach2_pkt_hdr& hdr, std::span<const uint8_t> payload,
                   std::vector<uint8_t>& out);
peach2_pkt_hdr decode_header(std::span<const uint8_t, kHeaderSize> bytes);

// Why a header is unacceptable, or nullopt if it is well formed.
std::optional<std::string> header_problem(const peach2_pkt_hdr& hdr);

std::vector<uint8_t> encode_hello(const peach2_hello& hello);
std::optional<peach2_hello> decode_hello(std::span<const uint8_t> payload);

// Splits a byte stream into packets. Once it has seen a bad header it stays
// failed until reset(): a stream that lost framing cannot be trusted again.
class PacketParser {
public:
    // The sink returns false to reject a packet it cannot accept (e.g. a
    // sequence gap): the stream is then failed like on a bad header.
    using Sink = std::function<bool(const peach2_pkt_hdr&, std::span<const uint8_t>)>;

    // Feed bytes; calls sink for every complete packet. Returns false (and
    // fills error()) when the stream is corrupt.
    bool feed(std::span<const uint8_t> bytes, const Sink& sink);
    void fail(std::string why);
    void reset();
    const std::string& error() const { return error_; }

private:
    std::vector<uint8_t> pending_;
    std::string error_;
    bool failed_ = false;
};

}  // namespace peach2
