#include "fuzz_input.hpp"

#include <algorithm>

namespace kiln::fuzz {

SpecInput split_spec_input(const std::uint8_t* data, std::size_t size, std::size_t field_count) {
    SpecInput input;
    const std::uint8_t* end = data + size;
    const std::uint8_t* p = data;
    // The front end's name and the fields: field_count + 1 lines.
    for (std::size_t line = 0; line <= field_count; ++line) {
        const std::uint8_t* newline = std::find(p, end, '\n');
        std::string text(reinterpret_cast<const char*>(p), static_cast<std::size_t>(newline - p));
        if (line == 0)
            input.front_end = std::move(text);
        else
            input.fields.push_back(std::move(text));
        p = newline == end ? end : newline + 1;
    }
    input.call_data = p;
    input.call_size = static_cast<std::size_t>(end - p);
    // Every line, for the parser on its own.
    for (const std::uint8_t* q = data; q < end;) {
        const std::uint8_t* newline = std::find(q, end, '\n');
        input.lines.emplace_back(reinterpret_cast<const char*>(q),
                                 static_cast<std::size_t>(newline - q));
        q = newline == end ? end : newline + 1;
    }
    return input;
}

} // namespace kiln::fuzz
