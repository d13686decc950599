#pragma once
// Sharded load generation: one benchmark sent by several client processes. Every
// process builds the same global schedule and sends a deterministic shard of it; the records come
// back to one process, which computes every metric from the merged records exactly as for a
// one-process run (no merging of percentiles).
//
// This header is transport-free: the Coordinator interface is what run_benchmark needs from the
// group (agreement, a common start, a gather). encbench_client_mpi implements it on MPI; the
// client library itself never links MPI.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/client/send_loop.hpp"
#include "harness/client/records.hpp"

namespace encbench::client {

// The common start of a sharded run, in this process's CLOCK_MONOTONIC.
struct CommonStart {
  Nanos start_ns = 0;             // the schedule origin (every rank's start means the same instant)
  Nanos clock_offset_ns = 0;      // this clock - rank 0's clock (0 on rank 0)
  Nanos clock_error_ns = 0;       // bound on |offset error|: half the best ping-pong round trip
  Nanos align_ns = 0;             // what the alignment cost: barrier + ping-pongs + start broadcast
};

// What run_benchmark needs from a group of processes. Every call is collective: every rank calls
// it in the same order. Waits are bounded; a peer that dies or a wait past its bound throws
// std::runtime_error with the reason (the implementation also makes the group stop).
class Coordinator {
 public:
  virtual ~Coordinator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string host() const = 0;
  // Rank 0's value on every rank (waits at most timeout_s for rank 0 to get there).
  virtual std::string broadcast(const std::string& value, double timeout_s) = 0;
  // Every rank's value on rank 0 (in rank order); empty on the others.
  virtual std::vector<std::string> gather(const std::string& value, double timeout_s) = 0;
  // A barrier, the clock offsets to rank 0 (ping-pong, best of several), and a start instant
  // `lead_s` after the barrier in rank 0's clock, converted to this rank's clock.
  virtual CommonStart common_start(double lead_s, double timeout_s) = 0;
  // This rank cannot go on (an error outside the agreed stops): prints `why` for the user and
  // makes the whole group stop instead of leaving the others waiting (MPI_Abort).
  virtual void fail(const std::string& why) = 0;
};

// World size announced by an MPI launcher in the environment (OpenMPI's OMPI_COMM_WORLD_SIZE,
// PMI_SIZE of MPICH/Hydra and Slurm; 1 for PMIx
// launchers that give only PMIX_RANK); 0 when not started by one.
int mpi_launcher_world_size();

// Thrown on ranks other than 0 when the group stopped because of rank 0's verdict (rank 0 throws
// the InvalidInput with the message; the others stop quietly with the same exit code).
class PeerStopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Round-robin shard: the global request indices rank `rank` of `size` sends (i % size == rank).
std::vector<std::size_t> shard_indices(std::size_t total, int rank, int size);

// 64-bit FNV-1a, for the dataset digest every rank must agree on.
std::uint64_t fnv1a64(const std::string& bytes, std::uint64_t seed = 0xcbf29ce484222325ULL);

// Compact binary form of records (little-endian as in memory; both ends are this program on
// the same architecture, which the fingerprint checks). decode throws InvalidInput on a
// truncated or malformed buffer.
std::string encode_records(const std::vector<RequestRecord>& records);
std::vector<RequestRecord> decode_records(const std::string& bytes);
// One rank's whole shard: its SendLoopResult (times already on rank 0's clock) and its summary.
std::string encode_shard(const SendLoopResult& run, const nlohmann::json& summary);
std::pair<SendLoopResult, nlohmann::json> decode_shard(const std::string& bytes);
// Every non-zero time of the run (records, start, end) moved by -delta: to rank 0's clock when
// delta is this rank's clock offset.
void shift_times(SendLoopResult& run, Nanos delta);

// Agreement: rank 0 compares every rank's fingerprint (lines "key=value") with its own and
// returns "" or the first disagreement, e.g. "rank 1 differs from rank 0 in argv: --seed 1 vs --seed 0".
std::string first_disagreement(const std::vector<std::string>& fingerprints);

// One rank's own figures, sent to rank 0 with its records (JSON object; see docs/client.md).
nlohmann::json rank_summary(int rank, const std::string& host, const SendLoopResult& run, const CommonStart& start);

// Rank 0: the per-rank shards merged into one SendLoopResult in global index order, on rank 0's
// clock. start_ns is rank 0's common start; end_ns the latest end; CPU the sum over ranks; loop
// samples concatenated; peak_in_flight the sum of the ranks' peaks (an upper bound).
SendLoopResult merge_shards(std::vector<SendLoopResult> shards, Nanos start_ns);

}  // namespace encbench::client
