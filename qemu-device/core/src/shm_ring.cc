// The shared-memory ring of a same-host cable (peach2_shm_ring.h).
//
// Layout of the shared memory: a header of PEACH2_SHM_RING_HEADER bytes,
// then data_size bytes of data. head and tail count bytes since the ring
// was created (64-bit, never wrap in practice); the byte at index i lives
// at data[i % data_size]. The producer owns head and the data between tail
// and head+free; the consumer owns tail. Each index sits in its own cache
// line so the two sides do not bounce one line for every store.
#include "peach2_shm_ring.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <new>

namespace {

struct Header {
    uint32_t magic;
    uint32_t version;
    uint64_t data_size;
    alignas(64) uint64_t head;              // written by the producer
    alignas(64) uint64_t tail;              // written by the consumer
    uint32_t consumer_polling;              // ... and this (no kick needed)
    alignas(64) uint32_t producer_waiting;  // set by the producer, cleared by the consumer
};
static_assert(sizeof(Header) <= PEACH2_SHM_RING_HEADER);

bool valid_size(size_t n) {
    return n >= PEACH2_SHM_RING_MIN && n <= PEACH2_SHM_RING_MAX && (n & (n - 1)) == 0;
}

void say(char* err, size_t errlen, const char* msg) {
    if (err && errlen)
        std::snprintf(err, errlen, "%s", msg);
}

template <typename T>
std::atomic_ref<T> shared(T& field) {
    return std::atomic_ref<T>(field);
}

}  // namespace

struct peach2_shm_ring {
    Header* hdr;
    unsigned char* data;
    uint64_t size;  // our own copy: the peer may rewrite the header's
    uint64_t mine;  // the index this side owns (head or tail), our copy
    const char* error = nullptr;
};

extern "C" {

size_t peach2_shm_ring_mem_size(size_t data_size) {
    return valid_size(data_size) ? PEACH2_SHM_RING_HEADER + data_size : 0;
}

peach2_shm_ring* peach2_shm_ring_create(void* mem, size_t mem_len, size_t data_size, char* err,
                                        size_t errlen) {
    if (!mem || !valid_size(data_size) || mem_len != peach2_shm_ring_mem_size(data_size)) {
        say(err, errlen, "ring size is not a power of two in 4 KiB .. 256 MiB, or memory size differs");
        return nullptr;
    }
    auto* h = static_cast<Header*>(mem);
    std::memset(mem, 0, PEACH2_SHM_RING_HEADER);
    h->version = PEACH2_SHM_RING_VERSION;
    h->data_size = data_size;
    shared(h->magic).store(PEACH2_SHM_RING_MAGIC, std::memory_order_release);
    return new (std::nothrow)
        peach2_shm_ring{h, static_cast<unsigned char*>(mem) + PEACH2_SHM_RING_HEADER, data_size, 0};
}

peach2_shm_ring* peach2_shm_ring_attach(void* mem, size_t mem_len, char* err, size_t errlen) {
    if (!mem || mem_len < PEACH2_SHM_RING_HEADER) {
        say(err, errlen, "shared memory smaller than a ring header");
        return nullptr;
    }
    auto* h = static_cast<Header*>(mem);
    if (shared(h->magic).load(std::memory_order_acquire) != PEACH2_SHM_RING_MAGIC ||
        h->version != PEACH2_SHM_RING_VERSION) {
        say(err, errlen, "not a PEACH2 link ring (magic or version)");
        return nullptr;
    }
    const uint64_t size = h->data_size;  // read once
    if (!valid_size(size) || mem_len != PEACH2_SHM_RING_HEADER + size) {
        say(err, errlen, "ring size does not match the shared memory");
        return nullptr;
    }
    const uint64_t tail = shared(h->tail).load(std::memory_order_acquire);
    return new (std::nothrow)
        peach2_shm_ring{h, static_cast<unsigned char*>(mem) + PEACH2_SHM_RING_HEADER, size, tail};
}

void peach2_shm_ring_free(peach2_shm_ring* r) { delete r; }

const char* peach2_shm_ring_error(const peach2_shm_ring* r) { return r ? r->error : "no ring"; }

size_t peach2_shm_ring_write(peach2_shm_ring* r, const void* buf, size_t len) {
    if (!r || r->error)
        return 0;
    const auto* src = static_cast<const unsigned char*>(buf);
    size_t done = 0;
    bool waiting = false;
    while (done < len) {
        const uint64_t tail = shared(r->hdr->tail).load(std::memory_order_seq_cst);
        const uint64_t used = r->mine - tail;
        if (used > r->size) {
            r->error = "the consumer's index is out of range";
            return done;
        }
        const uint64_t room = r->size - used;
        if (room == 0) {
            if (waiting)
                return done;  // still full after saying so: the consumer will kick
            // Say so, then look again: a consumer that emptied the ring
            // before it saw the flag would never kick.
            shared(r->hdr->producer_waiting).store(1, std::memory_order_seq_cst);
            waiting = true;
            continue;
        }
        const uint64_t n = room < len - done ? room : len - done;
        const uint64_t at = r->mine & (r->size - 1);
        const uint64_t first = n < r->size - at ? n : r->size - at;
        std::memcpy(r->data + at, src + done, first);
        std::memcpy(r->data, src + done + first, n - first);
        r->mine += n;
        done += n;
        shared(r->hdr->head).store(r->mine, std::memory_order_release);
    }
    return done;
}

bool peach2_shm_ring_consumer_needs_kick(peach2_shm_ring* r) {
    // A full fence between the head store (in write, a release store)
    // and this load: x86 may let a load pass an earlier store, and a
    // consumer that stops polling clears the flag and then looks at head;
    // with the fence on both sides one of them sees the other (measured:
    // without it a ping-pong lost a wake-up within its first messages).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return r && !r->error && shared(r->hdr->consumer_polling).load(std::memory_order_seq_cst) == 0;
}

size_t peach2_shm_ring_set_polling(peach2_shm_ring* r, bool polling) {
    if (!r || r->error)
        return 0;
    shared(r->hdr->consumer_polling).store(polling ? 1 : 0, std::memory_order_seq_cst);
    return peach2_shm_ring_readable(r);
}

size_t peach2_shm_ring_readable(peach2_shm_ring* r) {
    if (!r || r->error)
        return 0;
    const uint64_t avail = shared(r->hdr->head).load(std::memory_order_acquire) - r->mine;
    if (avail > r->size) {
        r->error = "the producer's index is out of range";
        return 0;
    }
    return avail;
}

size_t peach2_shm_ring_read(peach2_shm_ring* r, void* buf, size_t len, bool* kick_producer) {
    *kick_producer = false;
    const uint64_t avail = peach2_shm_ring_readable(r);
    if (avail == 0)
        return 0;
    const uint64_t n = avail < len ? avail : len;
    const uint64_t at = r->mine & (r->size - 1);
    const uint64_t first = n < r->size - at ? n : r->size - at;
    auto* dst = static_cast<unsigned char*>(buf);
    std::memcpy(dst, r->data + at, first);
    std::memcpy(dst + first, r->data, n - first);
    r->mine += n;
    shared(r->hdr->tail).store(r->mine, std::memory_order_seq_cst);
    // seq_cst store, then seq_cst exchange: the producer's "waiting" flag
    // set before it re-read tail is seen here, or it saw the new tail.
    *kick_producer = shared(r->hdr->producer_waiting).exchange(0, std::memory_order_seq_cst) != 0;
    return n;
}

}  // extern "C"
