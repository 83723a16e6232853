// Regular expressions that users give kiln (route expressions' KNOB-REGEX=VALUE-REGEX terms,
// --keep-float), matched against whole names in time linear in the name, with bounded memory and
// no recursion: RE2 (no backreferences or lookaround; ECMAScript's other syntax works the same).
// A pattern longer than kMaxPatternBytes is refused, and so is a subject longer than
// kMaxSubjectBytes (a node name that long is an error, not a match or a miss).
#pragma once

#include <memory>
#include <string>

namespace re2 {
class RE2;
}

namespace kiln::support {

class Pattern {
 public:
  static constexpr size_t kMaxPatternBytes = 4096;
  static constexpr size_t kMaxSubjectBytes = 4096;

  Pattern();
  ~Pattern();
  Pattern(Pattern &&) noexcept;
  Pattern &operator=(Pattern &&) noexcept;

  // False with `error` ("invalid regular expression (missing ): ...)", "... is 5000 bytes long,
  // more than 4096") when `pattern` cannot be used.
  bool compile(const std::string &pattern, std::string &error);
  // Whether the whole of `subject` matches. False with `error` when `subject` is longer than
  // kMaxSubjectBytes (callers report it; `error` is left alone otherwise).
  bool fullMatch(const std::string &subject, std::string &error) const;
  bool valid() const { return re_ != nullptr; }

 private:
  std::unique_ptr<re2::RE2> re_;
};

}  // namespace kiln::support
