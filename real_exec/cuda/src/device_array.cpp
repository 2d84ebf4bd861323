#include "strata/real/device_array.hpp"

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

#include "cuda_error.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

using cuda_detail::check_cuda;

std::size_t byte_count(std::int64_t n, std::size_t element) { return static_cast<std::size_t>(n) * element; }

void check_same_size(std::int64_t n, std::int64_t size, const char* what) {
  STRATA_ASSERT(n == size, std::string(what) + " of " + std::to_string(n) +
                               " elements into a device array of " + std::to_string(size));
}

}  // namespace

template <typename T>
DeviceArray<T>::DeviceArray(std::int64_t size) {
  STRATA_ASSERT(size >= 0, "device array of " + std::to_string(size) + " elements");
  if (size == 0) return;
  void* memory = nullptr;
  const std::size_t bytes = byte_count(size, sizeof(T));
  check_cuda(cudaMalloc(&memory, bytes), "cudaMalloc(" + std::to_string(bytes) + " bytes)");
  data_ = static_cast<T*>(memory);
  size_ = size;
}

template <typename T>
DeviceArray<T>::DeviceArray(const std::vector<T>& host)
    : DeviceArray(static_cast<std::int64_t>(host.size())) {
  upload(host);
}

template <typename T>
DeviceArray<T>::~DeviceArray() {
  release();
}

template <typename T>
DeviceArray<T>::DeviceArray(DeviceArray&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

template <typename T>
DeviceArray<T>& DeviceArray<T>::operator=(DeviceArray&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

template <typename T>
void DeviceArray<T>::release() noexcept {
  if (data_ != nullptr) (void)cudaFree(data_);
  data_ = nullptr;
  size_ = 0;
}

template <typename T>
void DeviceArray<T>::upload(const T* host, std::int64_t n) {
  check_same_size(n, size_, "upload");
  if (n == 0) return;
  const std::size_t bytes = byte_count(n, sizeof(T));
  check_cuda(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice),
             "cudaMemcpy(host to device, " + std::to_string(bytes) + " bytes)");
}

template <typename T>
void DeviceArray<T>::upload(const std::vector<T>& host) {
  upload(host.data(), static_cast<std::int64_t>(host.size()));
}

template <typename T>
void DeviceArray<T>::download(T* host, std::int64_t n) const {
  check_same_size(n, size_, "download");
  if (n == 0) return;
  const std::size_t bytes = byte_count(n, sizeof(T));
  check_cuda(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost),
             "cudaMemcpy(device to host, " + std::to_string(bytes) + " bytes)");
}

template <typename T>
std::vector<T> DeviceArray<T>::download() const {
  std::vector<T> host(static_cast<std::size_t>(size_));
  download(host.data(), size_);
  return host;
}

template <typename T>
void DeviceArray<T>::zero() {
  if (size_ == 0) return;
  const std::size_t bytes = byte_count(size_, sizeof(T));
  check_cuda(cudaMemset(data_, 0, bytes), "cudaMemset(" + std::to_string(bytes) + " bytes)");
}

template class DeviceArray<float>;
template class DeviceArray<double>;
template class DeviceArray<std::int32_t>;
template class DeviceArray<std::int64_t>;

}  // namespace strata::real
