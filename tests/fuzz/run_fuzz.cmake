# run_fuzz.cmake: one CTest run of a libFuzzer target (tests/fuzz/CMakeLists.txt).
# Starts from the committed corpus (CORPUS: a list of directories), read-only:
# libFuzzer writes the inputs it finds into its first directory, a fresh
# scratch one in the build tree, and crash files under ARTIFACTS.  Fails if
# the fuzzer does.
#   cmake -DFUZZER=... -DCORPUS=... -DWORK=... -DARTIFACTS=... -DNAME=... -DSECONDS=... -P run_fuzz.cmake
foreach(v FUZZER CORPUS WORK ARTIFACTS NAME SECONDS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_fuzz.cmake: ${v} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK} ${ARTIFACTS})
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -max_len=160 -len_control=0 -timeout=60
    -print_final_stats=1 -artifact_prefix=${ARTIFACTS}/${NAME}- ${WORK} ${CORPUS}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzz_${NAME}: libFuzzer failed (${rc}); the crash input is in ${ARTIFACTS}/")
endif()
