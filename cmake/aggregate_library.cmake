# llmport_lib (file libllmport.a, or .so with BUILD_SHARED_LIBS; llmport::llmport once
# installed): every module's object files in one library, so embedders link one thing.
set(LLMPORT_MODULES llmport_common llmport_model llmport_tokenizer llmport_chat llmport_kernels
    llmport_registry llmport_runtime llmport_hub llmport_verify llmport_deploy llmport_serve)
set(_objs)
foreach(m IN LISTS LLMPORT_MODULES)
  list(APPEND _objs $<TARGET_OBJECTS:${m}>)
endforeach()
add_library(llmport_lib ${_objs})
add_library(llmport::llmport ALIAS llmport_lib)
set_target_properties(llmport_lib PROPERTIES OUTPUT_NAME llmport EXPORT_NAME llmport
                      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
target_include_directories(llmport_lib INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                                 $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(llmport_lib INTERFACE cxx_std_20)
# Public headers include nlohmann/json.hpp only; the rest is linked, not included. Every
# entry here has its find_dependency in cmake/llmportConfig.cmake.in.
target_link_libraries(llmport_lib PUBLIC nlohmann_json::nlohmann_json
                      PRIVATE fmt::fmt OpenMP::OpenMP_CXX CURL::libcurl OpenSSL::Crypto Threads::Threads
                              PkgConfig::PCRE2 PkgConfig::UTF8PROC PkgConfig::HTTPLIB PkgConfig::ICU)
