// The model's timing parameters: read from a parameter file (model/peach2.params
// is compiled in), one profile chosen.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace peach2::model {

struct Params {
    std::string profile;
    double link_raw_gbps = 0;
    double link_max_payload_bytes = 0;
    double link_tlp_overhead_bytes = 0;
    double link_flight_ns = 0;
    double card_hop_ns = 0;
    double host_mmio_write_ns = 0;
    double host_mem_write_ns = 0;
    double host_poll_ns = 0;
    double host_pio_gbps = 0;
    double host_pio_tlp_bytes = 0;
    double host_read_rtt_ns = 0;
    double host_memory_gbps = 0;
    double dma_engine_gbps = 0;
    double dma_window_bytes = 0;
    double dma_prefetch_descs = 0;
    double dma_fetch_card_ns = 0;
    double dma_fetch_host_ns = 0;
    double dma_done_notice_ns = 0;
    double dma_start_reg_ns = 0;
    double dma_start_chain_ns = 0;
    double irq_latency_ns = 0;
    double rp_service_ns = 0;
    double rp_atomic_ns = 0;

    // Link bandwidth for data after TLP overhead (3.66 GB/s for the papers' setting).
    double link_payload_gbps() const {
        return link_raw_gbps * link_max_payload_bytes /
               (link_max_payload_bytes + link_tlp_overhead_bytes);
    }
};

// The parameter file compiled into the tool (model/peach2.params).
const std::string& builtin_params();

// Parses parameter text (`name` is used in messages) and returns the values of
// `profile` ("" = the file's default_profile). Unknown keys, missing values,
// numbers out of range and unknown profiles are errors.
std::optional<Params> parse_params(const std::string& text, const std::string& name,
                                   const std::string& profile, std::string* err);
// The profiles a parameter text defines, in file order.
std::vector<std::string> profiles(const std::string& text);
// Reads a parameter file; on error nullopt and *err.
std::optional<std::string> read_params_file(const std::string& path, std::string* err);
// "name = value" lines of every parameter (for reports).
std::string describe(const Params& p);

}  // namespace peach2::model
