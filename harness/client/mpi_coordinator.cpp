#include "harness/client/mpi_coordinator.hpp"

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <ctime>
#include <limits>
#include <stdexcept>

#include "harness/core/clock.hpp"

namespace encbench::client {

namespace {

constexpr int kTagPing = 7101, kTagPong = 7102, kTagOffset = 7103;

class MpiCoordinator final : public Coordinator {
 public:
  MpiCoordinator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      // Only the main thread calls MPI (the event loop runs on it too): FUNNELED is enough.
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        throw std::runtime_error("MPI_Init_thread failed");
      owns_init_ = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    host_.assign(name, static_cast<std::size_t>(len));
  }

  ~MpiCoordinator() override {
    if (failed_) {
      // The others may be inside a collective this rank will never join: stop them all.
      MPI_Abort(MPI_COMM_WORLD, 1);
      return;
    }
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    if (owns_init_) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string host() const override { return host_; }

  std::string broadcast(const std::string& value, double timeout_s) override {
    std::uint64_t n = value.size();
    MPI_Request req;
    check(MPI_Ibcast(&n, 1, MPI_UINT64_T, 0, comm_, &req), "MPI_Ibcast");
    wait(req, timeout_s, "the broadcast of rank 0's value (length)");
    std::string out = rank_ == 0 ? value : std::string(n, '\0');
    require_int(n, "broadcast");
    if (n > 0) {
      check(MPI_Ibcast(out.data(), static_cast<int>(n), MPI_CHAR, 0, comm_, &req), "MPI_Ibcast");
      wait(req, 120, "the broadcast of rank 0's value");
    }
    return out;
  }

  std::vector<std::string> gather(const std::string& value, double timeout_s) override {
    std::int64_t n = static_cast<std::int64_t>(value.size());
    require_int(static_cast<std::uint64_t>(n), "gather");
    std::vector<std::int64_t> sizes(rank_ == 0 ? static_cast<std::size_t>(size_) : 0);
    MPI_Request req;
    check(MPI_Igather(&n, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, 0, comm_, &req), "MPI_Igather");
    wait(req, timeout_s, "every rank's shard (sizes)");
    std::vector<int> counts, displs;
    std::string all;
    if (rank_ == 0) {
      std::int64_t total = 0;
      for (auto s : sizes) {
        counts.push_back(static_cast<int>(s));
        displs.push_back(static_cast<int>(total));
        total += s;
      }
      require_int(static_cast<std::uint64_t>(total), "gather (all ranks together)");
      all.resize(static_cast<std::size_t>(total));
    }
    check(MPI_Igatherv(value.data(), static_cast<int>(n), MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0,
                       comm_, &req),
          "MPI_Igatherv");
    wait(req, 120, "every rank's shard (data)");
    std::vector<std::string> out;
    for (std::size_t k = 0; k < counts.size(); ++k) out.push_back(all.substr(static_cast<std::size_t>(displs[k]), static_cast<std::size_t>(counts[k])));
    return out;
  }

  CommonStart common_start(double lead_s, double timeout_s) override {
    CommonStart cs;
    const Nanos t_barrier = now_ns();
    MPI_Request req;
    check(MPI_Ibarrier(comm_, &req), "MPI_Ibarrier");
    wait(req, timeout_s, "the start barrier");
    // Clock offsets to rank 0, NTP style: rank 0 sends t0, rank k answers with its clock t1,
    // rank 0 reads t2; offset = t1 - (t0 + t2) / 2, wrong by at most (t2 - t0) / 2. The round
    // with the smallest round trip wins.
    constexpr int kRounds = 16;
    std::int64_t mine[2] = {0, 0};  // offset, error bound (on rank k after the scatter)
    Nanos max_rtt = 0;
    if (rank_ == 0) {
      for (int k = 1; k < size_; ++k) {
        Nanos best_rtt = std::numeric_limits<Nanos>::max(), best_offset = 0;
        for (int round = 0; round < kRounds; ++round) {
          Nanos t0 = now_ns(), t1 = 0;
          MPI_Request reqs[2];
          check(MPI_Irecv(&t1, 1, MPI_INT64_T, k, kTagPong, comm_, &reqs[1]), "MPI_Irecv");
          t0 = now_ns();
          check(MPI_Isend(&t0, 1, MPI_INT64_T, k, kTagPing, comm_, &reqs[0]), "MPI_Isend");
          wait(reqs[0], 30, "the clock ping to rank " + std::to_string(k));
          wait(reqs[1], 30, "the clock pong from rank " + std::to_string(k));
          const Nanos t2 = now_ns();
          if (t2 - t0 < best_rtt) {
            best_rtt = t2 - t0;
            best_offset = t1 - (t0 + t2) / 2;
          }
        }
        max_rtt = std::max(max_rtt, best_rtt);
        std::int64_t result[2] = {best_offset, best_rtt / 2};
        check(MPI_Isend(result, 2, MPI_INT64_T, k, kTagOffset, comm_, &req), "MPI_Isend");
        wait(req, 30, "sending rank " + std::to_string(k) + " its clock offset");
      }
    } else {
      for (int round = 0; round < kRounds; ++round) {
        Nanos t0 = 0;
        check(MPI_Irecv(&t0, 1, MPI_INT64_T, 0, kTagPing, comm_, &req), "MPI_Irecv");
        wait(req, 30 + timeout_s, "the clock ping from rank 0");
        Nanos t1 = now_ns();
        check(MPI_Isend(&t1, 1, MPI_INT64_T, 0, kTagPong, comm_, &req), "MPI_Isend");
        wait(req, 30, "the clock pong to rank 0");
      }
      check(MPI_Irecv(mine, 2, MPI_INT64_T, 0, kTagOffset, comm_, &req), "MPI_Irecv");
      wait(req, 30 + timeout_s, "the clock offset from rank 0");
    }
    // The start instant on rank 0's clock: far enough ahead that the broadcast reaches everyone.
    Nanos start0 = rank_ == 0 ? now_ns() + std::max(static_cast<Nanos>(lead_s * 1e9), 100 * max_rtt) : 0;
    check(MPI_Ibcast(&start0, 1, MPI_INT64_T, 0, comm_, &req), "MPI_Ibcast");
    wait(req, 30 + timeout_s, "the start instant from rank 0");
    cs.clock_offset_ns = mine[0];
    cs.clock_error_ns = mine[1];
    cs.start_ns = start0 + cs.clock_offset_ns;
    cs.align_ns = now_ns() - t_barrier;
    return cs;
  }

  void fail(const std::string& why) override {
    if (!failed_) std::fprintf(stderr, "encbench: rank %d (%s): error: %s; stopping all ranks\n", rank_, host_.c_str(), why.c_str());
    std::fflush(stderr);
    failed_ = true;
  }

 private:
  void check(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int len = 0;
    MPI_Error_string(rc, text, &len);
    const std::string msg = std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(len));
    fail(msg);
    throw std::runtime_error(msg);
  }

  void require_int(std::uint64_t n, const char* what) {
    if (n > static_cast<std::uint64_t>(INT_MAX)) {
      const std::string msg = std::string(what) + ": " + std::to_string(n) + " bytes exceed MPI's int count";
      fail(msg);
      throw std::runtime_error(msg);
    }
  }

  // Polls a non-blocking operation until it completes, fails, or `timeout_s` passes (<= 0: 24 h).
  // Spins for the first millisecond (clock ping-pongs stay tight), then sleeps 200 us per poll.
  void wait(MPI_Request& req, double timeout_s, const std::string& what) {
    const Nanos start = now_ns();
    const Nanos limit = static_cast<Nanos>((timeout_s > 0 ? timeout_s : 86400.0) * 1e9);
    for (;;) {
      int done = 0;
      MPI_Status status;
      const int rc = MPI_Test(&req, &done, &status);
      if (rc != MPI_SUCCESS) check(rc, ("waiting for " + what).c_str());
      if (done) return;
      const Nanos waited = now_ns() - start;
      if (waited > limit) {
        const std::string msg = "no answer after " + std::to_string(static_cast<long long>(waited / 1'000'000'000)) +
                                " s waiting for " + what + " (a rank died, hangs, or is far behind)";
        fail(msg);
        throw std::runtime_error(msg);
      }
      if (waited < 1'000'000) {
        sched_yield();
      } else {
        const timespec ts{0, 200'000};
        nanosleep(&ts, nullptr);
      }
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::string host_;
  bool owns_init_ = false;
  bool failed_ = false;
};

}  // namespace

std::unique_ptr<Coordinator> make_mpi_coordinator_if_launched() {
  if (mpi_launcher_world_size() == 0) return nullptr;
  return std::make_unique<MpiCoordinator>();
}

}  // namespace encbench::client
