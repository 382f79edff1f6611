# Embeds kernels/*.cl into the library as byte arrays, so nothing reads kernel files at run
# time. Plain C (no raw strings, no string-length limits): each file becomes
#   const unsigned char clnorm_kernel_<name>[] = {0x.., ..., 0x00};
# and a table maps file names to arrays. The generator runs in CMake script mode.

set(CLNORM_EMBED_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/embed_kernels_script.cmake")

function(clnorm_embed_kernels out_c)
  set(files ${ARGN})
  # The list travels '|'-separated: a ';' would split the command-line argument.
  string(REPLACE ";" "|" files_arg "${files}")
  add_custom_command(
    OUTPUT "${out_c}"
    COMMAND "${CMAKE_COMMAND}" "-DOUT=${out_c}" "-DFILES=${files_arg}" -P "${CLNORM_EMBED_SCRIPT}"
    DEPENDS ${files} "${CLNORM_EMBED_SCRIPT}"
    COMMENT "Embedding OpenCL kernels"
    VERBATIM)
endfunction()
