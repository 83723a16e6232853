# cmake -DIN=FILE -DOUT=HEADER -DNAME=SYMBOL -P EmbedText.cmake: FILE's text as a C++ string
# constant (a raw string literal), so a script that ships with kiln is also a file of its own,
# readable and testable (tools/kiln/ort_reference.py).
file(READ "${IN}" text)
if(text MATCHES "\\)KILNTEXT\"")
  message(FATAL_ERROR "${IN} contains the raw string's delimiter )KILNTEXT\"")
endif()
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by tools/cmake/EmbedText.cmake: do not edit.\n#pragma once\n"
                        "constexpr const char *${NAME} = R\"KILNTEXT(${text})KILNTEXT\";\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
