// A kiln_status with its reason, as returned inside the runtime; the C API turns it into the
// return code plus the per-thread message.
#pragma once

#include "kiln/kiln.h"

#include <string>

namespace kiln::rt {

struct Status {
  kiln_status code = KILN_OK;
  std::string message;

  bool ok() const { return code == KILN_OK; }
  static Status success() { return {}; }
};

inline Status makeStatus(kiln_status code, std::string message) { return Status{code, std::move(message)}; }

}  // namespace kiln::rt
