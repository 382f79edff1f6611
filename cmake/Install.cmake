# Installation: header, library, CMake package (find_package(clnorm) -> clnorm::clnorm) and a
# pkg-config file (clnorm.pc). The CLI installs itself from host/. Included at the end of the
# top-level CMakeLists.txt.
include(CMakePackageConfigHelpers)

set(CLNORM_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/clnorm" CACHE STRING
    "Where clnormConfig.cmake is installed, relative to the prefix")
mark_as_advanced(CLNORM_INSTALL_CMAKEDIR)

install(TARGETS clnorm
  EXPORT clnormTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# (The include directory reaches clnorm::clnorm through the target's INSTALL_INTERFACE.)
install(FILES "${PROJECT_SOURCE_DIR}/include/clnorm.h"
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)

# A static libclnorm carries its private dependencies (threads, libm) into the consumer's link.
get_target_property(_clnorm_type clnorm TYPE)
if(_clnorm_type STREQUAL "STATIC_LIBRARY")
  set(CLNORM_STATIC 1)
  set(CLNORM_PC_LIBS_PRIVATE "-lm -pthread")
else()
  set(CLNORM_STATIC 0)
  set(CLNORM_PC_LIBS_PRIVATE "")
endif()

# The installed `clnorm` tool finds the installed libclnorm.so wherever the prefix is (a prefix
# outside the loader's path, e.g. $HOME/.local, needs no LD_LIBRARY_PATH). host/ installs the
# tool; only its install RPATH is set here, and only when host/ has not set one.
if(TARGET clnorm_cli AND NOT CLNORM_STATIC AND NOT APPLE AND NOT WIN32)
  get_target_property(_clnorm_cli_rpath clnorm_cli INSTALL_RPATH)
  if(NOT _clnorm_cli_rpath)
    file(RELATIVE_PATH _clnorm_bin_to_lib "/${CMAKE_INSTALL_BINDIR}" "/${CMAKE_INSTALL_LIBDIR}")
    if(NOT IS_ABSOLUTE "${CMAKE_INSTALL_BINDIR}" AND NOT IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
      set_target_properties(clnorm_cli PROPERTIES INSTALL_RPATH "$ORIGIN/${_clnorm_bin_to_lib}")
    endif()
  endif()
endif()

install(EXPORT clnormTargets
  NAMESPACE clnorm::
  FILE clnormTargets.cmake
  DESTINATION ${CLNORM_INSTALL_CMAKEDIR}
  COMPONENT dev)

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/clnormConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/clnormConfig.cmake"
  INSTALL_DESTINATION ${CLNORM_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/clnormConfigVersion.cmake"
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/clnormConfig.cmake"
  "${PROJECT_BINARY_DIR}/clnormConfigVersion.cmake"
  DESTINATION ${CLNORM_INSTALL_CMAKEDIR}
  COMPONENT dev)

# pkg-config. The prefix is written at install time, so `cmake --install <build> --prefix P`
# yields a clnorm.pc that points into P (DESTDIR is not part of it, as it should not be).
# Step 1 (configure time) fills in everything but the prefix; step 2 (install time) the prefix.
set(CLNORM_PC_PREFIX "@CLNORM_PC_PREFIX@")
foreach(_d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_d}}")
    set(CLNORM_PC_${_d} "${CMAKE_INSTALL_${_d}}")
  else()
    set(CLNORM_PC_${_d} "\${prefix}/${CMAKE_INSTALL_${_d}}")
  endif()
endforeach()
configure_file("${CMAKE_CURRENT_LIST_DIR}/clnorm.pc.in" "${PROJECT_BINARY_DIR}/clnorm.pc.tmpl" @ONLY)
# A build-tree copy with the configured prefix, for inspection.
set(CLNORM_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
configure_file("${PROJECT_BINARY_DIR}/clnorm.pc.tmpl" "${PROJECT_BINARY_DIR}/clnorm.pc" @ONLY)
install(CODE "
  set(CLNORM_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/clnorm.pc.tmpl\"
                 \"${PROJECT_BINARY_DIR}/pc-install/clnorm.pc\" @ONLY)
" COMPONENT dev)
install(FILES "${PROJECT_BINARY_DIR}/pc-install/clnorm.pc"
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
