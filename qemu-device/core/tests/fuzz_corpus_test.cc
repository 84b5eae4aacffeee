// The fuzz harness's corpus (qemu-device/fuzz/corpus/core) replayed under
// the tests' ASan/UBSan: every input that once found a bug, and the seeds,
// run on every `make core-test`, without clang or libFuzzer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "core_fuzz.h"

namespace {

TEST(FuzzCorpus, EveryInputRunsToTheEnd) {
    const std::filesystem::path dir = PEACH2_FUZZ_CORPUS;
    ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
    unsigned inputs = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        std::ifstream f(entry.path(), std::ios::binary);
        const std::vector<uint8_t> data{std::istreambuf_iterator<char>(f), {}};
        SCOPED_TRACE(entry.path().string());
        peach2::fuzz::run_core_input(data.data(), data.size());  // aborts on a broken invariant
        ++inputs;
    }
    EXPECT_GE(inputs, 20u) << "the corpus lost its seeds";
}

}  // namespace
