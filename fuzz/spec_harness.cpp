#include "spec_harness.hpp"

#include "front_ends.hpp"
#include "fuzz_input.hpp"
#include "harness_failure.hpp"

#include "kiln/error.hpp"
#include "kiln/param_spec.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::fuzz {

namespace {

bool is_identifier(const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
}

// What parse_param_specs() promises about a spec it accepted.
void check_parsed(const std::vector<ParamSpec>& specs, const std::string& text) {
    const bool blank = std::all_of(text.begin(), text.end(), [](char c) {
        return std::isspace(static_cast<unsigned char>(c));
    });
    const auto commas = static_cast<std::size_t>(std::count(text.begin(), text.end(), ','));
    check(specs.size() == (blank ? 0 : commas + 1), "a parameter per comma-separated part");
    for (std::size_t k = 0; k < specs.size(); ++k) {
        const ParamSpec& p = specs[k];
        // Leading underscores are legal (CuPy's rule), but not the generated code's own names.
        check(is_identifier(p.name) && p.name.rfind("_kiln", 0) != 0 && p.name != "_ind",
              "parameter name '" + p.name + "'");
        check(p.dtype.has_value() == p.placeholder.empty(), "a dtype or a placeholder, not both");
        check(p.dtype || (p.placeholder.size() == 1 &&
                          std::isalpha(static_cast<unsigned char>(p.placeholder[0]))),
              "placeholder '" + p.placeholder + "'");
        check(!p.type_text.empty() && text.find(p.type_text) != std::string::npos,
              "type text '" + p.type_text + "' as written");
        for (std::size_t j = 0; j < k; ++j)
            check(specs[j].name != p.name, "names are unique");
    }
}

// The parser alone, on every line; check_unique_names() on neighbouring lines that parsed.
void parse_lines(const SpecInput& input) {
    std::optional<std::vector<ParamSpec>> previous;
    const std::string* previous_text = nullptr;
    for (const std::string& line : input.lines) {
        std::optional<std::vector<ParamSpec>> specs;
        try {
            specs = parse_param_specs(line);
            check_parsed(*specs, line);
        } catch (const SpecError&) {
        }
        if (specs && previous) {
            bool shared = false;
            for (const ParamSpec& a : *previous)
                for (const ParamSpec& b : *specs)
                    shared = shared || a.name == b.name;
            try {
                check_unique_names(*previous, *specs, *previous_text, line);
                check(!shared, "check_unique_names() let a shared name through");
            } catch (const SpecError&) {
                check(shared, "check_unique_names() refused distinct names");
            }
        }
        previous = std::move(specs);
        previous_text = &line;
    }
}

// The first line of an input names the front end; its fields follow (front_ends.hpp).
struct FrontEnd {
    std::string_view name;
    std::size_t field_count;
    void (*run)(const SpecInput&);
};

constexpr FrontEnd kFrontEnds[] = {
    {"elementwise", 4, run_elementwise},
    {"reduction", 7, run_reduction},
};

} // namespace

void run_spec_input(const std::uint8_t* data, std::size_t size) {
    const auto* text = reinterpret_cast<const char*>(data);
    const std::string_view first_line(
        text, static_cast<std::size_t>(std::find(text, text + size, '\n') - text));
    const FrontEnd* front_end = nullptr;
    for (const FrontEnd& candidate : kFrontEnds)
        if (candidate.name == first_line) front_end = &candidate;
    const SpecInput input = split_spec_input(data, size, front_end ? front_end->field_count : 0);
    parse_lines(input);
    if (front_end) front_end->run(input);
}

} // namespace kiln::fuzz
