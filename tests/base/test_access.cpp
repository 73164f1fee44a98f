// serve/access.h: which --host is loopback (an address read as one, not a name's prefix), the key
// comparison (equal only for equal bytes, in a time that does not depend on where they differ),
// and check_access's decisions: the key, the endpoints open without it, CORS for a named origin
// and for "*", preflights. Torch-free: access.cpp is compiled into this test (tests/CMakeLists.txt).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "serve/access.h"

using attnmt::AccessDecision;
using attnmt::AccessOptions;
using attnmt::check_access;
using attnmt::constant_time_equal;
using attnmt::is_loopback_host;

namespace {

// The value of header `name` in a decision, "" when it has none.
std::string header(const AccessDecision& d, const std::string& name) {
  for (const auto& [key, value] : d.headers) {
    if (key == name) return value;
  }
  return "";
}

}  // namespace

TEST_CASE("is_loopback_host: 127.0.0.0/8, ::1 and localhost, not names that begin like them", "[serve][access]") {
  for (const std::string host : {"127.0.0.1", "127.1.2.3", "127.255.255.255", "::1", "[::1]", "0:0:0:0:0:0:0:1",
                                 "::ffff:127.0.0.1", "localhost", "LocalHost"}) {
    INFO(host);
    CHECK(is_loopback_host(host));
  }
  for (const std::string host :
       {"127.evil.example", "127.0.0.1.evil.example", "127.0.0.1 ", "localhost.evil.example", "evil-localhost", "128.0.0.1",
        "126.255.255.255", "0.0.0.0", "::", "[::]", "::2", "::ffff:10.0.0.1", "10.0.0.1", "192.168.1.1", "example.org",
        "", "[", "[]"}) {
    INFO(host);
    CHECK_FALSE(is_loopback_host(host));
  }
}

TEST_CASE("constant_time_equal: equal bytes only", "[serve][access]") {
  const std::string key = "s3cret-key-0123456789";
  CHECK(constant_time_equal(key, std::string(key)));
  CHECK(constant_time_equal("", ""));
  CHECK(constant_time_equal(std::string("a\0b", 3), std::string("a\0b", 3)));
  CHECK_FALSE(constant_time_equal(std::string("a\0b", 3), std::string("a\0c", 3)));
  CHECK_FALSE(constant_time_equal(std::string("a\0", 2), "a"));  // a NUL more is a byte more
  CHECK_FALSE(constant_time_equal("", "a"));
  CHECK_FALSE(constant_time_equal(key, key.substr(0, key.size() - 1)));  // a prefix
  CHECK_FALSE(constant_time_equal(key, key + "x"));                      // a byte more
  for (size_t i = 0; i < key.size(); ++i) {                              // one bit off anywhere
    std::string other = key;
    other[i] = static_cast<char>(other[i] ^ 1);
    INFO("byte " << i);
    CHECK_FALSE(constant_time_equal(key, other));
    CHECK_FALSE(constant_time_equal(other, key));
  }
  std::string three = key;  // three bytes apart
  three[0] = 'S', three[7] = 'K', three[20] = '8';
  CHECK_FALSE(constant_time_equal(key, three));
}

TEST_CASE("constant_time_equal: a difference at the first byte takes as long as one at the last", "[serve][access]") {
  // 4 MiB strings: an early exit (memcmp, ==) answers a first-byte difference thousands of times
  // faster than a last-byte one. The fastest of 15 runs of each, so that other work on the machine
  // (which only adds time) does not decide; the bound leaves a factor 3 to noise.
  const std::string a(4 << 20, 'k');
  std::string first = a, last = a;
  first.front() = 'x';
  last.back() = 'x';
  // The two alternate, so that a change of load or clock speed meets both alike.
  double at_first = 1e9, at_last = 1e9;
  auto time = [&](const std::string& b, double& best) {
    const auto start = std::chrono::steady_clock::now();
    const bool equal = constant_time_equal(a, b);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    REQUIRE_FALSE(equal);
    best = std::min(best, s);
  };
  for (int run = 0; run < 15; ++run) {
    time(first, at_first);
    time(last, at_last);
  }
  INFO("first byte differs: " << at_first * 1e3 << " ms, last byte: " << at_last * 1e3 << " ms");
  CHECK(at_first > at_last / 3);
  CHECK(at_last > at_first / 3);
}

TEST_CASE("check_access: the key, the endpoints open without it, and what a refusal says", "[serve][access]") {
  const AccessOptions open{};
  CHECK(check_access(open, "POST", "/v1/translate", "", "").status == 0);
  CHECK(check_access(open, "POST", "/v1/translate", "Bearer anything", "").headers.empty());

  const std::string key = "k3y-with-some-length";
  const AccessOptions keyed{key, ""};
  CHECK(check_access(keyed, "POST", "/v1/translate", "Bearer " + key, "").status == 0);
  CHECK(check_access(keyed, "GET", "/v1/models", "Bearer " + key, "").status == 0);
  // Open without the key: the health check and the page (whose own calls send the key).
  CHECK(check_access(keyed, "GET", "/health", "", "").status == 0);
  CHECK(check_access(keyed, "GET", "/", "", "").status == 0);

  std::string three = key;
  three[1] = 'E', three[5] = 'W', three[19] = 'T';
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"", "this server needs an API key: send Authorization: Bearer KEY"},
      {key, "this server needs an API key: send Authorization: Bearer KEY"},  // no scheme
      {"Basic " + key, "this server needs an API key: send Authorization: Bearer KEY"},
      {"Bearer ", "this server needs an API key: send Authorization: Bearer KEY"},
      {"Bearer " + three, "wrong API key"},  // 3 bytes different
      {"Bearer " + key.substr(0, key.size() - 1), "wrong API key"},
      {"Bearer " + key + "x", "wrong API key"},
      {"Bearer  " + key, "wrong API key"},
      {"Bearer " + key + " ", "wrong API key"},
  };
  for (const auto& [authorization, message] : refused) {
    for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
             {"POST", "/v1/translate"}, {"POST", "/translator/translate"}, {"GET", "/metrics"}, {"POST", "/health"}}) {
      INFO(method << " " << path << " with '" << authorization << "'");
      const auto d = check_access(keyed, method, path, authorization, "");
      CHECK(d.status == 401);
      CHECK(d.message == message);
      CHECK(header(d, "WWW-Authenticate") == "Bearer");
      CHECK(header(d, "Access-Control-Allow-Origin").empty());
    }
  }
  // Without CORS, a preflight is a request like any other: refused without the key.
  CHECK(check_access(keyed, "OPTIONS", "/v1/translate", "", "https://app.example").status == 401);
}

TEST_CASE("check_access: CORS for the named origin only, for any with *, and preflights", "[serve][access]") {
  const AccessOptions named{"", "https://app.example"};
  auto d = check_access(named, "POST", "/v1/translate", "", "https://app.example");
  CHECK(d.status == 0);
  CHECK(header(d, "Access-Control-Allow-Origin") == "https://app.example");
  CHECK(header(d, "Vary") == "Origin");
  for (const std::string other : {"https://evil.example", "https://app.example.evil.example", "http://app.example", ""}) {
    INFO("origin '" << other << "'");
    d = check_access(named, "POST", "/v1/translate", "", other);
    CHECK(d.status == 0);
    CHECK(d.headers.empty());
    CHECK(check_access(named, "OPTIONS", "/v1/translate", "", other).headers.empty());
  }

  // "*": every origin gets "*" (not its own name echoed), and its preflights are answered.
  const AccessOptions any{"", "*"};
  for (const std::string origin : {"https://app.example", "https://evil.example", "null"}) {
    INFO("origin " << origin);
    d = check_access(any, "POST", "/v1/translate", "", origin);
    CHECK(d.status == 0);
    CHECK(header(d, "Access-Control-Allow-Origin") == "*");
    d = check_access(any, "OPTIONS", "/v1/translate", "", origin);
    CHECK(d.status == 204);
    CHECK(header(d, "Access-Control-Allow-Origin") == "*");
    CHECK(header(d, "Access-Control-Allow-Methods") == "GET, POST, OPTIONS");
    CHECK(header(d, "Access-Control-Allow-Headers") == "Authorization, Content-Type");
  }
  CHECK(check_access(any, "POST", "/v1/translate", "", "").headers.empty());  // no Origin: not a CORS request

  // With a key: a preflight carries no credentials and is answered; the request itself needs the
  // key, and its 401 carries the CORS headers so that the page can read it.
  const AccessOptions both{"k3y", "*"};
  CHECK(check_access(both, "OPTIONS", "/v1/translate", "", "https://app.example").status == 204);
  d = check_access(both, "POST", "/v1/translate", "", "https://app.example");
  CHECK(d.status == 401);
  CHECK(header(d, "Access-Control-Allow-Origin") == "*");
  CHECK(check_access(both, "POST", "/v1/translate", "Bearer k3y", "https://app.example").status == 0);
}
