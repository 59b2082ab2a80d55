// A server's address: the identity of a primary or replica in keys, labels and logs.
// A value type.
#pragma once

#include <string>

namespace lagwatch {

struct Endpoint {
  std::string host;
  int port = 3306;
  // "host:port", the replica's identity in Redis keys and metric labels.
  std::string Id() const { return host + ":" + std::to_string(port); }
  bool operator==(const Endpoint&) const = default;
};

}  // namespace lagwatch
