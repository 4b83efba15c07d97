#[=======================================================================[.rst:
CompileIQTests
--------------

Internal to ``compileiq_cmake``: the CTest layer of the :module:`CompileIQ`
module (see its *Layers*): the gate test that re-measures a target's
applied entry on the CI's GPU runner.

Provides
^^^^^^^^

``compileiq_add_test(<target> BENCHMARK <command>... METRIC <metric> ...)``
  The public command documented in :module:`CompileIQ`: registers
  ``compileiq_check_<target>`` (``compileiq-cmake check --remeasure
  --target <target> --if-present`` with the benchmark given here), label
  ``compileiq``, ``RESOURCE_GROUPS gpus:<n>`` where CUDA is enabled.

Requires
^^^^^^^^

:module:`CompileIQCommon` (``_compileiq_python_command``), which it
includes.

Called by
^^^^^^^^^

The project's ``CMakeLists.txt``, and :module:`CompileIQ`'s
``compileiq_tune()`` when ``COMPILEIQ_ADD_TESTS`` is ``ON``.
#]=======================================================================]

include_guard(GLOBAL)
cmake_policy(PUSH)
cmake_policy(VERSION 3.24...4.4)
include("${CMAKE_CURRENT_LIST_DIR}/CompileIQCommon.cmake")

# compileiq_add_test(<target> ...): documented at the top of this file
function(compileiq_add_test target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "LOWER_IS_BETTER;HIGHER_IS_BETTER" "METRIC;PASS_REGEX;OUTPUT;ROUNDS;GPUS;NAME"
    "BENCHMARK")
  set(where "compileiq_add_test(${target})")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${where}: unknown arguments: ${arg_UNPARSED_ARGUMENTS}.")
  endif()
  if(NOT arg_BENCHMARK OR NOT DEFINED arg_METRIC)
    message(FATAL_ERROR
      "${where}: BENCHMARK <command> [<arg>...] and METRIC <regex|GBENCH|NVBENCH|WALLTIME> are required.")
  endif()
  if(DEFINED arg_ROUNDS AND NOT arg_ROUNDS MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${where}: ROUNDS must be a whole number, not '${arg_ROUNDS}'.")
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT DEFINED arg_GPUS)
    set(arg_GPUS 0)
    if("CUDA" IN_LIST languages)
      set(arg_GPUS 1)
    endif()
  elseif(NOT arg_GPUS MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${where}: GPUS must be a whole number, not '${arg_GPUS}'.")
  endif()
  if(DEFINED arg_OUTPUT)
    cmake_path(ABSOLUTE_PATH arg_OUTPUT BASE_DIRECTORY "${CMAKE_SOURCE_DIR}" OUTPUT_VARIABLE file)
  elseif(COMPILEIQ_FLAGS_FILE)
    set(file "${COMPILEIQ_FLAGS_FILE}")
  else()
    set(file "${CMAKE_SOURCE_DIR}/compileiq.toml")
  endif()
  _compileiq_python_command(cmd)
  list(APPEND cmd check "${file}" -S "${CMAKE_SOURCE_DIR}" -B "${CMAKE_BINARY_DIR}" --remeasure --if-present
    --target "${target}" "--metric=${arg_METRIC}")
  foreach(a IN LISTS arg_BENCHMARK)
    list(APPEND cmd "--bench-arg=${a}")
  endforeach()
  if(arg_HIGHER_IS_BETTER)
    list(APPEND cmd --higher-is-better)
  elseif(arg_LOWER_IS_BETTER)
    list(APPEND cmd --lower-is-better)
  endif()
  if(DEFINED arg_PASS_REGEX)
    list(APPEND cmd "--pass-regex=${arg_PASS_REGEX}")
  endif()
  if(DEFINED arg_ROUNDS)
    list(APPEND cmd "--rounds=${arg_ROUNDS}")
  endif()
  if(NOT arg_NAME)
    set(arg_NAME "compileiq_check_${target}")
  endif()
  # enable_testing() in a function is the function's own; CTest needs it in this directory and in every one
  # above it up to the top (else ctest never reads this directory's tests)
  set(dir "${CMAKE_CURRENT_SOURCE_DIR}")
  while(dir)
    get_property(enabled DIRECTORY "${dir}" PROPERTY _compileiq_testing)
    if(NOT enabled)
      set_property(DIRECTORY "${dir}" PROPERTY _compileiq_testing TRUE)
      cmake_language(DEFER DIRECTORY "${dir}" CALL enable_testing)
    endif()
    get_property(dir DIRECTORY "${dir}" PROPERTY PARENT_DIRECTORY)
  endwhile()
  add_test(NAME "${arg_NAME}" COMMAND ${cmd})
  set_tests_properties("${arg_NAME}" PROPERTIES LABELS compileiq TIMEOUT 3600)
  if(arg_GPUS GREATER 0)
    set_tests_properties("${arg_NAME}" PROPERTIES RESOURCE_GROUPS "gpus:${arg_GPUS}")
  endif()
endfunction()

cmake_policy(POP)
