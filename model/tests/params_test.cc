// Parameter files: the built-in one, and the errors a hand-edited one gets.
#include "params.h"

#include <gtest/gtest.h>

namespace peach2::model {
namespace {

std::string parse_error(const std::string& text, const std::string& profile = "") {
    std::string err;
    return parse_params(text, "p.params", profile, &err) ? "" : err;
}

TEST(Params, BuiltInFileHasBothProfilesAndDefaultsTo2015) {
    EXPECT_EQ(profiles(builtin_params()), (std::vector<std::string>{"2013", "2015"}));
    std::string err;
    auto def = parse_params(builtin_params(), "built-in", "", &err);
    ASSERT_TRUE(def) << err;
    EXPECT_EQ(def->profile, "2015");
    auto old = parse_params(builtin_params(), "built-in", "2013", &err);
    ASSERT_TRUE(old) << err;
    // The profiles differ in the DMA start-up only.
    EXPECT_NE(old->dma_start_chain_ns, def->dma_start_chain_ns);
    EXPECT_EQ(old->link_raw_gbps, def->link_raw_gbps);
    // 004's theoretical peak: 4 GB/s x 256 / 280.
    EXPECT_NEAR(def->link_payload_gbps(), 3.657, 0.001);
    EXPECT_NE(describe(*def).find("dma.engine_gbps = 3.5"), std::string::npos);
}

TEST(Params, MistakesNameTheLineAndTheFix) {
    const std::string base = builtin_params();
    EXPECT_NE(parse_error(base + "\nlink.raw_gpbs = 4\n").find("unknown parameter `link.raw_gpbs`"),
              std::string::npos);
    EXPECT_NE(
        parse_error("link.raw_gbps = fast\n").find("p.params:1: `link.raw_gbps` needs a number"),
        std::string::npos);
    EXPECT_NE(parse_error("link.raw_gbps = -1\n").find("outside"), std::string::npos);
    EXPECT_NE(
        parse_error("link.raw_gbps = 4\nlink.raw_gbps = 5\n").find("set twice (first on line 1)"),
        std::string::npos);
    EXPECT_NE(parse_error("[profile x\n").find("expected `[profile NAME]`"), std::string::npos);
    EXPECT_NE(parse_error("just words\n").find("expected `key = value`"), std::string::npos);
    EXPECT_NE(parse_error(base, "2020").find("no profile `2020` (profiles: 2013, 2015)"),
              std::string::npos);
    // A value a profile needs but nobody gives.
    EXPECT_NE(parse_error("default_profile = a\n[profile a]\nlink.raw_gbps = 4\n")
                  .find("has no value in profile `a`"),
              std::string::npos);
    EXPECT_NE(parse_error("[profile a]\ndefault_profile = a\n").find("before the first profile"),
              std::string::npos);
}

}  // namespace
}  // namespace peach2::model
