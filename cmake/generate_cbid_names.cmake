# Turns a CUPTI callback-id header (cupti_runtime_cbid.h, cupti_driver_cbid.h)
# into a C++ table of {cbid, "apiName"} rows, the "_vNNNN" version suffix
# removed: CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 = 211
# becomes {211, "cudaLaunchKernel"}.
# Usage: cmake -DHEADER=... -DPREFIX=CUPTI_RUNTIME_TRACE_CBID_ -DOUTPUT=... -P generate_cbid_names.cmake
file(STRINGS "${HEADER}" _lines REGEX "^[ \t]*${PREFIX}[A-Za-z0-9_]+[ \t]*=[ \t]*[0-9]+")
set(_out "// Generated from ${HEADER} by cmake/generate_cbid_names.cmake. Do not edit.\n")
foreach(_line IN LISTS _lines)
  string(REGEX MATCH "${PREFIX}([A-Za-z0-9_]+)[ \t]*=[ \t]*([0-9]+)" _match "${_line}")
  set(_name "${CMAKE_MATCH_1}")
  set(_cbid "${CMAKE_MATCH_2}")
  if(_name STREQUAL "INVALID" OR _name STREQUAL "SIZE" OR _name STREQUAL "FORCE_INT")
    continue()
  endif()
  string(REGEX REPLACE "_v[0-9]+$" "" _name "${_name}")
  string(APPEND _out "{${_cbid}u, \"${_name}\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "${_out}")
configure_file("${OUTPUT}.tmp" "${OUTPUT}" COPYONLY)
file(REMOVE "${OUTPUT}.tmp")
