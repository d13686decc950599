# ENCBENCH_CCACHE: AUTO compiles through ccache (Debian package) when it is installed, ON requires
# it, OFF never uses it. A launcher the user set (CMAKE_CXX_COMPILER_LAUNCHER) wins.
#
# Why: the CI gate (scripts/ci-gate.sh) builds BASE in a second checkout right after HEAD was
# built; with ccache every translation unit the two commits share is a cache hit. For that, ccache
# must hash paths inside the source tree relative to the build directory, so base_dir is set to
# this checkout's source dir: two checkouts at different places, each with its build directory at
# the same place inside it, then produce the same compiler command lines. Release builds carry no
# -g, so the build directory itself does not enter the hash either; debug builds map it (below).
set(ENCBENCH_CCACHE AUTO CACHE STRING "Compile through ccache (AUTO|ON|OFF)")
set_property(CACHE ENCBENCH_CCACHE PROPERTY STRINGS AUTO ON OFF)
if(NOT ENCBENCH_CCACHE STREQUAL "OFF" AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(ENCBENCH_CCACHE_PROGRAM ccache)
  if(ENCBENCH_CCACHE_PROGRAM)
    set(_encbench_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} ${ENCBENCH_CCACHE_PROGRAM})
    set(CMAKE_C_COMPILER_LAUNCHER ${_encbench_launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${_encbench_launcher})
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${_encbench_launcher})
    # Builds with debug info (the ASan build's -g1) hash the compiler's working directory unless
    # it is mapped (ccache's hash_dir): map the checkout to "." so that a clean clone elsewhere
    # (CI) hits the objects another checkout built. Debug info then names paths relative to it.
    if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
      add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fdebug-prefix-map=${PROJECT_SOURCE_DIR}=.>)
    endif()
    message(STATUS "encbench: compiling through ${ENCBENCH_CCACHE_PROGRAM} (base_dir ${PROJECT_SOURCE_DIR})")
  elseif(ENCBENCH_CCACHE STREQUAL "ON")
    message(FATAL_ERROR "ENCBENCH_CCACHE=ON but ccache was not found (apt-get install ccache)")
  endif()
endif()
