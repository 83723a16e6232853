#include "compiler/support/Pattern.h"

#include <re2/re2.h>

namespace kiln::support {

Pattern::Pattern() = default;
Pattern::~Pattern() = default;
Pattern::Pattern(Pattern &&) noexcept = default;
Pattern &Pattern::operator=(Pattern &&) noexcept = default;

bool Pattern::compile(const std::string &pattern, std::string &error) {
  re_.reset();
  if (pattern.size() > kMaxPatternBytes) {
    error = "regular expression of " + std::to_string(pattern.size()) + " bytes is longer than the limit of " +
            std::to_string(kMaxPatternBytes);
    return false;
  }
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(64 << 20);  // RE2's automata: a pattern that needs more is refused
  auto re = std::make_unique<re2::RE2>(pattern, options);
  if (!re->ok()) {
    error = "invalid regular expression (" + re->error() + ")";
    return false;
  }
  re_ = std::move(re);
  return true;
}

bool Pattern::fullMatch(const std::string &subject, std::string &error) const {
  if (!re_) return false;
  if (subject.size() > kMaxSubjectBytes) {
    error = "a name of " + std::to_string(subject.size()) + " bytes is longer than the " +
            std::to_string(kMaxSubjectBytes) + " a regular expression is matched against";
    return false;
  }
  return re2::RE2::FullMatch(subject, *re_);
}

}  // namespace kiln::support
