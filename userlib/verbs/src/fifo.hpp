// SPDX-License-Identifier: MIT
// Fifo<T>: the queue of work requests (send queue, receive queue, SRQ)
// without an allocation per request.
//
// std::deque allocates a block per 512 bytes, and a SendOp or a RecvWr (16
// SGEs) is bigger, so every posted WR cost a malloc and its completion a
// free: three of each per UCX tag_lat iteration, ~14 % of the library's
// instructions on that path, and calls are dear under TCG. A Fifo is a
// circular buffer that keeps its slots: it grows (doubling) to the queue's
// high-water mark and never shrinks, and a slot is reset when its element
// leaves, by T::recycle() if T has one (keeping its own buffers' capacity)
// or by assigning T{}, so that what the element held is released then, as
// the deque's destructor call did.
//
// Unlike std::deque, growing moves the elements: no reference to one may be
// held across push_back(). The verbs post (push) and complete (pop) under the
// Engine lock, and nothing keeps an element's address between calls.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

namespace pv {

template <class T>
class Fifo {
public:
    template <class Q, class E>
    class Iter {
    public:
        Iter(Q* q, std::size_t i) : q_(q), i_(i) {}
        E& operator*() const { return q_->at(i_); }
        E* operator->() const { return &q_->at(i_); }
        Iter& operator++() {
            ++i_;
            return *this;
        }
        bool operator==(const Iter& o) const { return i_ == o.i_; }

    private:
        Q* q_;
        std::size_t i_;  // position from the front
    };
    using iterator = Iter<Fifo, T>;
    using const_iterator = Iter<const Fifo, const T>;

    bool empty() const noexcept { return count_ == 0; }
    std::size_t size() const noexcept { return count_; }
    T& front() noexcept { return slots_[head_]; }
    const T& front() const noexcept { return slots_[head_]; }

    // A clean slot at the back, to fill in.
    T& push_back() {
        if (count_ == cap_)
            grow();
        ++count_;
        return at(count_ - 1);
    }
    void push_back(T&& v) { push_back() = std::move(v); }
    void push_back(const T& v) { push_back() = v; }

    void pop_front() {
        reset(slots_[head_]);
        head_ = head_ + 1 == cap_ ? 0 : head_ + 1;
        --count_;
    }
    void clear() {
        while (count_)
            pop_front();
    }

    iterator begin() noexcept { return {this, 0}; }
    iterator end() noexcept { return {this, count_}; }
    const_iterator begin() const noexcept { return {this, 0}; }
    const_iterator end() const noexcept { return {this, count_}; }

    T& at(std::size_t i) noexcept { return slots_[wrap(i)]; }
    const T& at(std::size_t i) const noexcept { return slots_[wrap(i)]; }

private:
    static void reset(T& v) {
        if constexpr (requires { v.recycle(); })
            v.recycle();
        else
            v = T{};
    }
    std::size_t wrap(std::size_t i) const noexcept {
        const std::size_t k = head_ + i;
        return k >= cap_ ? k - cap_ : k;
    }
    void grow() {
        const std::size_t cap = cap_ ? 2 * cap_ : 8;
        auto slots = std::make_unique<T[]>(cap);
        for (std::size_t i = 0; i < count_; ++i)
            slots[i] = std::move(at(i));
        slots_ = std::move(slots);
        cap_ = cap;
        head_ = 0;
    }

    std::unique_ptr<T[]> slots_;
    std::size_t cap_ = 0;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
};

}  // namespace pv
