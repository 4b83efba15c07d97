#[=======================================================================[.rst:
CompileIQCommon
---------------

Internal to ``compileiq_cmake``: the innermost layer of the
:module:`CompileIQ` module (see its *Layers*), the helpers the other layers
share.  It calls no other layer.

Provides
^^^^^^^^

``_compileiq_python_command(<out-var>)``
  The command line (a list) that runs the Python package.
``_compileiq_real_target(<out-var> <name>)``, ``_compileiq_real_targets(<out-var> <name>...)``
  The targets the names name, aliases resolved.
``_compileiq_all_targets(<out-var>)``, ``_compileiq_consumers(<library> <out-var>)``
  Every target of the project; those that link ``<library>`` directly.
``_compileiq_conditional(<out-var> <condition> <flag>...)``
  Flags wrapped in an escaped ``$<<condition>:flag>``.
``_compileiq_add_flags(<target> <language> <config> <flag>...)``
  Flags added to a target's compile options for one language (and
  configuration).
``_compileiq_cuda_sources_depend(<target> <file>...)``
  The <file>s as an ``OBJECT_DEPENDS`` of the target's CUDA sources (by CMake's
  language, else the ``.cu`` suffix): the trial flags files nvcc reads, an
  applied advanced control file.
``_compileiq_source_options(<target> <path> <condition> <flag>...)``
  Flags for one source file of a target, scoped to that target (other
  targets compiling the same file do not get them).

Requires
^^^^^^^^

CMake 3.24 and no other layer.  ``_compileiq_python_command`` reads
``COMPILEIQ_PYTHON`` and ``COMPILEIQ_PYTHONPATH`` (set by
``compileiq_cmakeConfig.cmake``) when it is called, and stops with an error
when there is no interpreter.

Called by
^^^^^^^^^

Any layer above it (:module:`CompileIQLTO`, :module:`CompileIQApply`), the
public :module:`CompileIQ` module and ``compileiq_variant.cmake``.
#]=======================================================================]

include_guard(GLOBAL)
cmake_policy(PUSH)
cmake_policy(VERSION 3.24...4.4)

# _compileiq_python_command(<out-var>)
#   Stores in <out-var> the command line (a list) that runs the Python
#   package: [<cmake> -E env PYTHONPATH=<dir>] <python> -P -m compileiq_cmake. -P (Python >= 3.11): the
#   working directory (a configure run from the source tree) is not put on the module path, so a
#   compileiq_cmake/ folder or a stdlib-named file (difflib.py) of the user's tree is never imported.
function(_compileiq_python_command out)
  if(NOT COMPILEIQ_PYTHON)
    message(FATAL_ERROR "compileiq: no Python 3.11 or newer interpreter was "
      "found; set COMPILEIQ_PYTHON to one that can run compileiq_cmake.")
  endif()
  set(cmd "")
  if(COMPILEIQ_PYTHONPATH)
    # Keep the PYTHONPATH of the configure's environment (it may hold the dependencies).
    set(pythonpath "${COMPILEIQ_PYTHONPATH}")
    if(NOT "$ENV{PYTHONPATH}" STREQUAL "")
      string(APPEND pythonpath ":$ENV{PYTHONPATH}")
    endif()
    list(APPEND cmd "${CMAKE_COMMAND}" -E env "PYTHONPATH=${pythonpath}")
  endif()
  list(APPEND cmd "${COMPILEIQ_PYTHON}" -P -m compileiq_cmake)
  set(${out} "${cmd}" PARENT_SCOPE)
endfunction()

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

# _compileiq_cuda_sources_depend(<target> <file>...)
#   The <file>s as an OBJECT_DEPENDS of each CUDA source of <target> (by CMake's language: a .cpp file compiled
#   as CUDA is one, a host file is not; without one, the .cu suffix), seen from the target's directory; sources
#   given by generator expressions are skipped. A file the compile line names only by its path (nvcc reads
#   it) then rebuilds the objects when it changes.
function(_compileiq_cuda_sources_depend target)
  get_target_property(sources "${target}" SOURCES)
  get_target_property(dir "${target}" SOURCE_DIR)
  foreach(src IN LISTS sources)
    if(src MATCHES "^\\$<")
      continue()
    endif()
    cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY "${dir}" NORMALIZE OUTPUT_VARIABLE path)
    get_source_file_property(lang "${path}" TARGET_DIRECTORY "${target}" LANGUAGE)
    if(NOT lang AND path MATCHES "\\.cu$")
      set(lang CUDA)
    endif()
    if(lang STREQUAL "CUDA")
      set_property(SOURCE "${path}" TARGET_DIRECTORY "${target}" APPEND PROPERTY OBJECT_DEPENDS ${ARGN})
    endif()
  endforeach()
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

cmake_policy(POP)
