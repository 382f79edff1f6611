# script_usage_test.cmake - what every OUTDIR-taking bench script must do with bad input
# (bench_group_nhwc_ab's group_nhwc_ab.sh, bench_gpu_group's gpu_group.sh): a missing OUTDIR
# and a missing clnorm-bench are each exit 2 with a message naming the problem. Included by
# those tests' scripts (-P); leaves CLNORM_BENCH pointing at no file.
function(check_script_usage script dir)
  execute_process(COMMAND bash "${script}" "${dir}/missing" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "OUTDIR must exist")
    message(FATAL_ERROR "a missing OUTDIR: exit ${rc}, '${err}'")
  endif()
  set(ENV{CLNORM_BENCH} "/nonexistent/clnorm-bench")
  execute_process(COMMAND bash "${script}" "${dir}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "no clnorm-bench")
    message(FATAL_ERROR "a missing bench: exit ${rc}, '${err}'")
  endif()
endfunction()
