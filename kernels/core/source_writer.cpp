#include "source_writer.hpp"

#include "user_code.hpp"

#include <algorithm>
#include <utility>

namespace kiln::detail {

namespace {

bool mentions(std::initializer_list<const std::string*> code,
              std::initializer_list<const char*> words) {
    for (const std::string* text : code)
        for (const char* word : words)
            if (text->find(word) != std::string::npos) return true;
    return false;
}

} // namespace

bool uses_device_support(std::initializer_list<const std::string*> user_code) {
    for (const std::string* code : user_code)
        for (std::string_view token : tokenize(*code))
            if (token == "kiln" || token == "cupy" || token == "atomicAdd" ||
                token.substr(0, 2) == "M_")
                return true;
    return false;
}

const SourcePiece* GeneratedSource::piece_at(int line) const noexcept {
    for (const SourcePiece& p : pieces)
        if (line >= p.first && line <= p.last) return &p;
    return nullptr;
}

void SourceWriter::head(std::initializer_list<const char*> kiln_headers,
                        std::initializer_list<const char*> lean_headers,
                        bool generated_needs_support, const DType* dtypes, int count, bool index64,
                        const Bindings& bindings,
                        std::initializer_list<const std::string*> user_code) {
    const DType* end = dtypes + count;
    const bool sixteen_bit =
        std::any_of(dtypes, end,
                    [](DType d) { return d == DType::float16 || d == DType::bfloat16; }) ||
        mentions(user_code, {"__half", "__nv_bfloat16", "float16", "bfloat16"});
    const bool complex = std::any_of(dtypes, end, [](DType d) { return is_complex(d); }) ||
                         mentions(user_code, {"complex"});
    const bool support =
        generated_needs_support || sixteen_bit || complex || uses_device_support(user_code);
    if (support) line("#include \"kiln/elementwise.cuh\"");
    for (const char* header : support ? kiln_headers : lean_headers)
        *this << "#include \"" << header << "\"\n";
    if (sixteen_bit) {
        line("#include <cuda_fp16.h>");
        line("#include <cuda_bf16.h>");
        // Mixed with other arithmetic types, they promote as CuPy's float16 does.
        line("#include \"kiln/half.cuh\"");
        // CuPy's name for half precision in kernel bodies.
        if (std::any_of(user_code.begin(), user_code.end(),
                        [](const std::string* code) { return mentions_word(*code, "float16"); }))
            line("typedef __half float16;");
    }
    if (complex) line("#include \"kiln/complex.cuh\"");
    if (support) line("#include \"kiln/cast.cuh\"");
    // <cuda/std/bit> costs hundreds of milliseconds of compile: only for code that uses it.
    if (mentions(user_code, {"cuda/std/bit", "bit_cast", "popcount", "countl_", "countr_",
                             "bit_width", "bit_floor", "bit_ceil", "has_single_bit", "rotl", "rotr",
                             "byteswap", "std::endian"}) &&
        mentions(user_code, {"cuda::std::", "cuda/std/bit"}))
        line("#include <cuda/std/bit>");
    *this << "typedef " << (index64 ? "long long" : "int") << " kiln_index_t;\n";
    for (std::size_t c = 0; c < bindings.size(); ++c)
        if (bindings[c])
            *this << "typedef " << cuda_type(*bindings[c]) << ' ' << static_cast<char>(c) << ";\n";
}

void SourceWriter::piece(std::string_view before, const std::string& code, std::string_view after,
                         const char* what, std::string quoted, std::string note) {
    const int first = next_line();
    *this << before << code << after << '\n';
    m_pieces.push_back({first, next_line() - 1, what, std::move(quoted), std::move(note)});
}

int SourceWriter::next_line() {
    m_line += static_cast<int>(std::count(m_source.begin() + static_cast<std::ptrdiff_t>(m_counted),
                                          m_source.end(), '\n'));
    m_counted = m_source.size();
    return m_line;
}

GeneratedSource SourceWriter::finish() && {
    return {std::move(m_source), std::move(m_pieces)};
}

} // namespace kiln::detail
