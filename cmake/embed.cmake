# Turns a file into a C array, so that the binary carries it (the HTML report's template).
# Usage: cmake -DIN=<file> -DOUT=<file.c> -DNAME=<symbol> -P embed.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR bytes "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
# A line break every 32 bytes keeps the generated file readable by tools.
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){32})" "\\1\n" body "${body}")
get_filename_component(in_name "${IN}" NAME)
file(WRITE "${OUT}.tmp" "/* Generated from ${in_name} by cmake/embed.cmake: do not edit. */\n#include <stddef.h>\n"
  "const char ${NAME}[] = {\n${body}0x00};\nconst size_t ${NAME}_len = ${bytes};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
