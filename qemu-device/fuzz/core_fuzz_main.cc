// libFuzzer's entry point for the device core's harness (core_fuzz.cc).
#include <cstddef>
#include <cstdint>

#include "core_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    peach2::fuzz::run_core_input(data, size);
    return 0;
}
