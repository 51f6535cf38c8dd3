#pragma once
// Little-endian byte writing and bounds-checked reading for the entry and archive formats.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace kiln::cache::detail {

/// Appends little-endian integers and length-prefixed strings to a byte string.
class ByteWriter {
  public:
    explicit ByteWriter(std::string& out)
        : m_out(out) {}

    void u32(std::uint32_t value) { put(value, 4); }
    void u64(std::uint64_t value) { put(value, 8); }
    void f64(double value) {
        std::uint64_t bits;
        std::memcpy(&bits, &value, sizeof bits);
        u64(bits);
    }
    void raw(std::string_view bytes) { m_out.append(bytes.data(), bytes.size()); }
    /// u32 length, then the bytes; the caller keeps strings under 4 GiB.
    void string(std::string_view text) {
        u32(static_cast<std::uint32_t>(text.size()));
        raw(text);
    }

  private:
    void put(std::uint64_t value, int size) {
        for (int i = 0; i < size; ++i)
            m_out.push_back(static_cast<char>(value >> (8 * i)));
    }
    std::string& m_out;
};

/// Reads what ByteWriter wrote and never past the end: a read beyond it returns zero or empty
/// values and clears ok(), so a parser checks once at the end.
class ByteReader {
  public:
    explicit ByteReader(std::string_view data)
        : m_data(data) {}

    bool ok() const noexcept { return m_ok; }
    std::size_t remaining() const noexcept { return m_data.size() - m_pos; }

    std::uint32_t u32() { return static_cast<std::uint32_t>(get(4)); }
    std::uint64_t u64() { return get(8); }
    double f64() {
        const std::uint64_t bits = u64();
        double value;
        std::memcpy(&value, &bits, sizeof value);
        return value;
    }
    std::string_view raw(std::uint64_t size) {
        if (!m_ok || size > remaining()) return fail();
        std::string_view bytes = m_data.substr(m_pos, static_cast<std::size_t>(size));
        m_pos += bytes.size();
        return bytes;
    }
    std::string string() { return std::string(raw(u32())); }

  private:
    std::string_view fail() {
        m_ok = false;
        return {};
    }
    std::uint64_t get(int size) {
        std::string_view bytes = raw(static_cast<std::uint64_t>(size));
        std::uint64_t value = 0;
        for (std::size_t i = 0; i < bytes.size(); ++i)
            value |= std::uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
        return value;
    }

    std::string_view m_data;
    std::size_t m_pos = 0;
    bool m_ok = true;
};

} // namespace kiln::cache::detail
