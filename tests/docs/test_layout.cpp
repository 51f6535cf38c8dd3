// The tree keeps the layout docs/architecture.md draws: every `#include "..."` of Kiln's sources,
// tests, benches and tools is resolved to a file, and a folder includes only the folders its rule
// names; headers of another library that are not public are included only when the seam list
// names them; no chain of includes runs in a circle; and the front ends share their common steps
// instead of carrying copies. The rules and the list are read from docs/architecture.md itself, so
// the document cannot drift from the code.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kSource = KILN_SOURCE_DIR;

std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string in_tree(const fs::path& path) {
    return fs::relative(path, kSource).generic_string();
}

bool starts_with(const std::string& text, const std::string& prefix) {
    return text.compare(0, prefix.size(), prefix) == 0;
}

// The lines of the fenced block that follows the marker `<!-- NAME -->` in architecture.md,
// without comments and blank lines.
std::vector<std::vector<std::string>> block(const std::string& name) {
    const std::string doc = read(kSource / "docs" / "architecture.md");
    const auto marker = doc.find("<!-- " + name + " -->");
    if (marker == std::string::npos) return {};
    const auto open = doc.find("```", marker);
    const auto body = doc.find('\n', open) + 1;
    const auto close = doc.find("```", body);
    std::vector<std::vector<std::string>> rows;
    std::istringstream lines(doc.substr(body, close - body));
    for (std::string line; std::getline(lines, line);) {
        if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        std::istringstream words(line);
        std::vector<std::string> row;
        for (std::string word; words >> word;)
            row.push_back(word);
        if (!row.empty()) row.erase(std::remove(row.begin(), row.end(), "->"), row.end());
        if (!row.empty()) rows.push_back(row);
    }
    return rows;
}

struct Rules {
    std::map<std::string, std::set<std::string>> allowed; ///< folder -> folders it may include
    std::map<std::string, std::string> library;           ///< folder -> its library
    std::set<std::string> seam;                           ///< internal headers others may use
    std::set<std::string> forbidden;                      ///< "folder header" pairs ruled out
};

Rules rules() {
    Rules r;
    // `folder  library  ->  folders it may include...` (itself always)
    for (const auto& row : block("include-rules")) {
        if (row.size() < 2) continue;
        r.library[row[0]] = row[1];
        r.allowed[row[0]] = std::set<std::string>(row.begin() + 2, row.end());
        r.allowed[row[0]].insert(row[0]);
    }
    for (const auto& row : block("internal-headers"))
        r.seam.insert(row[0]);
    for (const auto& row : block("forbidden-includes"))
        if (row.size() == 2) r.forbidden.insert(row[0] + " " + row[1]);
    return r;
}

// The folder of the rules a file belongs to: the longest folder of the rules that holds it.
std::string folder_of(const std::string& file, const Rules& r) {
    std::string best;
    for (const auto& [folder, ignored] : r.allowed)
        if (starts_with(file, folder + "/") && folder.size() > best.size()) best = folder;
    return best;
}

// Every folder of public headers: <lib>/include and <lib>/<folder>/include.
std::vector<fs::path> public_roots() {
    std::vector<fs::path> roots;
    for (const char* lib : {"base", "cache", "runtime", "kernels"}) {
        if (fs::is_directory(kSource / lib / "include")) roots.push_back(kSource / lib / "include");
        for (const auto& item : fs::directory_iterator(kSource / lib))
            if (fs::is_directory(item.path() / "include")) roots.push_back(item.path() / "include");
    }
    return roots;
}

// Where the build finds quoted includes that are not beside the file: the libraries' internal
// roots and the tests' support folder.
const std::vector<fs::path>& private_roots() {
    static const std::vector<fs::path> roots = {
        kSource / "runtime", kSource / "kernels",           kSource / "cache",
        kSource / "base",    kSource / "tests" / "support", kSource / "tools"};
    return roots;
}

struct Include {
    std::string from, to; // paths relative to the source tree
    std::string spelled;
    int line = 0;
};

bool is_source(const fs::path& path) {
    const auto ext = path.extension().string();
    return ext == ".cpp" || ext == ".hpp" || ext == ".h" || ext == ".inc";
}

std::vector<Include> all_includes() {
    const auto publics = public_roots();
    std::vector<Include> found;
    static const std::regex include_line(R"re(^\s*#\s*include\s+"([^"]+)")re");
    for (const char* top :
         {"base", "cache", "runtime", "kernels", "tools", "tests", "bench", "fuzz"}) {
        for (const auto& item : fs::recursive_directory_iterator(kSource / top)) {
            if (!item.is_regular_file() || !is_source(item.path())) continue;
            std::istringstream lines(read(item.path()));
            int number = 0;
            for (std::string line; std::getline(lines, line);) {
                ++number;
                std::smatch m;
                if (!std::regex_search(line, m, include_line)) continue;
                const std::string name = m[1];
                fs::path target;
                if (fs::exists(item.path().parent_path() / name)) {
                    target = item.path().parent_path() / name;
                } else {
                    for (const auto& root : publics)
                        if (target.empty() && fs::exists(root / name)) target = root / name;
                    for (const auto& root : private_roots())
                        if (target.empty() && fs::exists(root / name)) target = root / name;
                }
                if (target.empty()) continue; // generated (kiln/version.hpp) or a system header
                found.push_back(
                    {in_tree(item.path()), in_tree(fs::weakly_canonical(target)), name, number});
            }
        }
    }
    return found;
}

bool is_public(const std::string& file) {
    return file.find("/include/kiln/") != std::string::npos;
}

} // namespace

TEST(Layout, TheArchitectureDocumentStatesTheRules) {
    const Rules r = rules();
    EXPECT_GE(r.allowed.size(), 13u) << "docs/architecture.md lost its include-rules block";
    EXPECT_GE(r.seam.size(), 5u) << "docs/architecture.md lost its internal-headers block";
    for (const auto& [folder, allowed] : r.allowed) {
        EXPECT_TRUE(fs::is_directory(kSource / folder)) << folder;
        for (const auto& other : allowed)
            EXPECT_TRUE(r.allowed.count(other))
                << folder << " may include " << other << ", which has no rule";
    }
    for (const auto& header : r.seam)
        EXPECT_TRUE(fs::exists(kSource / header)) << "the seam list names " << header;
}

TEST(Layout, EveryIncludeRunsDownwardAsTheRulesSay) {
    const Rules r = rules();
    const auto includes = all_includes();
    EXPECT_GT(includes.size(), 1000u) << "too few includes found: did the tree move?";
    for (const auto& inc : includes) {
        const std::string from = folder_of(inc.from, r);
        const std::string to = folder_of(inc.to, r);
        if (from.empty() || to.empty()) continue; // tests, benches, the tool: checked below
        EXPECT_TRUE(r.allowed.at(from).count(to))
            << inc.from << ":" << inc.line << " includes \"" << inc.spelled << "\" (" << inc.to
            << "): " << from << " may not include " << to;
    }
}

TEST(Layout, OtherTargetsUseOnlyTheInternalHeadersTheSeamListNames) {
    const Rules r = rules();
    for (const auto& inc : all_includes()) {
        const std::string to = folder_of(inc.to, r);
        if (to.empty() || is_public(inc.to)) continue;
        const std::string from = folder_of(inc.from, r);
        const std::string from_library =
            from.empty() ? inc.from.substr(0, inc.from.find('/')) : r.library.at(from);
        if (from_library == r.library.at(to)) continue;
        EXPECT_TRUE(r.seam.count(inc.to))
            << inc.from << ":" << inc.line << " includes the internal header " << inc.to
            << " of another library; name it in docs/architecture.md's internal-headers list or "
               "use a public header";
    }
}

TEST(Layout, PublicHeadersIncludeOnlyPublicHeaders) {
    for (const auto& inc : all_includes()) {
        if (is_public(inc.from)) {
            EXPECT_TRUE(is_public(inc.to))
                << inc.from << ":" << inc.line << " includes " << inc.to << ", not installed";
        }
    }
}

TEST(Layout, ForbiddenIncludesStayOut) {
    const Rules r = rules();
    for (const auto& inc : all_includes())
        for (const auto& pair : r.forbidden) {
            const auto space = pair.find(' ');
            const std::string folder = pair.substr(0, space), header = pair.substr(space + 1);
            EXPECT_FALSE(starts_with(inc.from, folder + "/") && inc.spelled == header)
                << inc.from << ":" << inc.line << " includes " << header;
        }
}

TEST(Layout, NoIncludesRunInACircle) {
    std::map<std::string, std::vector<std::string>> edges;
    for (const auto& inc : all_includes())
        edges[inc.from].push_back(inc.to);
    // Depth-first search with colours; a grey node reached again closes a circle.
    std::map<std::string, int> colour;
    std::vector<std::string> path;
    std::string circle;
    std::function<void(const std::string&)> visit = [&](const std::string& node) {
        colour[node] = 1;
        path.push_back(node);
        for (const auto& next : edges[node]) {
            if (!circle.empty()) break;
            if (colour[next] == 1) {
                auto at = std::find(path.begin(), path.end(), next);
                for (; at != path.end(); ++at)
                    circle += *at + " -> ";
                circle += next;
            } else if (colour[next] == 0) {
                visit(next);
            }
        }
        path.pop_back();
        colour[node] = 2;
    };
    for (const auto& [node, ignored] : edges)
        if (colour[node] == 0 && circle.empty()) visit(node);
    EXPECT_TRUE(circle.empty()) << circle;
}

// Two front ends that each carry the same step drift apart: no run of four identical lines (not
// blank, not a lone brace) between the .cpp files of two front-end folders.
TEST(Layout, FrontEndsShareTheirCommonStepsInsteadOfCopies) {
    const std::vector<std::string> front_ends = {"raw", "elementwise", "reduction", "fusion"};
    std::map<std::string, std::vector<std::pair<std::string, int>>> runs; // run -> where
    for (const auto& front_end : front_ends) {
        for (const auto& item : fs::directory_iterator(kSource / "kernels" / front_end)) {
            if (item.path().extension() != ".cpp") continue;
            std::vector<std::string> lines;
            std::istringstream in(read(item.path()));
            for (std::string line; std::getline(in, line);) {
                line.erase(0, line.find_first_not_of(" \t"));
                lines.push_back(line);
            }
            for (std::size_t i = 0; i + 4 <= lines.size(); ++i) {
                int substantial = 0;
                std::string run;
                for (std::size_t j = i; j < i + 4; ++j) {
                    if (lines[j].size() > 3 && !starts_with(lines[j], "//") &&
                        !starts_with(lines[j], "#include"))
                        ++substantial;
                    run += lines[j] + "\n";
                }
                if (substantial == 4)
                    runs[run].emplace_back(in_tree(item.path()), static_cast<int>(i + 1));
            }
        }
    }
    for (const auto& [run, where] : runs) {
        std::set<std::string> folders;
        for (const auto& [file, line] : where)
            folders.insert(file.substr(0, file.find('/', 8)));
        if (folders.size() > 1) {
            std::string places;
            for (const auto& [file, line] : where)
                places += " " + file + ":" + std::to_string(line);
            ADD_FAILURE() << "the same four lines in two front ends (move them to kernels/core/):"
                          << places << "\n"
                          << run;
        }
    }
}
