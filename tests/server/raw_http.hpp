#pragma once
// A deliberately small blocking HTTP/1.1 client on raw sockets, for tests that must send exactly
// the bytes they want (malformed requests, partial headers, early disconnects) and read exactly
// what the server sent (SSE framing, status lines).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace encbench::server::testing {

class RawConnection {
 public:
  explicit RawConnection(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      throw std::runtime_error("connect failed");
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~RawConnection() { close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Abortive close (RST), like a client process killed mid-stream.
  void reset() {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }

  bool send_all(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  // Reads whatever arrives within `timeout`; "" on timeout, nullopt on EOF/error.
  std::optional<std::string> read_some(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (ready == 0) return std::string();
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return std::nullopt;
    return std::string(buf, static_cast<std::size_t>(n));
  }

  // True when the server closes the connection within `timeout`.
  bool closed_by_peer_within(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      auto got = read_some(std::max(left, std::chrono::milliseconds(1)));
      if (!got) return true;
    }
    return false;
  }

  struct Response {
    int status = 0;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;                            // de-chunked
    bool complete = false;
  };

  // Reads one response (content-length or chunked); complete=false when the connection ended or
  // the timeout passed first.
  Response read_response(std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
    Response r;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto fill = [&]() {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      auto got = read_some(left);
      if (!got || got->empty()) return false;
      pending_ += *got;
      return true;
    };
    std::size_t header_end;
    while ((header_end = pending_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return r;
    const std::string head = pending_.substr(0, header_end);
    pending_.erase(0, header_end + 4);
    r.status = std::stoi(head.substr(9, 3));
    std::size_t pos = head.find("\r\n");
    while (pos != std::string::npos) {
      const std::size_t next = head.find("\r\n", pos + 2);
      const std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        r.headers[name] = value;
      }
      pos = next;
    }
    if (r.status == 100) return read_response(timeout);
    if (r.headers.count("content-length")) {
      const std::size_t length = std::stoul(r.headers["content-length"]);
      while (pending_.size() < length)
        if (!fill()) return r;
      r.body = pending_.substr(0, length);
      pending_.erase(0, length);
      r.complete = true;
      return r;
    }
    if (r.headers["transfer-encoding"] == "chunked") {
      while (true) {
        std::size_t line_end;
        while ((line_end = pending_.find("\r\n")) == std::string::npos)
          if (!fill()) return r;
        const std::size_t size = std::stoul(pending_.substr(0, line_end), nullptr, 16);
        while (pending_.size() < line_end + 2 + size + 2)
          if (!fill()) return r;
        r.body += pending_.substr(line_end + 2, size);
        pending_.erase(0, line_end + 2 + size + 2);
        if (size == 0) {
          r.complete = true;
          return r;
        }
      }
    }
    return r;
  }

 private:
  int fd_ = -1;
  std::string pending_;
};

inline std::string post_request(const std::string& path, const std::string& body,
                                const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The head of a chat completion POST declaring `content_length` body bytes (the body follows, or
// not: hostile peers send less).
inline std::string post_header(std::size_t content_length) {
  return "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: " +
         std::to_string(content_length) + "\r\n\r\n";
}

inline std::string get_request(const std::string& path) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
}

// Splits an SSE body into the payloads of its `data:` events.
inline std::vector<std::string> sse_data_events(const std::string& body) {
  std::vector<std::string> events;
  std::size_t pos = 0;
  while (pos < body.size()) {
    const std::size_t end = body.find("\n\n", pos);
    const std::string event = body.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (event.rfind("data: ", 0) == 0) events.push_back(event.substr(6));
    if (end == std::string::npos) break;
    pos = end + 2;
  }
  return events;
}

}  // namespace encbench::server::testing
