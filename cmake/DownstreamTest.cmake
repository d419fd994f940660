# A project outside this tree uses the installed package: install into a fresh prefix outside
# the source tree, configure tests/downstream with find_package against it, build, and run
# it from that directory, with ONNXRUNTIME_SHARED_LIBRARY_PATH unset (so the runtime is found
# beside the installed library, as the header says).
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DGENERATOR=... -DC_COMPILER=... -P DownstreamTest.cmake
execute_process(COMMAND mktemp -d /tmp/onnxrl-downstream-XXXXXX OUTPUT_VARIABLE tmp
  OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
set(prefix ${tmp}/prefix)
function(run)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${tmp} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
if(NOT EXISTS ${prefix}/lib/libonnxruntime.so.1)
  message(FATAL_ERROR "ONNX Runtime was not installed beside the library (run `make onnxruntime` first)")
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${tmp}/build -G ${GENERATOR}
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${tmp}/build)
run(${CMAKE_COMMAND} -E env --unset=ONNXRUNTIME_SHARED_LIBRARY_PATH ${tmp}/build/downstream)
file(REMOVE_RECURSE ${tmp})
