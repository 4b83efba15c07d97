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

``COMPILEIQ_ADD_TESTS``
  ``OFF`` by default.  When ``ON`` (and ``COMPILEIQ_TUNE`` is ``OFF``), every
  ``compileiq_tune()`` call also registers the CTest test
  ``compileiq_check_<target>`` (:command:`compileiq_add_test` with its
  ``BENCHMARK``, ``METRIC``, direction, ``PASS_REGEX`` and ``OUTPUT``), and
  testing is enabled in the top-level directory.

Commands
^^^^^^^^

.. command:: compileiq_add_test

  .. code-block:: cmake

    compileiq_add_test(<target>
                       BENCHMARK <command> [<arg>...]
                       METRIC <regex>|GBENCH|NVBENCH|WALLTIME
                       [LOWER_IS_BETTER|HIGHER_IS_BETTER] [PASS_REGEX <regex>]
                       [OUTPUT <flags file>] [ROUNDS <n>] [GPUS <n>] [NAME <test>])

  Registers a CTest test (default name ``compileiq_check_<target>``, label
  ``compileiq``) that runs ``compileiq-cmake check --remeasure`` for the
  target's entry: a plain and a tuned build of the project in the check's
  own trees, the benchmark given here (never the one the flags file
  records: a flags file is data) run interleaved on the entry's workloads;
  it fails when the tuned build is no longer significantly faster.  With
  no flags file, or no entry for the target, it passes and says so.
  ``GPUS`` (default 1 where CUDA is enabled, else 0) sets the test's
  ``RESOURCE_GROUPS`` to ``gpus:<n>``: with ``ctest --resource-spec-file``
  CTest never runs two such tests on one GPU, and the check's runs see
  only the GPU CTest allotted (``CTEST_RESOURCE_GROUP_0_GPUS``).

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
                   [OBJECTIVE time|energy]
                   [ACF_CANDIDATES <n>] [ACF_SPACE default|att|nvcc] [ACF <file>...]
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
  ``OBJECTIVE time|energy``
    What the search minimizes: ``time`` (the metric, the default) or
    ``energy`` (joules per run from the GPU's NVML counter; the tune refuses
    where the counter cannot be read).  The other is reported per trial.
  ``ACF_CANDIDATES <n>``, ``ACF_SPACE default|att|nvcc``, ``ACF <file>...``
    CUDA: NVIDIA's Advanced Controls (ptxas ``--apply-controls``, CUDA
    13.3 and newer) as one more dimension: ``<n>`` candidates (default 16;
    0: none) sampled from the user's ``compileiq`` search space of that
    variant, and the project's own control files.  Where they cannot work
    (an older ptxas, no ``compileiq``, no search space) the tune says why in
    one line and goes on without them.
  ``OUTPUT <file>``
    Where to write the results, relative to the top-level source directory;
    by default ``COMPILEIQ_FLAGS_FILE`` if set, else the tool's default
    (``compileiq.toml`` in the top-level source directory).

Files Read by the Tool
^^^^^^^^^^^^^^^^^^^^^^

The rules by which a flags file applies (build type, CUDA architectures,
relocatable device code and device LTO, ``CMAKE_<LANG>_FLAGS`` and
``CMAKE_<LANG>_FLAGS_<CONFIG>``) live in this module and its layers only
(see *Layers*).  The tool never
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

Layers
^^^^^^

This file holds the public command; the rest is in layers beside it, which
it includes.  A layer includes and calls only the layers listed before it,
never a later one, this module or the files that include this module
(``compileiq_cmakeConfig.cmake``, ``compileiq_apply.cmake``,
``compileiq_variant.cmake``):

``CompileIQCommon.cmake``
  The command line that runs the Python package; targets (aliases
  resolved, consumers); flags as generator expressions on a target or on one
  of its source files.
``CompileIQArch.cmake``
  CUDA architecture options and the architectures a target builds.
``CompileIQRecords.cmake`` (uses Arch)
  ``sources_sha256``, ``flags_sha256`` and the ``COMPILEIQ_CHECK_FILE``
  records.
``CompileIQLTO.cmake`` (uses Common, Arch)
  Relocatable device code and device link-time optimization.
``CompileIQApply.cmake`` (uses all four)
  The apply of the flags file: its entries and per-file flags.
``CompileIQTests.cmake`` (uses Common)
  The CTest gate: :command:`compileiq_add_test`.
#]=======================================================================]

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/compileiq_project_policies.cmake")
cmake_policy(PUSH)
cmake_policy(VERSION 3.24...4.4)

include("${CMAKE_CURRENT_LIST_DIR}/CompileIQCommon.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/CompileIQArch.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/CompileIQRecords.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/CompileIQLTO.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/CompileIQApply.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/CompileIQTests.cmake")

option(COMPILEIQ_TUNE "Add the compileiq_tune targets (tuned flags are not applied)." OFF)
option(COMPILEIQ_APPLY "Apply the tuned flags of the compileiq flags file." ON)
option(COMPILEIQ_PORTABLE
  "Leave out entries whose flags are specific to the CPU they were tuned on (-march=native)." OFF)
option(COMPILEIQ_ADD_TESTS "Register a CTest test per compileiq_tune() target that re-measures its applied entry." OFF)
set(COMPILEIQ_SUITE_TIME_LIMIT "" CACHE STRING
  "Seconds for the whole compileiq_tune suite (empty: each target's own TIME_LIMIT, if any).")
set(COMPILEIQ_FLAGS_FILE "" CACHE FILEPATH
  "Tuned flags file (empty: \${CMAKE_SOURCE_DIR}/compileiq.toml).")  # cmake-lint: disable=W0106

# compileiq_tune(<target> ...): documented at the top of this file
function(compileiq_tune)
  if(ARGC LESS 1 OR ARGV0 MATCHES "^(BENCHMARK|METRIC)$")
    message(FATAL_ERROR "compileiq_tune() needs the name of the target to tune as its first argument.")
  endif()
  set(target "${ARGV0}")
  set(where "compileiq_tune(${target})")
  cmake_parse_arguments(PARSE_ARGV 1 arg "LOWER_IS_BETTER;HIGHER_IS_BETTER;PORTABLE"
    "METRIC;PASS_REGEX;BUDGET;PER_FILE_BUDGET;TIME_LIMIT;OUTPUT;COMPARE_OUTPUT;COMPARE_FILE;RTOL;ATOL;GPUS;\
EXECUTOR;RAY_ADDRESS;ARCH_SCOPE;OBJECTIVE;ACF_CANDIDATES;ACF_SPACE"
    "BENCHMARK;VERIFY;WORKLOADS;INCLUDE_FLAGS;EXCLUDE_FLAGS;ACF")
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
    if(COMPILEIQ_ADD_TESTS)
      set(gate "${target}" BENCHMARK ${arg_BENCHMARK} METRIC "${arg_METRIC}")
      foreach(kw IN ITEMS HIGHER_IS_BETTER LOWER_IS_BETTER)
        if(arg_${kw})
          list(APPEND gate ${kw})
        endif()
      endforeach()
      foreach(kw IN ITEMS PASS_REGEX OUTPUT)
        if(DEFINED arg_${kw})
          list(APPEND gate ${kw} "${arg_${kw}}")
        endif()
      endforeach()
      compileiq_add_test(${gate})
    endif()
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
  foreach(kw IN ITEMS COMPARE_OUTPUT COMPARE_FILE RTOL ATOL ACF_CANDIDATES ACF_SPACE)
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
  if(DEFINED arg_OBJECTIVE)
    list(APPEND cmd "--objective=${arg_OBJECTIVE}")
  endif()
  foreach(a IN LISTS arg_ACF)
    get_filename_component(a "${a}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND cmd "--acf=${a}")
  endforeach()
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

# _compileiq_check_tune_target(<target>): a FATAL_ERROR unless <target> can be tuned
function(_compileiq_check_tune_target target)
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "compileiq_tune(${target}): target '${target}' is not defined by this project.")
  endif()
endfunction()

cmake_policy(POP)
