// SPDX-License-Identifier: MIT
// The library's only global state: one lazily opened Context, a mutex that
// serialises everything that changes it, and an atomic pointer for the PIO
// path, which must not take a lock; and how every C entry point keeps C++
// exceptions from escaping into C callers. library.cpp also holds the C
// API of the device and its memory (tcaInit ... tcaGetHandle).
#pragma once

#include <cerrno>
#include <mutex>
#include <new>

#include "context.hpp"

namespace tca {

// The only exceptions the library can raise are allocation failures
// (containers in the context); they become -ENOMEM.
template <class Fn>
int guarded(Fn&& fn) noexcept {
    try {
        return fn();
    } catch (const std::bad_alloc&) {
        return -ENOMEM;
    } catch (...) {
        return -EIO;
    }
}

// Opens the device if needed (TCA_DEVICE or /dev/peach2-0). Caller holds
// the lock. 0 and *out set, or a negative code.
int context_locked(Context** out);

std::mutex& library_mutex();

// Runs fn(Context &) under the lock, opening the device first if needed.
template <class Fn>
int with_context(Fn&& fn) {
    std::lock_guard<std::mutex> lock(library_mutex());
    Context* c = nullptr;
    if (int rc = context_locked(&c))
        return rc;
    return fn(*c);
}

// Lock-free: the open context for PIO, opening it (under the lock) the
// first time. The pointer stays valid until tcaFinalize().
int context_fast(Context** out);

// Runs slow(Context &) without the lock, then, if it returned 0,
// fn(Context &) under it; opens the device first if needed. For driver
// calls that may wait seconds (PIN and ALLOC wait for the user's
// quarantined memory) while the process's other threads must go on;
// slow must touch no shared state of the context.
template <class Slow, class Fn>
int with_context_after(Slow&& slow, Fn&& fn) {
    Context* c = nullptr;
    if (int rc = context_fast(&c))
        return rc;
    if (int rc = slow(*c))
        return rc;
    std::lock_guard<std::mutex> lock(library_mutex());
    return fn(*c);
}

// The open context or nullptr; never opens. Lock-free (an atomic load):
// callers that do not hold the lock (tcaTest/tcaWait/tcaCancel) rely on
// tcaFinalize() not running concurrently with any other call, as tca.h
// requires; methods that need the lock must still take it.
Context* context_if_open();

// Closes the device and forgets the context.
void close_context();

// tcaMalloc with PEACH2_ALLOC_* flags: PEACH2_ALLOC_NOWAIT makes an
// allocation over the user's quota fail at once (-EDQUOT) instead of
// waiting for the user's quarantined memory (for callers that hold a lock
// others need, e.g. the Verbs library's engine).
int malloc_buffer(void** ptr, std::size_t size, std::uint32_t alloc_flags);

}  // namespace tca
