// Two hosts on one machine, for the multi-host training tests: network namespaces joined by a
// veth pair (host A 10.231.7.1/24 on veth-a, host B 10.231.7.2/24 on veth-b, loopback up in
// each). In each, the host name resolves to 127.0.1.1, as on a stock Debian install, where Gloo's
// default device would advertise loopback: `ip netns exec` mounts /etc/netns/<name>/hosts over
// /etc/hosts. Needs root and `ip netns`; the destructor kills whatever still runs in the two
// namespaces and removes them (and their /etc/netns folders), pass or fail.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "program.h"

namespace attnmt::test {

class TwoHosts {
 public:
  static constexpr const char* kAddress[2] = {"10.231.7.1", "10.231.7.2"};

  TwoHosts() {
    const std::string pid = std::to_string(::getpid());
    name_[0] = "attnmt-" + pid + "-a";
    name_[1] = "attnmt-" + pid + "-b";
    if (::geteuid() != 0) {
      error_ = "not root";
      return;
    }
    for (int h = 0; h < 2; ++h) {
      std::filesystem::create_directories(etc(h));
      std::ofstream(etc(h) / "hosts") << "127.0.0.1 localhost\n127.0.1.1 " << host_name() << "\n";
    }
    // every step must succeed; the output of the first that fails is the reason to skip
    const std::string out = shell(
        "set -e; ip netns add " + name_[0] + "; ip netns add " + name_[1] + "; ip link add veth-a netns " + name_[0] +
        " type veth peer name veth-b netns " + name_[1] + "; ip -n " + name_[0] + " addr add " + kAddress[0] +
        "/24 dev veth-a; ip -n " + name_[1] + " addr add " + kAddress[1] + "/24 dev veth-b; for n in " + name_[0] +
        " " + name_[1] + "; do ip -n $n link set lo up; done; ip -n " + name_[0] + " link set veth-a up; ip -n " +
        name_[1] + " link set veth-b up; echo made");
    if (out.find("made") == std::string::npos) error_ = "ip netns: " + out.substr(0, out.find('\n'));
  }

  ~TwoHosts() {
    for (int h = 0; h < 2; ++h) {
      shell("ip netns pids " + name_[h] + " 2>/dev/null | xargs -r kill -9; ip netns del " + name_[h] + " 2>/dev/null; true");
      std::filesystem::remove_all(etc(h));
    }
  }
  TwoHosts(const TwoHosts&) = delete;
  TwoHosts& operator=(const TwoHosts&) = delete;

  // "" when the hosts exist; else why not (the test skips, or fails under CI=true).
  const std::string& error() const { return error_; }
  // A command's prefix that runs it on host h (0: A, 1: B).
  std::string on(int h) const { return "ip netns exec " + name_[h] + " "; }
  // The processes still running on host h, one pid per line ("" when none).
  std::string processes(int h) const { return shell("ip netns pids " + name_[h]); }
  const std::string& name(int h) const { return name_[h]; }

 private:
  std::filesystem::path etc(int h) const { return std::filesystem::path("/etc/netns") / name_[h]; }
  static std::string host_name() {
    char buf[256] = {};
    ::gethostname(buf, sizeof(buf) - 1);
    return buf;
  }

  std::string name_[2];
  std::string error_;
};

}  // namespace attnmt::test
