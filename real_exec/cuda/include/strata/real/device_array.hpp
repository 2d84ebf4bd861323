// DeviceArray<T>: a contiguous array of T in the memory of one CUDA device, which it owns.
//
// It is to the CUDA backend what Tensor's std::vector is to the CPU kernels: the storage that
// device pointers borrow (data(), or data() + offset for a microbatch slice). Instantiated for
// float and double (tensors), std::int32_t (labels) and std::int64_t (max-pool argmax).
//
// Allocation: cudaMalloc on the calling thread's current device (CudaBackend::activate() sets
// it); the elements start uninitialised. The destructor frees with cudaFree, which waits for the
// device, so an array outlives the kernels that use it.
// Copies: upload(), download() and zero() (cudaMemcpy, cudaMemset) run on CUDA's legacy default
// stream, which is ordered with the blocking streams such as CudaBackend's: work queued on those
// before a copy finishes before it, work queued after starts after it. So a download sees the
// results of every kernel queued before it on that device, and a kernel queued after an upload
// or zero() sees the new values. upload() returns once the host buffer may be reused, download()
// once the values are in it; zero() may return before the device has run it.
// Errors: a failing CUDA call throws InputError naming it (e.g. "CUDA: cudaMalloc(4096 bytes):
// cudaErrorMemoryAllocation (out of memory)"); a size mismatch trips STRATA_ASSERT. Errors of the
// destructor's cudaFree cannot be reported and are dropped.
// Ownership: move-only; a moved-from array is empty. data() is valid until the array is moved
// from, reassigned or destroyed.
// Thread safety: none of its own, like Tensor.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::real {

template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;  // empty: size() == 0, data() == nullptr
  // REQUIRES: size >= 0.
  explicit DeviceArray(std::int64_t size);
  // Allocates host.size() elements and uploads them.
  explicit DeviceArray(const std::vector<T>& host);
  ~DeviceArray();

  DeviceArray(DeviceArray&& other) noexcept;
  DeviceArray& operator=(DeviceArray&& other) noexcept;
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  std::int64_t size() const { return size_; }
  T* data() { return data_; }
  const T* data() const { return data_; }

  // REQUIRES: n == size(); `host` holds n elements.
  void upload(const T* host, std::int64_t n);
  // REQUIRES: host.size() == size().
  void upload(const std::vector<T>& host);
  // REQUIRES: n == size(); `host` has room for n elements.
  void download(T* host, std::int64_t n) const;
  std::vector<T> download() const;
  // Sets every byte to zero (0.0 for float and double).
  void zero();

 private:
  void release() noexcept;

  T* data_ = nullptr;
  std::int64_t size_ = 0;
};

extern template class DeviceArray<float>;
extern template class DeviceArray<double>;
extern template class DeviceArray<std::int32_t>;
extern template class DeviceArray<std::int64_t>;

}  // namespace strata::real
