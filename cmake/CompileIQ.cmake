#[=======================================================================[.rst:
CompileIQ
---------

Tune the nvcc/gcc flags of a target by rebuilding and benchmarking it, and
apply the tuned flags that ``compileiq.toml`` records.  Loaded by
``find_package(compileiq_cmake)``.

Cache Variables
^^^^^^^^^^^^^^^

``COMPILEIQ_TUNE``
  ``OFF`` by default.  When ``ON``, every ``compileiq_tune()`` call adds a
  custom target that tunes its target; run them all with
  ``cmake --build <build> --target compileiq_tune``.  Tuned flags are not
  applied in such a build tree.

``COMPILEIQ_APPLY``
  ``ON`` by default.  When ``ON`` (and ``COMPILEIQ_TUNE`` is ``OFF``), the
  flags recorded in the flags file are added to their targets at the end of
  the top-level directory, once per configure, for the entries whose
  compiler (and CUDA architecture) match this build.

``COMPILEIQ_PORTABLE``
  ``OFF`` by default.  When ``ON``, entries whose flags are specific to the
  CPU they were tuned on (``-march=native``, recorded resolved, e.g.
  ``-march=znver3``, with ``tuned_cpu``) are not applied; a status line
  says so.  Otherwise such an entry applies, and a status line names the
  ISA features it needs that this host lacks (asked of the project's
  compiler: ``-march=native``).  ``COMPILEIQ_HOST_CPU_FEATURES`` (for tests)
  replaces this host's feature list, simulating another host.

``COMPILEIQ_FLAGS_FILE``
  The flags file.  Empty by default, meaning
  ``${CMAKE_SOURCE_DIR}/compileiq.toml``, which may be missing.  A file named
  here must exist.  Editing the file makes the next build re-configure.

Commands
^^^^^^^^

.. command:: compileiq_tune

  .. code-block:: cmake

    compileiq_tune(<target>
                   BENCHMARK <command> [<arg>...]
                   METRIC <regex>|GBENCH|NVBENCH|WALLTIME
                   [LOWER_IS_BETTER|HIGHER_IS_BETTER]
                   [PASS_REGEX <regex>]
                   [VERIFY <command> [<arg>...]]
                   [COMPARE_OUTPUT <regex>] [COMPARE_FILE <file>]
                   [RTOL <r>] [ATOL <a>]
                   [WORKLOADS <args>...]
                   [BUDGET <n>] [PER_FILE_BUDGET <n>]
                   [TIME_LIMIT <seconds>]
                   [GPUS all|<n>,<n>...]
                   [EXECUTOR local|ray] [RAY_ADDRESS <address>]
                   [INCLUDE_FLAGS <dimension>...]
                   [EXCLUDE_FLAGS <dimension>...]
                   [PORTABLE] [ARCH_SCOPE all|tuned]
                   [OUTPUT <file>])

  Declares how to tune ``<target>``, which may be defined later in the
  project.  With ``COMPILEIQ_TUNE`` ``ON`` it adds the custom target
  ``compileiq_tune_<target>``, which runs ``python -m compileiq_cmake tune``
  on this build's source and build directories (several such targets run
  one after another, never at the same time), and adds the target to the
  ``compileiq_tune`` suite: building ``compileiq_tune`` tunes every
  ``compileiq_tune()`` target of the project as one suite job
  (``tune --suite-args <build>/compileiq_suite.args``: one command, one
  summary and report, resumable as a whole; ``COMPILEIQ_SUITE_TIME_LIMIT``
  shares one time limit among them).  Otherwise it only arranges for the
  flags file to be applied (see ``COMPILEIQ_APPLY``).

  ``BENCHMARK <command> [<arg>...]``
    The benchmark command line.  Generator expressions are allowed, e.g.
    ``$<TARGET_FILE:nbody_bench>``.
  ``METRIC``
    How to read the score from the benchmark's output: a regular expression
    whose first group is the number, or ``GBENCH`` (Google Benchmark),
    ``NVBENCH``, or ``WALLTIME`` (the run time of the command).
  ``LOWER_IS_BETTER``, ``HIGHER_IS_BETTER``
    Whether a smaller or larger metric wins; ``LOWER_IS_BETTER`` by default.
  ``PASS_REGEX <regex>``
    A run only counts if its output matches.
  ``VERIFY <command> [<arg>...]``
    A command that must exit 0 after each trial's build.
  ``COMPARE_OUTPUT <regex>``, ``COMPARE_FILE <file>``, ``RTOL <r>``, ``ATOL <a>``
    Output comparison: the numbers on the output lines matching ``<regex>``
    (or in ``<file>``, which the benchmark writes, relative to its working
    directory) must equal the baseline build's within
    ``|x - ref| <= ATOL + RTOL * |ref|`` (defaults 1e-5 and 0); otherwise the
    trial is invalid ("numerics changed").  Without ``PASS_REGEX``,
    ``VERIFY`` or a comparison, flags that change numerics are not searched.
  ``WORKLOADS <args>...``
    Each string is one workload: arguments appended to ``BENCHMARK``.
  ``BUDGET <n>``, ``TIME_LIMIT <seconds>``
    The largest number of trials, and the wall time of the whole tune (setup,
    baseline, search, validation, ablation, confirmation and the write: the
    plan sizes each stage to fit and says what it left untested).
  ``PER_FILE_BUDGET <n>``
    CUDA targets with several translation units: after the search, up to
    ``<n>`` trials give the files that hold most of the kernel time flags of
    their own (``[[entry.sources]]`` in the TOML).  Default 0 (off).
  ``GPUS all|<n>,<n>...``
    The GPUs benchmarks run on, one run per GPU at a time (several: in
    parallel): ``all`` (the default: every visible GPU of the same model as
    the first; ``CUDA_VISIBLE_DEVICES`` is honoured) or visible GPU numbers.
  ``EXECUTOR local|ray``, ``RAY_ADDRESS <address>``
    ``ray`` builds the trials as tasks on the nodes of a Ray cluster and runs
    the benchmarks on its GPUs, each GPU type tuned for its own architecture
    (one entry each); the build directory must be on a filesystem that every
    node mounts at the same path.  ``RAY_ADDRESS`` is the cluster to join
    (``auto``, ``ray://<host>:<port>``; by default a new local one).  Needs
    ``pip install 'compileiq-cmake[ray]'``.  See ``docs/cluster.md``.
  ``INCLUDE_FLAGS <dimension>...``, ``EXCLUDE_FLAGS <dimension>...``
    Restrict the flag space to, or remove from it, the named dimensions.
  ``PORTABLE``
    Leave out flags whose code runs only on CPUs like the tuning host's
    (``-march=native``; the group ``cpu_specific``).  Without it such a
    flag is recorded resolved (e.g. ``-march=znver3``) with the CPU it was
    tuned on and its ISA features (see ``COMPILEIQ_PORTABLE``).
  ``ARCH_SCOPE all|tuned``
    CUDA: ``all`` (the default) applies the flags to every architecture the
    target builds, measured or not; ``tuned`` only to builds of the tuned
    architecture alone (nvcc cannot limit flags to one ``-gencode``).
  ``OUTPUT <file>``
    Where to write the results, relative to the top-level source directory;
    by default ``COMPILEIQ_FLAGS_FILE`` if set, else the tool's default
    (``compileiq.toml`` in the top-level source directory).

Files Read by the Tool
^^^^^^^^^^^^^^^^^^^^^^

The rules by which a flags file applies (build type, CUDA architectures,
relocatable device code and device LTO, ``CMAKE_<LANG>_FLAGS`` and
``CMAKE_<LANG>_FLAGS_<CONFIG>``) live in this module only.  The tool never
re-derives them: it reads the module's decisions from two files.

``compileiq_variant_info.txt``
  Written by ``compileiq_variant.cmake`` at the end of every configure of a
  variant tree, one ``<key>=<value>`` per line, for the tuned target:

  ``target``, ``language``, ``arch``
    The target (an alias resolved), its language and the trial's CUDA
    architecture (empty for host targets).
  ``config``
    The configuration the tree builds (``CMAKE_BUILD_TYPE``, else the first
    of ``CMAKE_CONFIGURATION_TYPES``): recorded as the entry's
    ``build_type``, which the apply compares with this build's.
  ``flags_sha256``
    ``_compileiq_flags_sha256`` of ``CMAKE_<LANG>_FLAGS`` and
    ``CMAKE_<LANG>_FLAGS_<CONFIG>`` (the apply compares it: stale entries).
  ``relocatable``
    ``1`` when the target builds relocatable device code
    (``_compileiq_relocatable``: ``CUDA_SEPARABLE_COMPILATION``, or
    ``-rdc=true`` / ``-dc`` in its options, its directory's, or
    ``CMAKE_CUDA_FLAGS[_<CONFIG>]``), else ``0``.
  ``device_lto_refusal``
    Why the apply would refuse a device-LTO entry for the target
    (``_compileiq_device_lto_refusal``), empty when it accepts one: the tune
    offers device LTO exactly then.
  ``cuda_archs``, ``cuda_archs_every``
    CUDA: the architectures the project's own build of the target compiles
    (``_compileiq_cuda_archs``, comma-separated, as the apply matches an
    entry's ``arch`` against them) before the tree forces its own, and ``1``
    when they are ``all`` or ``all-major`` (every entry's architecture
    matches).

``COMPILEIQ_CHECK_FILE``
  When this variable names a file, every entry the apply looks at appends
  lines ``<target>\t<arch>\t<status>\t<text>``: ``applied`` (with the
  flags as added, after ``CMAKE_<LANG>_FLAGS[_<CONFIG>]`` on the compile
  line), ``ignored`` (why not), ``stale``, ``cpu``, ``archs``, ``sources``.
  ``compileiq-cmake check`` reads it.

Example:

.. code-block:: cmake

  find_package(compileiq_cmake 0.1 REQUIRED)
  compileiq_tune(nbody
    BENCHMARK $<TARGET_FILE:nbody> --iterations 20
    METRIC "([0-9.]+) GFLOP/s" HIGHER_IS_BETTER
    WORKLOADS "--bodies 4096" "--bodies 65536")
#]=======================================================================]

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/compileiq_project_policies.cmake")
cmake_policy(PUSH)
cmake_policy(VERSION 3.24...4.4)

option(COMPILEIQ_TUNE "Add the compileiq_tune targets (tuned flags are not applied)." OFF)
option(COMPILEIQ_APPLY "Apply the tuned flags of the compileiq flags file." ON)
option(COMPILEIQ_PORTABLE "Leave out entries whose flags are specific to the CPU they were tuned on (-march=native)." OFF)
set(COMPILEIQ_SUITE_TIME_LIMIT "" CACHE STRING
  "Seconds for the whole compileiq_tune suite (empty: each target's own TIME_LIMIT, if any).")
set(COMPILEIQ_FLAGS_FILE "" CACHE FILEPATH
  "Tuned flags file (empty: \${CMAKE_SOURCE_DIR}/compileiq.toml).")

# _compileiq_real_target(<out-var> <name>)
#   Stores in <out-var> the target that <name> names (an alias resolved), or
#   an empty string when <name> is no target.
function(_compileiq_real_target out name)
  set(real "")
  if(TARGET "${name}")
    get_target_property(aliased "${name}" ALIASED_TARGET)
    if(aliased)
      set(real "${aliased}")
    else()
      set(real "${name}")
    endif()
  endif()
  set(${out} "${real}" PARENT_SCOPE)
endfunction()

function(compileiq_tune)
  if(ARGC LESS 1 OR ARGV0 MATCHES "^(BENCHMARK|METRIC)$")
    message(FATAL_ERROR "compileiq_tune() needs the name of the target to tune as its first argument.")
  endif()
  set(target "${ARGV0}")
  set(where "compileiq_tune(${target})")
  cmake_parse_arguments(PARSE_ARGV 1 arg "LOWER_IS_BETTER;HIGHER_IS_BETTER;PORTABLE"
    "METRIC;PASS_REGEX;BUDGET;PER_FILE_BUDGET;TIME_LIMIT;OUTPUT;COMPARE_OUTPUT;COMPARE_FILE;RTOL;ATOL;GPUS;EXECUTOR;RAY_ADDRESS;ARCH_SCOPE"
    "BENCHMARK;VERIFY;WORKLOADS;INCLUDE_FLAGS;EXCLUDE_FLAGS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${where}: unknown arguments: ${arg_UNPARSED_ARGUMENTS}.")
  endif()
  foreach(kw IN LISTS arg_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "${where}: ${kw} needs a value.")
  endforeach()
  if(NOT arg_BENCHMARK)
    message(FATAL_ERROR "${where}: BENCHMARK <command> [<arg>...] is required.")
  endif()
  if(NOT DEFINED arg_METRIC OR arg_METRIC STREQUAL "")
    message(FATAL_ERROR "${where}: METRIC <regex|GBENCH|NVBENCH|WALLTIME> is required.")
  endif()
  if(arg_LOWER_IS_BETTER AND arg_HIGHER_IS_BETTER)
    message(FATAL_ERROR "${where}: give LOWER_IS_BETTER or HIGHER_IS_BETTER, not both.")
  endif()
  if(DEFINED arg_PER_FILE_BUDGET AND NOT arg_PER_FILE_BUDGET MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${where}: PER_FILE_BUDGET must be a whole number, not '${arg_PER_FILE_BUDGET}'.")
  endif()
  if(DEFINED arg_BUDGET AND NOT arg_BUDGET MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "${where}: BUDGET must be a positive whole number, not '${arg_BUDGET}'.")
  endif()
  if(DEFINED arg_TIME_LIMIT AND NOT arg_TIME_LIMIT MATCHES "^([0-9]+\\.?[0-9]*|\\.[0-9]+)$")
    message(FATAL_ERROR "${where}: TIME_LIMIT must be a number of seconds, not '${arg_TIME_LIMIT}'.")
  endif()
  _compileiq_real_target(real "${target}")
  if(real)
    set(target "${real}")
  elseif(target MATCHES "::")
    message(FATAL_ERROR "${where}: name the target itself, not an alias or imported target.")
  else()
    # The target may be defined later in the project.  Deferred arguments
    # are expanded when the call runs, hence the bracket argument.
    cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [==[${CMAKE_SOURCE_DIR}]==]
      CALL _compileiq_check_tune_target [==[${target}]==])")
  endif()

  if(NOT COMPILEIQ_TUNE)
    _compileiq_schedule_apply()
    return()
  endif()

  set(tune_target "compileiq_tune_${target}")
  if(TARGET "${tune_target}")
    message(FATAL_ERROR "${where}: compileiq_tune() was already called for this target.")
  endif()
  _compileiq_python_command(cmd)
  list(LENGTH cmd prefix)
  list(APPEND cmd tune -S "${CMAKE_SOURCE_DIR}" -B "${CMAKE_BINARY_DIR}" --target "${target}")
  foreach(a IN LISTS arg_BENCHMARK)
    list(APPEND cmd "--bench-arg=${a}")
  endforeach()
  list(APPEND cmd "--metric=${arg_METRIC}")
  if(arg_HIGHER_IS_BETTER)
    list(APPEND cmd --higher-is-better)
  endif()
  if(DEFINED arg_PASS_REGEX)
    list(APPEND cmd "--pass-regex=${arg_PASS_REGEX}")
  endif()
  foreach(a IN LISTS arg_VERIFY)
    list(APPEND cmd "--verify-arg=${a}")
  endforeach()
  foreach(kw IN ITEMS COMPARE_OUTPUT COMPARE_FILE RTOL ATOL)
    if(DEFINED arg_${kw})
      string(TOLOWER "${kw}" opt)
      string(REPLACE "_" "-" opt "${opt}")
      list(APPEND cmd "--${opt}=${arg_${kw}}")
    endif()
  endforeach()
  foreach(a IN LISTS arg_WORKLOADS)
    list(APPEND cmd "--workload=${a}")
  endforeach()
  if(DEFINED arg_BUDGET)
    list(APPEND cmd "--budget=${arg_BUDGET}")
  endif()
  if(DEFINED arg_PER_FILE_BUDGET)
    list(APPEND cmd "--per-file-budget=${arg_PER_FILE_BUDGET}")
  endif()
  if(DEFINED arg_TIME_LIMIT)
    list(APPEND cmd "--time-limit=${arg_TIME_LIMIT}")
  endif()
  if(DEFINED arg_GPUS)
    list(APPEND cmd "--gpus=${arg_GPUS}")
  endif()
  if(DEFINED arg_EXECUTOR)
    list(APPEND cmd "--executor=${arg_EXECUTOR}")
  endif()
  if(DEFINED arg_RAY_ADDRESS)
    list(APPEND cmd "--ray-address=${arg_RAY_ADDRESS}")
  endif()
  if(arg_PORTABLE)
    list(APPEND cmd --portable)
  endif()
  if(DEFINED arg_ARCH_SCOPE)
    list(APPEND cmd "--arch-scope=${arg_ARCH_SCOPE}")
  endif()
  foreach(a IN LISTS arg_INCLUDE_FLAGS)
    list(APPEND cmd "--include-flags=${a}")
  endforeach()
  foreach(a IN LISTS arg_EXCLUDE_FLAGS)
    list(APPEND cmd "--exclude-flags=${a}")
  endforeach()
  get_property(multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(multi_config)  # the configuration the tune target is built in is the one tuned
    list(APPEND cmd "--config=$<CONFIG>")
  endif()
  if(NOT DEFINED arg_OUTPUT AND COMPILEIQ_FLAGS_FILE)
    set(arg_OUTPUT "${COMPILEIQ_FLAGS_FILE}")
  endif()
  if(DEFINED arg_OUTPUT)
    cmake_path(ABSOLUTE_PATH arg_OUTPUT BASE_DIRECTORY "${CMAKE_SOURCE_DIR}")
    list(APPEND cmd "--output=${arg_OUTPUT}")
  endif()

  add_custom_target("${tune_target}" COMMAND ${cmd}
    WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
    COMMENT "compileiq: tuning the flags of ${target}"
    VERBATIM USES_TERMINAL)
  # Chain the calls so that two tunings never share the machine.
  get_property(previous GLOBAL PROPERTY _compileiq_last_tune_target)
  if(previous)
    add_dependencies("${tune_target}" "${previous}")
  endif()
  set_property(GLOBAL PROPERTY _compileiq_last_tune_target "${tune_target}")
  # The suite: this call's tune arguments, one per line after a "[target]" line; the compileiq_tune target
  # tunes every call's target as one suite job (tune --suite-args), with generator expressions resolved.
  math(EXPR first "${prefix} + 1")
  list(SUBLIST cmd ${first} -1 tune_args)
  foreach(a IN LISTS tune_args)  # one argument per line: a line break would inject arguments
    if(a MATCHES "[\r\n]")
      string(REGEX REPLACE "[\r\n].*" "..." shown "${a}")
      message(FATAL_ERROR "compileiq_tune(${target}): the argument '${shown}' contains a line break; "
        "give each value on one line")
    endif()
  endforeach()
  string(JOIN "\n" block ${tune_args})
  set_property(GLOBAL APPEND_STRING PROPERTY _compileiq_suite_content "[target]\n${block}\n")
  if(NOT TARGET compileiq_tune)
    _compileiq_python_command(suite_cmd)
    if(multi_config)
      set(suite_file "${CMAKE_BINARY_DIR}/compileiq_suite-$<CONFIG>.args")
    else()
      set(suite_file "${CMAKE_BINARY_DIR}/compileiq_suite.args")
    endif()
    list(APPEND suite_cmd tune "--suite-args=${suite_file}")
    if(COMPILEIQ_SUITE_TIME_LIMIT)
      list(APPEND suite_cmd "--time-limit=${COMPILEIQ_SUITE_TIME_LIMIT}")
    endif()
    add_custom_target(compileiq_tune COMMAND ${suite_cmd}
      WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
      COMMENT "compileiq: tuning every compileiq_tune() target as one suite"
      VERBATIM USES_TERMINAL)
    cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [==[${CMAKE_SOURCE_DIR}]==]
      CALL _compileiq_write_suite [==[${suite_file}]==])")
  endif()
endfunction()

# _compileiq_write_suite(<file>)
#   At the end of the configure: the arguments of every compileiq_tune() call, for the compileiq_tune
#   target's suite job (generator expressions resolved per configuration by file(GENERATE)).
function(_compileiq_write_suite file)
  get_property(content GLOBAL PROPERTY _compileiq_suite_content)
  file(GENERATE OUTPUT "${file}" CONTENT "${content}")
endfunction()

function(_compileiq_check_tune_target target)
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "compileiq_tune(${target}): target '${target}' is not defined by this project.")
  endif()
endfunction()

# Schedule _compileiq_apply_flags_file at the end of the top-level directory,
# once per configure.
function(_compileiq_schedule_apply)
  get_property(scheduled GLOBAL PROPERTY _compileiq_apply_scheduled)
  if(NOT scheduled)
    set_property(GLOBAL PROPERTY _compileiq_apply_scheduled TRUE)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _compileiq_apply_flags_file)
  endif()
endfunction()

# Turn the flags file into _compileiq_entry() calls (Contract 3) and run them.
function(_compileiq_apply_flags_file)
  if(NOT COMPILEIQ_APPLY OR COMPILEIQ_TUNE)
    return()
  endif()
  if(COMPILEIQ_FLAGS_FILE)
    set(toml "${COMPILEIQ_FLAGS_FILE}")
    cmake_path(ABSOLUTE_PATH toml BASE_DIRECTORY "${CMAKE_SOURCE_DIR}")
    if(NOT EXISTS "${toml}")
      message(FATAL_ERROR "compileiq: COMPILEIQ_FLAGS_FILE=${COMPILEIQ_FLAGS_FILE} does not exist.")
    endif()
  else()
    set(toml "${CMAKE_SOURCE_DIR}/compileiq.toml")
    if(NOT EXISTS "${toml}")
      return()
    endif()
  endif()
  set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${toml}")
  set(entries "${CMAKE_BINARY_DIR}/compileiq/entries.cmake")
  _compileiq_python_command(cmd)
  # the compilers that can say which ISA features this host has (entries tuned with -march=native);
  # COMPILEIQ_HOST_CPU_FEATURES (for tests) simulates a host with those features instead
  set(host "")
  foreach(lang IN ITEMS C CXX CUDA_HOST)
    if(CMAKE_${lang}_COMPILER)
      list(APPEND host --compiler "${lang}" "${CMAKE_${lang}_COMPILER}")
    endif()
  endforeach()
  if(DEFINED COMPILEIQ_HOST_CPU_FEATURES)
    string(REPLACE ";" "," features "${COMPILEIQ_HOST_CPU_FEATURES}")
    list(APPEND host "--host-features=${features}")
  endif()
  execute_process(COMMAND ${cmd} cmake-entries "${toml}" "${entries}" ${host}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(STRIP "${err}" err)
    if(err STREQUAL "")
      set(err "'${COMPILEIQ_PYTHON} -m compileiq_cmake cmake-entries' failed: ${rc}")
    endif()
    message(FATAL_ERROR "compileiq: ${err}")
  endif()
  include("${entries}")
endfunction()

# _compileiq_add_flags(<target> <language> <config> <flag>...)
#   target_compile_options(<target> PRIVATE $<$<COMPILE_LANGUAGE:lang>:flag>...)
#   (with a non-empty <config>: $<$<AND:$<COMPILE_LANGUAGE:lang>,$<CONFIG:config>>:flag>)
#   with '>' ',' ';' of each flag escaped so it stays one whole token.
function(_compileiq_add_flags target lang config)
  set(condition "$<COMPILE_LANGUAGE:${lang}>")
  if(NOT config STREQUAL "")
    set(condition "$<AND:${condition},$<CONFIG:${config}>>")
  endif()
  _compileiq_conditional(options "${condition}" ${ARGN})
  if(options)
    target_compile_options("${target}" PRIVATE ${options})
  endif()
endfunction()

# _compileiq_conditional(<out-var> <condition> <flag>...)
#   Each flag as $<<condition>:flag>, escaped for a generator expression; as it is with no condition.
function(_compileiq_conditional out condition)
  set(options "")
  foreach(flag IN LISTS ARGN)
    if(NOT condition STREQUAL "")
      string(REPLACE ">" "$<ANGLE-R>" flag "${flag}")
      string(REPLACE "," "$<COMMA>" flag "${flag}")
      string(REPLACE ";" "$<SEMICOLON>" flag "${flag}")
      set(flag "$<${condition}:${flag}>")
    endif()
    list(APPEND options "${flag}")
  endforeach()
  set(${out} "${options}" PARENT_SCOPE)
endfunction()

# _compileiq_relocatable(<target> <out-var> [<config>])
#   TRUE when <target> builds relocatable device code: CUDA_SEPARABLE_COMPILATION, or -rdc=true / -dc
#   among its compile options, its directory's, or CMAKE_CUDA_FLAGS and CMAKE_CUDA_FLAGS_<CONFIG> as the
#   target's directory sees them (<config>: the configuration built; default CMAKE_BUILD_TYPE).
function(_compileiq_relocatable target out)
  get_target_property(sep "${target}" CUDA_SEPARABLE_COMPILATION)
  if(sep)
    set(${out} TRUE PARENT_SCOPE)
    return()
  endif()
  set(config "${CMAKE_BUILD_TYPE}")
  if(ARGC GREATER 2 AND NOT "${ARGV2}" STREQUAL "")
    set(config "${ARGV2}")
  endif()
  string(TOUPPER "${config}" config)
  get_target_property(options "${target}" COMPILE_OPTIONS)
  get_target_property(dir "${target}" SOURCE_DIR)
  get_directory_property(dir_options DIRECTORY "${dir}" COMPILE_OPTIONS)
  get_directory_property(cuda_flags DIRECTORY "${dir}" DEFINITION CMAKE_CUDA_FLAGS)
  set(config_flags "")
  if(NOT config STREQUAL "")
    get_directory_property(config_flags DIRECTORY "${dir}" DEFINITION "CMAKE_CUDA_FLAGS_${config}")
  endif()
  separate_arguments(flags NATIVE_COMMAND "${cuda_flags} ${config_flags}")
  set(previous "")
  foreach(item IN LISTS options dir_options flags)
    _compileiq_unwrap_option(core "${item}")
    if(core MATCHES "^(-rdc|--relocatable-device-code)[= ](true|1)$" OR core MATCHES "^(-dc|--device-c)$"
       OR (previous MATCHES "^(-rdc|--relocatable-device-code)$" AND core MATCHES "^(true|1)$"))
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
    set(previous "${core}")
  endforeach()
  set(${out} FALSE PARENT_SCOPE)
endfunction()

# _compileiq_device_lto_refusal(<target> <out-var> [<config>])
#   Why device LTO cannot apply to <target>, or "" when it can: device LTO acts at CMake's device link step,
#   which CMake runs for a target built with CUDA_SEPARABLE_COMPILATION (-rdc=true in the flags alone gets
#   none), and -dlto reaches it as a link option, which CMake passes to the device link only under policy
#   CMP0105 NEW (the project's, as its top-level directory sets it: cmake_minimum_required >= 3.18, or
#   -DCMAKE_POLICY_DEFAULT_CMP0105=NEW). The one rule: the apply refuses an entry by it, and a variant
#   tree writes it into compileiq_variant_info.txt (device_lto_refusal=), where the tune reads whether to
#   offer device LTO.
function(_compileiq_device_lto_refusal target out)
  get_target_property(sep "${target}" CUDA_SEPARABLE_COMPILATION)
  get_property(cmp0105 GLOBAL PROPERTY _compileiq_project_cmp0105)
  set(why "")
  if(sep AND NOT cmp0105 STREQUAL "NEW")
    set(why "CMake passes no link options to the device link, where device LTO acts, under the project's "
      "policy CMP0105 (not NEW: its cmake_minimum_required is older than 3.18): configure with "
      "-DCMAKE_POLICY_DEFAULT_CMP0105=NEW to let it")
  elseif(NOT sep)
    _compileiq_relocatable("${target}" relocatable ${ARGN})
    if(relocatable)
      set(why "${target} builds relocatable device code through -rdc=true in its flags, not with "
        "CUDA_SEPARABLE_COMPILATION, under which CMake runs the device link where device LTO acts: "
        "set CUDA_SEPARABLE_COMPILATION ON")
    else()
      set(why "${target} does not build relocatable device code (CUDA_SEPARABLE_COMPILATION or -rdc=true)")
    endif()
  endif()
  string(JOIN "" why ${why})
  set(${out} "${why}" PARENT_SCOPE)
endfunction()

# _compileiq_device_lto(TARGET <t> CONFIG <config or empty> ARCH <arch> [DEVICE_LINK <consumer>...]
#                       OUT_FORWARDED <var> OUT_AT <var> [FLAGS <flag>...])
#   Device link-time optimization of the CUDA code of <t> only; the host languages are untouched.
#   CMake's INTERPROCEDURAL_OPTIMIZATION has no per-language switch: it would also compile the target's C
#   and C++ files with host LTO (-flto=auto -fno-fat-lto-objects), whose link fails where the host
#   compiler has no LTO plugin, and credit device LTO with host LTO's effect. So the options are set here:
#   * at compile, for CUDA sources only, LTO IR of the tuned architecture
#     (--generate-code=arch=compute_<arch>,code=lto_<arch>) beside the code CMake's architectures already
#     give: an object holds both, a device link with -dlto uses the IR (the linked code is the same as
#     from IR-only objects: docs/benchmarks/more-speed.md), one without uses the machine code;
#   * at the device link, -dlto and the <flag>s that act there (-Xptxas options and -maxrregcount: under
#     device LTO the code is generated at the link, and nvcc 13 drops compile-step -Xptxas for it); they
#     are returned in <OUT_FORWARDED>.
#   An executable or shared library does its own device link. A STATIC or OBJECT library's device code is
#   linked by its consumers: only the DEVICE_LINK consumers (those the tune measured through) get -dlto;
#   every other consumer links the library's machine code, without device LTO. <OUT_AT>: the targets whose
#   device link got -dlto.
function(_compileiq_device_lto)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;CONFIG;ARCH;OUT_FORWARDED;OUT_AT" "DEVICE_LINK;FLAGS")
  set(target "${arg_TARGET}")
  set(condition "")
  set(compile_condition "$<COMPILE_LANGUAGE:CUDA>")
  if(NOT "${arg_CONFIG}" STREQUAL "")
    set(condition "$<CONFIG:${arg_CONFIG}>")
    set(compile_condition "$<AND:${compile_condition},${condition}>")
  endif()
  _compileiq_conditional(ir "${compile_condition}" "--generate-code=arch=compute_${arg_ARCH},code=lto_${arg_ARCH}")
  target_compile_options("${target}" PRIVATE ${ir})
  set(forwarded "")
  foreach(flag IN LISTS arg_FLAGS)
    if(flag MATCHES "^(-Xptxas=|-maxrregcount=)")
      list(APPEND forwarded "${flag}")
    endif()
  endforeach()
  get_target_property(type "${target}" TYPE)
  set(at "${target}")
  if(type MATCHES "^(STATIC|OBJECT)_LIBRARY$")
    _compileiq_real_targets(at ${arg_DEVICE_LINK})
  endif()
  _compileiq_conditional(options "${condition}" -dlto ${forwarded})
  list(TRANSFORM options PREPEND "$<DEVICE_LINK:")
  list(TRANSFORM options APPEND ">")
  foreach(linker IN LISTS at)
    target_link_options("${linker}" PRIVATE ${options})
  endforeach()
  set(${arg_OUT_FORWARDED} "${forwarded}" PARENT_SCOPE)
  set(${arg_OUT_AT} "${at}" PARENT_SCOPE)
endfunction()

# _compileiq_real_targets(<out-var> <name>...)
#   The targets the <name>s name (aliases resolved), those that are no target left out.
function(_compileiq_real_targets out)
  set(found "")
  foreach(name IN LISTS ARGN)
    _compileiq_real_target(real "${name}")
    if(real)
      list(APPEND found "${real}")
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# _compileiq_all_targets(<out-var>)
#   Every target the project defines (UTILITY targets left out), directory by directory from the top.
function(_compileiq_all_targets out)
  set(found "")
  set(dirs "${CMAKE_SOURCE_DIR}")
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t IN LISTS targets)
      get_target_property(type "${t}" TYPE)
      if(NOT type STREQUAL "UTILITY")
        list(APPEND found "${t}")
      endif()
    endforeach()
  endwhile()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# _compileiq_consumers(<library> <out-var>)
#   The targets of the project that link <library> directly (LINK_LIBRARIES), in directory order.
function(_compileiq_consumers library out)
  _compileiq_all_targets(targets)
  set(found "")
  foreach(t IN LISTS targets)
    get_target_property(libs "${t}" LINK_LIBRARIES)
    if(libs AND "${library}" IN_LIST libs)
      list(APPEND found "${t}")
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# _compileiq_source_options(<target> <path> <condition> <flag>...)
#   The <flag>s for one source file of <target> (<path> absolute), after the target's own options, seen
#   from the target's directory; each wrapped in $<condition:...> unless <condition> is empty. A source
#   file's properties belong to its directory, where other targets may compile the same file: the flags
#   are guarded by $<STREQUAL:$<TARGET_PROPERTY:NAME>,<target>> (in a source property the target
#   compiling the file), so that every other target's compile line stays as it was.
function(_compileiq_source_options target path condition)
  set(scope "$<STREQUAL:$<TARGET_PROPERTY:NAME>,${target}>")
  if(NOT condition STREQUAL "")
    set(scope "$<AND:${condition},${scope}>")
  endif()
  _compileiq_conditional(options "${scope}" ${ARGN})
  set_property(SOURCE "${path}" TARGET_DIRECTORY "${target}" APPEND PROPERTY COMPILE_OPTIONS ${options})
endfunction()

# _compileiq_unwrap_option(<out-var> <item>)
#   A compile option item as nvcc sees it: unwrapped from
#   $<$<COMPILE_LANGUAGE:CUDA>:...>, $<$<COMPILE_LANG_AND_ID:CUDA,NVIDIA>:...>
#   and SHELL:.
function(_compileiq_unwrap_option out item)
  set(core "${item}")
  if(core MATCHES "^\\$<\\$<COMPILE_LANG[A-Z_]*:CUDA[^>]*>:(.*)$")
    set(core "${CMAKE_MATCH_1}")
    string(REGEX REPLACE ">$" "" core "${core}")
  endif()
  string(REGEX REPLACE "^SHELL:[ \t]*" "" core "${core}")
  set(${out} "${core}" PARENT_SCOPE)
endfunction()

# _compileiq_arch_option(<out-name> <out-rest> <item>)
#   Whether a compile option item is a CUDA architecture option, as nvcc
#   sees it (_compileiq_unwrap_option): <out-name> is the
#   option (-arch, --gpu-architecture, -gencode, --generate-code, -code,
#   --gpu-code) or empty, <out-rest> what follows it in the same item
#   ("=sm_90", " sm_90"; empty when the value is the next item).
function(_compileiq_arch_option out_name out_rest item)
  _compileiq_unwrap_option(core "${item}")
  set(name "")
  set(rest "")
  if(core MATCHES "^(-arch|--gpu-architecture|-gencode|--generate-code|-code|--gpu-code)([= \t].*)?$")
    set(name "${CMAKE_MATCH_1}")
    set(rest "${CMAKE_MATCH_2}")
  endif()
  set(${out_name} "${name}" PARENT_SCOPE)
  set(${out_rest} "${rest}" PARENT_SCOPE)
endfunction()

# _compileiq_flag_archs(<out-archs> <out-options> <item>...)
#   The CUDA architectures named by architecture options among <item>s
#   (-arch, --gpu-architecture, -gencode, --generate-code, -code, --gpu-code,
#   with '=' or as two items, also inside $<$<COMPILE_LANGUAGE:CUDA>:...>):
#   numbers such as 90 or 90a, or all/all-major/native; and the options.
function(_compileiq_flag_archs out_archs out_options)
  set(archs "")
  set(options "")
  set(take_next "")
  foreach(item IN LISTS ARGN)
    if(take_next)  # the value of an option written as two items
      _compileiq_unwrap_option(value "${item}")
      set(option "${take_next} ${value}")
      set(take_next "")
    else()
      _compileiq_arch_option(name rest "${item}")
      if(name STREQUAL "")
        continue()
      elseif(rest STREQUAL "")
        set(take_next "${name}")
        continue()
      endif()
      string(SUBSTRING "${rest}" 1 -1 value)
      set(option "${name}${rest}")
    endif()
    list(APPEND options "${option}")
    if(value MATCHES "^(native|all|all-major)$")
      list(APPEND archs "${value}")
    endif()
    string(REGEX MATCHALL "(sm|compute|lto)_[0-9]+[a-z]?" found "${value}")
    foreach(f IN LISTS found)
      string(REGEX REPLACE "^[a-z]+_" "" f "${f}")
      list(APPEND archs "${f}")
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES archs)
  set(${out_archs} "${archs}" PARENT_SCOPE)
  set(${out_options} "${options}" PARENT_SCOPE)
endfunction()

# _compileiq_cuda_archs(<target> <out-archs> <out-from>)
#   The CUDA architectures a target builds, without -real/-virtual: its
#   CUDA_ARCHITECTURES, else (empty or OFF, e.g. under CMP0104 OLD) the
#   architecture options of its compile line: CMAKE_CUDA_FLAGS and
#   CMAKE_CUDA_FLAGS_<CONFIG> of its directory, the directory's and the
#   target's COMPILE_OPTIONS.  <out-from> says where they came from.
function(_compileiq_cuda_archs target out out_from)
  get_target_property(archs "${target}" CUDA_ARCHITECTURES)
  set(from "CUDA_ARCHITECTURES")
  if(NOT archs)
    set(archs "${CMAKE_CUDA_ARCHITECTURES}")
    set(from "CMAKE_CUDA_ARCHITECTURES")
  endif()
  if(archs STREQUAL "native" AND CMAKE_CUDA_ARCHITECTURES_NATIVE)
    set(archs "${CMAKE_CUDA_ARCHITECTURES_NATIVE}")
  endif()
  if(NOT archs)  # empty or OFF: the project passes the architecture itself
    get_target_property(dir "${target}" SOURCE_DIR)
    set(items "")
    set(where "")
    set(configs "")
    if(CMAKE_BUILD_TYPE)
      string(TOUPPER "_${CMAKE_BUILD_TYPE}" configs)
    endif()
    foreach(suffix IN ITEMS "" ${configs})
      get_directory_property(flags DIRECTORY "${dir}" DEFINITION "CMAKE_CUDA_FLAGS${suffix}")
      if(flags STREQUAL "")  # not set in the directory: the cache entry (-DCMAKE_CUDA_FLAGS=...)
        set(flags "$CACHE{CMAKE_CUDA_FLAGS${suffix}}")
      endif()
      separate_arguments(flags UNIX_COMMAND "${flags}")
      _compileiq_flag_archs(found opts ${flags})
      if(found)
        list(APPEND items ${flags})
        list(JOIN opts " " opts)
        list(APPEND where "${opts} in CMAKE_CUDA_FLAGS${suffix}")
      endif()
    endforeach()
    get_directory_property(directory_opts DIRECTORY "${dir}" COMPILE_OPTIONS)
    get_target_property(target_opts "${target}" COMPILE_OPTIONS)
    foreach(kind IN ITEMS directory target)
      if(${kind}_opts)
        _compileiq_flag_archs(found opts ${${kind}_opts})
        if(found)
          list(APPEND items ${${kind}_opts})
          list(JOIN opts " " opts)
          list(APPEND where "${opts} in the ${kind}'s COMPILE_OPTIONS")
        endif()
      endif()
    endforeach()
    _compileiq_flag_archs(archs opts ${items})
    list(JOIN where "; " from)
    if(NOT archs)
      set(from "no CUDA_ARCHITECTURES and no architecture option: nvcc's default architecture")
    endif()
  endif()
  list(TRANSFORM archs REPLACE "-(real|virtual)$" "")
  list(REMOVE_DUPLICATES archs)
  set(${out} "${archs}" PARENT_SCOPE)
  set(${out_from} "${from}" PARENT_SCOPE)
endfunction()

# _compileiq_sources_sha256(<target> <out-var> [<header>...])
#   The identity of the sources a target is built from: the sha256 over the
#   lines "<path relative to the top-level source dir><TAB><sha256 of the
#   file>" of its existing source files (SOURCES; generator expressions and
#   files in the build tree left out) and of the <header>s (paths relative
#   to the top-level source dir: the headers the tune found the target's
#   compiles include; "missing" for one that is gone), sorted.  The tool
#   reads the source lines from its variant trees (_compileiq_source_lines)
#   and hashes them with the headers' the same way, so the two always agree.
function(_compileiq_sources_sha256 target out)
  _compileiq_source_lines("${target}" lines)
  foreach(rel IN LISTS ARGN)
    cmake_path(ABSOLUTE_PATH rel BASE_DIRECTORY "${CMAKE_SOURCE_DIR}" NORMALIZE OUTPUT_VARIABLE abs)
    if(EXISTS "${abs}" AND NOT IS_DIRECTORY "${abs}")
      file(SHA256 "${abs}" digest)
    else()
      set(digest "missing")
    endif()
    list(APPEND lines "${rel}\t${digest}")
  endforeach()
  list(SORT lines)
  list(JOIN lines "\n" text)
  string(SHA256 digest "${text}")
  set(${out} "${digest}" PARENT_SCOPE)
endfunction()

# _compileiq_source_lines(<target> <out-var>): the source files' lines of _compileiq_sources_sha256.
function(_compileiq_source_lines target out)
  get_target_property(sources "${target}" SOURCES)
  get_target_property(dir "${target}" SOURCE_DIR)
  set(lines "")
  foreach(src IN LISTS sources)
    if(src MATCHES "\\$<")
      continue()
    endif()
    cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY "${dir}" NORMALIZE OUTPUT_VARIABLE abs)
    cmake_path(IS_PREFIX CMAKE_BINARY_DIR "${abs}" NORMALIZE in_build_tree)
    if(in_build_tree OR NOT EXISTS "${abs}" OR IS_DIRECTORY "${abs}")
      continue()
    endif()
    file(SHA256 "${abs}" digest)
    cmake_path(RELATIVE_PATH abs BASE_DIRECTORY "${CMAKE_SOURCE_DIR}" OUTPUT_VARIABLE rel)
    list(APPEND lines "${rel}\t${digest}")
  endforeach()
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# _compileiq_strip_arch_options(<var>)
#   Removes CUDA architecture options (-arch, -gencode, --generate-code, ... in either spelling) from
#   the list in <var>.
function(_compileiq_strip_arch_options var)
  set(kept "")
  set(skip_next FALSE)
  foreach(item IN LISTS ${var})
    if(skip_next)
      set(skip_next FALSE)
      continue()
    endif()
    _compileiq_arch_option(name rest "${item}")
    if(NOT name STREQUAL "")
      if(rest STREQUAL "")
        set(skip_next TRUE)  # -arch sm_70 as two items
      endif()
      continue()
    endif()
    list(APPEND kept "${item}")
  endforeach()
  set(${var} "${kept}" PARENT_SCOPE)
endfunction()

# _compileiq_flags_sha256(<target> <lang> <config> <out-var>)
#   The identity of the compile flags a configure gives <target> from outside its own code: the sha256
#   of CMAKE_<LANG>_FLAGS and CMAKE_<LANG>_FLAGS_<CONFIG> as the target's directory sees them (cache or
#   directory values; CUDA architecture options left out: the variant trees set the architecture).  The
#   tune records it from its variant tree (compileiq_variant.cmake) and the apply compares it: one rule.
function(_compileiq_flags_sha256 target lang config out)
  get_target_property(dir "${target}" SOURCE_DIR)
  string(TOUPPER "${config}" config)
  set(text "")
  foreach(var IN ITEMS "CMAKE_${lang}_FLAGS" "CMAKE_${lang}_FLAGS_${config}")
    get_directory_property(value DIRECTORY "${dir}" DEFINITION "${var}")
    separate_arguments(args UNIX_COMMAND "${value}")
    if(lang STREQUAL "CUDA")
      _compileiq_strip_arch_options(args)
    endif()
    list(JOIN args " " kept)
    string(APPEND text "${var}=${kept}\n")
  endforeach()
  string(SHA256 digest "${text}")
  set(${out} "${digest}" PARENT_SCOPE)
endfunction()

# One entry of the flags file (Contract 3), written by `cmake-entries`:
#   _compileiq_entry(TARGET <t> LANGUAGE <CUDA|CXX|C> ARCH <arch or empty>
#                    COMPILER_ID <id> COMPILER_VERSION <major.minor>
#                    [COMPILER_VERSION_FULL <x.y.z>] [SOURCES_SHA256 <sha>]
#                    [HEADERS <path>...] [FLAGS_SHA256 <sha>] [DATE <when tuned>]
#                    CONFIG <build type tuned, or empty> FLAGS <flag>...)
# With a CONFIG the flags apply to that configuration only: a single-config
# build of another CMAKE_BUILD_TYPE, or of none, does not get them, and a
# multi-config generator gets them inside $<CONFIG:...>.  An entry tuned on
# other sources (SOURCES_SHA256 over the sources and the HEADERS they include),
# on top of other CMAKE_<LANG>_FLAGS (FLAGS_SHA256) or with another compiler
# patch version is still applied, with a status line that says so.
function(_compileiq_entry)
  cmake_parse_arguments(PARSE_ARGV 0 arg "DEVICE_LTO;HOST_SIDE_ONLY;HOST_HAS_FEATURES"
    "TARGET;LANGUAGE;ARCH;COMPILER_ID;COMPILER_VERSION;COMPILER_VERSION_FULL;SOURCES_SHA256;FLAGS_SHA256;DATE;CONFIG;ARCH_SCOPE;TUNED_CPU;HOST_CHECK"
    "HEADERS;FLAGS;HOST_SPECIFIC;HOST_LACKS;DEVICE_LINK")
  set(lang "${arg_LANGUAGE}")
  _compileiq_real_target(target "${arg_TARGET}")
  if(NOT target)
    message(WARNING "compileiq: compileiq.toml has flags for target '${arg_TARGET}' "
      "which this project does not define; ignored")
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored "this project does not define the target")
    return()
  endif()
  get_target_property(type "${target}" TYPE)
  get_target_property(imported "${target}" IMPORTED)
  if(imported OR type MATCHES "^(INTERFACE_LIBRARY|UTILITY)$")
    message(WARNING "compileiq: compileiq.toml has flags for target '${target}' "
      "which this project does not compile; ignored")
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored "this project does not compile the target")
    return()
  endif()
  if(NOT CMAKE_${lang}_COMPILER_ID)
    message(WARNING "compileiq: flags for ${target} were tuned for ${lang} "
      "but this project does not enable ${lang}; not applied")
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored "this project does not enable ${lang}")
    return()
  endif()

  set(id "${CMAKE_${lang}_COMPILER_ID}")
  string(REGEX MATCH "^[0-9]+(\\.[0-9]+)?" version "${CMAKE_${lang}_COMPILER_VERSION}")
  set(tuned "${arg_COMPILER_ID} ${arg_COMPILER_VERSION}")
  set(what "${tuned}")
  set(built "uses ${id} ${version}")
  set(detected "")
  set(match FALSE)
  if(id STREQUAL arg_COMPILER_ID AND version STREQUAL arg_COMPILER_VERSION)
    set(match TRUE)
  endif()
  if(lang STREQUAL "CUDA" AND NOT "${arg_ARCH}" STREQUAL "")
    _compileiq_cuda_archs("${target}" archs archs_from)
    if(NOT arg_ARCH IN_LIST archs AND NOT archs MATCHES "^all(-major)?$")
      set(match FALSE)
    endif()
    set(what "sm_${arg_ARCH}")
    set(tuned "sm_${arg_ARCH} with ${tuned}")
    if(archs)
      list(TRANSFORM archs PREPEND "sm_" REGEX "^[0-9]" OUTPUT_VARIABLE shown_archs)
      list(JOIN shown_archs ", " shown_archs)
    else()
      set(shown_archs "nvcc's default architecture")
    endif()
    set(built "targets ${shown_archs} with ${id} ${version}")
    if(NOT archs_from MATCHES "^(CMAKE_)?CUDA_ARCHITECTURES$")
      set(detected "; architecture from ${archs_from}")
      set(built "${built} (${archs_from})")
    endif()
  endif()
  if(NOT match)
    message(WARNING "compileiq: flags for ${target} were tuned for ${tuned} "
      "but this build ${built}; not applied")
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored "tuned for ${tuned} but this build ${built}")
    return()
  endif()

  get_property(multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  set(config "")
  set(for_config "")
  if(NOT "${arg_CONFIG}" STREQUAL "")
    if(multi_config)
      set(config "${arg_CONFIG}")
      set(for_config " for the ${arg_CONFIG} configuration")
    elseif(CMAKE_BUILD_TYPE STREQUAL "")
      message(STATUS "compileiq: flags for ${target} were tuned for the ${arg_CONFIG} build type; "
        "this build has no CMAKE_BUILD_TYPE (no optimization level): not applied; "
        "configure with -DCMAKE_BUILD_TYPE=${arg_CONFIG}")
      _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored
        "tuned for the ${arg_CONFIG} build type; this build has no CMAKE_BUILD_TYPE")
      return()
    else()
      string(TOUPPER "${CMAKE_BUILD_TYPE}" this_type)
      string(TOUPPER "${arg_CONFIG}" tuned_type)
      if(NOT this_type STREQUAL tuned_type)
        message(STATUS "compileiq: flags for ${target} were tuned for the ${arg_CONFIG} build type; "
          "this is a ${CMAKE_BUILD_TYPE} build: not applied")
        _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored
          "tuned for the ${arg_CONFIG} build type; this is a ${CMAKE_BUILD_TYPE} build")
        return()
      endif()
    endif()
  endif()

  # Flags specific to the CPU tuned on (-march=native, resolved at tune time): this host's ISA features
  # compared with the recorded ones; COMPILEIQ_PORTABLE refuses them.
  if(DEFINED arg_TUNED_CPU)
    list(JOIN arg_HOST_SPECIFIC " " specific)
    set(tuned_on "tuned on ${arg_TUNED_CPU} (${specific})")
    list(JOIN arg_HOST_LACKS ", " lacks)
    if(arg_HOST_LACKS)
      set(cpu_state "this host lacks ${lacks} (${arg_HOST_CHECK})")
    elseif(arg_HOST_HAS_FEATURES)
      set(cpu_state "this host has its ISA features (${arg_HOST_CHECK})")
    else()
      set(cpu_state "${arg_HOST_CHECK}")
    endif()
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" cpu "${tuned_on}; ${cpu_state}")
    if(COMPILEIQ_PORTABLE)
      message(STATUS "compileiq: flags for ${target} not applied: COMPILEIQ_PORTABLE is ON and they are specific "
        "to the CPU they were ${tuned_on}; re-tune with --portable (PORTABLE in compileiq_tune()) for flags any CPU runs")
      _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored "COMPILEIQ_PORTABLE is ON and the flags are specific to the CPU they were ${tuned_on}")
      return()
    endif()
  endif()

  # CUDA: the architectures the target builds besides the measured one. arch_scope "tuned" keeps the flags
  # to builds of the measured architecture alone: nvcc takes one set of flags for all the -gencode
  # architectures of a compile, so they cannot be limited to one of several (host-side flags, -Xcompiler=,
  # change no device code and apply all the same).
  set(unmeasured "")
  if(lang STREQUAL "CUDA" AND NOT "${arg_ARCH}" STREQUAL "")
    set(unmeasured ${archs})
    list(REMOVE_ITEM unmeasured "${arg_ARCH}")
    list(TRANSFORM unmeasured PREPEND "sm_" REGEX "^[0-9]")
    list(JOIN unmeasured ", " unmeasured)
  endif()
  if(unmeasured AND arg_ARCH_SCOPE STREQUAL "tuned" AND NOT arg_HOST_SIDE_ONLY)
    message(STATUS "compileiq: flags for ${target} not applied: arch_scope = \"tuned\" limits them to sm_${arg_ARCH}, "
      "the measured architecture, but ${target} also builds ${unmeasured} (unmeasured), and nvcc takes one set of "
      "device-code flags for every architecture of a compile; build sm_${arg_ARCH} alone (CUDA_ARCHITECTURES ${arg_ARCH}) "
      "to get them, or set arch_scope = \"all\"")
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored "arch_scope tuned: measured on sm_${arg_ARCH}; the \
target also builds ${unmeasured} (unmeasured), and nvcc flags cannot be limited to one architecture of a compile")
    return()
  endif()

  # nvcc/gcc take one set of flags per target and language: the first wins.
  get_property(applied GLOBAL PROPERTY "_compileiq_applied_${target}_${lang}")
  if(applied)
    message(STATUS "compileiq: flags for ${target} tuned for ${what} not applied: those tuned for ${applied} "
      "apply (one set of flags per target and language; of several architectures' entries, the newest "
      "architecture's that the target builds applies)")
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored "the entry for ${applied} applies instead")
    return()
  endif()
  set(lto "")
  if(arg_DEVICE_LTO)
    _compileiq_device_lto_refusal("${target}" refusal "${config}")
    if(NOT refusal STREQUAL "")
      message(WARNING "compileiq: flags for ${target} were tuned with device link-time optimization, but "
        "${refusal}; not applied: re-run the tune")
      _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored "tuned with device LTO but ${refusal}")
      return()
    endif()
    if(type MATCHES "^(STATIC|OBJECT)_LIBRARY$")
      # its device code is linked by its consumers: device LTO applies at the device link of those measured
      _compileiq_real_targets(measured ${arg_DEVICE_LINK})
      if(NOT measured)
        if(arg_DEVICE_LINK)
          list(JOIN arg_DEVICE_LINK ", " named)
          set(refusal "it was measured at the device link of ${named}, which this project does not define")
        else()
          set(refusal "the entry names no consumer whose device link was measured (written by an older tune)")
        endif()
        message(WARNING "compileiq: flags for ${target} were tuned with device link-time optimization, but "
          "${refusal}; not applied: re-run the tune")
        _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored "tuned with device LTO but ${refusal}")
        return()
      endif()
    endif()
  endif()
  # marked applied only now, past every check that can still refuse the entry (the next entry is tried)
  set_property(GLOBAL PROPERTY "_compileiq_applied_${target}_${lang}" "${what}")
  set_property(GLOBAL PROPERTY "_compileiq_applied_arch_${target}_${lang}" "arch:${arg_ARCH}")
  _compileiq_add_flags("${target}" "${lang}" "${config}" ${arg_FLAGS})
  if(arg_DEVICE_LTO)
    _compileiq_device_lto(TARGET "${target}" CONFIG "${config}" ARCH "${arg_ARCH}" DEVICE_LINK ${arg_DEVICE_LINK}
      OUT_FORWARDED forwarded OUT_AT linked FLAGS ${arg_FLAGS})
    list(JOIN linked ", " shown_linked)
    set(lto "; device LTO of its CUDA code only: code=lto_${arg_ARCH} at compile, -dlto at the device link of ${shown_linked}")
    if(forwarded)
      list(JOIN forwarded " " shown_forwarded)
      string(APPEND lto " with ${shown_forwarded}")
    endif()
    if(type MATCHES "^(STATIC|OBJECT)_LIBRARY$")
      _compileiq_consumers("${target}" others)
      list(REMOVE_ITEM others ${linked})
      if(others)
        list(JOIN others ", " shown_others)
        string(APPEND lto " (measured there); ${shown_others} link its machine code without device LTO")
      endif()
    endif()
  endif()
  list(LENGTH arg_FLAGS n)
  set(counted "${n} tuned flags")
  if(n EQUAL 1)
    set(counted "1 tuned flag")
  endif()
  list(JOIN arg_FLAGS " " shown)
  if(n EQUAL 0 AND arg_DEVICE_LTO)
    set(counted "device LTO")
    set(shown "")
    string(REGEX REPLACE "^; device LTO of its CUDA code only: " ": its CUDA code only: " lto "${lto}")
  else()
    set(shown ": ${shown}")
  endif()
  set(to_archs "")
  if(lang STREQUAL "CUDA" AND NOT "${arg_ARCH}" STREQUAL "")
    set(to_archs " entry, for ${shown_archs}")
  endif()
  message(STATUS "compileiq: applied ${counted} to ${target} (${lang} ${what}${to_archs}${detected})${for_config}${shown}${lto}")
  _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" applied
    "${counted} for ${lang} ${what}${detected}${for_config}${shown}${lto}")
  if(unmeasured)
    if(arg_HOST_SIDE_ONLY)
      set(how "host-side flags only: they change no device code")
      set(limit "")
    elseif(n EQUAL 0)  # device LTO alone: LTO IR of the measured architecture only
      set(how "their code is built as before (device LTO is for sm_${arg_ARCH} alone)")
      set(limit "")
    else()
      set(how "they get the flags too, unmeasured (arch_scope \"all\")")
      set(limit "; arch_scope \"tuned\" limits them to builds of sm_${arg_ARCH} alone")
    endif()
    message(STATUS "compileiq: note: ${target} also builds CUDA architectures ${unmeasured}; the flags were "
      "measured on sm_${arg_ARCH} only: ${how}${limit}")
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" archs "measured: sm_${arg_ARCH}; unmeasured: ${unmeasured}: ${how}")
  endif()
  if(arg_HOST_LACKS)
    message(STATUS "compileiq: note: the flags of ${target} were ${tuned_on} and need ISA features this host lacks: "
      "${lacks} (${arg_HOST_CHECK}); the build may not run here (illegal instruction): -DCOMPILEIQ_PORTABLE=ON leaves such entries out")
  elseif(DEFINED arg_TUNED_CPU AND NOT arg_HOST_HAS_FEATURES)
    message(STATUS "compileiq: note: the flags of ${target} are specific to the CPU they were ${tuned_on}; "
      "${arg_HOST_CHECK}: re-run the tune to record them resolved, or -DCOMPILEIQ_PORTABLE=ON leaves such entries out")
  endif()
  set(when "")
  if(arg_DATE)
    set(when " on ${arg_DATE}")
  endif()
  set(recheck "re-run the tune to re-check them")
  if(NOT "${arg_SOURCES_SHA256}" STREQUAL "")
    _compileiq_sources_sha256("${target}" sources_now ${arg_HEADERS})
    if(NOT sources_now STREQUAL arg_SOURCES_SHA256)
      set(which "sources")
      if(arg_HEADERS)
        set(which "sources or the headers they include")
      endif()
      message(STATUS "compileiq: note: the flags of ${target} were tuned${when} on other sources "
        "(its ${which} changed since); applied all the same: ${recheck}")
      _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" stale "its ${which} changed since the tune${when}")
    endif()
  endif()
  if(NOT "${arg_FLAGS_SHA256}" STREQUAL "")
    _compileiq_flags_sha256("${target}" "${lang}" "${arg_CONFIG}" flags_now)
    if(NOT flags_now STREQUAL arg_FLAGS_SHA256)
      message(STATUS "compileiq: note: the flags of ${target} were tuned${when} on top of other compile flags "
        "(this build's CMAKE_${lang}_FLAGS or CMAKE_${lang}_FLAGS_<CONFIG> differ); applied all the same: ${recheck}")
      _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" stale
        "this build's CMAKE_${lang}_FLAGS differ from the tune's${when}")
    endif()
  endif()
  if(NOT "${arg_COMPILER_VERSION_FULL}" STREQUAL ""
     AND NOT arg_COMPILER_VERSION_FULL VERSION_EQUAL CMAKE_${lang}_COMPILER_VERSION)
    message(STATUS "compileiq: note: the flags of ${target} were tuned${when} with ${arg_COMPILER_ID} "
      "${arg_COMPILER_VERSION_FULL}; this build uses ${id} ${CMAKE_${lang}_COMPILER_VERSION}: "
      "applied all the same: ${recheck}")
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" stale
      "tuned with ${arg_COMPILER_ID} ${arg_COMPILER_VERSION_FULL}; this build uses ${id} ${CMAKE_${lang}_COMPILER_VERSION}")
  endif()
endfunction()

# The per-source part of an entry (written after its _compileiq_entry call):
#   _compileiq_source_flags(TARGET <t> LANGUAGE <l> ARCH <arch> CONFIG <type> SOURCE <path> FLAGS <flag>...)
# applies only when that entry applied, to a file that is a source of the target (path relative to the
# top-level source directory): the flags go to the file's COMPILE_OPTIONS, after the target's, seen
# from the target's directory.  _compileiq_source_flags_done(TARGET <t> LANGUAGE <l> ARCH <arch> COUNT <n>)
# says how many files got their own flags.
function(_compileiq_source_flags)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;LANGUAGE;ARCH;CONFIG;SOURCE" "FLAGS")
  _compileiq_real_target(target "${arg_TARGET}")
  if(NOT target)
    return()
  endif()
  get_property(applied GLOBAL PROPERTY "_compileiq_applied_arch_${target}_${arg_LANGUAGE}")
  if(NOT applied STREQUAL "arch:${arg_ARCH}")
    return()  # the entry itself did not apply (its line said why)
  endif()
  cmake_path(ABSOLUTE_PATH arg_SOURCE BASE_DIRECTORY "${CMAKE_SOURCE_DIR}" NORMALIZE OUTPUT_VARIABLE wanted)
  get_target_property(sources "${target}" SOURCES)
  get_target_property(dir "${target}" SOURCE_DIR)
  set(found FALSE)
  foreach(src IN LISTS sources)
    cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY "${dir}" NORMALIZE OUTPUT_VARIABLE abs)
    if(abs STREQUAL wanted)
      set(found TRUE)
      break()
    endif()
  endforeach()
  if(NOT found)
    message(WARNING "compileiq: compileiq.toml has flags for ${arg_SOURCE}, which is not a source of ${target}; "
      "not applied (re-run the tune)")
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" stale "${arg_SOURCE} is no longer a source of the target")
    return()
  endif()
  get_property(multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  set(condition "")
  if(multi_config AND NOT "${arg_CONFIG}" STREQUAL "")
    set(condition "$<CONFIG:${arg_CONFIG}>")
  endif()
  _compileiq_source_options("${target}" "${wanted}" "${condition}" ${arg_FLAGS})
  set_property(GLOBAL APPEND PROPERTY "_compileiq_sources_${target}_${arg_LANGUAGE}" "${arg_SOURCE}")
endfunction()

function(_compileiq_source_flags_done)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;LANGUAGE;ARCH;COUNT" "")
  _compileiq_real_target(target "${arg_TARGET}")
  if(NOT target)
    return()
  endif()
  get_property(done GLOBAL PROPERTY "_compileiq_sources_${target}_${arg_LANGUAGE}")
  list(LENGTH done n)
  if(n GREATER 0)
    list(JOIN done ", " shown)
    message(STATUS "compileiq: ${n} of ${arg_COUNT} source files of ${target} got their own flags: ${shown}")
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" sources "${n} of ${arg_COUNT} source files with their own flags")
  endif()
endfunction()

# compileiq-cmake check: with COMPILEIQ_CHECK_FILE set, each entry's outcome as one line
# "<target>\t<arch>\t<applied|ignored|stale>\t<why>" (the apply's own decision, read by check.py).
function(_compileiq_check_record target arch status text)
  if(DEFINED COMPILEIQ_CHECK_FILE AND NOT "${COMPILEIQ_CHECK_FILE}" STREQUAL "")
    file(APPEND "${COMPILEIQ_CHECK_FILE}" "${target}\t${arch}\t${status}\t${text}\n")
  endif()
endfunction()

cmake_policy(POP)
