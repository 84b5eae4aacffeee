// SPDX-License-Identifier: MIT
// tca_anchor <test>: the reference figures `make bench` prints beside the
// emulated card's (issue 13): what this machine can do at best, measured in
// the same run.
//   memcpy    host (or guest) memcpy bandwidth
//   syscall   the cheapest system call (getppid): what any request that goes
//             through a driver pays at least once (a get's RP_SUBMIT)
//   unix      a unix-socket ping-pong between two processes of one host
//   shm       a shared-memory ping-pong between two processes of one host
//   ivshmem   a shared-memory ping-pong between two guests through QEMU's
//             ivshmem-plain (BAR 2, a shared memory-backend-file); run it on
//             both guests with --role ping / --role pong and the same --nonce
// Ping-pongs report one-way latency (round trip / 2); every message is
// checked (its stamp, first and last word). Uses no card and no libtca.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <random>
#include <string>
#include <vector>

#include "../common/cli.hpp"
#include "../common/results.hpp"
#include "../common/spin.hpp"

namespace {

using tcatools::Row;

constexpr std::uint64_t kBoxHeader = 64;   // the flag word's cache line
constexpr std::uint64_t kTimeoutNs = 20'000'000'000ull;

struct PingPongOptions {
    std::vector<std::uint64_t> sizes{8, 64, 1024, 4096};
    std::uint64_t iters = 2000;
    std::uint64_t warmup = 100;
    std::string csv;
};

void add_pingpong_options(tcatools::Options& opts, PingPongOptions* o) {
    opts.u64_list("sizes", &o->sizes, "message sizes (4 .. 1M, multiples of 4)");
    opts.u64("iters", &o->iters, "timed round trips per size");
    opts.u64("warmup", &o->warmup, "untimed round trips first (checked too)");
    opts.text("csv", &o->csv, "write the rows as CSV here too");
}

bool sizes_ok(const PingPongOptions& o, const char* who) {
    for (std::uint64_t s : o.sizes)
        if (s < 4 || s > (1u << 20) || s % 4) {
            std::fprintf(stderr, "%s: error: size %" PRIu64 " is not 4 .. 1M and a multiple of 4\n",
                         who, s);
            return false;
        }
    if (o.iters == 0 || o.sizes.empty()) {
        std::fprintf(stderr, "%s: error: need --iters >= 1 and some --sizes\n", who);
        return false;
    }
    return true;
}

std::uint64_t max_size(const PingPongOptions& o) {
    std::uint64_t m = 0;
    for (std::uint64_t s : o.sizes)
        m = s > m ? s : m;
    return m;
}

// The message stamp: the sequence number in the first and last word.
void stamp(unsigned char* buf, std::uint64_t size, std::uint32_t seq) {
    std::memcpy(buf, &seq, 4);
    std::memcpy(buf + size - 4, &seq, 4);
}

bool stamped(const unsigned char* buf, std::uint64_t size, std::uint32_t seq) {
    std::uint32_t a, b;
    std::memcpy(&a, buf, 4);
    std::memcpy(&b, buf + size - 4, 4);
    return a == seq && b == seq;
}

// ---- shared-memory ping-pong (shm, ivshmem) -------------------------------------
// Two mailboxes in the region, one per direction: a flag word (the run's
// nonce in the high half, the message number in the low half) and the
// payload after it. The sender copies the payload in, then stores the flag
// with release; the receiver spins on the flag with acquire and copies out.

struct Mailboxes {
    unsigned char* base;
    std::uint64_t half;  // offset of the second mailbox
    unsigned char* box(int dir) const { return base + (dir ? half : 0); }
};

std::uint64_t flag_of(std::uint64_t nonce, std::uint32_t seq) { return nonce << 32 | seq; }

void put_msg(const Mailboxes& m, int dir, const unsigned char* src, std::uint64_t size,
             std::uint64_t flag) {
    unsigned char* b = m.box(dir);
    std::memcpy(b + kBoxHeader, src, size);
    __atomic_store_n(reinterpret_cast<std::uint64_t*>(b), flag, __ATOMIC_RELEASE);
}

bool get_msg(const Mailboxes& m, int dir, unsigned char* dst, std::uint64_t size,
             std::uint64_t flag) {
    const unsigned char* b = m.box(dir);
    const std::uint64_t start = tcatools::now_ns();
    for (std::uint64_t n = 1; tcatools::load_acquire(b) != flag; ++n)
        if (!(n & 0xffff) && tcatools::now_ns() - start > kTimeoutNs)
            return false;
    std::memcpy(dst, b + kBoxHeader, size);
    return stamped(dst, size, static_cast<std::uint32_t>(flag));
}

// One side of the ping-pong. The ping side returns its rows; the pong side
// echoes. Returns false on a lost or corrupt message.
bool shm_pingpong(const Mailboxes& m, bool ping, std::uint64_t nonce, const PingPongOptions& o,
                  const char* test, std::vector<Row>* rows, const char* who) {
    std::vector<unsigned char> src(max_size(o)), dst(max_size(o));
    std::uint32_t seq = 0;
    for (std::uint64_t size : o.sizes) {
        std::vector<double> us;
        us.reserve(o.iters);
        bool ok = true;
        for (std::uint64_t i = 0; ok && i < o.warmup + o.iters; ++i) {
            ++seq;
            if (!ping) {
                ok = get_msg(m, 0, dst.data(), size, flag_of(nonce, seq));
                if (ok)
                    put_msg(m, 1, dst.data(), size, flag_of(nonce, seq));
                continue;
            }
            stamp(src.data(), size, seq);
            const std::uint64_t t0 = tcatools::now_ns();
            put_msg(m, 0, src.data(), size, flag_of(nonce, seq));
            ok = get_msg(m, 1, dst.data(), size, flag_of(nonce, seq));
            if (i >= o.warmup)
                us.push_back(static_cast<double>(tcatools::now_ns() - t0) / 2000.0);
        }
        if (!ok) {
            std::fprintf(stderr,
                         "%s: error: message %u of %" PRIu64 " B lost or corrupt (is the peer "
                         "running with the same --nonce and --sizes?)\n",
                         who, seq, size);
            return false;
        }
        if (ping)
            rows->push_back(tcatools::latency_row(test, "", size, us, o.warmup + o.iters));
    }
    return true;
}

int finish(const std::vector<Row>& rows, const std::string& csv, const char* who) {
    tcatools::print_table(stdout, rows);
    if (!csv.empty() && !tcatools::write_csv(csv, rows, who))
        return 1;
    return 0;
}

// The ivshmem-plain device's BAR 2 (its shared memory) in sysfs.
std::string find_ivshmem() {
    const char* dir = "/sys/bus/pci/devices";
    std::string found;
    DIR* d = opendir(dir);
    if (!d)
        return found;
    while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.')
            continue;
        const std::string dev = std::string(dir) + "/" + e->d_name;
        char ids[2][16] = {};
        const char* files[2] = {"/vendor", "/device"};
        for (int k = 0; k < 2; ++k)
            if (std::FILE* f = std::fopen((dev + files[k]).c_str(), "r")) {
                if (!std::fgets(ids[k], sizeof ids[k], f))
                    ids[k][0] = 0;
                std::fclose(f);
            }
        if (!std::strncmp(ids[0], "0x1af4", 6) && !std::strncmp(ids[1], "0x1110", 6)) {
            found = dev;
            break;
        }
    }
    closedir(d);
    return found;
}

int run_ivshmem(int argc, char** argv) {
    const char* who = "tca_anchor ivshmem";
    PingPongOptions o;
    std::string role, dev;
    std::uint64_t nonce = 0;
    tcatools::Options opts(who, "--role ping|pong --nonce N [options]",
                           "Ping-pong through QEMU's ivshmem-plain between two guests.");
    add_pingpong_options(opts, &o);
    opts.text("role", &role, "ping (measures) or pong (echoes)");
    opts.u64("nonce", &nonce, "the same number on both sides, new for every run (1 .. 2^32-1)");
    opts.text("device", &dev, "the device's sysfs directory (default: the first 1af4:1110)");
    if (int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    if ((role != "ping" && role != "pong") || nonce == 0 || nonce >> 32 || !sizes_ok(o, who)) {
        std::fprintf(stderr, "%s: error: need --role ping|pong and --nonce 1 .. 2^32-1\n", who);
        return 1;
    }
    if (dev.empty())
        dev = find_ivshmem();
    if (dev.empty()) {
        std::fprintf(stderr, "%s: error: no ivshmem-plain device (PCI 1af4:1110); boot the "
                             "guest with -device ivshmem-plain,memdev=...\n", who);
        return 1;
    }
    // The BAR must decode before it can be mapped (no driver enables it).
    if (int fd = open((dev + "/enable").c_str(), O_WRONLY); fd >= 0) {
        if (write(fd, "1", 1) != 1 && errno != EBUSY)
            std::fprintf(stderr, "%s: warning: enabling %s: %s\n", who, dev.c_str(),
                         std::strerror(errno));
        close(fd);
    }
    const std::string res = dev + "/resource2";
    const int fd = open(res.c_str(), O_RDWR | O_SYNC);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) {
        std::fprintf(stderr, "%s: error: %s: %s\n", who, res.c_str(), std::strerror(errno));
        return 1;
    }
    const std::uint64_t need = 2 * (kBoxHeader + max_size(o));
    if (static_cast<std::uint64_t>(st.st_size) < need) {
        std::fprintf(stderr, "%s: error: %s has %lld bytes, the sizes need %" PRIu64 "\n", who,
                     res.c_str(), static_cast<long long>(st.st_size), need);
        return 1;
    }
    void* p = mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        std::fprintf(stderr, "%s: error: mmap %s: %s\n", who, res.c_str(), std::strerror(errno));
        return 1;
    }
    const Mailboxes m{static_cast<unsigned char*>(p), static_cast<std::uint64_t>(st.st_size) / 2};
    std::vector<Row> rows;
    if (!shm_pingpong(m, role == "ping", nonce, o, "ivshmem", &rows, who))
        return 1;
    if (role == "pong") {
        std::printf("pong: echoed every message\n");
        return 0;
    }
    return finish(rows, o.csv, who);
}

// The options of a ping-pong between two host processes: -1 to run, else
// the exit status (bad arguments, --help).
int parse_host_pingpong(const char* who, const char* about, int argc, char** argv,
                        PingPongOptions* o) {
    tcatools::Options opts(who, "[options]", about);
    add_pingpong_options(opts, o);
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    return sizes_ok(*o, who) ? -1 : 1;
}

int run_shm(int argc, char** argv) {
    const char* who = "tca_anchor shm";
    PingPongOptions o;
    if (const int rc = parse_host_pingpong(who, "Ping-pong through shared memory between two processes.", argc, argv, &o); rc >= 0)
        return rc;
    const std::uint64_t half = (kBoxHeader + max_size(o) + 4095) & ~4095ull;
    void* p = mmap(nullptr, 2 * half, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        std::perror(who);
        return 1;
    }
    const Mailboxes m{static_cast<unsigned char*>(p), half};
    const std::uint64_t nonce = std::random_device{}() | 1u;
    std::fflush(stdout);
    const pid_t child = fork();
    if (child < 0) {
        std::perror(who);
        return 1;
    }
    std::vector<Row> rows;
    const bool ok = shm_pingpong(m, child != 0, nonce, o, "shm", &rows, who);
    if (child == 0)
        _exit(ok ? 0 : 1);
    int status = 0;
    waitpid(child, &status, 0);
    if (!ok || !WIFEXITED(status) || WEXITSTATUS(status))
        return 1;
    return finish(rows, o.csv, who);
}

// ---- unix-socket ping-pong --------------------------------------------------------

bool full_io(int fd, unsigned char* buf, std::uint64_t n, bool out) {
    while (n) {
        const ssize_t r = out ? write(fd, buf, n) : read(fd, buf, n);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return false;
        }
        buf += r;
        n -= static_cast<std::uint64_t>(r);
    }
    return true;
}

int run_unix(int argc, char** argv) {
    const char* who = "tca_anchor unix";
    PingPongOptions o;
    if (const int rc = parse_host_pingpong(who, "Ping-pong over a unix stream socket between two processes.", argc, argv, &o); rc >= 0)
        return rc;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        std::perror(who);
        return 1;
    }
    std::fflush(stdout);
    const pid_t child = fork();
    if (child < 0) {
        std::perror(who);
        return 1;
    }
    std::vector<unsigned char> buf(max_size(o));
    if (child == 0) {  // echo until the other end closes
        close(sv[0]);
        for (std::uint64_t size : o.sizes)
            for (std::uint64_t i = 0; i < o.warmup + o.iters; ++i)
                if (!full_io(sv[1], buf.data(), size, false) ||
                    !full_io(sv[1], buf.data(), size, true))
                    _exit(1);
        _exit(0);
    }
    close(sv[1]);
    std::vector<Row> rows;
    std::vector<unsigned char> back(max_size(o));
    std::uint32_t seq = 0;
    bool ok = true;
    for (std::uint64_t size : o.sizes) {
        std::vector<double> us;
        for (std::uint64_t i = 0; ok && i < o.warmup + o.iters; ++i) {
            stamp(buf.data(), size, ++seq);
            const std::uint64_t t0 = tcatools::now_ns();
            ok = full_io(sv[0], buf.data(), size, true) && full_io(sv[0], back.data(), size, false) &&
                 stamped(back.data(), size, seq);
            if (i >= o.warmup)
                us.push_back(static_cast<double>(tcatools::now_ns() - t0) / 2000.0);
        }
        if (!ok)
            break;
        rows.push_back(tcatools::latency_row("unix", "", size, us, o.warmup + o.iters));
    }
    close(sv[0]);
    int status = 0;
    waitpid(child, &status, 0);
    if (!ok) {
        std::fprintf(stderr, "%s: error: a message was lost or corrupt\n", who);
        return 1;
    }
    return finish(rows, o.csv, who);
}

// ---- memcpy -----------------------------------------------------------------------

int run_memcpy(int argc, char** argv) {
    const char* who = "tca_anchor memcpy";
    std::vector<std::uint64_t> sizes{1u << 20, 8u << 20};
    std::uint64_t ms = 300;
    std::string csv;
    tcatools::Options opts(who, "[options]", "memcpy bandwidth between two buffers.");
    opts.u64_list("sizes", &sizes, "bytes per copy (1 .. 256M)");
    opts.u64("ms", &ms, "copy for this long per size");
    opts.text("csv", &csv, "write the rows as CSV here too");
    if (int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    std::vector<Row> rows;
    for (std::uint64_t size : sizes) {
        if (size == 0 || size > (256u << 20)) {
            std::fprintf(stderr, "%s: error: size %" PRIu64 " is not 1 .. 256M\n", who, size);
            return 1;
        }
        std::vector<unsigned char> a(size, 0x5a), b(size, 0);
        std::uint64_t count = 0;
        const std::uint64_t t0 = tcatools::now_ns();
        std::uint64_t t = t0;
        while (t - t0 < ms * 1000000ull || count < 4) {
            std::memcpy((count & 1 ? a : b).data(), (count & 1 ? b : a).data(), size);
            ++count;
            t = tcatools::now_ns();
        }
        const bool ok = a[size - 1] == 0x5a && b[size - 1] == 0x5a;
        rows.push_back(tcatools::bandwidth_row("memcpy", "", size, count,
                                               static_cast<double>(t - t0) / 1e9, ok ? count : 0));
    }
    return finish(rows, csv, who);
}

// ---- syscall ----------------------------------------------------------------------

int run_syscall(int argc, char** argv) {
    const char* who = "tca_anchor syscall";
    std::uint64_t iters = 2000;
    std::string csv;
    tcatools::Options opts(who, "[options]",
                           "The cost of one getppid() system call (median of batches of 32).");
    opts.u64("iters", &iters, "batches to time (1 .. 10000000)");
    opts.text("csv", &csv, "write the rows as CSV here too");
    if (int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    if (iters == 0 || iters > 10000000) {
        std::fprintf(stderr, "%s: error: --iters %" PRIu64 " is not 1 .. 10000000\n", who, iters);
        return 1;
    }
    constexpr int kBatch = 32;  // a clock read (~0.08 us under TCG) per 32 calls
    const long parent = static_cast<long>(getppid());
    std::vector<double> us;
    us.reserve(iters);
    std::uint64_t right = 0;
    for (std::uint64_t i = 0; i < iters; ++i) {
        const std::uint64_t t0 = tcatools::now_ns();
        long got = 0;
        for (int k = 0; k < kBatch; ++k)
            got |= syscall(SYS_getppid);  // the raw call: nothing but the kernel entry
        const std::uint64_t t1 = tcatools::now_ns();
        us.push_back(static_cast<double>(t1 - t0) / 1000.0 / kBatch);
        right += got == parent;
    }
    std::vector<Row> rows{tcatools::latency_row("syscall", "", 0, us, right)};
    if (right != iters) {
        std::fprintf(stderr, "%s: error: getppid() answered something else\n", who);
        return 1;
    }
    return finish(rows, csv, who);
}

struct Test {
    const char* name;
    int (*run)(int, char**);
    const char* about;
};

const Test kTests[] = {
    {"memcpy", run_memcpy, "memcpy bandwidth"},
    {"unix", run_unix, "unix-socket ping-pong between two processes"},
    {"shm", run_shm, "shared-memory ping-pong between two processes"},
    {"ivshmem", run_ivshmem, "shared-memory ping-pong between two guests (ivshmem-plain)"},
    {"syscall", run_syscall, "the cost of the cheapest system call (getppid)"},
};

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 2)
        for (const Test& t : kTests)
            if (!std::strcmp(argv[1], t.name))
                return t.run(argc - 1, argv + 1);
    std::FILE* out = argc >= 2 && !std::strcmp(argv[1], "--help") ? stdout : stderr;
    std::fprintf(out, "usage: tca_anchor TEST [options]   (tca_anchor TEST --help)\n"
                      "The machine's reference figures for make bench (no card needed).\n");
    for (const Test& t : kTests)
        std::fprintf(out, "  %-8s %s\n", t.name, t.about);
    return out == stdout ? 0 : 1;
}
