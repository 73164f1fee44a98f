#include "train/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "io/model_file.h"
#include "util/error.h"
#include "util/logging.h"

namespace attnmt {

namespace fs = std::filesystem;

namespace {

std::string lock_file(const std::string& save_dir) { return (fs::path(save_dir) / "train.lock").string(); }

// The pid written in a lock file (at most 31 bytes).
std::string read_pid(int fd) {
  char buf[32] = {0};
  const auto n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

}  // namespace

std::string save_dir_in_use_message(const std::string& save_dir, const std::string& pid) {
  return "train.save_dir '" + save_dir + "' is in use by another attnmt train (pid " + pid + ")";
}

std::optional<std::string> save_dir_holder(const std::string& save_dir) {
  const auto path = lock_file(save_dir);
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> holder;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    holder = read_pid(fd);
  } else {
    ::flock(fd, LOCK_UN);
  }
  ::close(fd);
  return holder;
}

RunDir::RunDir(const std::string& save_dir) : dir_(save_dir), lock_path_(lock_file(save_dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw InputError("train.save_dir: cannot create '" + dir_ + "': " + ec.message());
  lock_fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT, 0644);
  if (lock_fd_ < 0) throw InputError("train.save_dir: cannot write '" + lock_path_ + "': " + std::strerror(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const auto pid = read_pid(lock_fd_);
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw InputError(save_dir_in_use_message(dir_, pid));
  }
  const auto pid = std::to_string(::getpid());
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0) {
    // the lock itself holds; the pid is only informative
  }
}

RunDir::~RunDir() {
  log_.reset();
  if (lock_fd_ >= 0) {
    ::unlink(lock_path_.c_str());
    ::close(lock_fd_);
  }
}

std::string RunDir::file(const std::string& name) const { return (fs::path(dir_) / name).string(); }

void RunDir::remove_stale_temp_files() const {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const auto name = entry.path().filename().string();
    if (name.find(".tmp.") != std::string::npos) {
      spdlog::info("[train] removing '{}', left by a run stopped while writing it", entry.path().string());
      fs::remove(entry.path(), ec);
    }
  }
}

void RunDir::keep_step_checkpoints(int64_t keep) const {
  auto all = list_step_checkpoints(dir_);
  for (size_t i = static_cast<size_t>(keep); i < all.size(); ++i) {
    std::error_code ec;
    fs::remove(all[i], ec);
  }
}

TrainLogWriter& RunDir::log() {
  if (!log_) log_ = std::make_unique<TrainLogWriter>(file("log.jsonl"));
  return *log_;
}

}  // namespace attnmt
