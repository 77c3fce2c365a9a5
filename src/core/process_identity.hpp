#pragma once
// Who this process is, for messages that name the holder of a lock or lease another process
// finds taken (checkpoint backends that keep their writer lock on a server).

#include <unistd.h>

#include <array>
#include <string>

namespace cppcdc::detail {

/// "pid <pid> on <host name>" (the host name as gethostname(2) gives it; "?" when it fails).
inline std::string process_identity() {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host = {'?'};
  return "pid " + std::to_string(::getpid()) + " on " + host.data();
}

}  // namespace cppcdc::detail
