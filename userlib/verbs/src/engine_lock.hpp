// SPDX-License-Identifier: MIT
// The lock every object of one open device lives under (Engine::lock()).
//
// Why not std::mutex: every verb takes this lock, and a ping-pong takes it
// three or four times per message on each side. In an emulated (TCG) guest
// a pthread_mutex_lock/unlock pair costs ~70-85 ns (calls through the PLT,
// each call and return a translation-block lookup), an inline
// compare-and-swap and fetch-sub ~6 ns (docs/notes.md, thirty-seventh
// session). This is the three-state futex mutex of U. Drepper, "Futexes Are
// Tricky" (mutex3), as glibc's own mutex is: uncontended, lock() and
// unlock() are one atomic instruction each and make no call; a thread that
// finds it held sleeps on a futex, and unlock() wakes one sleeper whenever
// one may sleep. Raw futex calls, not std::atomic wait/notify: libstdc++ 12's
// notify_one skips the wake-up when its own count of waiters reads zero, and
// that read may pass the unlocking store (x86 lets a load overtake an
// earlier store), so a waiter could sleep through the unlock for good (the
// likely cause of MPI one-sided jobs losing their peers with the first
// version of this lock; docs/notes.md, thirty-seventh session). It meets the Lockable
// requirements (std::lock_guard, std::unique_lock); it is not recursive and
// not fair, like std::mutex.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace pv {

class EngineLock {
public:
    EngineLock() = default;
    EngineLock(const EngineLock&) = delete;
    EngineLock& operator=(const EngineLock&) = delete;

    void lock() noexcept {
        int seen = kFree;
        if (!state_.compare_exchange_strong(seen, kHeld, std::memory_order_acquire,
                                            std::memory_order_relaxed))
            lock_contended(seen);
    }
    bool try_lock() noexcept {
        int seen = kFree;
        return state_.compare_exchange_strong(seen, kHeld, std::memory_order_acquire,
                                              std::memory_order_relaxed);
    }
    void unlock() noexcept {
        // kHeld -> kFree: nobody sleeps. kWaited: someone may; wake one.
        if (state_.fetch_sub(1, std::memory_order_release) != kHeld) {
            state_.store(kFree, std::memory_order_release);
            futex(FUTEX_WAKE_PRIVATE, 1);
        }
    }

private:
    static constexpr int kFree = 0;
    static constexpr int kHeld = 1;    // held, nobody waits
    static constexpr int kWaited = 2;  // held, and a thread may be waiting

    // Marks the lock kWaited (so that its holder's unlock wakes someone)
    // and sleeps until it is free; returns holding it, still marked kWaited
    // (another sleeper may exist: a spurious wake-up costs one system call).
    [[gnu::noinline]] void lock_contended(int seen) noexcept {
        if (seen != kWaited)
            seen = state_.exchange(kWaited, std::memory_order_acquire);
        while (seen != kFree) {
            futex(FUTEX_WAIT_PRIVATE, kWaited);  // returns at once unless still kWaited
            seen = state_.exchange(kWaited, std::memory_order_acquire);
        }
    }
    void futex(int op, int value) noexcept {
        static_assert(sizeof(state_) == sizeof(int) && std::atomic<int>::is_always_lock_free);
        ::syscall(SYS_futex, reinterpret_cast<int*>(&state_), op, value, nullptr, nullptr, 0);
    }

    std::atomic<int> state_{kFree};
};

}  // namespace pv
