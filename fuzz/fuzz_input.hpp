#pragma once
// The shape of a spec-fuzzer input: a front end's name and its text fields, one per line, then the
// bytes that describe calls. Text first keeps seeds and crashers readable and lets the dictionary
// work on the specs; the decisions behind a call come from the bytes after the last field.
//
//   elementwise          <- front end ("elementwise", "reduction"; anything else: specs only)
//   T x, T y             <- its fields, in the order the front end names them
//   T z
//   z = x + y
//   add
//   ...call bytes...     <- everything after the last field's newline

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::fuzz {

/// Reads small decisions from bytes. Past the end every read gives 0, so any input, however
/// short, describes a complete call.
class ByteSource {
  public:
    ByteSource(const std::uint8_t* data, std::size_t size)
        : m_data(data)
        , m_size(size) {}

    bool empty() const noexcept { return m_pos >= m_size; }
    std::uint8_t byte() noexcept { return empty() ? 0 : m_data[m_pos++]; }
    bool flag() noexcept { return (byte() & 1) != 0; }
    /// A choice among @p n > 0 alternatives.
    std::size_t pick(std::size_t n) noexcept { return byte() % n; }
    /// Eight bytes, little-endian.
    std::uint64_t u64() noexcept {
        std::uint64_t value = 0;
        for (int i = 0; i < 8; ++i)
            value |= std::uint64_t{byte()} << (8 * i);
        return value;
    }

  private:
    const std::uint8_t* m_data;
    std::size_t m_size;
    std::size_t m_pos = 0;
};

struct SpecInput {
    std::string front_end;           ///< the first line
    std::vector<std::string> fields; ///< the next lines, as many as asked for; missing ones empty
    std::vector<std::string> lines;  ///< every line of the whole input, call bytes included
    const std::uint8_t* call_data = nullptr; ///< after the last field's newline
    std::size_t call_size = 0;
};

/// Split @p size bytes at @p data into the front end's name, @p field_count fields and call bytes.
SpecInput split_spec_input(const std::uint8_t* data, std::size_t size, std::size_t field_count);

} // namespace kiln::fuzz
