// Text that came from a file (node and tensor names, engine metadata, cache rows) shown on a
// terminal: control characters escaped so that a hostile name cannot move the cursor, clear the
// screen or retitle the window. JSON output needs none of this (its encoder escapes them).
#pragma once

#include <streambuf>
#include <string>
#include <string_view>

namespace kiln::support {

// `s` with every C0 control byte (except newline and tab), DEL, C1 control character and byte
// that is not part of valid UTF-8 written as \xHH (ESC as \x1b); valid UTF-8 text is unchanged.
std::string printable(std::string_view s);

// The same for one line: newlines and tabs escaped too (\n, \t).
std::string printableLine(std::string_view s);

// A stream buffer that passes printable(text) on to another a whole line at a time (so a UTF-8
// character split between two writes stays whole; a flush passes on complete lines only).
// `kiln` puts std::cerr behind one, so every message — whatever names it quotes — is
// terminal-safe.
class PrintableBuf : public std::streambuf {
 public:
  explicit PrintableBuf(std::streambuf *out) : out_(out) {}
  ~PrintableBuf() override { flushAll(); }
  // Passes on everything held, a last line without its newline too.
  void flushAll() {
    emit(true);
    out_->pubsync();
  }

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char *s, std::streamsize n) override;
  int sync() override;

 private:
  void emit(bool all);
  std::streambuf *out_;
  std::string pending_;
};

}  // namespace kiln::support
