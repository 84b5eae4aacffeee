// SPDX-License-Identifier: MIT
// EngineLock (engine_lock.hpp): mutual exclusion under contention, try_lock,
// and an unlock that wakes a thread sleeping in lock().
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "engine_lock.hpp"

using namespace pv;
using namespace std::chrono_literals;

TEST(EngineLock, ExcludesUnderContention) {
    EngineLock lock;
    constexpr int kThreads = 4, kRounds = 200000;
    // A non-atomic read-modify-write with a yield inside: without exclusion
    // increments are lost (and two holders are seen at once).
    long counter = 0;
    std::atomic<int> inside{0}, overlaps{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < kRounds; ++i) {
                std::lock_guard<EngineLock> g(lock);
                if (inside.fetch_add(1, std::memory_order_relaxed) != 0)
                    overlaps.fetch_add(1, std::memory_order_relaxed);
                const long v = counter;
                if (i % 1024 == 0)
                    std::this_thread::yield();
                counter = v + 1;
                inside.fetch_sub(1, std::memory_order_relaxed);
            }
        });
    for (std::thread& th : threads)
        th.join();
    EXPECT_EQ(counter, long{kThreads} * kRounds);
    EXPECT_EQ(overlaps.load(), 0);
}

TEST(EngineLock, TryLockFailsWhileHeldAndSucceedsWhenFree) {
    EngineLock lock;
    ASSERT_TRUE(lock.try_lock());
    bool other = true;
    std::thread([&] { other = lock.try_lock(); }).join();
    EXPECT_FALSE(other);
    lock.unlock();
    std::thread([&] {
        other = lock.try_lock();
        if (other)
            lock.unlock();
    }).join();
    EXPECT_TRUE(other);
    std::unique_lock<EngineLock> g(lock, std::try_to_lock);  // as Engine::lock_patiently
    EXPECT_TRUE(g.owns_lock());
}

TEST(EngineLock, UnlockWakesASleepingWaiter) {
    // Static: a waiter never woken is left behind (detached), not joined forever.
    static EngineLock lock;
    static std::atomic<bool> got{false};
    lock.lock();
    std::thread waiter([&] {
        lock.lock();
        got = true;
        lock.unlock();
    });
    std::this_thread::sleep_for(50ms);  // the waiter is asleep in lock() by now
    EXPECT_FALSE(got.load());
    lock.unlock();
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!got.load() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    if (!got.load()) {
        waiter.detach();
        FAIL() << "the waiter was not woken by unlock()";
    }
    waiter.join();
    // Free again after the contended episode: the next lock takes the fast path.
    EXPECT_TRUE(lock.try_lock());
    lock.unlock();
}
