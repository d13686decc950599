#pragma once
// The Coordinator of a sharded run on MPI (OpenMPI from Debian; any MPI-3 library works). Built
// only when CMake finds MPI (ENCBENCH_MPI=AUTO|ON), as its own library encbench_client_mpi, so
// the rest of the client never links MPI.
//
// Errors are returned, not fatal: the communicator uses MPI_ERRORS_RETURN, every wait is a
// non-blocking operation polled against a deadline, and a failure (an MPI error, a peer that
// died, a deadline passed) is printed with the rank and what it was waiting for, after which the
// group is stopped with MPI_Abort instead of left hanging.
#include <memory>

#include "harness/client/shard.hpp"

namespace encbench::client {

// MPI_Init_thread + a duplicated MPI_COMM_WORLD when this process was started by an MPI launcher
// (mpi_launcher_world_size() > 0); nullptr otherwise (today's one-process behaviour, MPI never
// initialised). MPI_Finalize (or MPI_Abort after fail()) runs when the object is destroyed.
std::unique_ptr<Coordinator> make_mpi_coordinator_if_launched();

}  // namespace encbench::client
