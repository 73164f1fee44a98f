// Who may use `attnmt serve`: an API key, and which web origin (CORS) may call it from a browser.
// With a key set, every request but GET /health and GET / (the page, which sends the key with its
// own calls) must carry `Authorization: Bearer KEY`, else 401; the key is compared in constant
// time, so the time of a refusal does not tell how much of a guess was right. CORS is off unless
// an origin is named: then that origin (or any, for "*") gets the Access-Control-Allow-* headers
// and its preflight OPTIONS requests are answered. No HTTP library here: the server applies what
// check_access decides.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace attnmt {

struct AccessOptions {
  std::string api_key;      // empty: no key asked for
  std::string cors_origin;  // empty: no CORS headers; "*": any origin
};

// The first line of `path`, spaces trimmed: InputError when it cannot be read or holds no key.
std::string read_api_key_file(const std::string& path);

// InputError for a key that cannot travel in an Authorization header (empty, spaces, control bytes).
void validate_api_key(const std::string& key);

// Whether `host` (as given to --host) is a loopback address: an IPv4 address in 127.0.0.0/8, ::1
// (bracketed or not), ::ffff:127.x.y.z, or the name localhost. Any other name is not.
bool is_loopback_host(const std::string& host);

// a == b, in a time that depends on the lengths only.
bool constant_time_equal(const std::string& a, const std::string& b);

struct AccessDecision {
  int status = 0;  // 0: go on to the endpoint; 204: a preflight, answered; 401: refused
  std::string message;
  std::vector<std::pair<std::string, std::string>> headers;  // to add to the answer, whatever it is
};

AccessDecision check_access(const AccessOptions& options, const std::string& method, const std::string& path,
                            const std::string& authorization, const std::string& origin);

}  // namespace attnmt
