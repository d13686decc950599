#include "harness/server/image_input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <limits>
#include <memory>
#include <system_error>

#include "harness/core/base64.hpp"
#include "harness/core/clock.hpp"

#include "harness/imaging/decode.hpp"
#include "harness/server/api_error.hpp"
#include "harness/server/content_identity.hpp"

namespace encbench::server {
namespace {

constexpr std::string_view kAccepted =
    "image_url must be a data URL (data:image/jpeg;base64,..., data:image/png;base64,... or "
    "data:image/webp;base64,...)";

bool starts_with_icase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != prefix[i]) return false;
  }
  return true;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      const int hi = hex(text[i + 1]);
      const int lo = hex(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

// Closes the descriptor wherever the read ends.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

// Opened without blocking (a FIFO with no writer would block open() itself) and without
// following a last-component symlink swapped in after the path was checked; then only a regular
// file is read (a FIFO, device or socket could block a decode thread forever), within the size
// limit and the read deadline.
std::vector<unsigned char> read_regular_file(const std::filesystem::path& path, const ImagePolicy& policy) {
  FileDescriptor file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)};
  if (file.fd < 0) throw bad_request("cannot read local image file", "messages", "invalid_image_url");
  struct stat st {};
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw bad_request("local image path is not a regular file (FIFOs, devices and sockets are refused)",
                      "messages", "invalid_image_url");
  if (st.st_size <= 0 || st.st_size > policy.max_file_bytes)
    throw bad_request("local image file is empty or larger than the limit of " +
                          std::to_string(policy.max_file_bytes) + " bytes",
                      "messages", "invalid_image_url");
  std::vector<unsigned char> bytes(static_cast<std::size_t>(st.st_size));
  const Nanos deadline = now_ns() + policy.local_read_timeout_ms * 1'000'000;
  std::size_t done = 0;
  while (done < bytes.size()) {
    if (now_ns() > deadline)
      throw bad_request("reading the local image file took longer than " +
                            std::to_string(policy.local_read_timeout_ms) + " ms",
                        "messages", "invalid_image_url");
    const std::size_t want = std::min<std::size_t>(bytes.size() - done, 1u << 20);
    const ssize_t n = ::read(file.fd, bytes.data() + done, want);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw bad_request("cannot read local image file (it changed while read)", "messages", "invalid_image_url");
    done += static_cast<std::size_t>(n);
  }
  return bytes;
}

DecodedImage load_local_file(std::string_view url, const ImagePolicy& policy, const BeforeDecode& before_decode) {
  if (!policy.allowed_local_media_path) {
    throw bad_request(
        "file:// image URLs are not allowed; start the server with --allowed-local-media-path "
        "DIR to serve local images from DIR",
        "messages", "local_media_not_allowed");
  }
  std::string_view rest = url.substr(7);  // after "file://"
  if (starts_with_icase(rest, "localhost/")) rest.remove_prefix(9);
  if (rest.empty() || rest.front() != '/')
    throw bad_request("file:// URL must hold an absolute path, got '" + std::string(url) + "'",
                      "messages", "invalid_image_url");
  std::error_code ec;
  const std::filesystem::path requested =
      std::filesystem::weakly_canonical(std::filesystem::path(percent_decode(rest)), ec);
  const std::filesystem::path& root = *policy.allowed_local_media_path;
  // Canonical paths (symlinks resolved) so ../ or a link cannot leave the allowed directory.
  const auto mismatch = std::mismatch(root.begin(), root.end(), requested.begin(), requested.end());
  if (ec || mismatch.first != root.end()) {
    throw bad_request("file:// path is outside --allowed-local-media-path (" + root.string() + ")",
                      "messages", "local_media_not_allowed");
  }
  const std::vector<unsigned char> bytes = read_regular_file(requested, policy);
  return decode_image_bytes(bytes.data(), bytes.size(), policy, before_decode);
}

}  // namespace

DecodedImage decode_image_bytes(const unsigned char* data, std::size_t size,
                                const ImagePolicy& policy, const BeforeDecode& before_decode) {
  // The header first: the pixel limit and the caller's budget are checked from its size, before
  // a pixel is decoded. Then the pixels are decoded in full (and dropped): only a full decode
  // catches truncated or corrupt data, which vLLM's PIL would refuse too.
  try {
    const imaging::Limits limits{policy.max_image_pixels};
    const imaging::ImageInfo header = imaging::read_info(data, size);
    if (static_cast<std::int64_t>(header.width) * header.height <= limits.max_pixels && before_decode)
      before_decode(header.width, header.height);
    const imaging::ImageInfo info = imaging::verify_decodes(data, size, limits);
    // Hashed after the decode succeeded: a refused image costs no hash.
    const std::uint64_t mm_hash =
        nonzero_identity(content_hash64(std::string_view(reinterpret_cast<const char*>(data), size)));
    return DecodedImage{info.width, info.height, info.channels_in_file, size, mm_hash};
  } catch (const imaging::DecodeError& e) {
    const char* code = e.kind() == imaging::DecodeError::Kind::unsupported_format ? "unsupported_image_format"
                       : e.kind() == imaging::DecodeError::Kind::too_large       ? "image_too_large"
                                                                                 : "invalid_image";
    throw bad_request(std::string("could not decode image: ") + e.what(), "messages", code);
  }
}

DecodedImage load_image_from_url(std::string_view url, const ImagePolicy& policy,
                                 const BeforeDecode& before_decode) {
  if (starts_with_icase(url, "http://") || starts_with_icase(url, "https://")) {
    throw bad_request(
        "remote image URLs are not fetched by encbench serve (it never accesses the network); "
        "send the image inline as a data URL (data:image/jpeg;base64,...)",
        "messages", "remote_media_not_supported");
  }
  if (starts_with_icase(url, "file://")) return load_local_file(url, policy, before_decode);
  if (!starts_with_icase(url, "data:")) throw bad_request(std::string(kAccepted), "messages", "invalid_image_url");
  const std::size_t comma = url.find(',');
  if (comma == std::string_view::npos)
    throw bad_request("malformed data URL: no ',' before the data", "messages", "invalid_image_url");
  const std::string_view header = url.substr(5, comma - 5);
  if (!starts_with_icase(header, "image/"))
    throw bad_request("data URL media type must be image/*, got '" + std::string(header) + "'",
                      "messages", "invalid_image_url");
  if (header.size() < 7 || !starts_with_icase(header.substr(header.size() - 7), ";base64"))
    throw bad_request("data URL must be base64-encoded (';base64,')", "messages", "invalid_image_url");
  std::string bytes;
  if (!base64_decode(url.substr(comma + 1), Base64Form::strict, bytes))
    throw bad_request("image data URL holds invalid base64", "messages", "invalid_image");
  return decode_image_bytes(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), policy, before_decode);
}

}  // namespace encbench::server
