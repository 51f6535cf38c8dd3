#pragma once
/// @file
/// The kernels of a cubin, read from its ELF symbol table: the compiler records them in each entry
/// it stores, and `kiln cache ls` reads them from version-1 entries. A cubin in the cache may be
/// damaged or planted, so every offset and size is checked against the bytes given. Built in
/// kiln::base, over the ELF reader that also reads NVRTC's build id; the `kiln/cache/` name and
/// namespace are the ones its callers have always used.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cache {

/// The names of the kernels (entry functions, `extern "C"` ones included) in @p elf, in symbol
/// table order: the STT_FUNC symbols marked STO_CUDA_ENTRY (st_other 0x10), as NVRTC writes them.
/// Device functions that are not kernels have their own `.text.<name>` section too, so sections
/// are not counted. Never reads outside @p elf; never throws for bad bytes.
/// @param elf the cubin's bytes.
/// @return the kernels' symbol names (C++ ones mangled), or nullopt when @p elf is not a 64-bit
/// little-endian ELF file with a symbol table that lies within it.
std::optional<std::vector<std::string>> cubin_kernel_names(std::string_view elf);

/// The names of the variables (`__device__` and `__constant__` ones; C++ names mangled) defined
/// in @p elf, in symbol table order: the defined STT_OBJECT symbols, without the toolchain's own
/// (names that start with '.' or "__"). For messages that list a module's globals. Never reads
/// outside @p elf; never throws for bad bytes.
/// @param elf the cubin's bytes.
/// @return the variables' symbol names, or nullopt as cubin_kernel_names().
std::optional<std::vector<std::string>> cubin_variable_names(std::string_view elf);

/// The sizes in bytes of the parameters of the kernel @p kernel in @p elf, in order, from the
/// kernel's `.nv.info.NAME` section (NAME its symbol) as NVRTC and ptxas write it: one
/// EIATTR_KPARAM_INFO record per parameter, the last ending at EIATTR_CBANK_PARAM_SIZE. What the
/// driver's cuFuncGetParamInfo gives for each, without asking it (a call per parameter, and an
/// error past the last that the driver takes about 30 us to return). Never reads outside @p elf;
/// never throws.
/// @param elf the cubin's bytes.
/// @param kernel the kernel's symbol name (C++ ones mangled).
/// @return the sizes, or nullopt when the section is missing or its records do not agree (an
/// ordinal missing or twice, the last parameter not ending at the total).
std::optional<std::vector<std::size_t>> cubin_parameter_sizes(std::string_view elf,
                                                              std::string_view kernel);

} // namespace kiln::cache
