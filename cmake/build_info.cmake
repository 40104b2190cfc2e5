# generated/build_info.cpp: version, git commit, compiler, build type (llmport --version).
find_package(Git QUIET)
set(LLMPORT_GIT_COMMIT "unknown")
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _commit
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc ERROR_QUIET)
  if(_rc EQUAL 0)
    set(LLMPORT_GIT_COMMIT "${_commit}")
    # A commit or checkout appends to the reflog: reconfigure, so the commit stays current.
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --path-format=absolute --git-path logs/HEAD
                    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _reflog
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_reflog AND EXISTS "${_reflog}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_reflog}")
    endif()
  endif()
endif()
if(BUILD_SHARED_LIBS)
  set(LLMPORT_SHARED_BOOL true)
else()
  set(LLMPORT_SHARED_BOOL false)
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/build_info.cpp.in ${PROJECT_BINARY_DIR}/generated/build_info.cpp @ONLY)
