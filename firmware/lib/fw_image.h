// PEACH2 firmware images: encode, parse and validate (peach2_hw.h, "Firmware
// image"). Shared by the card model, which is the authority that accepts or
// refuses an image, and by the tools that build and print images.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "peach2/peach2_hw.h"

namespace peach2::fw {

struct Image {
    uint32_t node_count = 0;
    uint32_t image_version = 0;
    std::string topology;  // at most 31 characters
    std::vector<peach2_fw_entry> entries;
};

struct ParseResult {
    peach2_fw_status status = PEACH2_FW_OK;
    std::string why;  // for the log, when status != OK
    Image image;
};

uint32_t crc32_ieee(std::span<const uint8_t> bytes);

// Serialise (little endian) with a correct CRC.
std::vector<uint8_t> encode(const Image& image);

// Check everything that can be checked without knowing the card.
ParseResult parse(std::span<const uint8_t> bytes);

// Parse, then check the image fits the card `node_id` of `node_count`.
ParseResult parse_for_node(std::span<const uint8_t> bytes, uint32_t node_id, uint32_t node_count);

}  // namespace peach2::fw
