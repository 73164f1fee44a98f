// Whether the client of a request that is waiting for its translations is still there. The HTTP
// library (cpp-httplib 0.11, Debian bookworm's) hands a handler no socket, so the socket is found
// by its two ends: the one whose peer is the request's remote address and port and whose local
// port is the request's (no two open TCP connections share both ends). A peer that closed its
// side reads as end-of-file; one that sent more (a pipelined request) is still there.
#pragma once
#include <string>

namespace attnmt {

// The socket of the connection from remote_addr:remote_port to local_port; -1 if none is open.
int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port);

// Whether the peer of `socket` has closed (or reset) the connection. Never blocks.
bool peer_closed(int socket);

}  // namespace attnmt
