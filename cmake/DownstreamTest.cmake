# A project outside this tree uses the installed package: install into a fresh prefix outside
# the source tree, configure tests/downstream with find_package against it, build, and run
# it from that directory, with ONNXRUNTIME_SHARED_LIBRARY_PATH unset (so the runtime is found
# beside the installed library, as the header says); then build the same program with the
# compiler alone and the flags of the installed pkg-config file, and run it too.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DGENERATOR=... -DC_COMPILER=... -DLIBDIR=lib
#         -P DownstreamTest.cmake
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

find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig
                          ${PKG_CONFIG} --cflags --libs onnxrl_sampler
                  OUTPUT_VARIABLE pc_flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs onnxrl_sampler failed (${rc}) in ${prefix}/${LIBDIR}/pkgconfig")
  endif()
  separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
  run(${C_COMPILER} -std=c11 -Wall -Wextra -Werror ${SOURCE_DIR}/main.c ${pc_flags} -o ${tmp}/downstream_pc)
  run(${CMAKE_COMMAND} -E env --unset=ONNXRUNTIME_SHARED_LIBRARY_PATH ${tmp}/downstream_pc)
else()
  message(STATUS "pkg-config not found: the pkg-config file is not checked")
endif()
file(REMOVE_RECURSE ${tmp})
