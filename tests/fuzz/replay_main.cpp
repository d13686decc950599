// Runs a fuzz target's LLVMFuzzerTestOneInput once over every file of the given files or folders,
// without libFuzzer: the g++ builds (Release and ASan) replay each committed corpus as a ctest
// (fuzz_corpus_*), so a regression shows up even where clang is absent.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

int replay_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return 1;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());  // names a crash
  // A copy of exactly `size` bytes, so ASan sees a read one past the input.
  const std::vector<std::uint8_t> exact(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(exact.data(), exact.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int failures = 0, runs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg))
        if (entry.is_regular_file()) failures += replay_file(entry.path()), ++runs;
    } else {
      failures += replay_file(arg), ++runs;
    }
  }
  std::printf("replay: %d inputs, %d unreadable\n", runs, failures);
  return failures == 0 && runs > 0 ? 0 : 1;
}
