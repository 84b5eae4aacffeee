// SPDX-License-Identifier: MIT
// tca_fuzz: random system calls on /dev/peach2-N, seeded and reproducible
// (issue 14). Every ioctl of the uapi (ABI 4 included: PIN, PUBLISH,
// LOOKUP through RP_SUBMIT), mmap of every kind of object with any
// protection, munmap of whole and partial mappings, stores into mappings,
// open, close, fork (children that run ops, exit or are killed mid-way),
// with well-formed arguments, arguments built from live objects and
// garbage. Runs as the user who starts it, or drops to --uid.
//
// What it checks itself: no system call hangs (a watchdog ends the run with
// exit 3 and names the op), no child dies of a signal it was not sent (exit
// 4). What the kernel did (oops, WARN, leaks) is for the caller to check:
// tests/test_guest_fuzz.py reads dmesg and the driver's sysfs counters.
// The same --seed gives the same sequence of calls (their results may
// differ with timing: DMA completions, the peer's state, unbinds).
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../common/cli.hpp"

namespace {

constexpr const char* kName = "tca_fuzz";
constexpr unsigned kWatchdogS = 30;  // one system call (DMA waits end within the driver's 10 s)
constexpr std::uint64_t kPage = 4096;

struct FuzzOptions {
    std::string dev = "/dev/peach2-0";
    std::uint64_t seed = 1;
    std::uint64_t seconds = 10;
    std::uint64_t ops = 0;  // 0: until --seconds
    std::uint64_t budget_mib = 16;
    int uid = -1;
    int forks = 1;  // 0: no fork op
};

struct Buf {
    std::uint32_t handle;
    std::uint64_t size, mmap_offset;
    bool pinned;
};

struct File {
    int fd;
    std::vector<Buf> bufs;
    std::vector<std::uint32_t> chains, exports;
    std::vector<std::uint64_t> tickets;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> names;  // kind, name
};

struct Map {
    unsigned char* addr;
    std::size_t len;
    bool writable;
};

// One op's outcomes: successes and errnos.
struct Tally {
    std::uint64_t ok = 0;
    std::map<int, std::uint64_t> err;
};

class Fuzzer {
public:
    Fuzzer(const FuzzOptions& o, std::uint64_t seed) : o_(o), rng_(seed) {}
    int run(bool child, std::uint64_t max_ops, double seconds);
    bool probe();
    void report() const;
    std::uint64_t ops() const { return ops_; }

private:
    using Op = void (Fuzzer::*)();
    std::uint64_t r(std::uint64_t n) { return n ? rng_() % n : 0; }
    bool coin(unsigned percent = 50) { return r(100) < percent; }
    std::uint64_t garbage();
    int result(const char* op, long rc);
    File* any_file() { return files_.empty() ? nullptr : &files_[r(files_.size())]; }
    Buf* any_buf(File& f) { return f.bufs.empty() ? nullptr : &f.bufs[r(f.bufs.size())]; }
    std::uint32_t handle_of(File& f);
    // An ioctl under the watchdog, tallied under its name: 0 or its errno.
    int call(const char* name, int fd, unsigned long req, void* arg);
    // An id this file holds (mostly) or garbage; forget() drops it once the
    // call that ends it succeeded.
    template <typename T>
    struct Pick {
        std::vector<T>* list;
        std::size_t i;
        bool known;
        T value;
        void forget() {
            if (known)
                list->erase(list->begin() + static_cast<long>(i));
        }
    };
    template <typename T>
    Pick<T> pick(std::vector<T>& v, T garbage_value) {
        const bool known = !v.empty() && coin(85);
        const std::size_t i = known ? r(v.size()) : 0;
        return Pick<T>{&v, i, known, known ? v[i] : garbage_value};
    }
    std::uint32_t garbage32() { return static_cast<std::uint32_t>(garbage()); }
    std::uint64_t valid_size();
    peach2_xfer xfer(File& f);
    std::vector<peach2_xfer> xfers(File& f, std::uint32_t* count);

    void op_open();
    void op_close();
    void op_info();
    void op_alloc();
    void op_free();
    void op_chunks();
    void op_chain_create();
    void op_chain_destroy();
    void op_dma_start();
    void op_dma_wait();
    void op_export();
    void op_unexport();
    void op_rp_submit();
    void op_pin();
    void op_publish();
    void op_unpublish();
    void op_bad_ioctl();
    void op_mmap();
    void op_munmap();
    void op_touch();
    void op_fork();
    void op_pin_area();

    const FuzzOptions& o_;
    std::mt19937_64 rng_;
    std::vector<File> files_;
    std::vector<Map> maps_;
    std::vector<Map> pin_areas_;  // anonymous memory to PIN (and to unmap while pinned)
    peach2_info info_{};
    std::uint64_t allocated_ = 0;  // bytes ALLOC'd and PIN'd by this process, roughly
    std::uint64_t ops_ = 0, forks_ = 0;
    bool child_ = false;
    std::map<std::string, Tally> tally_;
};

volatile const char* g_op = "start";
sigjmp_buf g_touch_jmp;
volatile sig_atomic_t g_touching = 0;

void on_alarm(int) {
    char msg[160];
    int n = std::snprintf(msg, sizeof(msg), "%s: FAIL: %s did not return within %u s (pid %d)\n",
                          kName, const_cast<const char*>(g_op), kWatchdogS, getpid());
    if (write(2, msg, n) < 0) {
    }
    _exit(3);
}

void on_fault(int sig) {
    if (g_touching)
        siglongjmp(g_touch_jmp, sig);
    signal(sig, SIG_DFL);
    raise(sig);
}

// Runs one system call under the watchdog.
template <typename F>
long guarded(const char* op, F f) {
    g_op = op;
    alarm(kWatchdogS);
    long rc = f();
    int e = errno;
    alarm(0);
    errno = e;
    return rc;
}

int Fuzzer::call(const char* name, int fd, unsigned long req, void* arg) {
    return result(name, guarded(name, [&] { return ioctl(fd, req, arg); }));
}

std::uint64_t Fuzzer::garbage() {
    static constexpr std::uint64_t values[] = {
        0, 1, 3, 4, 8, 4095, 4096, 4097, 0x7fffffff, 0x80000000, 0xffffffff, 1ull << 32,
        1ull << 40, 1ull << 41, (1ull << 41) + 4096, 1ull << 63, ~0ull, ~0ull - 4095,
        PEACH2_WINDOW_SIZE, PEACH2_SLICE_SIZE, PEACH2_CARD_OFF};
    switch (r(3)) {
    case 0:
        return values[r(std::size(values))];
    case 1:
        return rng_();
    default:
        return r(1u << 20);
    }
}

int Fuzzer::result(const char* op, long rc) {
    Tally& t = tally_[op];
    if (rc >= 0) {
        ++t.ok;
        return 0;
    }
    ++t.err[errno];
    return errno;
}

std::uint32_t Fuzzer::handle_of(File& f) {
    if (Buf* b = any_buf(f); b && coin(85))
        return b->handle;
    return static_cast<std::uint32_t>(coin() ? r(64) : garbage());
}

std::uint64_t Fuzzer::valid_size() {
    const std::uint64_t budget = o_.budget_mib << 20;
    const std::uint64_t room = budget > allocated_ ? budget - allocated_ : 0;
    std::uint64_t s = coin(60) ? 1 + r(4 * kPage) : 1 + r(std::min<std::uint64_t>(room, 4u << 20) + 1);
    return std::min(s, std::max<std::uint64_t>(room, 1));
}

// A transfer: mostly inside this file's buffers, sometimes to another node,
// sometimes anything.
peach2_xfer Fuzzer::xfer(File& f) {
    peach2_xfer x{};
    Buf* s = any_buf(f);
    Buf* d = any_buf(f);
    const std::uint64_t len = 4 * (1 + r(coin(80) ? 256 : 65536));
    x.src_handle = s ? s->handle : 0;
    x.src_offset = s && s->size > len ? 4 * r((s->size - len) / 4) : 0;
    x.len = len;
    if (coin(70) && d) {
        x.dst_handle = d->handle;
        x.dst = d->size > len ? 4 * r((d->size - len) / 4) : 0;
    } else {
        x.dst = PEACH2_NODE_BASE(r(info_.node_count + 1)) + 4 * r(1u << 20);
    }
    if (coin(10)) {
        x.flags = PEACH2_XFER_IMM;
        x.src_handle = 0;
        x.src_offset = 0;
        x.len = coin() ? 4 : 8;
        x.imm = rng_();
    }
    if (coin(10)) {
        x.burst = static_cast<std::uint16_t>(4 * (1 + r(64)));
        x.gap = static_cast<std::uint16_t>(4 * r(64));
        x.flags |= coin() ? PEACH2_XFER_STRIDE_SRC : PEACH2_XFER_STRIDE_DST;
    }
    if (coin(15)) {  // one field of garbage
        switch (r(7)) {
        case 0: x.src_handle = static_cast<std::uint32_t>(garbage()); break;
        case 1: x.dst_handle = static_cast<std::uint32_t>(garbage()); break;
        case 2: x.src_offset = garbage(); break;
        case 3: x.dst = garbage(); break;
        case 4: x.len = garbage(); break;
        case 5: x.flags = static_cast<std::uint32_t>(garbage()); break;
        default: x.burst = static_cast<std::uint16_t>(garbage()); x.gap = static_cast<std::uint16_t>(garbage()); break;
        }
    }
    return x;
}

std::vector<peach2_xfer> Fuzzer::xfers(File& f, std::uint32_t* count) {
    std::vector<peach2_xfer> v(1 + r(coin(90) ? 4 : 64));
    for (auto& x : v)
        x = xfer(f);
    *count = static_cast<std::uint32_t>(v.size());
    if (coin(5))
        *count = static_cast<std::uint32_t>(garbage());  // more than there are: EFAULT/EINVAL
    return v;
}

// ---- the ops ---------------------------------------------------------------

void Fuzzer::op_open() {
    if (files_.size() >= 6)
        return;
    const int flags = coin(90) ? O_RDWR : (coin() ? O_RDONLY : O_WRONLY);
    int fd = static_cast<int>(guarded("open", [&] { return open(o_.dev.c_str(), flags | O_CLOEXEC); }));
    if (result("open", fd) == 0)
        files_.push_back(File{fd, {}, {}, {}, {}, {}});
}

void Fuzzer::op_close() {
    if (files_.empty())
        return;
    const std::size_t i = r(files_.size());
    result("close", guarded("close", [&] { return close(files_[i].fd); }));
    // (Its buffers stay charged while mapped: allocated_ keeps them.)
    files_.erase(files_.begin() + static_cast<long>(i));
}

void Fuzzer::op_info() {
    File* f = any_file();
    if (!f)
        return;
    peach2_info in{};
    void* p = coin(90) ? static_cast<void*>(&in) : reinterpret_cast<void*>(garbage());
    call("INFO", f->fd, PEACH2_IOC_INFO, p);
}

void Fuzzer::op_alloc() {
    File* f = any_file();
    if (!f)
        return;
    peach2_alloc a{};
    a.size = coin(85) ? valid_size() : garbage();
    if (coin(5))
        a.flags = static_cast<std::uint32_t>(garbage());
    if (coin(3))
        a.reserved[r(2)] = garbage();
    if (call("ALLOC", f->fd, PEACH2_IOC_ALLOC, &a) == 0) {
        f->bufs.push_back(Buf{a.handle, a.size, a.mmap_offset, false});
        allocated_ += a.size;
    }
}

void Fuzzer::op_free() {
    File* f = any_file();
    if (!f)
        return;
    peach2_free fr{handle_of(*f), coin(95) ? 0u : static_cast<std::uint32_t>(garbage())};
    if (call("FREE", f->fd, PEACH2_IOC_FREE, &fr) == 0) {
        auto it = std::find_if(f->bufs.begin(), f->bufs.end(),
                               [&](const Buf& b) { return b.handle == fr.handle; });
        if (it != f->bufs.end()) {
            allocated_ -= std::min(allocated_, it->size);
            f->bufs.erase(it);
        }
    }
}

void Fuzzer::op_chunks() {
    File* f = any_file();
    if (!f)
        return;
    // Room for every chunk a buffer of ours can have (the kernel writes
    // min(count, nr_chunks - first) entries, whatever count says).
    static std::vector<peach2_chunk> out(4096);
    peach2_chunks c{};
    c.handle = handle_of(*f);
    c.first = static_cast<std::uint32_t>(coin(80) ? r(3) : garbage());
    c.count = static_cast<std::uint32_t>(coin(80) ? r(9) : garbage());
    c.chunks = coin(85) ? reinterpret_cast<std::uint64_t>(out.data()) : garbage();
    call("CHUNKS", f->fd, PEACH2_IOC_CHUNKS, &c);
}

void Fuzzer::op_chain_create() {
    File* f = any_file();
    if (!f || f->chains.size() >= 16)
        return;
    peach2_chain_create c{};
    auto v = xfers(*f, &c.count);
    c.xfers = coin(95) ? reinterpret_cast<std::uint64_t>(v.data()) : garbage();
    c.flags = coin(85) ? static_cast<std::uint32_t>(r(4)) & (PEACH2_DMA_HOST_DESC | PEACH2_DMA_REG_MODE)
                       : static_cast<std::uint32_t>(garbage());
    if (call("CHAIN_CREATE", f->fd, PEACH2_IOC_CHAIN_CREATE, &c) == 0)
        f->chains.push_back(c.chain);
}

void Fuzzer::op_chain_destroy() {
    File* f = any_file();
    if (!f)
        return;
    auto k = pick(f->chains, garbage32());
    peach2_chain_destroy d{k.value, 0};
    if (call("CHAIN_DESTROY", f->fd, PEACH2_IOC_CHAIN_DESTROY, &d) == 0)
        k.forget();
}

void Fuzzer::op_dma_start() {
    File* f = any_file();
    if (!f)
        return;
    peach2_dma_start s{};
    std::vector<peach2_xfer> v;
    if (!f->chains.empty() && coin(60)) {
        s.chain = f->chains[r(f->chains.size())];
    } else {
        v = xfers(*f, &s.count);
        s.xfers = coin(95) ? reinterpret_cast<std::uint64_t>(v.data()) : garbage();
    }
    s.channel = coin(70) ? PEACH2_DMA_ANY_CHANNEL : static_cast<std::uint32_t>(coin(80) ? r(5) : garbage());
    if (coin(40)) {
        s.flags = PEACH2_DMA_WAIT;
        s.timeout_ms = static_cast<std::uint32_t>(1 + r(200));
    }
    if (!s.chain && coin(20))
        s.flags |= PEACH2_DMA_HOST_DESC;
    if (coin(30))
        s.flags |= PEACH2_DMA_REAP;  // with WAIT too now and then: refused
    if (coin(5))
        s.flags = static_cast<std::uint32_t>(garbage());
    if (call("DMA_START", f->fd, PEACH2_IOC_DMA_START, &s) == 0 || (errno == ETIMEDOUT && s.ticket))
        if (!(s.flags & (PEACH2_DMA_WAIT | PEACH2_DMA_ENDED)) && f->tickets.size() < 64)
            f->tickets.push_back(s.ticket);
}

void Fuzzer::op_dma_wait() {
    File* f = any_file();
    if (!f)
        return;
    auto k = pick(f->tickets, garbage());
    peach2_dma_wait w{};
    w.ticket = k.value;
    w.timeout_ms = static_cast<std::uint32_t>(r(100));
    if (call("DMA_WAIT", f->fd, PEACH2_IOC_DMA_WAIT, &w) == 0)
        k.forget();
}

void Fuzzer::op_export() {
    File* f = any_file();
    if (!f || f->exports.size() >= 32)
        return;
    peach2_export e{};
    e.handle = handle_of(*f);
    Buf* b = any_buf(*f);
    e.flags = static_cast<std::uint32_t>(coin(90) ? 1 + r(3) : garbage());
    e.offset = b && coin(80) ? r(b->size) : garbage();
    e.len = b && coin(80) ? 1 + r(b->size) : garbage();
    if (call("EXPORT", f->fd, PEACH2_IOC_EXPORT, &e) == 0)
        f->exports.push_back(e.export_id);
}

void Fuzzer::op_unexport() {
    File* f = any_file();
    if (!f)
        return;
    auto k = pick(f->exports, garbage32());
    peach2_unexport u{k.value, 0};
    if (call("UNEXPORT", f->fd, PEACH2_IOC_UNEXPORT, &u) == 0)
        k.forget();
}

// READ, CAS, FAA and LOOKUP to any node (this one included), mostly with
// this file's buffers for the reply and the completion.
void Fuzzer::op_rp_submit() {
    File* f = any_file();
    if (!f)
        return;
    peach2_rp_submit s{};
    Buf* b = any_buf(*f);
    s.node = static_cast<std::uint32_t>(coin(90) ? r(info_.node_count) : garbage());
    s.op = static_cast<std::uint32_t>(coin(90) ? 1 + r(PEACH2_RP_OP_LOOKUP) : garbage());
    s.export_id = static_cast<std::uint32_t>(coin() ? r(8) : garbage());
    s.key = static_cast<std::uint32_t>(rng_());
    s.addr = coin(80) ? r(1u << 28) & ~7ull : garbage();
    s.len = static_cast<std::uint32_t>(s.op == PEACH2_RP_OP_READ || s.op == PEACH2_RP_OP_LOOKUP
                                           ? 16 * (1 + r(64)) : 8);
    if (coin(10))
        s.len = static_cast<std::uint32_t>(garbage());
    if (b && (s.op == PEACH2_RP_OP_READ || s.op == PEACH2_RP_OP_LOOKUP)) {
        s.reply_handle = b->handle;
        s.reply_offset = b->size > s.len ? 16 * r((b->size - s.len) / 16) : 0;
    }
    s.cpl_handle = b && coin(90) ? b->handle : static_cast<std::uint32_t>(garbage());
    s.cpl_offset = b && coin(90) ? 32 * r(b->size / 32) : garbage();
    if (s.op == PEACH2_RP_OP_CAS || s.op == PEACH2_RP_OP_FAA) {
        s.operand[0] = rng_();
        s.operand[1] = s.op == PEACH2_RP_OP_CAS ? rng_() : 0;
    }
    if (coin(5))
        s.flags = static_cast<std::uint32_t>(garbage());
    call("RP_SUBMIT", f->fd, PEACH2_IOC_RP_SUBMIT, &s);
}

void Fuzzer::op_pin_area() {
    if (pin_areas_.size() < 4 || coin(30)) {
        const std::size_t len = kPage * (1 + r(64));
        void* p = mmap(nullptr, len, coin(90) ? PROT_READ | PROT_WRITE : PROT_READ,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (result("mmap anon", p == MAP_FAILED ? -1 : 0) == 0)
            pin_areas_.push_back(Map{static_cast<unsigned char*>(p), len, true});
        return;
    }
    // Unmap one while the card may still hold its pages pinned.
    const std::size_t i = r(pin_areas_.size());
    result("munmap pinned", munmap(pin_areas_[i].addr, pin_areas_[i].len));
    pin_areas_.erase(pin_areas_.begin() + static_cast<long>(i));
}

void Fuzzer::op_pin() {
    File* f = any_file();
    if (!f)
        return;
    peach2_pin p{};
    if (!pin_areas_.empty() && coin(80)) {
        const Map& m = pin_areas_[r(pin_areas_.size())];
        const std::uint64_t off = r(m.len);
        p.addr = reinterpret_cast<std::uint64_t>(m.addr) + off;
        p.len = 1 + r(m.len - off + (coin(10) ? kPage : 0));
    } else if (!maps_.empty() && coin(30)) {  // a mapping of the card itself
        const Map& m = maps_[r(maps_.size())];
        p.addr = reinterpret_cast<std::uint64_t>(m.addr);
        p.len = 1 + r(m.len);
    } else {
        p.addr = garbage();
        p.len = coin() ? 1 + r(1u << 16) : garbage();
    }
    if (p.len > (o_.budget_mib << 20) && coin(50))
        p.len = kPage;
    if (coin(3))
        p.flags = static_cast<std::uint32_t>(garbage());
    if (call("PIN", f->fd, PEACH2_IOC_PIN, &p) == 0) {
        f->bufs.push_back(Buf{p.handle, p.size, 0, true});
        allocated_ += p.size;
    }
}

void Fuzzer::op_publish() {
    File* f = any_file();
    if (!f || f->names.size() >= 32)
        return;
    peach2_publish p{};
    Buf* b = any_buf(*f);
    p.handle = handle_of(*f);
    p.kind = static_cast<std::uint32_t>(coin(90) ? 1 + r(2) : garbage());
    p.offset = b && coin(85) ? r(b->size) : garbage();
    p.len = b && coin(85) ? 1 + r(b->size - std::min<std::uint64_t>(b->size, p.offset)) : garbage();
    p.flags = static_cast<std::uint32_t>(coin(90) ? r(PEACH2_NAME_FLAGS_ALL + 1) : garbage());
    p.group = static_cast<std::uint32_t>(rng_());
    for (auto& c : p.info)
        c = static_cast<std::uint8_t>(rng_());
    if (call("PUBLISH", f->fd, PEACH2_IOC_PUBLISH, &p) == 0)
        f->names.emplace_back(p.kind, p.name);
}

void Fuzzer::op_unpublish() {
    File* f = any_file();
    if (!f)
        return;
    auto k = pick(f->names, std::pair(garbage32(), garbage32()));
    peach2_unpublish u{k.value.first, k.value.second};
    if (call("UNPUBLISH", f->fd, PEACH2_IOC_UNPUBLISH, &u) == 0)
        k.forget();
}

// Numbers the driver does not know, known numbers with another size or
// direction, and other drivers' ioctls.
void Fuzzer::op_bad_ioctl() {
    File* f = any_file();
    if (!f)
        return;
    std::array<unsigned char, 512> arg{};
    for (auto& c : arg)
        c = static_cast<unsigned char>(rng_());
    unsigned long cmd;
    switch (r(3)) {
    case 0: cmd = _IOC(r(4), PEACH2_IOC_MAGIC, r(0x40), r(512)); break;
    case 1: cmd = static_cast<unsigned long>(rng_() & 0xffffffff); break;
    default: cmd = TCGETS; break;
    }
    void* p = coin(80) ? static_cast<void*>(arg.data()) : reinterpret_cast<void*>(garbage());
    call("bad ioctl", f->fd, cmd, p);
}

void Fuzzer::op_mmap() {
    File* f = any_file();
    if (!f || maps_.size() >= 64)
        return;
    std::uint64_t off = 0, len = kPage * (1 + r(16));
    int prot = PROT_READ | PROT_WRITE;
    const char* what;
    switch (r(5)) {
    case 0:
    case 1: {
        what = "mmap buffer";
        Buf* b = any_buf(*f);
        if (!b)
            return;
        off = b->mmap_offset + (coin(80) ? 0 : kPage * r(b->size / kPage + 2));
        len = coin(80) ? (b->size + kPage - 1) & ~(kPage - 1) : kPage * (1 + r(8));
        break;
    }
    case 2:
        what = "mmap window";
        off = coin(80) ? PEACH2_NODE_BASE(r(info_.node_count + 1)) + kPage * r(1024) : garbage();
        prot = coin(80) ? PROT_WRITE : PROT_READ | PROT_WRITE;
        break;
    case 3:
        what = "mmap cardmem";
        off = PEACH2_MMAP_CARDMEM + (coin(80) ? 0 : kPage * r(64));
        prot = coin(80) ? PROT_READ : PROT_READ | PROT_WRITE;
        break;
    default:
        what = "mmap garbage";
        off = garbage() & ~(kPage - 1);
        break;
    }
    if (coin(5))
        prot |= PROT_EXEC;
    const int flags = coin(95) ? MAP_SHARED : MAP_PRIVATE;
    void* p = reinterpret_cast<void*>(guarded(what, [&] {
        return reinterpret_cast<long>(mmap(nullptr, len, prot, flags, f->fd, static_cast<off_t>(off)));
    }));
    if (result(what, p == MAP_FAILED ? -1 : 0) == 0)
        maps_.push_back(Map{static_cast<unsigned char*>(p), len, (prot & PROT_WRITE) != 0});
}

// Whole mappings, or a page at their start, end or middle (splitting them).
void Fuzzer::op_munmap() {
    if (maps_.empty())
        return;
    const std::size_t i = r(maps_.size());
    Map& m = maps_[i];
    const std::size_t pages = m.len / kPage;
    if (pages < 2 || coin(60)) {
        result("munmap", guarded("munmap", [&] { return munmap(m.addr, m.len); }));
        maps_.erase(maps_.begin() + static_cast<long>(i));
        return;
    }
    const std::size_t at = r(pages);
    result("munmap part", guarded("munmap part", [&] { return munmap(m.addr + at * kPage, kPage); }));
    const Map left{m.addr, at * kPage, m.writable};
    const Map right{m.addr + (at + 1) * kPage, m.len - (at + 1) * kPage, m.writable};
    maps_.erase(maps_.begin() + static_cast<long>(i));
    for (const Map& part : {left, right})
        if (part.len)
            maps_.push_back(part);
}

// Loads and stores through a mapping (stores into the window are PIO to
// whatever node the page belongs to). A SIGBUS or SIGSEGV (a card that was
// unbound, a read of write-only memory) is counted, not fatal.
void Fuzzer::op_touch() {
    if (maps_.empty())
        return;
    const Map& m = maps_[r(maps_.size())];
    volatile std::uint64_t* w =
        reinterpret_cast<volatile std::uint64_t*>(m.addr + 8 * r(m.len / 8));
    const bool store = m.writable && coin(70);
    g_op = store ? "store" : "load";
    g_touching = 1;
    const int sig = sigsetjmp(g_touch_jmp, 1);
    if (sig == 0) {
        if (store)
            *w = rng_();
        else
            (void)*w;
        g_touching = 0;
        result(store ? "store" : "load", 0);
    } else {
        g_touching = 0;
        errno = sig == SIGBUS ? EFAULT : EACCES;  // tallied as a fault
        result(store ? "store (signal)" : "load (signal)", -1);
    }
}

// A child inherits the files and mappings, runs a few ops and exits, or is
// killed in the middle; the parent waits for it under the watchdog.
void Fuzzer::op_fork() {
    if (child_ || o_.forks <= 0)
        return;
    const std::uint64_t child_seed = rng_();
    const bool kill_it = coin(30);
    const std::uint64_t child_ops = 1 + r(40);
    std::fflush(stdout);
    pid_t pid = fork();
    if (result("fork", pid) != 0)
        return;
    if (pid == 0) {
        Fuzzer c(*this);
        c.rng_.seed(child_seed);
        c.child_ = true;
        c.tally_.clear();
        _exit(c.run(true, child_ops, 30.0));
    }
    ++forks_;
    if (kill_it) {
        usleep(static_cast<useconds_t>(r(20000)));
        kill(pid, SIGKILL);
    }
    int status = 0;
    guarded("wait for a child", [&] { return static_cast<long>(waitpid(pid, &status, 0)); });
    if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) {
        std::printf("%s: FAIL: child %d (seed %" PRIu64 ") died of signal %d\n", kName, pid,
                    child_seed, WTERMSIG(status));
        std::fflush(stdout);
        _exit(4);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        _exit(WEXITSTATUS(status));  // it printed why
}

int Fuzzer::run(bool child, std::uint64_t max_ops, double seconds) {
    static constexpr std::pair<Op, unsigned> ops[] = {
        {&Fuzzer::op_open, 6},        {&Fuzzer::op_close, 3},        {&Fuzzer::op_info, 2},
        {&Fuzzer::op_alloc, 10},      {&Fuzzer::op_free, 6},         {&Fuzzer::op_chunks, 4},
        {&Fuzzer::op_chain_create, 6}, {&Fuzzer::op_chain_destroy, 4}, {&Fuzzer::op_dma_start, 8},
        {&Fuzzer::op_dma_wait, 5},    {&Fuzzer::op_export, 4},       {&Fuzzer::op_unexport, 3},
        {&Fuzzer::op_rp_submit, 5},   {&Fuzzer::op_pin_area, 2},     {&Fuzzer::op_pin, 6},
        {&Fuzzer::op_publish, 4},     {&Fuzzer::op_unpublish, 3},    {&Fuzzer::op_bad_ioctl, 3},
        {&Fuzzer::op_mmap, 8},        {&Fuzzer::op_munmap, 5},       {&Fuzzer::op_touch, 6},
        {&Fuzzer::op_fork, 1},
    };
    unsigned total = 0;
    for (const auto& [op, w] : ops)
        total += w;
    child_ = child;
    timespec t0{};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (ops_ = 0; !max_ops || ops_ < max_ops; ++ops_) {
        if ((ops_ & 63) == 0) {
            timespec t{};
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (static_cast<double>(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 >= seconds)
                break;
        }
        if (files_.empty() && coin(90)) {
            op_open();
            continue;
        }
        unsigned pick = static_cast<unsigned>(r(total));
        for (const auto& [op, w] : ops) {
            if (pick < w) {
                (this->*op)();
                break;
            }
            pick -= w;
        }
    }
    return 0;
}

// The node count, for addresses and requests that reach other nodes.
bool Fuzzer::probe() {
    const int fd = open(o_.dev.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0 || ioctl(fd, PEACH2_IOC_INFO, &info_)) {
        std::fprintf(stderr, "%s: error: %s: %s (no card, or peach2.ko not loaded)\n", kName,
                     o_.dev.c_str(), std::strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    close(fd);
    return true;
}

void Fuzzer::report() const {
    std::uint64_t ok = 0, failed = 0;
    for (const auto& [name, t] : tally_) {
        std::string errs;
        for (const auto& [e, n] : t.err) {
            failed += n;
            errs += " " + std::string(strerrorname_np(e) ? strerrorname_np(e) : "?") + "=" + std::to_string(n);
        }
        ok += t.ok;
        std::printf("%s: %-16s ok=%" PRIu64 "%s\n", kName, name.c_str(), t.ok, errs.c_str());
    }
    std::printf("%s: %" PRIu64 " ops (%" PRIu64 " calls succeeded, %" PRIu64 " refused), %" PRIu64
                " children\n", kName, ops_, ok, failed, forks_);
}

bool drop_privileges(int uid) {
    // Buffers count against RLIMIT_MEMLOCK for an ordinary user: keep the
    // usual default, so the user's limits are what is exercised.
    const gid_t gid = static_cast<gid_t>(uid);
    if (setgroups(0, nullptr) || setgid(gid) || setuid(static_cast<uid_t>(uid))) {
        std::fprintf(stderr, "%s: error: cannot become uid %d: %s (run as root)\n", kName, uid,
                     std::strerror(errno));
        return false;
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    FuzzOptions o;
    tcatools::Options opts(
        kName, "[options]",
        "Random system calls on a PEACH2 device: every ioctl, mmap, munmap, stores, open, close,\n"
        "fork, with valid, half-valid and garbage arguments. The same --seed gives the same calls.\n"
        "Exit 0 when no call hung and no child died of a signal; the kernel's state is the\n"
        "caller's to check (dmesg, the driver's sysfs counters).");
    opts.text("dev", &o.dev, "the device");
    opts.u64("seed", &o.seed, "random seed (printed; rerun with it to repeat a sequence)");
    opts.u64("seconds", &o.seconds, "run this long");
    opts.u64("ops", &o.ops, "stop after this many ops (0: --seconds decides)");
    opts.u64("budget-mib", &o.budget_mib, "valid ALLOC/PIN sizes keep this process under it");
    opts.integer("uid", &o.uid, "become this user (and group) first (from root)");
    opts.integer("forks", &o.forks, "1: fork children now and then; 0: never");
    if (int rc = opts.parse(argc, argv); rc)
        return rc == 2 ? 0 : 1;
    if (o.uid >= 0 && !drop_privileges(o.uid))
        return 1;
    signal(SIGALRM, on_alarm);
    signal(SIGBUS, on_fault);
    signal(SIGSEGV, on_fault);
    signal(SIGPIPE, SIG_IGN);

    Fuzzer fz(o, o.seed);
    if (!fz.probe())
        return 1;
    std::printf("%s: seed=%" PRIu64 " seconds=%" PRIu64 " uid=%d dev=%s\n", kName, o.seed, o.seconds,
                static_cast<int>(getuid()), o.dev.c_str());
    std::fflush(stdout);
    if (int rc = fz.run(false, o.ops, static_cast<double>(o.seconds)); rc)
        return rc;
    fz.report();
    std::printf("%s: PASS seed=%" PRIu64 "\n", kName, o.seed);
    return 0;
}
