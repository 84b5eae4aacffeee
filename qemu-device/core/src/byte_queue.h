// A FIFO of bytes with a size limit: the send queue of one link.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace peach2 {

class ByteQueue {
public:
    explicit ByteQueue(size_t limit) : limit_(limit) {}

    size_t size() const { return buf_.size() - head_; }
    bool empty() const { return size() == 0; }
    // True if n more bytes fit under the limit.
    bool fits(size_t n) const { return n <= limit_ && size() <= limit_ - n; }

    // Let `write` append bytes at the back (e.g. encode a packet in place,
    // without a temporary buffer).
    template <typename F>
    void append(F&& write) {
        write(buf_);
    }
    std::span<const uint8_t> front() const { return {buf_.data() + head_, size()}; }
    void consume(size_t n) {
        head_ += n < size() ? n : size();
        // Compact once the dead prefix dominates, so memory stays bounded.
        if (head_ == buf_.size()) {
            buf_.clear();
            head_ = 0;
        } else if (head_ > 65536 && head_ > buf_.size() / 2) {
            buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(head_));
            head_ = 0;
        }
    }
    void clear() {
        buf_.clear();
        head_ = 0;
    }

private:
    std::vector<uint8_t> buf_;
    size_t head_ = 0;
    size_t limit_;
};

}  // namespace peach2
