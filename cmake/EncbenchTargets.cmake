# Shared compile settings for every encbench target: warnings for our code only, sanitizers when
# asked, and the version/git metadata every result JSON carries.
add_library(encbench_build_flags INTERFACE)
target_compile_options(encbench_build_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-missing-field-initializers>)
if(ENCBENCH_FUZZ)
  # Coverage feedback for libFuzzer in every library under test; the fuzz executables add
  # -fsanitize=fuzzer (libFuzzer's main) themselves. Line tables are enough for symbolized crash
  # stacks and compile faster than full debug info (the build runs in CI).
  set(_fuzz_san "fuzzer-no-link,address,undefined")
  target_compile_options(encbench_build_flags INTERFACE
    -fsanitize=${_fuzz_san} -fno-omit-frame-pointer -fno-sanitize-recover=undefined -gline-tables-only)
  target_link_options(encbench_build_flags INTERFACE -fsanitize=address,undefined)
  target_compile_definitions(encbench_build_flags INTERFACE ENCBENCH_SANITIZED=1 ENCBENCH_FUZZING=1)
elseif(ENCBENCH_SANITIZE)
  string(REPLACE ";" "," _san "${ENCBENCH_SANITIZE}")
  target_compile_options(encbench_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(encbench_build_flags INTERFACE -fsanitize=${_san})
  target_compile_definitions(encbench_build_flags INTERFACE ENCBENCH_SANITIZED=1)
endif()

# encbench_library(NAME SOURCES... [LINKS ...]) : one static library per concern.
function(encbench_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_LINKS;PRIVATE_LINKS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC encbench_build_flags ${ARG_PUBLIC_LINKS} PRIVATE ${ARG_PRIVATE_LINKS})
endfunction()

# encbench_test(NAME SOURCES... LINKS ... [SERIAL]) : a GoogleTest binary registered with CTest.
# SERIAL: its tests run with nothing else beside them (they judge live timings, which another
# test's load on a 2-core machine would move).
function(encbench_test name)
  cmake_parse_arguments(ARG "SERIAL" "TIMEOUT" "SOURCES;LINKS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE encbench_build_flags ${ARG_LINKS} GTest::gtest GTest::gtest_main)
  include(GoogleTest)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  # ENVIRONMENT (two variables, so a list) and LABELS are set from a file CTest includes after the
  # discovered tests: gtest_discover_tests splits a list-valued property at its ';' whatever the
  # escaping (only the first variable arrived and LABELS became a value). The discovery script
  # defines ${name}_TESTS, the names it added.
  set(_env "ENCBENCH_SOURCE_DIR=${PROJECT_SOURCE_DIR};ENCBENCH_BINARY_DIR=${PROJECT_BINARY_DIR}")
  set(_props_file "${CMAKE_CURRENT_BINARY_DIR}/${name}_properties.cmake")
  file(WRITE "${_props_file}"
    "foreach(_t IN LISTS ${name}_TESTS)\n"
    "  set_tests_properties(\"\${_t}\" PROPERTIES ENVIRONMENT \"${_env}\")\n")
  if(ARG_LABELS)
    file(APPEND "${_props_file}" "  set_tests_properties(\"\${_t}\" PROPERTIES LABELS \"${ARG_LABELS}\")\n")
  endif()
  if(ARG_SERIAL)
    file(APPEND "${_props_file}" "  set_tests_properties(\"\${_t}\" PROPERTIES RUN_SERIAL TRUE)\n")
  endif()
  file(APPEND "${_props_file}" "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${_props_file}")
endfunction()
