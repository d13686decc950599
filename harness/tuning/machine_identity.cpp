#include "harness/tuning/machine_identity.hpp"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace encbench::tuning {
namespace {

// The NT_GNU_BUILD_ID note of the main program (the first object dl_iterate_phdr reports).
int find_build_id(dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::string*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const unsigned char* name = p + sizeof(ElfW(Nhdr));
      const unsigned char* desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && desc + note->n_descsz <= end) {
        char hex[3];
        *out = "gnu:";
        for (unsigned j = 0; j < note->n_descsz; ++j) {
          std::snprintf(hex, sizeof hex, "%02x", desc[j]);
          *out += hex;
        }
        return 1;
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1;  // only the main program
}

std::string executable_hash() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i)
      h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ull;
    if (!in) break;
  }
  char hex[32];
  std::snprintf(hex, sizeof hex, "fnv64:%016llx", static_cast<unsigned long long>(h));
  return hex;
}

std::string cpuinfo_field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

}  // namespace

MachineIdentity current_machine_identity() {
  MachineIdentity id;
  dl_iterate_phdr(&find_build_id, &id.build_id);
  if (id.build_id.empty()) id.build_id = executable_hash();
  std::ifstream in("/proc/cpuinfo");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string model = cpuinfo_field(text, "model name");
  id.cpu_model = (model.empty() ? "unknown CPU" : model) + " (family " +
                 cpuinfo_field(text, "cpu family") + " model " + cpuinfo_field(text, "model\t") +
                 " stepping " + cpuinfo_field(text, "stepping") + ")";
  return id;
}

}  // namespace encbench::tuning
