// Small helpers for the self-contained HTML pages kiln writes (`tune --report`, `kiln report`):
// escaped text and formatted numbers.
#pragma once

#include <cstdio>
#include <string>

namespace kiln::cli {

// `s` as HTML text or attribute value (control characters become spaces).
inline std::string htmlEscape(const std::string &s) {
  std::string o;
  for (unsigned char c : s) {
    if (c == '&')
      o += "&amp;";
    else if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '"')
      o += "&quot;";
    else if (c < 0x20)
      o += ' ';
    else
      o += char(c);
  }
  return o;
}

// printf of one number ("%.3f").
inline std::string fmt(const char *format, double v) {
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

}  // namespace kiln::cli
