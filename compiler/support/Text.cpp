#include "compiler/support/Text.h"

#include <cstdio>

namespace kiln::support {

namespace {

// Length of the valid UTF-8 sequence starting at s[i] (1-4), or 0 when it is not one (overlong
// forms, surrogates and code points above U+10FFFF are not valid).
size_t utf8Length(std::string_view s, size_t i, unsigned &cp) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n;
  if (c < 0x80) return cp = c, 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, cp = c & 0x07;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    unsigned char t = static_cast<unsigned char>(s[i + k]);
    if ((t & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (t & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

std::string escape(std::string_view s, bool keepLines) {
  std::string out;
  out.reserve(s.size());
  char hex[8];
  for (size_t i = 0; i < s.size();) {
    unsigned cp = 0;
    size_t n = utf8Length(s, i, cp);
    if (n == 1 && cp == '\n')
      out += keepLines ? "\n" : "\\n";
    else if (n == 1 && cp == '\t')
      out += keepLines ? "\t" : "\\t";
    else if (n == 0 || cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) {
      // One escaped byte (a C1 character's two UTF-8 bytes are both shown).
      size_t k = n == 0 ? 1 : n;
      for (size_t j = 0; j < k; ++j) {
        std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(s[i + j]));
        out += hex;
      }
      i += k;
      continue;
    } else {
      out.append(s.data() + i, n);
    }
    i += n;
  }
  return out;
}

}  // namespace

std::string printable(std::string_view s) { return escape(s, true); }

void PrintableBuf::emit(bool all) {
  size_t end = all ? pending_.size() : pending_.rfind('\n');
  if (end == std::string::npos) {
    if (pending_.size() < 4096) return;  // (a very long line goes out in pieces)
    end = pending_.size();
  } else if (!all) {
    ++end;
  }
  std::string text = escape(std::string_view(pending_).substr(0, end), true);
  out_->sputn(text.data(), std::streamsize(text.size()));
  pending_.erase(0, end);
}

PrintableBuf::int_type PrintableBuf::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  pending_ += traits_type::to_char_type(c);
  emit(false);
  return c;
}

std::streamsize PrintableBuf::xsputn(const char *s, std::streamsize n) {
  pending_.append(s, size_t(n));
  emit(false);
  return n;
}

int PrintableBuf::sync() {
  emit(false);
  return out_->pubsync();
}
std::string printableLine(std::string_view s) { return escape(s, false); }

}  // namespace kiln::support
