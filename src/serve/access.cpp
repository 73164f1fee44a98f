#include "serve/access.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "util/error.h"

namespace attnmt {

std::string read_api_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("--api-key-file " + path + ": cannot be read");
  std::string key;
  std::getline(in, key);
  const auto first = key.find_first_not_of(" \t\r");
  const auto last = key.find_last_not_of(" \t\r");
  key = first == std::string::npos ? "" : key.substr(first, last - first + 1);
  if (key.empty()) throw InputError("--api-key-file " + path + ": its first line holds no key");
  validate_api_key(key);
  return key;
}

void validate_api_key(const std::string& key) {
  if (key.empty()) throw InputError("--api-key: empty (leave it out to serve without a key)");
  for (unsigned char c : key) {
    if (c <= ' ' || c == 0x7f) {
      throw InputError("--api-key: spaces and control characters cannot travel in an Authorization header");
    }
  }
}

bool is_loopback_host(const std::string& host) {
  // An address read as one, never a name that begins like one ("127.evil.example" is a name
  // that DNS may point anywhere). The short IPv4 forms ("127.1") read as names: a warning too many.
  std::string h = host.size() >= 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2) : host;
  std::string lower = h;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;  // 127.0.0.0/8
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);  // ::1, ::ffff:127.x
  }
  return false;
}

bool constant_time_equal(const std::string& a, const std::string& b) {
  // Every byte of the longer string is looked at, whatever matched before.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

AccessDecision check_access(const AccessOptions& options, const std::string& method, const std::string& path,
                            const std::string& authorization, const std::string& origin) {
  AccessDecision d;
  const bool cors =
      !options.cors_origin.empty() && !origin.empty() && (options.cors_origin == "*" || options.cors_origin == origin);
  if (cors) {
    d.headers.emplace_back("Access-Control-Allow-Origin", options.cors_origin == "*" ? "*" : origin);
    d.headers.emplace_back("Vary", "Origin");
  }
  // A preflight carries no credentials (Fetch standard, CORS-preflight request): answered
  // without the key, and only for the origin named.
  if (method == "OPTIONS" && cors) {
    d.status = 204;
    d.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    d.headers.emplace_back("Access-Control-Allow-Headers", "Authorization, Content-Type");
    d.headers.emplace_back("Access-Control-Max-Age", "600");
    return d;
  }
  if (options.api_key.empty()) return d;
  if (method == "GET" && (path == "/health" || path == "/")) return d;
  static const std::string kBearer = "Bearer ";
  const bool bearer = authorization.size() > kBearer.size() && authorization.compare(0, kBearer.size(), kBearer) == 0;
  if (bearer && constant_time_equal(authorization.substr(kBearer.size()), options.api_key)) return d;
  d.status = 401;
  d.message = bearer ? "wrong API key" : "this server needs an API key: send Authorization: Bearer KEY";
  d.headers.emplace_back("WWW-Authenticate", "Bearer");
  return d;
}

}  // namespace attnmt
