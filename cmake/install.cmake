# `cmake --install build --prefix P`: bin/llmport, include/llmport/*.hpp, libllmport, the
# shipped data under share/llmport/, the CMake package (find_package(llmport) ->
# llmport::llmport) and llmport.pc. Every path is relative to the prefix, so the installed
# tree works after it is moved (the binary finds ../share/llmport from /proc/self/exe).
include(CMakePackageConfigHelpers)

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
install(PROGRAMS tools/hf_reference.py DESTINATION ${LLMPORT_INSTALL_DATADIR}/tools)

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
# What a static libllmport needs at the consumer's link (`pkg-config --static --libs`).
set(LLMPORT_PC_REQUIRES_PRIVATE "fmt libpcre2-8 libutf8proc libcurl libcrypto cpp-httplib")
configure_file(cmake/llmport.pc.in ${PROJECT_BINARY_DIR}/llmport.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/llmport.pc DESTINATION ${LLMPORT_PC_DIR})
