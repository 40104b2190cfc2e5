# `cmake --install build --prefix P`: bin/llmport, include/llmport/*.hpp, libllmport, the
# shipped data under share/llmport/, the CMake package (find_package(llmport) ->
# llmport::llmport) and llmport.pc. Every path is relative to the prefix, so the installed
# tree works after it is moved (the binary finds ../share/llmport from /proc/self/exe).
include(CMakePackageConfigHelpers)
# cpack (and `make install`) install what was built instead of building every test and
# benchmark first: the installed targets are llmport and llmport_lib only.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(LLMPORT_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/llmport)
set(LLMPORT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/llmport)

install(TARGETS llmport RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS llmport_lib EXPORT llmportTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Only the public headers: src/ stays private (tests/install checks each one compiles alone).
install(DIRECTORY include/llmport DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
install(DIRECTORY data/registry data/prompts DESTINATION ${LLMPORT_INSTALL_DATADIR})
install(PROGRAMS tools/hf_reference.py tools/numpy_reference.py DESTINATION ${LLMPORT_INSTALL_DATADIR}/tools)

install(EXPORT llmportTargets NAMESPACE llmport:: DESTINATION ${LLMPORT_INSTALL_CMAKEDIR})
configure_package_config_file(cmake/llmportConfig.cmake.in ${PROJECT_BINARY_DIR}/llmportConfig.cmake
                              INSTALL_DESTINATION ${LLMPORT_INSTALL_CMAKEDIR}
                              PATH_VARS LLMPORT_INSTALL_DATADIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/llmportConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/llmportConfig.cmake ${PROJECT_BINARY_DIR}/llmportConfigVersion.cmake
        DESTINATION ${LLMPORT_INSTALL_CMAKEDIR})

# pkg-config: prefix from the .pc file's own place (${pcfiledir}), so it moves with the tree.
set(LLMPORT_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH LLMPORT_PC_TO_PREFIX "/p/${LLMPORT_PC_DIR}" "/p")
string(REGEX REPLACE "/$" "" LLMPORT_PC_TO_PREFIX "${LLMPORT_PC_TO_PREFIX}")
# A static libllmport's dependencies are needed at every consumer's link, so they are
# Requires (plain `pkg-config --libs`; --static would also pull in their own static-only
# dependencies, which Debian's -dev packages do not all ship); a shared one links them.
set(_pc_deps "fmt, libpcre2-8, libutf8proc, icu-uc, icu-i18n, libcurl, libcrypto, cpp-httplib")
if(BUILD_SHARED_LIBS)
  set(LLMPORT_PC_REQUIRES "nlohmann_json >= 3.10")
  set(LLMPORT_PC_REQUIRES_PRIVATE "${_pc_deps}")
  set(LLMPORT_PC_LIBS "-L\${libdir} -lllmport")
else()
  set(LLMPORT_PC_REQUIRES "nlohmann_json >= 3.10, ${_pc_deps}")
  set(LLMPORT_PC_REQUIRES_PRIVATE "")
  set(LLMPORT_PC_LIBS "-L\${libdir} -lllmport -fopenmp -pthread")
endif()
configure_file(cmake/llmport.pc.in ${PROJECT_BINARY_DIR}/llmport.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/llmport.pc DESTINATION ${LLMPORT_PC_DIR})
