/* arc4random for glibc < 2.36 hosts (see tools/CMakeLists.txt). getrandom(2) exists since 2.25. */
#include <stdint.h>
#include <sys/random.h>

uint32_t arc4random(void) {
  uint32_t v = 0;
  while (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {}
  return v;
}
