#[=======================================================================[.rst:
CompileIQApply
--------------

Internal to ``compileiq_cmake``: the apply layer of the :module:`CompileIQ`
module (see its *Layers*): the flags file (``compileiq.toml``) turned into
``_compileiq_entry()`` calls by ``python -m compileiq_cmake cmake-entries``
(Contract 3), and each entry's decision: applied to its target, per-file
flags scoped to the target, or refused with a status line or warning and a
check record.

Provides
^^^^^^^^

``_compileiq_schedule_apply()``
  Schedules ``_compileiq_apply_flags_file`` at the end of the top-level
  directory, once per configure.
``_compileiq_apply_flags_file()``
  Runs ``cmake-entries`` on the flags file and includes its output (under
  the cache variables ``COMPILEIQ_APPLY``, ``COMPILEIQ_TUNE``,
  ``COMPILEIQ_FLAGS_FILE``, ``COMPILEIQ_PORTABLE`` of :module:`CompileIQ`).
``_compileiq_entry(TARGET <t> LANGUAGE <lang> ARCH <arch> ...)``
  One entry: matched against this build (compiler, CUDA architectures,
  build type, CPU, arch scope, device LTO) and applied or refused; its
  advanced control file (ptxas ``--apply-controls``) applied with the rest
  or left out with one status line (another ptxas version, a changed file).
``_compileiq_source_flags(...)``, ``_compileiq_source_flags_done(...)``
  The per-file part of an entry that applied.

Requires
^^^^^^^^

:module:`CompileIQCommon`, :module:`CompileIQArch`,
:module:`CompileIQRecords` and :module:`CompileIQLTO`, which it includes.

Called by
^^^^^^^^^

The public :module:`CompileIQ` module (``compileiq_tune()``),
``compileiq_apply.cmake`` and the generated ``entries.cmake``.
#]=======================================================================]

include_guard(GLOBAL)
cmake_policy(PUSH)
cmake_policy(VERSION 3.24...4.4)
include("${CMAKE_CURRENT_LIST_DIR}/CompileIQCommon.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/CompileIQArch.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/CompileIQRecords.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/CompileIQLTO.cmake")

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
      message(STATUS "compileiq: no tuned flags applied: there is no ${toml}"
                     " (a tune writes it when it finds flags significantly faster)")
      return()
    endif()
  endif()
  set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${toml}")
  set(entries "${CMAKE_BINARY_DIR}/compileiq/entries.cmake")
  _compileiq_python_command(cmd)
  # the compilers that can say which ISA features this host has (entries tuned with -march=native);
  # COMPILEIQ_HOST_CPU_FEATURES (for tests) simulates a host with those features instead
  set(host "")
  # and nvcc, whose ptxas says which advanced control files it reads (entries tuned with one)
  foreach(lang IN ITEMS C CXX CUDA_HOST CUDA)
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

# One entry of the flags file (Contract 3), written by `cmake-entries`:
#   _compileiq_entry(TARGET <t> LANGUAGE <CUDA|CXX|C> ARCH <arch or empty>
#                    COMPILER_ID <id> COMPILER_VERSION <major.minor>
#                    [COMPILER_VERSION_FULL <x.y.z>] [SOURCES_SHA256 <sha>]
#                    [HEADERS <path>...] [FLAGS_SHA256 <sha>] [DATE <when tuned>]
#                    CONFIG <build type tuned, or empty> FLAGS <flag>...
#                    [ACF_FILES <absolute path>...] [ACF_PTXAS <x.y.z>] [ACF_PROBLEM <why>])
# With a CONFIG the flags apply to that configuration only: a single-config
# build of another CMAKE_BUILD_TYPE, or of none, does not get them, and a
# multi-config generator gets them inside $<CONFIG:...>; an empty CONFIG:
# every build type gets them, and the status line says so.  An entry tuned on
# other sources (SOURCES_SHA256 over the sources and the HEADERS they include),
# on top of other CMAKE_<LANG>_FLAGS (FLAGS_SHA256) or with another compiler
# patch version is still applied, with a status line that says so.
# Advanced Control Files (ACF_FILES, ptxas --apply-controls, already among the FLAGS): ptxas reads only the
# files of its own major.minor version. With another version, or a file that is missing or changed since the
# tune (ACF_PROBLEM, decided by `cmake-entries`, which asks the ptxas beside CMAKE_CUDA_COMPILER; ACF_PTXAS:
# the tune's version, given only when that ptxas could not be asked, then compared with the CUDA compiler's
# version here), they are left out with one status line and the rest of the entry applies; applied, each file
# is an OBJECT_DEPENDS of the target's CUDA sources (an edited file rebuilds them: the compile line holds only
# its path).
function(_compileiq_entry)
  cmake_parse_arguments(PARSE_ARGV 0 arg "DEVICE_LTO;HOST_SIDE_ONLY;HOST_HAS_FEATURES;HAS_SOURCES"
    "TARGET;LANGUAGE;ARCH;COMPILER_ID;COMPILER_VERSION;COMPILER_VERSION_FULL;SOURCES_SHA256;FLAGS_SHA256;DATE;\
CONFIG;ARCH_SCOPE;TUNED_CPU;HOST_CHECK;ACF_PTXAS;ACF_PROBLEM"
    "HEADERS;FLAGS;HOST_SPECIFIC;HOST_LACKS;DEVICE_LINK;ACF_FILES")
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
  # the compiler as the target's own directory sees it: a large library enables CUDA in its subdirectory
  # (enable_language there), and this deferred call runs in the top directory, where it is not defined
  get_target_property(target_dir "${target}" SOURCE_DIR)
  get_directory_property(id DIRECTORY "${target_dir}" DEFINITION "CMAKE_${lang}_COMPILER_ID")
  get_directory_property(version_full DIRECTORY "${target_dir}" DEFINITION "CMAKE_${lang}_COMPILER_VERSION")
  if(NOT id)
    message(WARNING "compileiq: flags for ${target} were tuned for ${lang} "
      "but this project does not enable ${lang}; not applied")
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored "this project does not enable ${lang}")
    return()
  endif()

  string(REGEX MATCH "^[0-9]+(\\.[0-9]+)?" version "${version_full}")
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
  # an empty CONFIG (build_type = ""): every build type and configuration gets the flags, Debug included, said
  set(for_config " for every build type (build_type is empty)")
  if(NOT "${arg_CONFIG}" STREQUAL "")
    set(for_config "")
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
        "to the CPU they were ${tuned_on}; re-tune with --portable (PORTABLE in compileiq_tune()) "
        "for flags any CPU runs")
      _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored
        "COMPILEIQ_PORTABLE is ON and the flags are specific to the CPU they were ${tuned_on}")
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
      "device-code flags for every architecture of a compile; build sm_${arg_ARCH} alone "
      "(CUDA_ARCHITECTURES ${arg_ARCH}) to get them, or set arch_scope = \"all\"")
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
  if(arg_ACF_FILES OR NOT "${arg_ACF_PROBLEM}" STREQUAL "")
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" acf_for "${arg_ACF_PTXAS}")
    if("${arg_ACF_PROBLEM}" STREQUAL "" AND NOT "${acf_for}" STREQUAL "" AND NOT acf_for STREQUAL version)
      set(arg_ACF_PROBLEM "it was tuned with ptxas ${arg_ACF_PTXAS}, this build's is ${version_full} (ptxas \
reads only its own version's controls)")
    endif()
    if(NOT "${arg_ACF_PROBLEM}" STREQUAL "")
      list(FILTER arg_FLAGS EXCLUDE REGEX "--apply-controls=")
      message(STATUS "compileiq: note: the advanced control file of ${target} is left out: ${arg_ACF_PROBLEM}; "
        "the rest of its flags apply")
      _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" stale "advanced control file left out: ${arg_ACF_PROBLEM}")
      if(NOT arg_FLAGS AND NOT arg_DEVICE_LTO AND NOT arg_HAS_SOURCES)
        _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" ignored
          "its only flag, an advanced control file, is left out")
        return()
      endif()
    else()
      _compileiq_cuda_sources_depend("${target}" ${arg_ACF_FILES})
      # an edited file configures again, where its sha256 is checked (the build alone would use it unchecked)
      set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${arg_ACF_FILES})
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
    set(lto "; device LTO of its CUDA code only: code=lto_${arg_ARCH} at compile, \
-dlto at the device link of ${shown_linked}")
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
  message(STATUS "compileiq: applied ${counted} to ${target} "
    "(${lang} ${what}${to_archs}${detected})${for_config}${shown}${lto}")
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
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" archs
      "measured: sm_${arg_ARCH}; unmeasured: ${unmeasured}: ${how}")
  endif()
  if(arg_HOST_LACKS)
    message(STATUS "compileiq: note: the flags of ${target} were ${tuned_on} and need ISA features this host lacks: "
      "${lacks} (${arg_HOST_CHECK}); the build may not run here (illegal instruction): "
      "-DCOMPILEIQ_PORTABLE=ON leaves such entries out")
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
     AND NOT arg_COMPILER_VERSION_FULL VERSION_EQUAL version_full)
    message(STATUS "compileiq: note: the flags of ${target} were tuned${when} with ${arg_COMPILER_ID} "
      "${arg_COMPILER_VERSION_FULL}; this build uses ${id} ${version_full}: "
      "applied all the same: ${recheck}")
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" stale
      "tuned with ${arg_COMPILER_ID} ${arg_COMPILER_VERSION_FULL}; this build uses ${id} ${version_full}")
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

# _compileiq_source_flags_done(TARGET <t> LANGUAGE <l> ARCH <arch> COUNT <n>): above
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
    _compileiq_check_record("${arg_TARGET}" "${arg_ARCH}" sources
      "${n} of ${arg_COUNT} source files with their own flags")
  endif()
endfunction()

cmake_policy(POP)
