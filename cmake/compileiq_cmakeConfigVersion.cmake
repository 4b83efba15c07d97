#[=======================================================================[.rst:
compileiq_cmakeConfigVersion
----------------------------

Version file of the compileiq_cmake package (no configure step).  The one
version source is __version__ in the Python package's __init__.py (the wheel's
metadata reads it too): beside this directory in an installed package
(<site-packages>/compileiq_cmake/{__init__.py,cmake/}), or in compileiq_cmake/
of a source checkout.  Same rules as write_basic_package_version_file(...
COMPATIBILITY SameMajorVersion): any requested version with major 0 and not
newer than this one is compatible; the package is architecture independent.
#]=======================================================================]

set(PACKAGE_VERSION "")
foreach(_compileiq_init IN ITEMS "${CMAKE_CURRENT_LIST_DIR}/../__init__.py"
                                 "${CMAKE_CURRENT_LIST_DIR}/../compileiq_cmake/__init__.py")
  if(EXISTS "${_compileiq_init}")
    file(STRINGS "${_compileiq_init}" _compileiq_line REGEX "^__version__ = \"[^\"]+\"")
    string(REGEX REPLACE "^__version__ = \"([^\"]+)\".*" "\\1" PACKAGE_VERSION "${_compileiq_line}")
    break()
  endif()
endforeach()
if(PACKAGE_VERSION STREQUAL "")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)  # no version to compare: a damaged installation
  return()
endif()

if(PACKAGE_FIND_VERSION_RANGE)
  # find_package(compileiq_cmake <min>...[<]<max>): the lower end must have
  # our major version and this version must lie inside the range.
  if(NOT PACKAGE_FIND_VERSION_MIN_MAJOR STREQUAL "0"
     OR PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MIN
     OR (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "INCLUDE"
         AND PACKAGE_VERSION VERSION_GREATER PACKAGE_FIND_VERSION_MAX)
     OR (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "EXCLUDE"
         AND PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION_MAX))
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
elseif(PACKAGE_FIND_VERSION)
  if(PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION
     OR NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL "0")
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
    if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
      set(PACKAGE_VERSION_EXACT TRUE)
    endif()
  endif()
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
