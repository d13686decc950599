#pragma once
// The server's in-flight byte limit as the hostile-peer and the image-reproducer tests drive it on
// raw sockets: a connection that has sent part of a declared body (the server holds the bytes
// that arrived), and a connection that only declares a body and reads the server's refusal.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "harness/server/server.hpp"
#include "tests/server/raw_http.hpp"
#include "tests/support/process.hpp"

namespace encbench::server::testing {

// Sends the head of a chat POST declaring `declared` body bytes and the first `arrived` (>= 9) of
// them; returns once the server counts them in flight (a test failure if it never does).
inline std::unique_ptr<RawConnection> hold_arrived_body(Server& server, std::size_t declared, std::size_t arrived) {
  auto c = std::make_unique<RawConnection>(server.port());
  EXPECT_TRUE(c->send_all(post_header(declared) + "{\"model\":" + std::string(arrived - 9, ' ')));
  EXPECT_TRUE(encbench::testing::eventually(
      [&] { return server.http_stats().inflight_bytes == static_cast<std::int64_t>(arrived); }));
  return c;
}

// Declares `declared` body bytes and sends none: with too much in flight the server refuses it
// before reading the body, 503 server_busy with Retry-After: 1.
inline void expect_declared_body_refused(Server& server, std::size_t declared) {
  RawConnection c(server.port());
  ASSERT_TRUE(c.send_all(post_header(declared)));
  const RawConnection::Response refused = c.read_response();
  ASSERT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(refused.headers.count("retry-after") ? refused.headers.at("retry-after") : "", "1");
  const nlohmann::json body = nlohmann::json::parse(refused.body, nullptr, false);
  EXPECT_TRUE(body.is_object() && body.contains("error") && body["error"].value("code", "") == "server_busy")
      << refused.body;
}

}  // namespace encbench::server::testing
