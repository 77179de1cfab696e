# CTest driver: the project configures with another CMake generator (Unix Makefiles; CI builds
# with Ninja) and builds one embedded-kernel fatbin with it, the step that broke there (nvcc does
# not create its output folder). The whole build takes too long for CI twice; this covers the
# generator-specific rules: configure, the custom commands, their output folders.
string(REPLACE "," ";" ARCHS "${ARCHS}")
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G "Unix Makefiles"
                        -DCMAKE_BUILD_TYPE=Release -DPYGPUKIT_BUILD_PYTHON=OFF
                        -DPYGPUKIT_BUILD_TESTS=OFF -DPYGPUKIT_BUILD_EXAMPLES=OFF
                        "-DPYGPUKIT_CUDA_ARCHS=${ARCHS}"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure with Unix Makefiles failed (${rc})")
endif()
if(WITH_CUDA)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR} --target pgk_fatbin_random
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT EXISTS ${WORK_DIR}/native/kernels/random.fatbin)
    message(FATAL_ERROR "building pgk_fatbin_random with Unix Makefiles failed (${rc})")
  endif()
endif()
file(REMOVE_RECURSE ${WORK_DIR})
