// A stand-in for libFuzzer's driver: runs each input file once through the target's
// LLVMFuzzerTestOneInput. The normal (gcc) build links every fuzz target with it for the
// "fuzz: replay ..." tests, so each CI run replays the seed corpus and every past crash without
// clang or libFuzzer.
//
// usage: <target>_replay PATH...   (a file, or a directory whose files are all inputs; names
//                                   starting with '.' are skipped)
// Exits 0 when every input ran; 1 when a PATH cannot be read or there is no input at all. A failed
// property (fuzz/check.h) or a sanitizer report aborts the process; the last "input:" line on
// stderr names the input.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

bool IsHidden(const fs::path& p) { return p.filename().string().starts_with("."); }

// Appends the input files `arg` names; false (with a message) if it names nothing readable.
bool Collect(const char* arg, std::vector<fs::path>* inputs) {
  const fs::path p(arg);
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    for (fs::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->is_regular_file() && !IsHidden(it->path())) inputs->push_back(it->path());
    }
  } else if (fs::is_regular_file(p, ec)) {
    inputs->push_back(p);
  } else if (!ec) {
    ec = std::make_error_code(std::errc::no_such_file_or_directory);
  }
  if (ec) std::fprintf(stderr, "%s: %s\n", arg, ec.message().c_str());
  return !ec;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!Collect(argv[i], &inputs)) return 1;
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s PATH...  (no input files found)\n", argv[0]);
    return 1;
  }
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    // Exactly sized, so a sanitizer build catches a read one byte past the input.
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    if (in.bad()) {
      std::fprintf(stderr, "%s: read failed\n", p.c_str());
      return 1;
    }
    std::fprintf(stderr, "input: %s (%zu bytes)\n", p.c_str(), data.size());
    LLVMFuzzerTestOneInput(data.data(), data.size());
  }
  std::printf("%zu inputs replayed\n", inputs.size());
  return 0;
}
