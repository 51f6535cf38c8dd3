#pragma once
// A fresh temporary directory per test, removed afterwards (each test its own cache).

#include <filesystem>
#include <string>

namespace kiln::test {

class TempDir {
  public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return m_path; }
    std::filesystem::path operator/(const std::string& name) const { return m_path / name; }

  private:
    std::filesystem::path m_path;
};

/// Makes @p dir (created if missing) the process's working directory while it lives, then goes
/// back. Process-wide: for tests that run in a process of their own, as CTest runs each one.
class WorkingDirectory {
  public:
    explicit WorkingDirectory(const std::filesystem::path& dir);
    ~WorkingDirectory();
    WorkingDirectory(const WorkingDirectory&) = delete;
    WorkingDirectory& operator=(const WorkingDirectory&) = delete;

  private:
    std::filesystem::path m_previous;
};

/// Read a whole file as bytes ("" if missing).
std::string read_file(const std::filesystem::path& path);
/// Write bytes to a file, replacing it.
void write_file(const std::filesystem::path& path, const std::string& bytes);

} // namespace kiln::test
