// Sharded runs without MPI: the shard split, the binary record form, the merge and the agreement
// check (the MPI transport itself is exercised by client_mpi_* with mpirun).
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "harness/client/shard.hpp"
#include "harness/core/error.hpp"

namespace encbench::client {
namespace {

RequestRecord random_record(std::mt19937_64& rng, std::size_t index) {
  RequestRecord r;
  r.index = index;
  r.request_id = "bench-" + std::to_string(index);
  r.dispatched = rng() % 2;
  r.intended_ns = static_cast<Nanos>(rng() >> 2);
  r.arrival_ns = r.intended_ns + 1;
  r.admitted_ns = r.intended_ns + 1 + static_cast<Nanos>(rng() % 2);
  r.dispatch_ns = r.intended_ns + 2;
  r.sent_ns = rng() % 3 ? r.intended_ns + 3 : 0;
  r.headers_ns = r.intended_ns + 4;
  r.first_choices_ns = r.intended_ns + 5;
  r.last_choices_ns = r.intended_ns + 6;
  r.end_ns = r.intended_ns + 7;
  for (int k = 0; k < static_cast<int>(rng() % 5); ++k) r.choices_ns.push_back(r.intended_ns + 10 + k);
  r.data_events = static_cast<std::int64_t>(rng() % 100);
  r.content_chunks = -3;
  r.max_events_per_read = 2;
  r.http_status = 200 + static_cast<int>(rng() % 400);
  r.curl_code = static_cast<int>(rng() % 30);
  r.os_errno = static_cast<int>(rng() % 120);
  r.failure_kind = rng() % 2 ? "connection_reset" : "";
  r.usage_prompt_tokens = -1;
  r.usage_completion_tokens = static_cast<std::int64_t>(rng());
  r.prompt_len_client = 17;
  r.generated_text = std::string(rng() % 40, 'x') + std::string("\0\n\xff", 3);
  r.saw_done = rng() % 2;
  r.error_events = 1;
  r.first_error_event = "boom";
  r.incomplete_stream = rng() % 2;
  r.success = rng() % 2;
  r.error = r.success ? "" : "HTTP 503: busy";
  return r;
}

TEST(Shard, RoundRobinCoversEveryIndexOnce) {
  for (int size : {1, 2, 3, 7}) {
    std::multiset<std::size_t> seen;
    for (int rank = 0; rank < size; ++rank) {
      const auto mine = shard_indices(400, rank, size);
      EXPECT_GE(mine.size(), 400u / size);
      EXPECT_LE(mine.size(), 400u / size + 1);
      for (std::size_t i : mine) {
        EXPECT_EQ(static_cast<int>(i % size), rank);
        seen.insert(i);
      }
    }
    ASSERT_EQ(seen.size(), 400u);
    EXPECT_EQ(std::set<std::size_t>(seen.begin(), seen.end()).size(), 400u);
  }
  EXPECT_THROW(shard_indices(10, 2, 2), InvalidInput);
  EXPECT_TRUE(shard_indices(1, 1, 2).empty());
}

TEST(Shard, RecordsSurviveTheBinaryFormExactly) {
  std::mt19937_64 rng(5);
  std::vector<RequestRecord> records;
  for (std::size_t i = 0; i < 50; ++i) records.push_back(random_record(rng, i));
  const std::string bytes = encode_records(records);
  const auto back = decode_records(bytes);
  ASSERT_EQ(back.size(), records.size());
  for (std::size_t i = 0; i < records.size(); ++i) EXPECT_TRUE(back[i] == records[i]) << "record " << i;
  EXPECT_TRUE(decode_records(encode_records({})).empty());
  // Truncation anywhere and a trailing byte are errors, never garbage records.
  for (std::size_t cut : {std::size_t{0}, std::size_t{3}, bytes.size() / 2, bytes.size() - 1})
    EXPECT_THROW(decode_records(bytes.substr(0, cut)), InvalidInput) << "cut at " << cut;
  EXPECT_THROW(decode_records(bytes + "x"), InvalidInput);
}

TEST(Shard, ShardCarriesLoopFiguresAndSummary) {
  std::mt19937_64 rng(9);
  SendLoopResult run;
  run.start_ns = 1000;
  run.end_ns = 99'000;
  run.interrupted = true;
  run.cpu_user_s = 0.25;
  run.cpu_system_s = 0.5;
  run.loop.arrival_wake_lag_ms = {0.1, 0.2};
  run.loop.iteration_busy_ms = {0.3};
  run.loop.peak_in_flight = 4;
  run.loop.iterations = 12;
  run.loop.peak_send_queue = 7;
  run.loop.connection_limit = 19000;
  run.loop.iterations_at_send_quota = 3;
  run.loop.profile.parse_s = 0.125;
  run.loop.profile.completions = 5;
  run.records = {random_record(rng, 1), random_record(rng, 3)};
  const auto [back, summary] = decode_shard(encode_shard(run, {{"rank", 1}, {"host", "h"}}));
  EXPECT_EQ(back.start_ns, 1000);
  EXPECT_EQ(back.end_ns, 99'000);
  EXPECT_TRUE(back.interrupted);
  EXPECT_EQ(back.cpu_system_s, 0.5);
  EXPECT_EQ(back.loop.arrival_wake_lag_ms, run.loop.arrival_wake_lag_ms);
  EXPECT_EQ(back.loop.iterations, 12);
  EXPECT_EQ(back.loop.peak_send_queue, 7u);
  EXPECT_EQ(back.loop.connection_limit, 19000u);
  EXPECT_EQ(back.loop.iterations_at_send_quota, 3);
  EXPECT_EQ(back.loop.profile.parse_s, 0.125);
  EXPECT_EQ(back.loop.profile.completions, 5);
  EXPECT_EQ(back.records.size(), 2u);
  EXPECT_TRUE(back.records[1] == run.records[1]);
  EXPECT_EQ(summary["host"], "h");
  EXPECT_THROW(decode_shard(encode_records(run.records)), InvalidInput);
}

TEST(Shard, ShiftMovesOnlyRecordedTimes) {
  SendLoopResult run;
  run.start_ns = 500;
  run.end_ns = 900;
  RequestRecord r;
  r.intended_ns = 600;
  r.sent_ns = 0;  // never sent: stays 0
  r.choices_ns = {700, 800};
  run.records.push_back(r);
  shift_times(run, 100);
  EXPECT_EQ(run.start_ns, 400);
  EXPECT_EQ(run.end_ns, 800);
  EXPECT_EQ(run.records[0].intended_ns, 500);
  EXPECT_EQ(run.records[0].sent_ns, 0);
  EXPECT_EQ(run.records[0].choices_ns, (std::vector<Nanos>{600, 700}));
}

TEST(Shard, MergeOrdersByGlobalIndexAndSumsCost) {
  SendLoopResult a, b;
  for (std::size_t i : {0, 2, 4}) a.records.push_back(RequestRecord{.index = i});
  for (std::size_t i : {1, 3}) b.records.push_back(RequestRecord{.index = i});
  a.end_ns = 50;
  b.end_ns = 70;
  a.cpu_user_s = 1;
  b.cpu_user_s = 2;
  a.loop.peak_in_flight = 3;
  b.loop.peak_in_flight = 4;
  b.interrupted = true;
  const auto m = merge_shards({a, b}, 10);
  ASSERT_EQ(m.records.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(m.records[i].index, i);
  EXPECT_EQ(m.start_ns, 10);
  EXPECT_EQ(m.end_ns, 70);
  EXPECT_EQ(m.cpu_user_s, 3);
  EXPECT_EQ(m.loop.peak_in_flight, 7u);
  EXPECT_TRUE(m.interrupted);
  // A lost or doubled shard is an error, not a silently shorter run.
  EXPECT_THROW(merge_shards({a}, 10), InvalidInput);
  EXPECT_THROW(merge_shards({a, b, b}, 10), InvalidInput);
}

TEST(Shard, DisagreementNamesRankAndKey) {
  const std::string ok = "prepared=ok\n--seed=1\nargument 1=bench\n";
  EXPECT_EQ(first_disagreement({ok, ok, ok}), "");
  EXPECT_EQ(first_disagreement({ok}), "");
  EXPECT_EQ(first_disagreement({ok, ok, "prepared=ok\n--seed=2\nargument 1=bench\n"}),
            "rank 2 differs from rank 0 in --seed: '2' vs '1'");
  const auto failed = first_disagreement({ok, "prepared=failed on h2: no such file\n"});
  EXPECT_NE(failed.find("rank 1"), std::string::npos);
  EXPECT_NE(failed.find("no such file"), std::string::npos);
  EXPECT_NE(first_disagreement({ok, ok + "argument 2=--extra\n"}).find("argument 2"), std::string::npos);
}

TEST(Shard, FnvIsStableAndSensitive) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);  // published FNV-1a 64 test vector
  EXPECT_NE(fnv1a64("ab"), fnv1a64("ba"));
}

}  // namespace
}  // namespace encbench::client
