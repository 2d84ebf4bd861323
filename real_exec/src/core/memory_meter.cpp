#include "strata/real/core/memory_meter.hpp"

#include <utility>

namespace strata::real {
namespace {

thread_local const MeterScope* innermost = nullptr;

}  // namespace

MemoryMeter::MemoryMeter(std::size_t workers)
    : workers_(workers),
      live_(std::make_unique<std::atomic<std::int64_t>[]>(workers)),
      peak_(std::make_unique<std::atomic<std::int64_t>[]>(workers)) {}

void MemoryMeter::add(WorkerId w, std::int64_t bytes) {
  const auto i = static_cast<std::size_t>(w);
  if (i >= workers_) return;  // a worker this meter does not count (another process's)
  const std::int64_t now = live_[i].fetch_add(bytes) + bytes;
  std::int64_t peak = peak_[i].load();
  while (now > peak && !peak_[i].compare_exchange_weak(peak, now)) {
  }
}

std::int64_t MemoryMeter::live(WorkerId w) const { return live_[static_cast<std::size_t>(w)].load(); }

std::int64_t MemoryMeter::peak(WorkerId w) const { return peak_[static_cast<std::size_t>(w)].load(); }

void MemoryMeter::reset_peaks() {
  for (std::size_t i = 0; i < workers_; ++i) peak_[i].store(live_[i].load());
}

Held::Held(std::shared_ptr<MemoryMeter> meter, WorkerId worker, std::int64_t bytes)
    : meter_(std::move(meter)), worker_(worker), bytes_(meter_ != nullptr ? bytes : 0) {
  if (bytes_ != 0) meter_->add(worker_, bytes_);
}

Held Held::here(std::int64_t bytes) {
  if (innermost == nullptr) return Held{};
  return Held(*innermost->meter_, innermost->worker_, bytes);
}

Held::~Held() { release(); }

Held::Held(Held&& other) noexcept
    : meter_(std::move(other.meter_)), worker_(other.worker_), bytes_(std::exchange(other.bytes_, 0)) {}

Held& Held::operator=(Held&& other) noexcept {
  if (this != &other) {
    release();
    meter_ = std::move(other.meter_);
    worker_ = other.worker_;
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void Held::release() {
  if (bytes_ != 0 && meter_ != nullptr) meter_->add(worker_, -bytes_);
  bytes_ = 0;
}

MeterScope::MeterScope(const std::shared_ptr<MemoryMeter>& meter, WorkerId worker)
    : outer_(innermost), meter_(&meter), worker_(worker) {
  innermost = this;
}

MeterScope::~MeterScope() { innermost = outer_; }

}  // namespace strata::real
