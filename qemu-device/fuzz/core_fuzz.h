// The device core's fuzz harness (docs/fuzzing.md): one fuzz input is a
// program of operations on two PEACH2 cards cabled together, each with a
// small host memory, and a rogue peer on a third cable of each card.
// run_core_input() is what libFuzzer calls (core_fuzz_main.cc) and what the
// core's unit tests replay the repository's corpus through
// (tests/fuzz_corpus_test.cc). It returns normally for any input; a bug is
// an ASan/UBSan report or a failed check (abort), never a return value.
#pragma once

#include <cstddef>
#include <cstdint>

namespace peach2::fuzz {

void run_core_input(const uint8_t* data, size_t size);

}  // namespace peach2::fuzz
