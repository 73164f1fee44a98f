#include "serve/connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace attnmt {
namespace {

bool same_end(const sockaddr_storage& a, const std::string& address, int port) {
  char text[INET6_ADDRSTRLEN] = {0};
  int p = -1;
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text));
    p = ntohs(in.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text));
    p = ntohs(in6.sin6_port);
  } else {
    return false;
  }
  return p == port && (address.empty() || address == text);
}

int local_port_of(int fd) {
  sockaddr_storage a{};
  socklen_t length = sizeof(a);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) != 0) return -1;
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
  return -1;
}

}  // namespace

int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port) {
  if (remote_port <= 0) return -1;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    sockaddr_storage peer{};
    socklen_t length = sizeof(peer);
    if (::getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &length) != 0) continue;
    if (!same_end(peer, remote_addr, remote_port)) continue;
    if (local_port > 0 && local_port_of(static_cast<int>(fd)) != local_port) continue;
    found = static_cast<int>(fd);
    break;
  }
  ::closedir(dir);
  return found;
}

bool peer_closed(int socket) {
  if (socket < 0) return false;
  char byte;
  const ssize_t n = ::recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;                                                      // end of file: the client shut its side
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // reset
  return false;
}

}  // namespace attnmt
