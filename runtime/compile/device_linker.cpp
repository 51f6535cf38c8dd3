#include "device_linker.hpp"

#include "kiln/compiler.hpp"
#include "kiln/error.hpp"
#include "kiln/settings.hpp"
#include "log_line.hpp"
#include "nvrtc_identity.hpp"
#include "nvrtc_library.hpp"

#include <nvJitLink.h>
#include <nvrtc.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>

namespace kiln {

namespace detail {

namespace {

bool begins_with(std::string_view text, std::string_view prefix) {
    return text.substr(0, prefix.size()) == prefix;
}

std::string read_file(const std::filesystem::path& path, bool* ok) {
    std::ifstream in(path, std::ios::binary);
    *ok = static_cast<bool>(in);
    if (!in) return {};
    std::string bytes(std::istreambuf_iterator<char>(in), {});
    *ok = !in.bad();
    return bytes;
}

std::string library_path_of(const void* symbol) {
    Dl_info info{};
    if (dladdr(symbol, &info) && info.dli_fname) {
        std::error_code ec;
        auto real = std::filesystem::canonical(info.dli_fname, ec);
        return ec ? std::string(info.dli_fname) : real.string();
    }
    return {};
}

const char* result_name(nvJitLinkResult result) {
    switch (result) {
    case NVJITLINK_SUCCESS:
        return "NVJITLINK_SUCCESS";
    case NVJITLINK_ERROR_UNRECOGNIZED_OPTION:
        return "NVJITLINK_ERROR_UNRECOGNIZED_OPTION";
    case NVJITLINK_ERROR_MISSING_ARCH:
        return "NVJITLINK_ERROR_MISSING_ARCH";
    case NVJITLINK_ERROR_INVALID_INPUT:
        return "NVJITLINK_ERROR_INVALID_INPUT";
    case NVJITLINK_ERROR_PTX_COMPILE:
        return "NVJITLINK_ERROR_PTX_COMPILE";
    case NVJITLINK_ERROR_NVVM_COMPILE:
        return "NVJITLINK_ERROR_NVVM_COMPILE";
    case NVJITLINK_ERROR_INTERNAL:
        return "NVJITLINK_ERROR_INTERNAL";
    case NVJITLINK_ERROR_UNRECOGNIZED_INPUT:
        return "NVJITLINK_ERROR_UNRECOGNIZED_INPUT";
    case NVJITLINK_ERROR_FINALIZE:
        return "NVJITLINK_ERROR_FINALIZE";
    case NVJITLINK_ERROR_INCORRECT_INPUT_TYPE:
        return "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE";
    case NVJITLINK_ERROR_ARCH_MISMATCH:
        return "NVJITLINK_ERROR_ARCH_MISMATCH";
    default:
        return "an nvJitLink error";
    }
}

nvJitLinkInputType input_type(cache::LinkInputKind kind) {
    switch (kind) {
    case cache::LinkInputKind::cubin:
        return NVJITLINK_INPUT_CUBIN;
    case cache::LinkInputKind::ptx:
        return NVJITLINK_INPUT_PTX;
    case cache::LinkInputKind::ltoir:
        return NVJITLINK_INPUT_LTOIR;
    case cache::LinkInputKind::fatbin:
        return NVJITLINK_INPUT_FATBIN;
    case cache::LinkInputKind::object:
        return NVJITLINK_INPUT_OBJECT;
    case cache::LinkInputKind::library:
        return NVJITLINK_INPUT_LIBRARY;
    }
    return NVJITLINK_INPUT_ANY;
}

struct LinkerDeleter {
    void operator()(nvJitLinkHandle handle) const noexcept { nvJitLinkDestroy(&handle); }
};
using LinkerHandle = std::unique_ptr<std::remove_pointer_t<nvJitLinkHandle>, LinkerDeleter>;

std::string error_log(nvJitLinkHandle handle) {
    std::size_t size = 0;
    std::string log;
    if (nvJitLinkGetErrorLogSize(handle, &size) == NVJITLINK_SUCCESS && size > 1) {
        log.resize(size);
        nvJitLinkGetErrorLog(handle, log.data());
        log.resize(size - 1);
    }
    return log;
}

std::string info_log(nvJitLinkHandle handle) {
    std::size_t size = 0;
    std::string log;
    if (nvJitLinkGetInfoLogSize(handle, &size) == NVJITLINK_SUCCESS && size > 1) {
        log.resize(size);
        nvJitLinkGetInfoLog(handle, log.data());
        log.resize(size - 1);
    }
    return log;
}

DeviceRuntime find_device_runtime() {
    std::vector<std::filesystem::path> candidates;
    if (auto path = settings::text(Variable::cuda_device_runtime); !path.empty()) {
        candidates.emplace_back(path);
    } else {
        // NVRTC lives in <toolkit>/lib64, beside libcudadevrt.a.
        const std::string nvrtc = library_path_of(nvrtc_address());
        if (!nvrtc.empty())
            candidates.push_back(std::filesystem::path(nvrtc).parent_path() / "libcudadevrt.a");
        candidates.emplace_back(KILN_CUDA_DEVICE_RUNTIME);
    }
    for (const auto& path : candidates) {
        bool ok = false;
        std::string bytes = read_file(path, &ok);
        if (!ok || bytes.empty()) continue;
        DeviceRuntime runtime;
        runtime.path = path;
        runtime.content = cache::KeyBuilder().add("libcudadevrt.a", bytes).finish();
        runtime.bytes = std::move(bytes);
        kiln::detail::log_debug("CUDA device runtime: {}", runtime.path.string());
        return runtime;
    }
    std::string tried;
    for (const auto& path : candidates)
        tried += (tried.empty() ? "" : ", ") + path.string();
    throw ConfigError("relocatable device code (-dc, -rdc=true) is linked with the CUDA device "
                      "runtime libcudadevrt.a, which was not found (tried " +
                      tried +
                      "): install the CUDA toolkit's libraries or set KILN_CUDA_DEVICE_RUNTIME to "
                      "the file");
}

// What is wrong with @p bytes as a static library (an ar archive: "!<arch>\n", then members, each
// a 60-byte header ending in "`\n" with its decimal size, its data padded to an even length), or
// "" when nothing is. nvJitLink reads freed memory on some malformed archives, so it only ever
// sees well-formed ones.
std::string archive_fault(std::string_view bytes) {
    constexpr std::size_t kMagic = 8, kHeader = 60, kSizeAt = 48, kSizeLength = 10;
    std::size_t at = kMagic;
    if (at == bytes.size()) return "it has no members";
    while (at < bytes.size()) {
        if (bytes.size() - at < kHeader)
            return "a member header at byte " + std::to_string(at) + " is cut short";
        const std::string_view header = bytes.substr(at, kHeader);
        if (header.substr(58, 2) != "`\n")
            return "the member header at byte " + std::to_string(at) + " is malformed";
        std::uint64_t size = 0;
        bool digits = false;
        for (const char c : header.substr(kSizeAt, kSizeLength)) {
            if (c == ' ') break;
            if (c < '0' || c > '9' || size > (std::uint64_t{1} << 40))
                return "the member at byte " + std::to_string(at) + " has no valid size";
            size = size * 10 + static_cast<std::uint64_t>(c - '0');
            digits = true;
        }
        if (!digits) return "the member at byte " + std::to_string(at) + " has no valid size";
        at += kHeader;
        if (size > bytes.size() - at)
            return "the member at byte " + std::to_string(at - kHeader) + " runs past the end";
        at += static_cast<std::size_t>(size) + (size & 1);
    }
    return "";
}

} // namespace

RelocatableMode relocatable_mode(const std::vector<std::string>& options) {
    RelocatableMode mode;
    for (std::size_t i = 0; i < options.size(); ++i) {
        const std::string& option = options[i];
        if (option == "-dc" || option == "--device-c") {
            mode.relocatable = true;
        } else if (option == "-dlto" || option == "--dlto") {
            mode.lto = true;
        } else if (option == "-rdc" || option == "--relocatable-device-code") {
            // NVRTC also takes the value as the next option: "-rdc", "true".
            if (i + 1 < options.size()) mode.relocatable = options[++i] == "true";
        } else {
            for (std::string_view prefix : {"-rdc=", "--relocatable-device-code="})
                if (begins_with(option, prefix))
                    mode.relocatable = std::string_view(option).substr(prefix.size()) == "true";
        }
    }
    // NVRTC writes LTO-IR for -dlto only in relocatable mode; whole-program -dlto is not linked.
    if (!mode.relocatable) mode.lto = false;
    return mode;
}

const std::string& nvjitlink_full_version() {
    static const std::string version = [] {
        unsigned major = 0, minor = 0;
        nvJitLinkVersion(&major, &minor);
        const std::string short_version = std::to_string(major) + "." + std::to_string(minor);
        const std::string path = library_path_of(nvjitlink_address());
        if (path.empty()) return short_version + "+unknown-build";
        const std::string id = elf_build_id(path);
        if (!id.empty()) return short_version + "+build." + id;
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) return short_version + "+unknown-build";
        const std::string identity = path + "|" + std::to_string(st.st_size) + "|" +
                                     std::to_string(st.st_mtim.tv_sec) + "." +
                                     std::to_string(st.st_mtim.tv_nsec);
        return short_version + "+" + std::to_string(std::hash<std::string>{}(identity));
    }();
    return version;
}

const DeviceRuntime& device_runtime() {
    // Not a static initializer: a failure must be reported again on the next RDC compile.
    static std::mutex mutex;
    static std::unique_ptr<const DeviceRuntime> found;
    std::lock_guard<std::mutex> lock(mutex);
    if (!found) found = std::make_unique<const DeviceRuntime>(find_device_runtime());
    return *found;
}

cache::LinkInputKind detect_link_input_kind(const std::string& bytes, const std::string& name) {
    constexpr unsigned kCudaMachine = 190; // EM_CUDA
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
    if (begins_with(bytes, "!<arch>\n")) {
        const std::string fault = archive_fault(bytes);
        if (!fault.empty())
            throw ArgumentError("link input '" + name + "' is not a valid static library: " +
                                fault + "; give the .a file the toolkit's archiver made");
        return cache::LinkInputKind::library;
    }
    if (bytes.size() >= 20 && begins_with(bytes, "\x7f"
                                                 "ELF")) {
        const unsigned machine = byte(18) | byte(19) << 8;
        return machine == kCudaMachine ? cache::LinkInputKind::cubin : cache::LinkInputKind::object;
    }
    if (bytes.size() >= 4 && byte(0) == 0x50 && byte(1) == 0xED && byte(2) == 0x55 &&
        byte(3) == 0xBA)
        return cache::LinkInputKind::fatbin;
    if (bytes.size() >= 4 && byte(0) == 0xED && byte(1) == 0x43 && byte(2) == 0x4E &&
        byte(3) == 0x7F)
        return cache::LinkInputKind::ltoir;
    if (bytes.find(".version") != std::string::npos && bytes.find(".target") != std::string::npos &&
        bytes.find('\0') == std::string::npos)
        return cache::LinkInputKind::ptx;
    throw ArgumentError("link input '" + name +
                        "' is not device code nvJitLink can link: give a static library (.a), a "
                        "cubin, a fatbin, LTO-IR, PTX or a host object with device code");
}

std::string link_device_code(const std::string& program, const std::string& name,
                             const LinkRequest& request, std::string& log) {
    const DeviceRuntime& runtime = device_runtime();
    std::vector<std::string> options{"-arch=" + request.arch};
    if (request.lto) {
        options.emplace_back("-lto");
        if (request.lineinfo) options.emplace_back("-lineinfo");
    }
    std::vector<const char*> pointers;
    pointers.reserve(options.size());
    for (const auto& option : options)
        pointers.push_back(option.c_str());

    auto fail = [&](nvJitLinkResult result, const std::string& what, nvJitLinkHandle handle) {
        std::string link_log;
        if (handle) link_log = error_log(handle);
        if (handle && link_log.empty()) link_log = info_log(handle);
        throw CompileError("nvJitLink could not link " + what + " for " + request.arch + " (" +
                               result_name(result) + ")",
                           link_log, request.nvrtc_options, request.source);
    };
    nvJitLinkHandle raw = nullptr;
    nvJitLinkResult result =
        nvJitLinkCreate(&raw, static_cast<std::uint32_t>(pointers.size()), pointers.data());
    if (result != NVJITLINK_SUCCESS) fail(result, name, nullptr);
    LinkerHandle linker(raw);

    result = nvJitLinkAddData(raw, request.lto ? NVJITLINK_INPUT_LTOIR : NVJITLINK_INPUT_CUBIN,
                              program.data(), program.size(), name.c_str());
    if (result != NVJITLINK_SUCCESS) fail(result, name, raw);
    for (const auto& input : *request.inputs) {
        result = nvJitLinkAddData(raw, input_type(input.kind), input.bytes.data(),
                                  input.bytes.size(), input.name.c_str());
        if (result != NVJITLINK_SUCCESS)
            fail(result,
                 name + " with link input '" + input.name + "' (" + cache::to_string(input.kind) +
                     ")",
                 raw);
    }
    result = nvJitLinkAddData(raw, NVJITLINK_INPUT_LIBRARY, runtime.bytes.data(),
                              runtime.bytes.size(), "libcudadevrt.a");
    if (result != NVJITLINK_SUCCESS) fail(result, name + " with " + runtime.path.string(), raw);
    result = nvJitLinkComplete(raw);
    if (result != NVJITLINK_SUCCESS) fail(result, name, raw);

    std::size_t size = 0;
    result = nvJitLinkGetLinkedCubinSize(raw, &size);
    if (result != NVJITLINK_SUCCESS) fail(result, name, raw);
    std::string cubin(size, '\0');
    result = nvJitLinkGetLinkedCubin(raw, cubin.data());
    if (result != NVJITLINK_SUCCESS) fail(result, name, raw);
    const std::string info = info_log(raw);
    if (!info.empty()) log += (log.empty() ? "" : "\n") + info;
    return cubin;
}

} // namespace detail

LinkInput LinkInput::from_bytes(std::string name, std::string bytes) {
    if (bytes.empty()) throw ArgumentError("link input '" + name + "' is empty");
    LinkInput input;
    input.kind = detail::detect_link_input_kind(bytes, name);
    input.name = std::move(name);
    input.bytes = std::move(bytes);
    return input;
}

LinkInput LinkInput::from_file(const std::filesystem::path& path) {
    bool ok = false;
    std::string bytes = detail::read_file(path, &ok);
    if (!ok)
        throw ArgumentError("cannot read link input '" + path.string() +
                            "': give the path of a device library (.a), cubin, fatbin, "
                            "LTO-IR or PTX file");
    return from_bytes(path.filename().string(), std::move(bytes));
}

} // namespace kiln
