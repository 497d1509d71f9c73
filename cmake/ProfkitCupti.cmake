# Finds the CUPTI and CUDA driver headers that the GPU tracer compiles
# against. Nothing is linked: libcupti and libcuda are loaded with dlopen at
# run time. Without the headers the tracer is compiled out and
# pk_gpu_available() says "built without CUPTI headers".
#
# Sets PROFKIT_HAVE_CUPTI, PROFKIT_CUPTI_INCLUDE_DIRS and
# PROFKIT_CUPTI_HEADER_DIR (where cupti_runtime_cbid.h lives).
set(PROFKIT_CUPTI "AUTO" CACHE STRING "GPU tracing with CUPTI: AUTO (when the headers are found), ON (required), OFF")
set_property(CACHE PROFKIT_CUPTI PROPERTY STRINGS AUTO ON OFF)

set(PROFKIT_HAVE_CUPTI OFF)
set(PROFKIT_CUPTI_INCLUDE_DIRS "")
if(NOT PROFKIT_CUPTI STREQUAL "OFF")
  set(_roots "")
  foreach(_env CUDA_HOME CUDA_PATH CUDA_ROOT)
    if(DEFINED ENV{${_env}})
      list(APPEND _roots "$ENV{${_env}}")
    endif()
  endforeach()
  list(APPEND _roots /usr/local/cuda)
  # The nvidia-cuda-cupti / nvidia-cu13 pip wheels carry the headers too.
  if(NOT Python_EXECUTABLE)
    find_package(Python QUIET COMPONENTS Interpreter)
  endif()
  if(Python_EXECUTABLE)
    execute_process(
      COMMAND "${Python_EXECUTABLE}" -c "import nvidia, sys; sys.stdout.write(';'.join(nvidia.__path__))"
      OUTPUT_VARIABLE _nvidia_dirs ERROR_QUIET RESULT_VARIABLE _nvidia_rc)
    if(_nvidia_rc EQUAL 0)
      foreach(_dir IN LISTS _nvidia_dirs)
        list(APPEND _roots "${_dir}/cu13" "${_dir}/cu12" "${_dir}/cuda_cupti" "${_dir}/cuda_runtime")
      endforeach()
    endif()
  endif()
  set(_hints "")
  foreach(_root IN LISTS _roots)
    list(APPEND _hints "${_root}/include" "${_root}/extras/CUPTI/include")
  endforeach()
  find_path(PROFKIT_CUPTI_HEADER_DIR cupti_activity.h HINTS ${_hints} NO_DEFAULT_PATH)
  find_path(PROFKIT_CUDA_DRIVER_HEADER_DIR cuda.h HINTS ${_hints} NO_DEFAULT_PATH)
  if(PROFKIT_CUPTI_HEADER_DIR AND PROFKIT_CUDA_DRIVER_HEADER_DIR)
    set(PROFKIT_HAVE_CUPTI ON)
    set(PROFKIT_CUPTI_INCLUDE_DIRS ${PROFKIT_CUPTI_HEADER_DIR} ${PROFKIT_CUDA_DRIVER_HEADER_DIR})
    list(REMOVE_DUPLICATES PROFKIT_CUPTI_INCLUDE_DIRS)
    file(STRINGS "${PROFKIT_CUPTI_HEADER_DIR}/cupti_version.h" _version_line REGEX "^#define CUPTI_API_VERSION [0-9]+")
    message(STATUS "profkit: GPU tracing with CUPTI headers from ${PROFKIT_CUPTI_HEADER_DIR} (${_version_line})")
  elseif(PROFKIT_CUPTI STREQUAL "ON")
    message(FATAL_ERROR "profkit: PROFKIT_CUPTI=ON but the CUPTI headers (cupti_activity.h) and cuda.h were not found; "
                        "set CUDA_HOME, install the CUDA toolkit or pip install nvidia-cuda-cupti")
  else()
    message(STATUS "profkit: CUPTI headers not found (looked in CUDA_HOME, CUDA_PATH, /usr/local/cuda and the "
                   "nvidia pip wheels): building WITHOUT GPU tracing; pk_gpu_available() will say so")
  endif()
else()
  message(STATUS "profkit: PROFKIT_CUPTI=OFF: building without GPU tracing")
endif()
