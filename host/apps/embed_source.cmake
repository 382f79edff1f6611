# Script mode: cmake -DIN=file.cl -DOUT=file.c -DNAME=symbol -P embed_source.cmake
# Writes `const char NAME[] = {..., 0};`: the kernel source as a NUL-terminated C string, so the
# programs read no file at run time (as the library embeds kernels/*.cl).
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPEAT "0x[0-9a-f][0-9a-f]," 16 line_pattern)
string(REGEX REPLACE "(${line_pattern})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}.tmp"
  "/* Generated from ${IN} by embed_source.cmake. Do not edit. */\nextern const char ${NAME}[];\nconst char ${NAME}[] = {\n${bytes}0x00};\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
