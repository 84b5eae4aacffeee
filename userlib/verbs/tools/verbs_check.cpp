// SPDX-License-Identifier: MIT
// tca_verbs_check: checks of Verbs semantics the stock programs do not
// exercise, written against <infiniband/verbs.h> only (it runs on any
// libibverbs: ours, or a real HCA's). A server and a client exchange QP
// numbers, PSNs and keys over TCP, as rc_pingpong does.
//
//   tca_verbs_check [-p PORT] [-n COUNT] [-s SEED] TEST [SERVER]
//
// TEST:
//   access   remote Write/Read/atomics with a wrong rkey, outside the MR,
//            without the access right, and with a deregistered rkey: each
//            completes with IBV_WC_REM_ACCESS_ERR, and the server checks its
//            memory is unchanged; a good Write and Read work around them
//   rnr      a Send with no receive posted: rnr_retry 1 ends with
//            IBV_WC_RNR_RETRY_EXC_ERR; rnr_retry 7 completes once the server
//            posts a receive late
//   badwr    ibv_post_send/ibv_post_recv refuse bad WRs with errno and
//            bad_wr; a bad lkey completes with IBV_WC_LOC_PROT_ERR
//   flush    moving a QP to ERR flushes every outstanding WR, in order
//   read     RDMA Reads of 4 B .. 3 MiB at odd offsets from the server's
//            malloc'ed 4 MiB MR into malloc'ed memory, several in flight:
//            every byte checked
//   stream   COUNT messages (Send and Write with Immediate, sizes 1 B ..
//            64 KiB; small Writes across a page boundary of the server's
//            buffer) with a sequence number and checksum each; the server
//            checks every one: none lost, duplicated or corrupt
//   peer     the client streams Sends (a window of 16 outstanding, sizes
//            of both rings) to the server, which dies mid-stream: it
//            prints RECEIVING after 100 messages and exits without a word
//            after COUNT (or is killed first: kill -9, its node's QEMU
//            killed). Every outstanding WR of the client completes, the
//            first failure is IBV_WC_RETRY_EXC_ERR, the rest flush (no hang)
//   exit     as peer, but the server leaves with exit(0), not _exit(0), while a
//            second thread still polls its CQ and reposts receives (what an MPI
//            transport's progress thread does when the program exits without
//            finalizing): the exit handlers and static destructors of every
//            library run beside it. The server must exit 0 (no crash, no hang);
//            the client sees the same failure as with a killed peer
//   slowreg  the server's main thread spends seconds in one ibv_reg_mr (a
//            driver that waits for quarantined memory; the host test's fake
//            driver waits $TCA_FAKE_PIN_DELAY_MS, which the server sets for
//            that one call) while the client sends COUNT messages: every
//            Send completes with success, none with IBV_WC_RETRY_EXC_ERR
//            (the server's library acknowledges them meanwhile)
//   slowconn the same while the server's main thread connects a second QP
//            (ibv_modify_qp to RTR allocates the staging copy of the peer's
//            rings; the fake waits $TCA_FAKE_ALLOC_DELAY_MS in that ALLOC)
//   slowbounce the same while the server's 64 KiB RDMA Write from memory the
//            card cannot DMA in place (other low 4 address bits than the
//            target) needs a bounce buffer, which the library allocates under
//            its lock: the fake refuses it (EDQUOT, PEACH2_ALLOC_NOWAIT) for
//            5 s, then the Write lands whole; meanwhile the library asked the
//            driver at most 200 times (a backoff, not an ioctl per poll)
//   remr     registrations of the same memory: the server registers a range
//            twice and deregisters the first MR, twice and deregisters the
//            second, and once, then unmaps it, maps new pages at the same
//            address, registers those and deregisters the old MR (what
//            UCX's registration cache does with freed and reused buffers).
//            The client Writes (PIO and DMA sizes) and Reads through each
//            surviving MR: all succeed, the server finds the data in its
//            current pages, and the pages before the remap unchanged
//   udgone   the client sends COUNT datagrams to a UD QP the server has
//            destroyed: each completes (UD does not know), quickly (the
//            library does not look a QP that is gone up again for each one);
//            then one to a new UD QP of the server arrives intact
//   renew    the server's library cannot renew its lease on the client's QP
//            for a moment (the fake driver, which it must preload, refuses its
//            next read-proxy submissions as for a link that is down) while the
//            client sends up to COUNT messages 60 ms apart: every Send completes
//            with success
//   leaseout the same, but no renewal ever succeeds: once the lease has run
//            out the server's QP writes no more, and a Send of the client ends
//            with IBV_WC_RETRY_EXC_ERR
//   slowrenew each lookup of the server takes 5 s (the fake driver answers
//            late) while it sleeps and the client sends up to COUNT messages
//            60 ms apart: every Send is acknowledged (by the server's progress
//            thread, which a renewal in its lookup does not hold up)
//   lostrenew the server's first lease renewal is never answered (the fake
//            driver drops it) while the client sends up to COUNT messages 60 ms
//            apart: libtca sends the lookup again, and every Send is
//            acknowledged
//   slowkey  the client writes into the server's MR through one rkey for 3 s
//            while each of its lookups takes 150 ms (the fake driver answers
//            late): no Write waits for a lookup (the renewer keeps the rkey's
//            lease going); the server finds the last Write's value
//   hold     the server registers COUNT MiB in MRs and sleeps (to be killed)
//
// The last line is "tca_verbs_check TEST: PASS ..." or "... FAIL ..."; the
// exit status is 0 only on PASS.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

const char* g_test = "?";
bool g_server = false;

// The verdict line: "tca_verbs_check TEST: PASS|FAIL (server|client): message".
void verdict(const char* what, const char* fmt, va_list ap) {
    char msg[512];
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    std::printf("tca_verbs_check %s: %s (%s): %s\n", g_test, what, g_server ? "server" : "client",
                msg);
    std::fflush(stdout);
}

[[noreturn]] void fail(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verdict("FAIL", fmt, ap);
    va_end(ap);
    std::exit(1);
}

void pass(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verdict("PASS", fmt, ap);
    va_end(ap);
}

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// ---- TCP ------------------------------------------------------------------------------------

class Link {
public:
    // Server: listen and accept one client; client: connect (retrying for a while).
    Link(const char* server, int port) {
        if (!server) {
            const int ls = ::socket(AF_INET6, SOCK_STREAM, 0);
            const int one = 1;
            ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            sockaddr_in6 a{};
            a.sin6_family = AF_INET6;
            a.sin6_port = htons(static_cast<std::uint16_t>(port));
            a.sin6_addr = in6addr_any;
            if (::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) || ::listen(ls, 1))
                fail("cannot listen on port %d: %s", port, std::strerror(errno));
            fd_ = ::accept(ls, nullptr, nullptr);
            ::close(ls);
        } else {
            addrinfo hints{}, *res = nullptr;
            hints.ai_socktype = SOCK_STREAM;
            if (::getaddrinfo(server, std::to_string(port).c_str(), &hints, &res) || !res)
                fail("cannot resolve %s", server);
            for (int i = 0; i < 300 && fd_ < 0; ++i) {
                const int s = ::socket(res->ai_family, SOCK_STREAM, 0);
                if (::connect(s, res->ai_addr, res->ai_addrlen) == 0) {
                    fd_ = s;
                    break;
                }
                ::close(s);
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
            ::freeaddrinfo(res);
        }
        if (fd_ < 0)
            fail("no TCP connection to the peer");
        const int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    ~Link() { ::close(fd_); }
    void send(const void* p, std::size_t n) {
        if (::send(fd_, p, n, MSG_NOSIGNAL) != static_cast<ssize_t>(n))
            fail("TCP send: %s", std::strerror(errno));
    }
    // False if the peer closed the connection.
    bool recv(void* p, std::size_t n) {
        auto* b = static_cast<unsigned char*>(p);
        while (n) {
            const ssize_t r = ::recv(fd_, b, n, 0);
            if (r <= 0)
                return false;
            b += r;
            n -= static_cast<std::size_t>(r);
        }
        return true;
    }
    void must_recv(void* p, std::size_t n) {
        if (!recv(p, n))
            fail("the peer closed the TCP connection");
    }
    // Send ours, receive the peer's (QP numbers, PSNs, keys: a fixed-size struct).
    template <class T>
    T exchange(const T& mine) {
        send(&mine, sizeof mine);
        T peer{};
        must_recv(&peer, sizeof peer);
        return peer;
    }
    void sync(std::uint32_t step) {
        send(&step, sizeof step);
        std::uint32_t got = 0;
        must_recv(&got, sizeof got);
        if (got != step)
            fail("out of step with the peer (%u, %u)", step, got);
    }

private:
    int fd_ = -1;
};

// ---- Verbs set-up -------------------------------------------------------------------------

struct Dest {
    std::uint32_t qpn, psn;
    std::uint16_t lid;
    std::uint8_t pad[2];
    ibv_gid gid;
};

struct Dev {
    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
    ibv_cq* cq = nullptr;
    ibv_port_attr port{};
    ibv_gid gid{};

    Dev() {
        int n = 0;
        ibv_device** list = ibv_get_device_list(&n);
        if (!list || n < 1)
            fail("no Verbs device");
        ctx = ibv_open_device(list[0]);
        ibv_free_device_list(list);
        if (!ctx)
            fail("cannot open the device: %s", std::strerror(errno));
        pd = ibv_alloc_pd(ctx);
        cq = ibv_create_cq(ctx, 4096, nullptr, nullptr, 0);
        if (!pd || !cq || ibv_query_port(ctx, 1, &port) || ibv_query_gid(ctx, 1, 0, &gid))
            fail("device set-up failed");
    }
    ibv_mr* reg(void* p, std::size_t n, int access) {
        ibv_mr* mr = ibv_reg_mr(pd, p, n, access);
        if (!mr)
            fail("ibv_reg_mr of %zu bytes: %s", n, std::strerror(errno));
        return mr;
    }
};

// The address of a peer's port (a connected QP's path, a UD address handle).
ibv_ah_attr ah_attr_of(const Dest& r) {
    ibv_ah_attr a{};
    a.dlid = r.lid;
    a.port_num = 1;
    a.is_global = 1;
    a.grh.dgid = r.gid;
    a.grh.hop_limit = 1;
    return a;
}

struct Qp {
    ibv_qp* qp = nullptr;
    std::uint32_t psn;

    Qp(Dev& d, std::uint32_t max_send = 64, std::uint32_t max_recv = 256) {
        ibv_qp_init_attr a{};
        a.send_cq = d.cq;
        a.recv_cq = d.cq;
        a.cap.max_send_wr = max_send;
        a.cap.max_recv_wr = max_recv;
        a.cap.max_send_sge = 2;
        a.cap.max_recv_sge = 2;
        a.qp_type = IBV_QPT_RC;
        qp = ibv_create_qp(d.pd, &a);
        if (!qp)
            fail("ibv_create_qp: %s", std::strerror(errno));
        psn = static_cast<std::uint32_t>(std::rand()) & 0xffffff;
        ibv_qp_attr m{};
        m.qp_state = IBV_QPS_INIT;
        m.port_num = 1;
        m.qp_access_flags =
            IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        if (ibv_modify_qp(qp, &m,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
            fail("QP to INIT");
    }
    Dest dest(const Dev& d) const { return Dest{qp->qp_num, psn, d.port.lid, {}, d.gid}; }
    // Swaps addresses with the peer and connects (RNR retried for ever).
    void connect_over(Link& link, const Dev& d) { connect(link.exchange(dest(d)), 7, 1); }
    void connect(const Dest& r, std::uint8_t rnr_retry = 7, std::uint8_t min_rnr_timer = 1,
                 std::uint8_t retry_cnt = 7) {
        ibv_qp_attr m{};
        m.qp_state = IBV_QPS_RTR;
        m.path_mtu = IBV_MTU_4096;
        m.dest_qp_num = r.qpn;
        m.rq_psn = r.psn;
        m.max_dest_rd_atomic = 16;
        m.min_rnr_timer = min_rnr_timer;
        m.ah_attr = ah_attr_of(r);
        if (int rc =
                ibv_modify_qp(qp, &m,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
            fail("QP to RTR: %s", std::strerror(rc));
        m = ibv_qp_attr{};
        m.qp_state = IBV_QPS_RTS;
        m.timeout = 14;
        m.retry_cnt = retry_cnt;
        m.rnr_retry = rnr_retry;
        m.sq_psn = psn;
        m.max_rd_atomic = 16;
        if (int rc = ibv_modify_qp(qp, &m,
                                   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
            fail("QP to RTS: %s", std::strerror(rc));
    }
};

// Waits for `n` completions (timeout_s); returns them.
std::vector<ibv_wc> wait_wc(ibv_cq* cq, int n, double timeout_s = 60) {
    std::vector<ibv_wc> out;
    const double end = now_s() + timeout_s;
    while (static_cast<int>(out.size()) < n) {
        ibv_wc wc[16];
        const int got = ibv_poll_cq(cq, std::min(16, n - static_cast<int>(out.size())), wc);
        if (got < 0)
            fail("ibv_poll_cq: %d", got);
        out.insert(out.end(), wc, wc + got);
        if (got == 0 && now_s() > end)
            fail("only %zu of %d completions after %.0f s", out.size(), n, timeout_s);
    }
    return out;
}

// A signalled Send of one SGE.
ibv_send_wr send_wr(ibv_sge* sge, std::uint64_t id) {
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.sg_list = sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    return wr;
}

// The same for an RDMA Write or Read, or an atomic (FAA adds 1, CAS compares with 1).
ibv_send_wr rdma_wr(ibv_sge* sge, ibv_wr_opcode op, std::uint64_t raddr, std::uint32_t rkey,
                    std::uint64_t id) {
    ibv_send_wr wr = send_wr(sge, id);
    wr.opcode = op;
    if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
        wr.wr.atomic.remote_addr = raddr;
        wr.wr.atomic.rkey = rkey;
        wr.wr.atomic.compare_add = 1;
    } else {
        wr.wr.rdma.remote_addr = raddr;
        wr.wr.rdma.rkey = rkey;
    }
    return wr;
}

void post(ibv_qp* qp, ibv_send_wr& wr) {
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(qp, &wr, &bad))
        fail("ibv_post_send: %s", std::strerror(rc));
}

// One receive WR of one SGE.
void post_recv(ibv_qp* qp, std::uint64_t wr_id, ibv_sge sge) {
    ibv_recv_wr r{};
    r.wr_id = wr_id;
    r.sg_list = &sge;
    r.num_sge = 1;
    ibv_recv_wr* bad;
    if (ibv_post_recv(qp, &r, &bad))
        fail("ibv_post_recv");
}

// ---- access ---------------------------------------------------------------------------------

struct AccessInfo {
    std::uint64_t a_addr, b_addr, c_addr, d_addr;
    std::uint32_t a_rkey, b_rkey, c_rkey, d_rkey;
    Dest qp[8];
};

constexpr int kAccessCases = 8;
constexpr std::size_t kAccessBytes = 4096;

void access_test(const char* server, int port) {
    Dev d;
    Link link(server, port);
    std::vector<Qp> qps;
    for (int i = 0; i < kAccessCases; ++i)
        qps.emplace_back(d);
    if (!server) {
        // A: write/read, no atomic. B: local only. C: deregistered before
        // use. D: everything (the positive control).
        static unsigned char a[kAccessBytes] __attribute__((aligned(4096)));
        static unsigned char b[kAccessBytes] __attribute__((aligned(4096)));
        static unsigned char c[kAccessBytes] __attribute__((aligned(4096)));
        static unsigned char dd[kAccessBytes] __attribute__((aligned(4096)));
        for (std::size_t i = 0; i < kAccessBytes; ++i)
            a[i] = b[i] = c[i] = static_cast<unsigned char>(i * 13 + 7);
        ibv_mr* ma =
            d.reg(a, kAccessBytes,
                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
        ibv_mr* mb = d.reg(b, kAccessBytes, IBV_ACCESS_LOCAL_WRITE);
        ibv_mr* mc = d.reg(c, kAccessBytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        ibv_mr* md = d.reg(dd, kAccessBytes,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
        AccessInfo info{};
        info.a_addr = reinterpret_cast<std::uintptr_t>(a);
        info.b_addr = reinterpret_cast<std::uintptr_t>(b);
        info.c_addr = reinterpret_cast<std::uintptr_t>(c);
        info.d_addr = reinterpret_cast<std::uintptr_t>(dd);
        info.a_rkey = ma->rkey;
        info.b_rkey = mb->rkey;
        info.c_rkey = mc->rkey;
        info.d_rkey = md->rkey;
        if (ibv_dereg_mr(mc))
            fail("ibv_dereg_mr");
        for (int i = 0; i < kAccessCases; ++i)
            info.qp[i] = qps[i].dest(d);
        link.send(&info, sizeof info);
        AccessInfo peer;
        link.must_recv(&peer, sizeof peer);
        for (int i = 0; i < kAccessCases; ++i)
            qps[i].connect(peer.qp[i]);
        link.sync(1);  // connected
        link.sync(2);  // the client is done
        for (std::size_t i = 0; i < kAccessBytes; ++i)
            if (a[i] != static_cast<unsigned char>(i * 13 + 7) ||
                b[i] != static_cast<unsigned char>(i * 13 + 7) ||
                c[i] != static_cast<unsigned char>(i * 13 + 7))
                fail("byte %zu of the target memory changed (A %u, B %u, C %u)", i, a[i], b[i],
                     c[i]);
        if (std::memcmp(dd, "positive control", 16))
            fail("the good RDMA Write did not land");
        pass("refused Writes, Reads and atomics changed none of 3 x %zu bytes", kAccessBytes);
        return;
    }
    AccessInfo peer;
    link.must_recv(&peer, sizeof peer);
    AccessInfo mine{};
    for (int i = 0; i < kAccessCases; ++i) {
        mine.qp[i] = qps[i].dest(d);
        qps[i].connect(peer.qp[i]);
    }
    link.send(&mine, sizeof mine);
    link.sync(1);
    static unsigned char local[64] __attribute__((aligned(64)));
    std::memcpy(local, "positive control", 16);
    ibv_mr* ml = d.reg(local, sizeof local, IBV_ACCESS_LOCAL_WRITE);
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(local), 16, ml->lkey};
    ibv_sge sge8{reinterpret_cast<std::uintptr_t>(local + 32), 8, ml->lkey};
    ibv_sge badkey{reinterpret_cast<std::uintptr_t>(local), 16, ml->lkey ^ 0x5a5a00};
    struct Case {
        const char* what;
        ibv_wr_opcode op;
        std::uint64_t addr;
        std::uint32_t rkey;
        ibv_sge* sge;
        ibv_wc_status want;
    };
    const Case cases[kAccessCases] = {
        {"Write with a wrong rkey", IBV_WR_RDMA_WRITE, peer.a_addr, peer.a_rkey ^ 0x5a5a00, &sge,
         IBV_WC_REM_ACCESS_ERR},
        {"Write past the end of the MR", IBV_WR_RDMA_WRITE, peer.a_addr + kAccessBytes - 8,
         peer.a_rkey, &sge, IBV_WC_REM_ACCESS_ERR},
        {"Write without REMOTE_WRITE", IBV_WR_RDMA_WRITE, peer.b_addr, peer.b_rkey, &sge,
         IBV_WC_REM_ACCESS_ERR},
        {"Read without REMOTE_READ", IBV_WR_RDMA_READ, peer.b_addr, peer.b_rkey, &sge,
         IBV_WC_REM_ACCESS_ERR},
        {"atomic without REMOTE_ATOMIC", IBV_WR_ATOMIC_FETCH_AND_ADD, peer.a_addr, peer.a_rkey,
         &sge8, IBV_WC_REM_ACCESS_ERR},
        {"Write with a deregistered rkey", IBV_WR_RDMA_WRITE, peer.c_addr, peer.c_rkey, &sge,
         IBV_WC_REM_ACCESS_ERR},
        {"Write from a bad lkey", IBV_WR_RDMA_WRITE, peer.a_addr, peer.a_rkey, &badkey,
         IBV_WC_LOC_PROT_ERR},
        {"Write (good)", IBV_WR_RDMA_WRITE, peer.d_addr, peer.d_rkey, &sge, IBV_WC_SUCCESS},
    };
    for (int i = 0; i < kAccessCases; ++i) {
        const Case& c = cases[i];
        ibv_send_wr wr = rdma_wr(c.sge, c.op, c.addr, c.rkey, static_cast<std::uint64_t>(i));
        post(qps[i].qp, wr);
        const ibv_wc wc = wait_wc(d.cq, 1)[0];
        if (wc.status != c.want || wc.wr_id != static_cast<std::uint64_t>(i))
            fail("%s: completion %s (wr %" PRIu64 "), want %s", c.what,
                 ibv_wc_status_str(wc.status), wc.wr_id, ibv_wc_status_str(c.want));
        std::printf("  %-34s %s\n", c.what, ibv_wc_status_str(wc.status));
    }
    // The good Read of what the good Write wrote, on the same QP.
    std::memset(local + 16, 0, 16);
    ibv_sge back{reinterpret_cast<std::uintptr_t>(local + 16), 16, ml->lkey};
    ibv_send_wr wr = rdma_wr(&back, IBV_WR_RDMA_READ, peer.d_addr, peer.d_rkey, 99);
    post(qps[kAccessCases - 1].qp, wr);
    const ibv_wc wc = wait_wc(d.cq, 1)[0];
    if (wc.status != IBV_WC_SUCCESS || std::memcmp(local + 16, "positive control", 16))
        fail("the good RDMA Read: %s", ibv_wc_status_str(wc.status));
    link.sync(2);
    pass(
        "%d refused operations completed with REM_ACCESS_ERR, one with LOC_PROT_ERR; good Write "
        "and Read worked",
        kAccessCases - 2);
}

// ---- rnr -------------------------------------------------------------------------------------

void rnr_test(const char* server, int port) {
    Dev d;
    Link link(server, port);
    Qp q1(d), q2(d);
    Dest mine[2] = {q1.dest(d), q2.dest(d)}, peer[2];
    link.send(mine, sizeof mine);
    link.must_recv(peer, sizeof peer);
    static unsigned char buf[4096];
    ibv_mr* mr = d.reg(buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf), 64, mr->lkey};
    if (!server) {
        q1.connect(peer[0], 7, 1);
        q2.connect(peer[1], 7, 1);
        link.sync(1);
        link.sync(2);  // client saw its RNR error on q1
        // q2: the client's Send waits (rnr_retry 7); receive it late.
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        ibv_recv_wr rwr{};
        rwr.wr_id = 7;
        rwr.sg_list = &sge;
        rwr.num_sge = 1;
        ibv_recv_wr* bad;
        if (ibv_post_recv(q2.qp, &rwr, &bad))
            fail("ibv_post_recv");
        const ibv_wc wc = wait_wc(d.cq, 1, 30)[0];
        if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 7 || std::memcmp(buf, "late receive", 12))
            fail("the late receive: %s", ibv_wc_status_str(wc.status));
        link.sync(3);
        pass(
            "no receive: the sender gave up (rnr_retry 1); a late receive got the message "
            "(rnr_retry 7)");
        return;
    }
    q1.connect(peer[0], 1, 1);
    q2.connect(peer[1], 7, 1);
    link.sync(1);
    std::memcpy(buf, "late receive", 12);
    ibv_send_wr wr{};
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    const double t0 = now_s();
    post(q1.qp, wr);
    ibv_wc wc = wait_wc(d.cq, 1, 60)[0];
    if (wc.status != IBV_WC_RNR_RETRY_EXC_ERR)
        fail("Send without a receive, rnr_retry 1: %s, want %s", ibv_wc_status_str(wc.status),
             ibv_wc_status_str(IBV_WC_RNR_RETRY_EXC_ERR));
    std::printf("  rnr_retry 1: %s after %.2f s\n", ibv_wc_status_str(wc.status), now_s() - t0);
    link.sync(2);
    wr.wr_id = 2;
    post(q2.qp, wr);
    wc = wait_wc(d.cq, 1, 60)[0];
    if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 2)
        fail("Send with rnr_retry 7 and a late receive: %s", ibv_wc_status_str(wc.status));
    link.sync(3);
    pass("RNR_RETRY_EXC_ERR after %d retry, and success once a receive came late", 1);
}

// ---- badwr ------------------------------------------------------------------------------------

void badwr_test(const char* server, int port) {
    Dev d;
    Link link(server, port);
    Qp q(d, 4, 4);
    const Dest peer = link.exchange(q.dest(d));
    static unsigned char buf[4096];
    ibv_mr* mr = d.reg(buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    ibv_sge sge[3] = {{reinterpret_cast<std::uintptr_t>(buf), 8, mr->lkey},
                      {reinterpret_cast<std::uintptr_t>(buf + 8), 8, mr->lkey},
                      {reinterpret_cast<std::uintptr_t>(buf + 16), 8, mr->lkey}};
    ibv_send_wr wr{};
    wr.sg_list = sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    ibv_send_wr* bad = nullptr;
    // Before RTS: refused.
    if (ibv_post_send(q.qp, &wr, &bad) != EINVAL || bad != &wr)
        fail("a Send in INIT was not refused with EINVAL");
    q.connect(peer);
    link.sync(1);
    if (server) {
        link.sync(2);
        pass("peer of the bad-WR checks");
        return;
    }
    auto refused = [&](const char* what, ibv_send_wr* list, ibv_send_wr* want_bad, int want) {
        bad = nullptr;
        const int rc = ibv_post_send(q.qp, list, &bad);
        if (rc != want || bad != want_bad)
            fail("%s: rc %d (%s), bad_wr %s; want %s", what, rc, std::strerror(rc),
                 bad == want_bad ? "right" : "wrong", std::strerror(want));
        std::printf("  %-40s %s, bad_wr right\n", what, std::strerror(rc));
    };
    wr.num_sge = 3;  // max_send_sge is 2
    refused("too many SGEs", &wr, &wr, EINVAL);
    wr.num_sge = 1;
    wr.opcode = static_cast<ibv_wr_opcode>(77);
    refused("unknown opcode", &wr, &wr, EINVAL);
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_INLINE;
    sge[0].length = 4000;
    refused("inline data beyond max_inline_data", &wr, &wr, EINVAL);
    sge[0].length = 8;
    wr.send_flags = 0;
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    refused("atomic of 8 bytes in 2 SGEs", (wr.num_sge = 2, &wr), &wr, EINVAL);
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    // The second WR of a list is bad: the first is posted.
    ibv_send_wr two[2] = {wr, wr};
    two[0].next = &two[1];
    two[1].num_sge = 5;
    two[0].wr_id = 100;
    two[0].send_flags = IBV_SEND_SIGNALED;
    two[0].sg_list = sge;
    refused("second WR of a list bad", &two[0], &two[1], EINVAL);
    // A full send queue (max_send_wr 4, the peer posts no receives).
    ibv_send_wr many[6];
    for (int i = 0; i < 6; ++i) {
        many[i] = wr;
        many[i].wr_id = 200 + static_cast<std::uint64_t>(i);
        many[i].next = i < 5 ? &many[i + 1] : nullptr;
    }
    refused("send queue overflow", &many[0], &many[3], ENOMEM);
    ibv_recv_wr rwr{};
    rwr.sg_list = sge;
    rwr.num_sge = 3;
    ibv_recv_wr* rbad = nullptr;
    if (ibv_post_recv(q.qp, &rwr, &rbad) != EINVAL || rbad != &rwr)
        fail("a receive with too many SGEs was not refused");
    std::printf("  %-40s %s, bad_wr right\n", "receive with too many SGEs", std::strerror(EINVAL));
    link.sync(2);
    pass("6 bad send WRs and 1 bad receive WR refused with the right errno and bad_wr");
}

// ---- flush -------------------------------------------------------------------------------------

void flush_test(const char* server, int port) {
    Dev d;
    Link link(server, port);
    Qp q(d, 16, 16);
    q.connect_over(link, d);
    static unsigned char buf[4096];
    ibv_mr* mr = d.reg(buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf), 64, mr->lkey};
    link.sync(1);
    if (server) {
        link.sync(2);
        pass("peer of the flush check");
        return;
    }
    // 8 receives; 4 Sends the peer never receives (it posts nothing: RNR
    // for ever with rnr_retry 7). Then ERR: all 12 flush, in posting order.
    for (int i = 0; i < 8; ++i)
        post_recv(q.qp, 1000 + static_cast<std::uint64_t>(i), sge);
    for (int i = 0; i < 4; ++i) {
        ibv_send_wr w{};
        w.wr_id = static_cast<std::uint64_t>(i);
        w.sg_list = &sge;
        w.num_sge = 1;
        w.opcode = IBV_WR_SEND;
        post(q.qp, w);  // unsignalled: flushed ones complete all the same
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_ERR;
    if (ibv_modify_qp(q.qp, &m, IBV_QP_STATE))
        fail("QP to ERR");
    const std::vector<ibv_wc> wcs = wait_wc(d.cq, 12, 30);
    std::uint64_t next_send = 0, next_recv = 1000;
    for (const ibv_wc& wc : wcs) {
        if (wc.status != IBV_WC_WR_FLUSH_ERR)
            fail("WR %" PRIu64 ": %s, want flush", wc.wr_id, ibv_wc_status_str(wc.status));
        std::uint64_t& next = wc.wr_id >= 1000 ? next_recv : next_send;
        if (wc.wr_id != next++)
            fail("flushed out of order: %" PRIu64, wc.wr_id);
    }
    // A WR posted in ERR is flushed too.
    ibv_send_wr w{};
    w.wr_id = 77;
    w.sg_list = &sge;
    w.num_sge = 1;
    w.opcode = IBV_WR_SEND;
    post(q.qp, w);
    const ibv_wc late = wait_wc(d.cq, 1, 10)[0];
    if (late.status != IBV_WC_WR_FLUSH_ERR || late.wr_id != 77)
        fail("a WR posted in ERR: %s", ibv_wc_status_str(late.status));
    ibv_qp_attr qa;
    ibv_qp_init_attr qi;
    if (ibv_query_qp(q.qp, &qa, IBV_QP_STATE, &qi) || qa.qp_state != IBV_QPS_ERR)
        fail("the QP is not in ERR");
    link.sync(2);
    pass("4 Sends and 8 receives flushed in order; a WR posted in ERR flushed");
}

// ---- read ------------------------------------------------------------------------------------

constexpr std::size_t kReadMr = 4 << 20;

unsigned char read_pattern(std::size_t i) {
    return static_cast<unsigned char>((i * 131) ^ (i >> 9));
}

void read_test(const char* server, int port) {
    Dev d;
    Link link(server, port);
    Qp q(d, 16, 16);
    q.connect_over(link, d);
    std::vector<unsigned char> buf(kReadMr);
    ibv_mr* mr = d.reg(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    struct Keys {
        std::uint64_t addr;
        std::uint32_t rkey;
    } keys{reinterpret_cast<std::uintptr_t>(buf.data()), mr->rkey}, pk;
    if (!server)
        for (std::size_t i = 0; i < kReadMr; ++i)
            buf[i] = read_pattern(i);
    link.send(&keys, sizeof keys);
    link.must_recv(&pk, sizeof pk);
    link.sync(1);
    if (!server) {
        link.sync(2);  // the client read
        pass("served the Reads from a malloc'ed %zu MiB MR", kReadMr >> 20);
        return;
    }
    // (offset, length): small, page-crossing, odd, 1 MiB, most of the MR.
    const std::pair<std::size_t, std::size_t> cases[] = {{0, 4},
                                                         {4092, 8},
                                                         {1, 3},
                                                         {100, 20000},
                                                         {12, 65536},
                                                         {4096, 1 << 20},
                                                         {3, (1 << 20) + 5},
                                                         {65536 + 8, 3 << 20},
                                                         {0, kReadMr},
                                                         {kReadMr - 12, 12}};
    const std::size_t n = sizeof cases / sizeof cases[0];
    std::fill(buf.begin(), buf.end(), 0xee);
    std::vector<std::size_t> at(n);
    std::size_t room = 0;
    for (std::size_t k = 0; k < n; ++k) {
        at[k] = room + k % 7;  // odd local offsets too
        room = at[k] + cases[k].second;
    }
    std::vector<unsigned char> local(room);
    ibv_mr* lm = d.reg(local.data(), local.size(), IBV_ACCESS_LOCAL_WRITE);
    std::vector<ibv_sge> sges(n);
    for (std::size_t k = 0; k < n; ++k) {
        sges[k] = ibv_sge{reinterpret_cast<std::uintptr_t>(local.data() + at[k]),
                          static_cast<std::uint32_t>(cases[k].second), lm->lkey};
        ibv_send_wr w = rdma_wr(&sges[k], IBV_WR_RDMA_READ, pk.addr + cases[k].first, pk.rkey, k);
        post(q.qp, w);
    }
    const std::vector<ibv_wc> wcs = wait_wc(d.cq, static_cast<int>(n), 120);
    std::uint64_t bytes = 0;
    for (std::size_t k = 0; k < n; ++k) {
        if (wcs[k].status != IBV_WC_SUCCESS || wcs[k].wr_id != k)
            fail("Read %zu: %s (WR %" PRIu64 ")", k, ibv_wc_status_str(wcs[k].status),
                 wcs[k].wr_id);
        for (std::size_t i = 0; i < cases[k].second; ++i)
            if (local[at[k] + i] != read_pattern(cases[k].first + i))
                fail("Read %zu (%zu bytes from offset %zu): byte %zu is %#x, want %#x", k,
                     cases[k].second, cases[k].first, i, local[at[k] + i],
                     read_pattern(cases[k].first + i));
        bytes += cases[k].second;
    }
    link.sync(2);
    pass("%zu Reads (%" PRIu64 " bytes, 4 B .. 4 MiB) into malloc'ed memory, every byte right", n,
         bytes);
}

// ---- stream ------------------------------------------------------------------------------------

constexpr std::size_t kMaxMsg = 65536;
constexpr int kWindow = 32;

std::uint64_t fnv(const unsigned char* p, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
    std::size_t k = 0;
    for (; k + 8 <= n; k += 8) {  // FNV-1a over 64-bit words, then the tail bytes
        std::uint64_t w;
        std::memcpy(&w, p + k, 8);
        h = (h ^ w) * 1099511628211ull;
    }
    for (; k < n; ++k)
        h = (h ^ p[k]) * 1099511628211ull;
    return h;
}

// Message i: its size, and bytes derived from (seed, i).
std::size_t msg_size(std::uint64_t seed, std::uint64_t i) {
    std::mt19937_64 r(seed * 7919 + i);
    const unsigned pick = static_cast<unsigned>(r() % 100);
    if (pick < 60)
        return 16 + r() % 200;  // low-latency ring
    if (pick < 95)
        return 217 + r() % 8000;           // one high-bandwidth record
    return 8192 + r() % (kMaxMsg - 8192);  // big
}

void fill(unsigned char* p, std::size_t n, std::uint64_t seed, std::uint64_t i) {
    std::mt19937_64 r(seed ^ (i * 0x9e3779b97f4a7c15ull));
    for (std::size_t k = 0; k < n; k += 8) {  // 8 bytes a draw: 100 000 messages in TCG
        const std::uint64_t v = r();
        std::memcpy(p + k, &v, std::min<std::size_t>(n - k, 8));
    }
    std::memcpy(p, &i, std::min<std::size_t>(n, 8));  // sequence number first
}

// Where in the write slot at address `slot` a Write with Immediate of n
// bytes lands: small ones (stored by PIO) straddle a page boundary, so that
// one Write covers two pages of the server's malloc'ed buffer (two pieces of
// its MR, physically apart in a guest); larger ones at the slot's start.
// Both sides compute it from the same address (the server's buffer).
std::size_t write_offset(std::uint64_t slot, std::size_t n) {
    if (n > 1024)
        return 0;
    const std::uint64_t boundary = (slot + 1024 + 4095) & ~std::uint64_t{4095};
    return boundary - slot - n / 2;  // 512 .. 5119 bytes in: inside the 64 KiB slot
}

void stream_test(const char* server, int port, std::uint64_t count, std::uint64_t seed) {
    Dev d;
    Link link(server, port);
    Qp q(d, kWindow * 2, kWindow * 2);
    const Dest peer = link.exchange(q.dest(d));
    // Slots 0..kWindow-1: Sends; kWindow..2*kWindow-1: Writes with Immediate.
    std::vector<unsigned char> buf(2 * kWindow * kMaxMsg);
    ibv_mr* mr = d.reg(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    struct Keys {
        std::uint64_t addr;
        std::uint32_t rkey;
    } keys{reinterpret_cast<std::uintptr_t>(buf.data()), mr->rkey}, pk;
    link.send(&keys, sizeof keys);
    link.must_recv(&pk, sizeof pk);
    q.connect(peer, 7, 1);
    const double t0 = now_s();
    if (!server) {  // the server receives and checks
        auto repost = [&](std::uint64_t slot) {
            post_recv(
                q.qp, slot,
                {reinterpret_cast<std::uintptr_t>(buf.data() + slot * kMaxMsg), kMaxMsg, mr->lkey});
        };
        for (int s = 0; s < kWindow; ++s)
            repost(static_cast<std::uint64_t>(s));
        link.sync(1);
        std::vector<unsigned char> want(kMaxMsg);
        std::uint64_t bytes = 0, writes = 0;
        for (std::uint64_t i = 0; i < count; ++i) {
            const ibv_wc wc = wait_wc(d.cq, 1, 60)[0];
            if (wc.status != IBV_WC_SUCCESS)
                fail("message %" PRIu64 ": %s", i, ibv_wc_status_str(wc.status));
            const std::uint64_t slot = wc.wr_id;
            const unsigned char* got = buf.data() + slot * kMaxMsg;
            const std::size_t n = msg_size(seed, i);
            if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
                // The Write went to the slot named by the immediate.
                ++writes;
                got = buf.data() + (kWindow + ntohl(wc.imm_data) % kWindow) * kMaxMsg;
                got += write_offset(reinterpret_cast<std::uintptr_t>(got), msg_size(seed, i));
            }
            if (wc.byte_len != n)
                fail("message %" PRIu64 ": %u bytes, want %zu", i, wc.byte_len, n);
            fill(want.data(), n, seed, i);
            std::uint64_t seq = ~0ull;
            std::memcpy(&seq, got, std::min<std::size_t>(n, 8));
            if (n >= 8 && seq != i)
                fail("message %" PRIu64 " carries sequence number %" PRIu64 " (lost or reordered)",
                     i, seq);
            if (fnv(got, n) != fnv(want.data(), n))
                fail("message %" PRIu64 " (%zu bytes): checksum mismatch", i, n);
            bytes += n;
            repost(slot);
        }
        link.sync(2);
        pass("%" PRIu64 " messages (%" PRIu64 " Writes with Immediate), %" PRIu64
             " bytes, every checksum right, in order (%.1f s)",
             count, writes, bytes, now_s() - t0);
        return;
    }
    link.sync(1);
    // Sends from a window of slots; every 8th message is an RDMA Write with
    // Immediate into the server's write slot imm (reused only 8 * kWindow
    // messages later, long after the server checked it).
    std::uint64_t posted = 0, done = 0;
    while (done < count) {
        while (posted < count && posted - done < kWindow / 2) {
            const std::uint64_t slot = posted % kWindow;
            unsigned char* p = buf.data() + slot * kMaxMsg;
            const std::size_t n = msg_size(seed, posted);
            fill(p, n, seed, posted);
            ibv_sge sge{reinterpret_cast<std::uintptr_t>(p), static_cast<std::uint32_t>(n),
                        mr->lkey};
            ibv_send_wr w{};
            w.wr_id = posted;
            w.sg_list = &sge;
            w.num_sge = 1;
            w.send_flags = IBV_SEND_SIGNALED;
            if (posted % 8 == 7) {
                w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
                const std::uint32_t target = static_cast<std::uint32_t>((posted / 8) % kWindow);
                w.imm_data = htonl(target);
                const std::uint64_t slot_addr = pk.addr + (kWindow + target) * kMaxMsg;
                w.wr.rdma.remote_addr = slot_addr + write_offset(slot_addr, n);
                w.wr.rdma.rkey = pk.rkey;
            } else {
                w.opcode = IBV_WR_SEND;
            }
            post(q.qp, w);
            ++posted;
        }
        const ibv_wc wc = wait_wc(d.cq, 1, 60)[0];
        if (wc.status != IBV_WC_SUCCESS)
            fail("message %" PRIu64 ": %s", wc.wr_id, ibv_wc_status_str(wc.status));
        if (wc.wr_id != done)
            fail("completion for %" PRIu64 ", want %" PRIu64 " (send completions out of order)",
                 wc.wr_id, done);
        ++done;
    }
    link.sync(2);
    pass("%" PRIu64 " messages sent and completed in order (%.1f s, %.0f msg/s)", count,
         now_s() - t0, static_cast<double>(count) / (now_s() - t0));
}

// ---- peer --------------------------------------------------------------------------------------

constexpr int kPeerWindow = 16;

// peer and exit: how the server leaves after COUNT messages.
enum class Leave { quietly, with_exit };

// exit: polls the polling thread made, and the program's own exit handler.
// Registered before the device is opened, it runs after every handler and
// static destructor the libraries registered later, while the thread still
// polls: it gives the thread time to meet whatever they tore down.
std::atomic<std::uint64_t> g_polls{0};
void linger_at_exit() {
    const std::uint64_t before = g_polls.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::printf("tca_verbs_check exit: the polling thread polled %" PRIu64
                " times during the last exit handler\n",
                g_polls.load() - before);
    std::fflush(stdout);
}

void peer_test(const char* server, int port, std::uint64_t count, Leave leave) {
    if (!server && leave == Leave::with_exit)
        std::atexit(linger_at_exit);
    Dev d;
    Link link(server, port);
    Qp q(d, kPeerWindow * 2, kPeerWindow * 2);
    q.connect_over(link, d);
    constexpr std::size_t kSlot = 8192;  // both rings: up to 216 bytes LL, more HB
    std::vector<unsigned char> buf(kPeerWindow * kSlot);
    ibv_mr* mr = d.reg(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    auto sge_of = [&](std::uint64_t slot, std::uint32_t len) {
        return ibv_sge{reinterpret_cast<std::uintptr_t>(buf.data() + slot * kSlot), len, mr->lkey};
    };
    if (!server) {  // the server: receives until it dies
        for (int s = 0; s < kPeerWindow; ++s)
            post_recv(q.qp, static_cast<std::uint64_t>(s),
                      sge_of(static_cast<std::uint64_t>(s), kSlot));
        link.sync(1);
        for (std::uint64_t i = 0; i < count; ++i) {
            const ibv_wc wc = wait_wc(d.cq, 1, 120)[0];
            if (wc.status != IBV_WC_SUCCESS)
                fail("message %" PRIu64 ": %s", i, ibv_wc_status_str(wc.status));
            if (i == 100) {
                std::printf("tca_verbs_check %s: RECEIVING (%" PRIu64 " messages so far)\n", g_test,
                            i);
                std::fflush(stdout);
            }
            post_recv(q.qp, wc.wr_id, sge_of(wc.wr_id, kSlot));
        }
        if (leave == Leave::quietly) {
            std::printf("tca_verbs_check peer: server received %" PRIu64
                        " messages, exits now without a word\n",
                        count);
            std::fflush(stdout);
            _exit(0);
        }
        // A thread that keeps using the QP, the CQ and the MR until the
        // process is gone, and exit() from this one with all of them alive.
        std::thread([&] {
            for (;;) {
                ibv_wc wc;
                const int n = ibv_poll_cq(d.cq, 1, &wc);
                g_polls.fetch_add(1);
                if (n < 0)
                    return;  // not expected; the client's verdict tells
                if (n == 1 && wc.status == IBV_WC_SUCCESS) {
                    ibv_sge sge = sge_of(wc.wr_id, kSlot);
                    ibv_recv_wr r{};
                    r.wr_id = wc.wr_id;
                    r.sg_list = &sge;
                    r.num_sge = 1;
                    ibv_recv_wr* bad = nullptr;
                    (void)ibv_post_recv(q.qp, &r, &bad);  // may fail once the QP errs
                }
            }
        }).detach();
        std::printf("tca_verbs_check exit: server received %" PRIu64
                    " messages, calls exit(0) with its QP, CQ and MR alive and a thread "
                    "polling them\n",
                    count);
        std::fflush(stdout);
        std::exit(0);
    }
    link.sync(1);
    // Sends until the peer is gone; then every outstanding WR must complete.
    std::uint64_t posted = 0, done = 0, ok = 0;
    ibv_wc_status first = IBV_WC_SUCCESS;
    double t_fail = 0;
    const double t0 = now_s();
    while (first == IBV_WC_SUCCESS || done < posted) {
        while (first == IBV_WC_SUCCESS && posted - done < kPeerWindow) {
            const std::uint32_t len = posted % 3 == 2 ? 6000 : 64;
            ibv_sge sge = sge_of(posted % kPeerWindow, len);
            ibv_send_wr w = send_wr(&sge, posted);
            ibv_send_wr* bad = nullptr;
            if (int rc = ibv_post_send(q.qp, &w, &bad)) {
                if (rc == EINVAL && done < posted)
                    break;  // the QP went to ERR meanwhile: collect what is out
                fail("ibv_post_send: %s", std::strerror(rc));
            }
            ++posted;
        }
        if (done == posted)
            break;
        const ibv_wc wc = wait_wc(d.cq, 1, 300)[0];
        if (wc.wr_id != done)
            fail("completion for WR %" PRIu64 ", want %" PRIu64 " (out of posting order)", wc.wr_id,
                 done);
        ++done;
        if (wc.status == IBV_WC_SUCCESS) {
            if (first != IBV_WC_SUCCESS)
                fail("WR %" PRIu64 " succeeded after an earlier one failed", wc.wr_id);
            ++ok;
        } else if (first == IBV_WC_SUCCESS) {
            first = wc.status;
            t_fail = now_s();
            if (wc.status != IBV_WC_RETRY_EXC_ERR)
                fail("Send %" PRIu64 " to a dead peer: %s, want %s", wc.wr_id,
                     ibv_wc_status_str(wc.status), ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
        } else if (wc.status != IBV_WC_WR_FLUSH_ERR && wc.status != IBV_WC_RETRY_EXC_ERR) {
            fail("WR %" PRIu64 " after the failure: %s, want a flush", wc.wr_id,
                 ibv_wc_status_str(wc.status));
        }
    }
    if (first == IBV_WC_SUCCESS)
        fail("%" PRIu64 " Sends to a peer that should have died all succeeded", posted);
    pass("%" PRIu64 " Sends acknowledged, then %s; all %" PRIu64
         " outstanding WRs completed, %.1f s after the stream began",
         ok, ibv_wc_status_str(first), posted - ok, t_fail - t0);
}

// ---- messages on an RC QP (slowreg, slowconn, renew) -----------------------------------------

// n 64-byte messages in one MR; on the server, a receive posted for each.
struct Messages {
    static constexpr std::size_t kMsg = 64;
    std::vector<unsigned char> buf;
    ibv_mr* mr;
    Messages(Dev& d, Qp& q, int n)
        : buf(static_cast<std::size_t>(n) * kMsg),
          mr(d.reg(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE)) {
        if (g_server)
            for (int i = 0; i < n; ++i)
                post_recv(q.qp, static_cast<std::uint64_t>(i), sge(i));
    }
    ibv_sge sge(int i) {
        return {reinterpret_cast<std::uintptr_t>(&buf[static_cast<std::size_t>(i) * kMsg]), kMsg,
                mr->lkey};
    }
    // A signalled Send of message i.
    void send(Qp& q, int i) {
        ibv_sge one = sge(i);
        ibv_send_wr wr{};
        wr.wr_id = static_cast<std::uint64_t>(i);
        wr.sg_list = &one;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        post(q.qp, wr);
    }
    // The client: Sends 0 .. n-1, every one completed with success (checked
    // 32 at a time, within 30 s each).
    void send_acknowledged(Dev& d, Qp& q, int n) {
        const auto all_succeed = [&](int k) {
            for (const ibv_wc& wc : wait_wc(d.cq, k, 30))
                if (wc.status != IBV_WC_SUCCESS)
                    fail("Send %" PRIu64 ": %s", wc.wr_id, ibv_wc_status_str(wc.status));
        };
        for (int i = 0; i < n; ++i) {
            send(q, i);
            if (i % 32 == 31)
                all_succeed(32);
        }
        all_succeed(n % 32);
    }
    // The server: all n received, within 30 s.
    static void expect_received(Dev& d, int n) {
        for (const ibv_wc& wc : wait_wc(d.cq, n, 30))
            if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV)
                fail("receive %" PRIu64 ": %s", wc.wr_id, ibv_wc_status_str(wc.status));
    }
};

// ---- slowreg, slowconn, slowbounce --------------------------------------------------------------

// What the slow tests share: the client sends up to COUNT (at most 200)
// messages on the connected RC QP `q` while the server is held up; `second`
// is a QP both sides may connect.
struct SlowPair {
    Link link;
    Dev d;
    Qp q{d, 64, 256};
    Qp second{d, 4, 4};
    int n;
    Messages m{d, q, n};
    SlowPair(const char* server, int port, std::uint64_t count)
        : link(server, port), n(static_cast<int>(std::min<std::uint64_t>(count, 200))) {
        q.connect_over(link, d);
    }
};

// The server's main thread spends seconds in one verb (`slow`, which says
// what it did) while the client sends its messages: every Send must
// complete with success, i.e. the server's library acknowledged them
// meanwhile.
void slow_verb_test(const char* server, int port, std::uint64_t count,
                    const std::function<std::string(Link&, Dev&, Qp& second)>& slow,
                    const std::function<void(Link&, Dev&, Qp& second)>& client_first) {
    SlowPair s(server, port, count);
    auto& [link, d, q, second, n, m] = s;
    link.sync(1);
    if (g_server) {
        const double t0 = now_s();
        const std::string what = slow(link, d, second);
        const double took = now_s() - t0;
        Messages::expect_received(d, n);
        link.sync(2);
        pass("%s took %.1f s; %d messages received", what.c_str(), took, n);
        return;
    }
    client_first(link, d, second);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the server is in the verb
    const double t0 = now_s();
    m.send_acknowledged(d, q, n);
    const double took = now_s() - t0;
    link.sync(2);
    pass("%d Sends acknowledged in %.1f s while the server was in a slow verb", n, took);
}

// ibv_reg_mr held by the fake's PIN (the variable is read at each pin).
void slowreg_test(const char* server, int port, std::uint64_t count) {
    slow_verb_test(
        server, port, count,
        [](Link&, Dev& d, Qp&) {
            std::vector<unsigned char> more(1 << 20, 1);
            ::setenv("TCA_FAKE_PIN_DELAY_MS", "6000", 1);
            ibv_mr* slow = d.reg(more.data(), more.size(), IBV_ACCESS_LOCAL_WRITE);
            ::unsetenv("TCA_FAKE_PIN_DELAY_MS");
            ibv_dereg_mr(slow);
            return std::string("ibv_reg_mr");
        },
        [](Link&, Dev&, Qp&) {});
}

// ibv_modify_qp to RTR held by the fake's ALLOC of the peer's staging copy.
void slowconn_test(const char* server, int port, std::uint64_t count) {
    slow_verb_test(
        server, port, count,
        [](Link& link, Dev& d, Qp& second) {
            ::setenv("TCA_FAKE_ALLOC_DELAY_MS", "6000", 1);
            second.connect_over(link, d);
            ::unsetenv("TCA_FAKE_ALLOC_DELAY_MS");
            return std::string("connecting a QP");
        },
        [](Link& link, Dev& d, Qp& second) { second.connect_over(link, d); });
}

// A bounce buffer over the user's quota: the Write waits, the QPs do not.
void slowbounce_test(const char* server, int port, std::uint64_t count) {
    constexpr std::size_t kLen = 65536;
    SlowPair s(server, port, count);
    auto& [link, d, q, w, n, m] = s;
    w.connect_over(link, d);
    std::vector<unsigned char> buf(kLen + 16, 0);
    ibv_mr* mr = d.reg(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    struct Keys {
        std::uint64_t addr;
        std::uint32_t rkey;
    } keys{reinterpret_cast<std::uintptr_t>(buf.data()), mr->rkey}, pk;
    link.send(&keys, sizeof keys);
    link.must_recv(&pk, sizeof pk);
    link.sync(1);
    if (g_server) {
        for (std::size_t i = 0; i < kLen; ++i)
            buf[1 + i] = read_pattern(i);
        ::setenv("TCA_FAKE_ALLOC_DELAY_MS", "6000", 1);
        const double t0 = now_s();
        ibv_sge one{reinterpret_cast<std::uintptr_t>(&buf[1]), kLen, mr->lkey};
        ibv_send_wr wr = rdma_wr(&one, IBV_WR_RDMA_WRITE, pk.addr, pk.rkey, 1000);
        wr.send_flags = 0;  // unsignalled: the CQ holds the receives only
        post(w.qp, wr);
        const double posted = now_s() - t0;
        std::this_thread::sleep_for(std::chrono::seconds(5));
        // The fake driver's test control (tests/fake/fake_peach2.c).
        using Count = long (*)();
        const auto refusals =
            reinterpret_cast<Count>(::dlsym(RTLD_DEFAULT, "fake_nowait_refusals"));
        const long refused = refusals ? refusals() : -1;
        ::unsetenv("TCA_FAKE_ALLOC_DELAY_MS");
        Messages::expect_received(d, n);
        link.sync(2);
        link.sync(3);  // the client has the Write (started by progress meanwhile)
        // Progress starts the Write again on every pass (1 ms apart with the
        // program asleep); the library asks the driver only as its backoff
        // allows (<= 64 ms apart): ~80 refusals in the 5 s, not thousands.
        if (refusals && (refused < 1 || refused > 200))
            fail("the driver refused %ld NOWAIT allocations in 5 s: want 1..200 (a backoff)",
                 refused);
        pass(
            "ibv_post_send of the Write returned in %.3f s; %d messages received meanwhile; "
            "%ld allocations refused",
            posted, n, refused);
        return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the server has posted
    const double t0 = now_s();
    m.send_acknowledged(d, q, n);
    const double sent = now_s() - t0;
    link.sync(2);
    // The Write goes once the refusals stop (within a second or so of progress).
    for (std::size_t i = 0; i < kLen; ++i) {
        const double deadline = now_s() + 15;
        while (__atomic_load_n(&buf[i], __ATOMIC_ACQUIRE) != read_pattern(i))
            if (now_s() > deadline)
                fail("byte %zu of the Write is %#x, want %#x", i, buf[i], read_pattern(i));
    }
    link.sync(3);
    pass(
        "%d Sends acknowledged in %.1f s while the server's Write waited for its bounce "
        "buffer; the Write's %zu bytes arrived",
        n, sent, kLen);
}

// ---- renew, leaseout, slowrenew --------------------------------------------------------------

// Their RC pair: up to 40 messages, the QP connected.
struct RenewPair {
    Link link;
    Dev d;
    Qp q{d, 64, 64};
    int n;
    Messages m;
    RenewPair(const char* server, int port, std::uint64_t count)
        : link(server, port), n(static_cast<int>(std::min<std::uint64_t>(count, 40))), m(d, q, n) {
        q.connect_over(link, d);
    }
};

// The fake driver's read-proxy test control (tests/fake/fake_rp.c), which
// the server must preload.
void fake_control(const char* what, long value) {
    using Control = void (*)(const char*, long);
    const auto control = reinterpret_cast<Control>(::dlsym(RTLD_DEFAULT, "fake_rp_control"));
    if (!control)
        fail("needs the fake driver (LD_PRELOAD of libfake_peach2.so): no fake_rp_control");
    control(what, value);
}

// The server's library cannot renew its lease on the client's QP (the fake
// driver refuses its read-proxy submissions with EHOSTUNREACH, as the
// driver does while a link is down) while the client sends COUNT messages
// (at most 40) 60 ms apart, one at a time, past several renewals.
//   renew: only the next 3 submissions are refused (a link down for a
//   moment). Every Send completes with success: a lookup that failed is not
//   a peer that is gone, and the server's QP goes on acknowledging.
//   leaseout: every one is refused. Once its lease has run out the server's
//   QP writes nothing more to the client's (the name may have been freed),
//   so a Send ends with IBV_WC_RETRY_EXC_ERR, and the client passes then.
void renew_test(const char* server, int port, std::uint64_t count, bool for_good) {
    RenewPair p(server, port, count);
    auto& [link, d, q, n, m] = p;
    // renew: the first renewal (half a lease in) and two retries.
    if (g_server)
        fake_control("unreach", for_good ? 1000000 : 3);
    link.sync(1);
    if (g_server) {
        const double t0 = now_s();
        if (for_good) {
            link.sync(2);  // the client saw its Send fail
            pass("the client gave up on this QP after %.1f s of refused lookups", now_s() - t0);
            return;
        }
        Messages::expect_received(d, n);
        link.sync(2);
        pass("%d messages received in %.1f s, lookups refused meanwhile", n, now_s() - t0);
        return;
    }
    const double t0 = now_s();
    for (int i = 0; i < n; ++i) {
        m.send(q, i);
        const ibv_wc wc = wait_wc(d.cq, 1, 30)[0];
        if (for_good && wc.status == IBV_WC_RETRY_EXC_ERR) {
            link.sync(2);
            pass("Send %d (%.1f s in) ended with %s: the server's lease ran out", i, now_s() - t0,
                 ibv_wc_status_str(wc.status));
            return;
        }
        if (wc.status != IBV_WC_SUCCESS)
            fail("Send %" PRIu64 " (%.2f s in): %s", wc.wr_id, now_s() - t0,
                 ibv_wc_status_str(wc.status));
        std::this_thread::sleep_for(std::chrono::milliseconds(60));
    }
    if (for_good)
        fail("all %d Sends succeeded over %.1f s: the server's QP wrote past its lease", n,
             now_s() - t0);
    link.sync(2);
    pass("%d Sends over %.1f s acknowledged across the server's failed lease renewals", n,
         now_s() - t0);
}

// The client's part of slowrenew and lostrenew: the pair's Sends, 60 ms
// apart and one at a time, each of which must succeed; the seconds they
// took.
double send_spaced(RenewPair& p) {
    auto& [link, d, q, n, m] = p;
    link.sync(1);
    const double t0 = now_s();
    for (int i = 0; i < n; ++i) {
        m.send(q, i);
        const ibv_wc wc = wait_wc(d.cq, 1, 30)[0];
        if (wc.status != IBV_WC_SUCCESS)
            fail("Send %" PRIu64 " (%.2f s in): %s", wc.wr_id, now_s() - t0,
                 ibv_wc_status_str(wc.status));
        std::this_thread::sleep_for(std::chrono::milliseconds(60));
    }
    const double took = now_s() - t0;
    link.sync(2);
    return took;
}

// The server's lease renewals take 5 s each (the fake driver delays every
// read-proxy answer) while its program sleeps: only its progress thread can
// acknowledge the client's COUNT (at most 40) Sends, 60 ms apart. When the
// renewals ran in that thread, it acknowledged nothing from the first one
// (half a lease in) for 5 s, and the client's Sends ended with
// IBV_WC_RETRY_EXC_ERR after eight ack periods (4 s with the fake's 500 ms).
void slowrenew_test(const char* server, int port, std::uint64_t count) {
    RenewPair p(server, port, count);
    auto& [link, d, q, n, m] = p;
    if (g_server) {
        fake_control("delay_us", 5000000);
        link.sync(1);
        const double t0 = now_s();
        link.sync(2);  // the program made no call while the client sent
        const double slept = now_s() - t0;
        Messages::expect_received(d, n);
        fake_control("reset", 0);
        pass("%d messages received after %.1f s without a call, renewals taking 5 s", n, slept);
        return;
    }
    const double took = send_spaced(p);
    pass("%d Sends over %.1f s acknowledged while the server's lease lookups took 5 s", n, took);
}

// The server's first lease renewal is never answered (the fake driver
// drops it, as a request lost on the way or left unserved would be) while
// the client sends COUNT (at most 40) Sends 60 ms apart. libtca sends the
// lookup again after 100 ms, so the lease holds and every Send is
// acknowledged. Run with a request timeout shorter than the run
// (TCA_RP_TIMEOUT_MS): a renewal that waited for it would end the lease
// (the server says "ran out", the client's Send fails).
void lostrenew_test(const char* server, int port, std::uint64_t count) {
    RenewPair p(server, port, count);
    auto& [link, d, q, n, m] = p;
    if (g_server) {
        fake_control("drop", 1);
        link.sync(1);
        const double t0 = now_s();
        Messages::expect_received(d, n);
        link.sync(2);
        fake_control("reset", 0);
        pass("%d messages received in %.1f s, the first renewal lost", n, now_s() - t0);
        return;
    }
    const double took = send_spaced(p);
    pass("%d Sends over %.1f s acknowledged, the server's first renewal lost", n, took);
}

// The client writes into the server's MR through one rkey for 3 s, a Write
// every 20 ms, while each of its own lookups takes 150 ms (the fake driver
// answers late): no Write waits for one. The renewer keeps the lease on the
// rkey (1 s) going while it is in use; before, the first Write after it had
// run out made the lookup itself, under the engine lock that every QP of
// the context needs.
void slowkey_test(const char* server, int port) {
    RenewPair p(server, port, 1);
    auto& [link, d, q, n, m] = p;
    struct Key {
        std::uint64_t addr;
        std::uint32_t rkey;
    } key{};
    std::vector<std::uint64_t> words(512);  // the fake driver pins no stack
    std::uint64_t& word = words[0];
    ibv_mr* mr = d.reg(words.data(), words.size() * sizeof word,
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (g_server) {
        key = {reinterpret_cast<std::uintptr_t>(&word), mr->rkey};
        link.send(&key, sizeof key);
        std::uint64_t last = 0;
        link.must_recv(&last, sizeof last);  // after the client's last Write completed
        if (__atomic_load_n(&word, __ATOMIC_ACQUIRE) != last)
            fail("the MR holds %" PRIu64 ", the client's last Write wrote %" PRIu64, word, last);
        pass("the client's last Write (%" PRIu64 ") is in the MR", last);
        return;
    }
    link.must_recv(&key, sizeof key);
    constexpr double kRunS = 3.0, kSlowS = 0.1;
    const double t0 = now_s();
    double worst = 0, worst_at = 0;
    std::uint64_t i = 0;
    for (; now_s() - t0 < kRunS; ++i) {
        word = i + 1;
        ibv_sge one{reinterpret_cast<std::uintptr_t>(&word), sizeof word, mr->lkey};
        ibv_send_wr wr = rdma_wr(&one, IBV_WR_RDMA_WRITE, key.addr, key.rkey, i);
        const double t = now_s();
        post(q.qp, wr);
        const ibv_wc wc = wait_wc(d.cq, 1, 30)[0];
        if (wc.status != IBV_WC_SUCCESS)
            fail("Write %" PRIu64 " (%.2f s in): %s", i, t - t0, ibv_wc_status_str(wc.status));
        if (now_s() - t > worst) {
            worst = now_s() - t;
            worst_at = t - t0;
        }
        if (i == 0)
            fake_control("delay_us", 150000);  // the rkey's first lookup was quick
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    fake_control("reset", 0);
    link.send(&i, sizeof i);
    if (worst > kSlowS)
        fail("a Write took %.0f ms (%.2f s in): it waited for a lookup of the rkey", worst * 1e3,
             worst_at);
    pass("%" PRIu64
         " Writes over %.1f s through one rkey, the slowest %.1f ms, while every "
         "lookup took 150 ms",
         i, kRunS, worst * 1e3);
}

// ---- udgone --------------------------------------------------------------------------------

constexpr std::uint32_t kUdQkey = 0x11111111;
constexpr std::size_t kUdMsg = 64;

// A UD QP in RTS on the device's CQ.
ibv_qp* ud_qp(Dev& d, std::uint32_t max_send) {
    ibv_qp_init_attr a{};
    a.send_cq = d.cq;
    a.recv_cq = d.cq;
    a.cap.max_send_wr = max_send;
    a.cap.max_recv_wr = 16;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    a.qp_type = IBV_QPT_UD;
    ibv_qp* qp = ibv_create_qp(d.pd, &a);
    if (!qp)
        fail("ibv_create_qp (UD): %s", std::strerror(errno));
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    m.qkey = kUdQkey;
    if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
        fail("UD QP to INIT");
    m = ibv_qp_attr{};
    m.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(qp, &m, IBV_QP_STATE))
        fail("UD QP to RTR");
    m.qp_state = IBV_QPS_RTS;
    m.sq_psn = 0;
    if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN))
        fail("UD QP to RTS");
    return qp;
}

void udgone_test(const char* server, int port, std::uint64_t count) {
    Dev d;
    Link link(server, port);
    std::vector<unsigned char> buf(40 + kUdMsg);
    ibv_mr* mr = d.reg(buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    if (!server) {
        ibv_qp* gone = ud_qp(d, 16);
        const Dest old{gone->qp_num, 0, d.port.lid, {}, d.gid};
        link.send(&old, sizeof old);
        if (ibv_destroy_qp(gone))
            fail("ibv_destroy_qp");
        link.sync(1);  // destroyed
        link.sync(2);  // the client sent its datagrams to it
        ibv_qp* qp = ud_qp(d, 16);
        post_recv(qp, 1,
                  ibv_sge{reinterpret_cast<std::uintptr_t>(buf.data()),
                          static_cast<std::uint32_t>(buf.size()), mr->lkey});
        const Dest fresh{qp->qp_num, 0, d.port.lid, {}, d.gid};
        link.send(&fresh, sizeof fresh);
        const ibv_wc wc = wait_wc(d.cq, 1)[0];
        if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV || wc.byte_len != 40 + kUdMsg)
            fail("the datagram to the new QP: %s, %u bytes", ibv_wc_status_str(wc.status),
                 wc.byte_len);
        for (std::size_t i = 0; i < kUdMsg; ++i)
            if (buf[40 + i] != static_cast<unsigned char>(i ^ 0x5a))
                fail("byte %zu of the datagram is %#x", i, buf[40 + i]);
        link.sync(3);
        pass("a datagram to a new UD QP arrived intact after %" PRIu64 " to a destroyed one",
             count);
        return;
    }
    Dest old{};
    link.must_recv(&old, sizeof old);
    ibv_qp* qp = ud_qp(d, 16);
    ibv_ah_attr at = ah_attr_of(old);
    ibv_ah* ah = ibv_create_ah(d.pd, &at);
    if (!ah)
        fail("ibv_create_ah: %s", std::strerror(errno));
    for (std::size_t i = 0; i < kUdMsg; ++i)
        buf[i] = static_cast<unsigned char>(i ^ 0x5a);
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf.data()), static_cast<std::uint32_t>(kUdMsg),
                mr->lkey};
    auto send_to = [&](std::uint32_t qpn, std::uint64_t id) {
        ibv_send_wr w = send_wr(&sge, id);
        w.wr.ud.ah = ah;
        w.wr.ud.remote_qpn = qpn;
        w.wr.ud.remote_qkey = kUdQkey;
        post(qp, w);
        const ibv_wc wc = wait_wc(d.cq, 1)[0];
        if (wc.status != IBV_WC_SUCCESS || wc.wr_id != id)
            fail("datagram %" PRIu64 " to QP %#x: %s", id, qpn, ibv_wc_status_str(wc.status));
    };
    link.sync(1);
    const double t0 = now_s();
    for (std::uint64_t i = 0; i < count; ++i)
        send_to(old.qpn, i);
    const double took = now_s() - t0;
    link.sync(2);
    Dest fresh{};
    link.must_recv(&fresh, sizeof fresh);
    send_to(fresh.qpn, count);
    link.sync(3);
    pass("%" PRIu64
         " datagrams to a destroyed UD QP completed in %.1f ms (%.1f us each); one to "
         "a new QP arrived",
         count, took * 1e3, took * 1e6 / static_cast<double>(count ? count : 1));
}

// ---- remr ----------------------------------------------------------------------------------

constexpr std::size_t kRemrBytes = 64 << 10;
constexpr int kRemrCases = 3;

struct RemrInfo {
    std::uint64_t addr[kRemrCases];
    std::uint32_t rkey[kRemrCases];
};

unsigned char remr_pattern(int c, std::size_t i) {
    return static_cast<unsigned char>(i * 7 + 31 * c + 1);
}

// Where the client writes in each region: a PIO-sized and a DMA-sized piece.
constexpr std::pair<std::size_t, std::size_t> kRemrPieces[] = {{8, 64}, {4096 + 16, 16384}};

void* remr_map() {
    void* p =
        ::mmap(nullptr, kRemrBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        fail("mmap: %s", std::strerror(errno));
    std::memset(p, 0xab, kRemrBytes);
    return p;
}

void remr_test(const char* server, int port) {
    Dev d;
    Link link(server, port);
    Qp q(d, 16, 16);
    q.connect_over(link, d);
    constexpr int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (!server) {
        unsigned char* r[kRemrCases];
        ibv_mr* keep[kRemrCases];
        RemrInfo info{};
        // 0: registered twice, the first MR deregistered.
        r[0] = static_cast<unsigned char*>(remr_map());
        ibv_mr* first = d.reg(r[0], kRemrBytes, rw);
        keep[0] = d.reg(r[0], kRemrBytes, rw);
        if (ibv_dereg_mr(first))
            fail("ibv_dereg_mr of the first of two MRs");
        // 1: registered twice, the second MR deregistered.
        r[1] = static_cast<unsigned char*>(remr_map());
        keep[1] = d.reg(r[1], kRemrBytes, rw);
        if (ibv_dereg_mr(d.reg(r[1], kRemrBytes, rw)))
            fail("ibv_dereg_mr of the second of two MRs");
        // 2: registered, unmapped, new pages at the same address registered,
        // the old MR deregistered last. The old pages stay reachable to
        // check that nothing was written into them.
        r[2] = static_cast<unsigned char*>(remr_map());
        ibv_mr* old = d.reg(r[2], kRemrBytes, rw);
        // Page by page: the registration may have split the range into mappings.
        auto* old_pages = static_cast<unsigned char*>(remr_map());
        for (std::size_t at = 0; at < kRemrBytes; at += 4096)
            if (::mremap(r[2] + at, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED, old_pages + at) ==
                MAP_FAILED)
                fail("mremap: %s", std::strerror(errno));
        if (::mmap(r[2], kRemrBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != r[2])
            fail("mmap at %p: %s", static_cast<void*>(r[2]), std::strerror(errno));
        std::memset(r[2], 0xab, kRemrBytes);
        keep[2] = d.reg(r[2], kRemrBytes, rw);
        if (ibv_dereg_mr(old))
            fail("ibv_dereg_mr of the MR of the unmapped pages");
        for (int c = 0; c < kRemrCases; ++c) {
            info.addr[c] = reinterpret_cast<std::uintptr_t>(r[c]);
            info.rkey[c] = keep[c]->rkey;
        }
        link.send(&info, sizeof info);
        link.sync(1);  // the client wrote and read
        for (int c = 0; c < kRemrCases; ++c)
            for (const auto& [off, len] : kRemrPieces)
                for (std::size_t i = 0; i < len; ++i)
                    if (r[c][off + i] != remr_pattern(c, i))
                        fail(
                            "region %d: byte %zu is %#x, want %#x: the Write did not land in the "
                            "MR's pages",
                            c, off + i, r[c][off + i], remr_pattern(c, i));
        for (std::size_t i = 0; i < kRemrBytes; ++i)
            if (old_pages[i] != 0xab)
                fail("byte %zu of the unmapped pages changed to %#x", i, old_pages[i]);
        for (ibv_mr* mr : keep)
            if (ibv_dereg_mr(mr))
                fail("ibv_dereg_mr");
        pass(
            "Writes and Reads through MRs that outlived a twin's deregistration or a remap "
            "landed in their own pages");
        return;
    }
    RemrInfo peer;
    link.must_recv(&peer, sizeof peer);
    std::vector<unsigned char> local(2 * 16384 + 64);
    ibv_mr* lm = d.reg(local.data(), local.size(), IBV_ACCESS_LOCAL_WRITE);
    std::uint64_t id = 0;
    for (int c = 0; c < kRemrCases; ++c) {
        for (const auto& [off, len] : kRemrPieces) {
            for (std::size_t i = 0; i < len; ++i)
                local[i] = remr_pattern(c, i);
            ibv_sge out{reinterpret_cast<std::uintptr_t>(local.data()),
                        static_cast<std::uint32_t>(len), lm->lkey};
            ibv_send_wr w =
                rdma_wr(&out, IBV_WR_RDMA_WRITE, peer.addr[c] + off, peer.rkey[c], id++);
            post(q.qp, w);
            ibv_wc wc = wait_wc(d.cq, 1)[0];
            if (wc.status != IBV_WC_SUCCESS)
                fail("region %d: Write of %zu bytes: %s", c, len, ibv_wc_status_str(wc.status));
            unsigned char* back = local.data() + 16384;
            std::memset(back, 0, len);
            ibv_sge in{reinterpret_cast<std::uintptr_t>(back), static_cast<std::uint32_t>(len),
                       lm->lkey};
            w = rdma_wr(&in, IBV_WR_RDMA_READ, peer.addr[c] + off, peer.rkey[c], id++);
            post(q.qp, w);
            wc = wait_wc(d.cq, 1)[0];
            if (wc.status != IBV_WC_SUCCESS)
                fail("region %d: Read of %zu bytes: %s", c, len, ibv_wc_status_str(wc.status));
            if (std::memcmp(back, local.data(), len))
                fail("region %d: Read %zu bytes back, not what was written", c, len);
        }
    }
    link.sync(1);
    pass("%d Writes and %d Reads through %d MRs, all succeeded and read back", kRemrCases * 2,
         kRemrCases * 2, kRemrCases);
}

// ---- hold --------------------------------------------------------------------------------------

void hold_test(std::uint64_t mib) {
    Dev d;
    std::vector<std::vector<unsigned char>> bufs;
    for (std::uint64_t i = 0; i < mib; ++i) {
        bufs.emplace_back(1 << 20, 1);
        d.reg(bufs.back().data(), bufs.back().size(),
              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    }
    std::printf("tca_verbs_check hold: HOLDING %" PRIu64 " MiB in %" PRIu64 " MRs\n", mib, mib);
    std::fflush(stdout);
    for (;;)
        ::pause();
}

void usage() {
    std::fprintf(
        stderr,
        "usage: tca_verbs_check [-p PORT] [-n COUNT] [-s SEED] "
        "access|rnr|badwr|flush|read|stream|peer|exit|slowreg|slowconn|slowbounce|remr|udgone|"
        "renew|leaseout|slowrenew|lostrenew|slowkey|hold "
        "[SERVER]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    int port = 18515;
    std::uint64_t count = 1000, seed = 1;
    int c;
    while ((c = getopt(argc, argv, "p:n:s:")) != -1) {
        switch (c) {
        case 'p': port = std::atoi(optarg); break;
        case 'n': count = std::strtoull(optarg, nullptr, 0); break;
        case 's': seed = std::strtoull(optarg, nullptr, 0); break;
        default: usage();
        }
    }
    if (optind >= argc)
        usage();
    g_test = argv[optind];
    const char* server = optind + 1 < argc ? argv[optind + 1] : nullptr;
    g_server = server == nullptr;
    std::srand(static_cast<unsigned>(::getpid()));
    const std::string t = g_test;
    if (t == "access")
        access_test(server, port);
    else if (t == "rnr")
        rnr_test(server, port);
    else if (t == "badwr")
        badwr_test(server, port);
    else if (t == "flush")
        flush_test(server, port);
    else if (t == "read")
        read_test(server, port);
    else if (t == "stream")
        stream_test(server, port, count, seed);
    else if (t == "peer")
        peer_test(server, port, count, Leave::quietly);
    else if (t == "exit")
        peer_test(server, port, count, Leave::with_exit);
    else if (t == "slowreg")
        slowreg_test(server, port, count);
    else if (t == "slowbounce")
        slowbounce_test(server, port, count);
    else if (t == "slowconn")
        slowconn_test(server, port, count);
    else if (t == "remr")
        remr_test(server, port);
    else if (t == "udgone")
        udgone_test(server, port, count);
    else if (t == "renew")
        renew_test(server, port, count, false);
    else if (t == "leaseout")
        renew_test(server, port, count, true);
    else if (t == "slowrenew")
        slowrenew_test(server, port, count);
    else if (t == "lostrenew")
        lostrenew_test(server, port, count);
    else if (t == "slowkey")
        slowkey_test(server, port);
    else if (t == "hold")
        hold_test(count);
    else
        usage();
    return 0;
}
