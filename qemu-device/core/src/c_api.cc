// The C API of peach2_core.h over peach2::Card. No exception leaves here.
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <type_traits>

#include "card.h"

struct peach2_core {
    peach2::Card card;
    peach2_core_host host;
    peach2_core(const peach2_core_config& c, const peach2_core_host& h) : card(c, h), host(h) {}
};

namespace {

void log_exception(peach2_core* core, const char* what) {
    if (core && core->host.log)
        core->host.log(core->host.opaque, PEACH2_LOG_GUEST_ERROR, what);
}

// Run f; an exception (only std::bad_alloc is expected) is logged and the
// access is dropped rather than crashing the emulator.
template <typename F, typename R>
R guarded(peach2_core* core, F&& f, R fallback) {
    try {
        return f();
    } catch (const std::exception& e) {
        log_exception(core, e.what());
    } catch (...) {
        log_exception(core, "unknown exception");
    }
    return fallback;
}

template <typename F>
auto guarded(peach2_core* core, F&& f) {
    using R = std::invoke_result_t<F>;
    if constexpr (std::is_void_v<R>) {
        try {
            f();
        } catch (const std::exception& e) {
            log_exception(core, e.what());
        } catch (...) {
            log_exception(core, "unknown exception");
        }
    } else {
        return guarded(core, std::forward<F>(f), R{});
    }
}

}  // namespace

extern "C" {

peach2_core* peach2_core_new(const peach2_core_config* cfg, const peach2_core_host* host, char* err,
                             size_t errlen) {
    const auto fail = [&](const char* msg) -> peach2_core* {
        if (err && errlen)
            std::snprintf(err, errlen, "%s", msg);
        return nullptr;
    };
    if (!cfg || !host || !host->dma_write)
        return fail("peach2 core: missing config or host callbacks");
    if (cfg->node_count < 1 || cfg->node_count > PEACH2_MAX_NODES)
        return fail("nodes must be between 1 and 16");
    if (cfg->node_id >= cfg->node_count)
        return fail("node-id must be smaller than nodes");
    try {
        return std::make_unique<peach2_core>(*cfg, *host).release();
    } catch (...) {
        return fail("peach2 core: out of memory");
    }
}

void peach2_core_free(peach2_core* core) { std::unique_ptr<peach2_core> owned(core); }

void peach2_core_reset(peach2_core* core) {
    guarded(core, [&] { core->card.reset(); });
}

uint64_t peach2_core_reg_read(peach2_core* core, uint64_t off, unsigned size) {
    return guarded(core, [&] { return core->card.reg_read(off, size); });
}
void peach2_core_reg_write(peach2_core* core, uint64_t off, uint64_t val, unsigned size) {
    guarded(core, [&] { core->card.reg_write(off, val, size); });
}
uint64_t peach2_core_cardmem_read(peach2_core* core, uint64_t off, unsigned size) {
    return guarded(core, [&] { return core->card.cardmem_read(off, size); });
}
void peach2_core_cardmem_write(peach2_core* core, uint64_t off, uint64_t val, unsigned size) {
    guarded(core, [&] { core->card.cardmem_write(off, val, size); });
}
uint64_t peach2_core_window_read(peach2_core* core, uint64_t off, unsigned size) {
    return guarded(
        core, [&] { return core->card.window_read(off, size); }, ~0ull);
}
unsigned peach2_core_window_write(peach2_core* core, uint64_t off, uint64_t val, unsigned size) {
    return guarded(core, [&] { return core->card.window_write(off, val, size); });
}
bool peach2_core_window_append(peach2_core* core, uint64_t off, uint64_t val, unsigned size) {
    return guarded(core, [&] { return core->card.window_append(off, val, size); });
}
void peach2_core_close_write(peach2_core* core) {
    guarded(core, [&] { core->card.close_write(); });
}
bool peach2_core_write_open(peach2_core* core) {
    return guarded(core, [&] { return core->card.write_open(); });
}
void peach2_core_service(peach2_core* core) {
    guarded(core, [&] { core->card.service(); });
}
void peach2_core_service_bounded(peach2_core* core, uint64_t max_bytes) {
    guarded(core, [&] { core->card.service(max_bytes); });
}
unsigned peach2_core_tx_pending(peach2_core* core) {
    return guarded(core, [&] { return core->card.tx_pending(); });
}
void peach2_core_link_attach(peach2_core* core, unsigned port) {
    guarded(core, [&] { core->card.links().attach(port); });
}
void peach2_core_link_connected(peach2_core* core, unsigned port, bool connected) {
    guarded(core, [&] { core->card.links().connected(port, connected); });
}
void peach2_core_link_shared_memory(peach2_core* core, unsigned port, bool shm) {
    guarded(core, [&] { core->card.links().shared_memory(port, shm); });
}
void peach2_core_link_direct(peach2_core* core, unsigned port, bool direct) {
    guarded(core, [&] { core->card.links().direct(port, direct); });
}
void peach2_core_link_count_direct(peach2_core* core, unsigned port, uint64_t pkts,
                                   uint64_t bytes) {
    guarded(core, [&] { core->card.count_direct(port, pkts, bytes); });
}
uint64_t peach2_core_inbound_generation(peach2_core* core) {
    return guarded(core, [&] { return core->card.inbound().generation(); });
}
bool peach2_core_inbound_enabled(peach2_core* core) {
    return guarded(core, [&] { return core->card.inbound().enabled(); });
}
size_t peach2_core_inbound_ranges(peach2_core* core, uint64_t (*ranges)[2], size_t max) {
    return guarded(core, [&] { return core->card.inbound().ranges(ranges, max); });
}
bool peach2_core_link_receive(peach2_core* core, unsigned port, const void* buf, size_t len) {
    return guarded(
        core,
        [&] {
            return core->card.links().receive(
                port, std::span<const uint8_t>(static_cast<const uint8_t*>(buf), len));
        },
        false);
}
size_t peach2_core_link_tx_peek(peach2_core* core, unsigned port, const void** buf) {
    return guarded(core, [&]() -> size_t {
        const auto s = core->card.links().tx_peek(port);
        *buf = s.data();
        return s.size();
    });
}
void peach2_core_link_tx_consume(peach2_core* core, unsigned port, size_t n) {
    guarded(core, [&] { core->card.links().tx_consume(port, n); });
}
void peach2_core_link_fault_drop(peach2_core* core, unsigned port, uint32_t n) {
    guarded(core, [&] { core->card.links().fault_drop(port, n); });
}
void peach2_core_link_fault_state(peach2_core* core, unsigned port, uint32_t* drop_left,
                                  uint64_t* dropped) {
    *drop_left = 0;
    *dropped = 0;
    guarded(core, [&] { core->card.links().fault_state(port, *drop_left, *dropped); });
}

bool peach2_core_trace_open(peach2_core* core, const char* path, uint32_t ring_records, char* err,
                            size_t errlen) {
    std::string why = "peach2 core: out of memory";
    const bool ok =
        guarded(core, [&] { return core->card.trace_open(path ? path : "", ring_records, &why); });
    if (!ok && err && errlen)
        std::snprintf(err, errlen, "%s", why.c_str());
    return ok;
}
void peach2_core_trace_close(peach2_core* core) {
    guarded(core, [&] { core->card.trace().close(); });
}
void peach2_core_trace_stats(peach2_core* core, uint64_t* events, uint64_t* dropped) {
    *events = core->card.trace().events();
    *dropped = core->card.trace().dropped();
}

}  // extern "C"
