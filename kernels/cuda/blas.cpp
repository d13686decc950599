// Projections through cuBLAS and the device queries: plain C++ against the CUDA runtime and
// cuBLAS headers (no nvcc needed for this file).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <climits>
#include <string>

#include "harness/core/error.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/encoder_kernels.hpp"

namespace encbench::kernels::cuda {
namespace {

void check_blas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw CudaError(std::string(call) + " failed: cuBLAS status " + std::to_string(static_cast<int>(status)));
}

}  // namespace

int device_count(std::string* reason) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (reason) *reason = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
    (void)cudaGetLastError();  // do not leave the error for the next unrelated check
    return 0;
  }
  if (count == 0 && reason) *reason = "cudaGetDeviceCount returned 0";
  return count;
}

std::string device_description(int ordinal) {
  cudaDeviceProp prop{};
  ENCBENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

BlasHandle::BlasHandle() {
  cublasHandle_t handle = nullptr;
  check_blas(cublasCreate(&handle), "cublasCreate");
  handle_ = handle;
}

BlasHandle::~BlasHandle() {
  if (handle_) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

void gemm(BlasHandle& blas, const GemmArgs& a, void* stream) {
  require(a.x && a.w && a.out, "gemm: x, w and out must be device pointers");
  require(a.m >= 0 && a.n > 0 && a.k > 0 && a.m <= INT_MAX && a.n <= INT_MAX && a.k <= INT_MAX,
          "gemm: need 0 <= m and 0 < n, k <= INT_MAX");
  if (a.m == 0) return;
  auto handle = static_cast<cublasHandle_t>(blas.native());
  check_blas(cublasSetStream(handle, as_stream(stream)), "cublasSetStream");
  const cudaDataType type = a.dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const float alpha = 1.f, beta = 0.f;
  // Row-major out[m,n] = x[m,k] w[n,k]^T is column-major out^T[n,m] = w^T... : cuBLAS sees w as a
  // column-major [k,n] matrix (transpose it) and x as column-major [k,m].
  check_blas(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(a.n), static_cast<int>(a.m),
                          static_cast<int>(a.k), &alpha, a.w, type, static_cast<int>(a.k), a.x, type,
                          static_cast<int>(a.k), &beta, a.out, type, static_cast<int>(a.n),
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
             "cublasGemmEx");
  if (a.bias) add_bias(a.dtype, a.out, a.m, a.n, a.bias, stream);
}

void gemm_f32(BlasHandle& blas, const GemmF32Args& a, void* stream) {
  require(a.x && a.w && a.out, "gemm_f32: x, w and out must be device pointers");
  require(a.m >= 0 && a.n > 0 && a.k > 0 && a.m <= INT_MAX && a.n <= INT_MAX && a.k <= INT_MAX,
          "gemm_f32: need 0 <= m and 0 < n, k <= INT_MAX");
  if (a.m == 0) return;
  auto handle = static_cast<cublasHandle_t>(blas.native());
  check_blas(cublasSetStream(handle, as_stream(stream)), "cublasSetStream");
  const float alpha = 1.f, beta = 0.f;
  // The same transposes as gemm(): row-major out[m,n] = x[m,k] w[n,k]^T is column-major
  // out^T[n,m] = (w viewed as [k,n])^T * (x viewed as [k,m]); leading dims k, k, n.
  check_blas(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(a.n), static_cast<int>(a.m),
                          static_cast<int>(a.k), &alpha, a.w, CUDA_R_32F, static_cast<int>(a.k), a.x, CUDA_R_32F,
                          static_cast<int>(a.k), &beta, a.out, CUDA_R_32F, static_cast<int>(a.n),
                          a.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
             "cublasGemmEx (fp32)");
  if (a.bias) add_bias_f32(a.out, a.m, a.n, a.bias, stream);
}

}  // namespace encbench::kernels::cuda
