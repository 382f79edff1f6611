# Tests of the host applications (host/apps): each program's own float64 CPU check (--check,
# --demo) on small random sizes and on the demo sizes, every variant; the committed PyTorch
# script (tests/apps/compare_torch.py) comparing them with torch in float64 on weights it
# writes; and their handling of broken input. Label "apps". Built only where CLBlast was found.

if(NOT TARGET clnorm-lnlstm OR NOT TARGET clnorm-block)
  return()
endif()

set(_lnlstm $<TARGET_FILE:clnorm-lnlstm>)
set(_block $<TARGET_FILE:clnorm-block>)

# The programs' own checks (exit 1 when the device's result is off).
add_test(NAME apps_lnlstm_check_f32 COMMAND ${_lnlstm} --demo --size 40,3,5,16 --precision f32)
add_test(NAME apps_lnlstm_check_f64 COMMAND ${_lnlstm} --demo --size 40,3,5,16 --precision f64 --seed 7)
add_test(NAME apps_lnlstm_check_unfused COMMAND ${_lnlstm} --demo --size 40,3,5,16 --unfused)
add_test(NAME apps_lnlstm_demo COMMAND ${_lnlstm} --demo --time --runs 1)
set(_small --demo --size 2,7,32,4,64)
add_test(NAME apps_block_check_pre COMMAND ${_block} ${_small})
add_test(NAME apps_block_check_post COMMAND ${_block} ${_small} --post-ln)
add_test(NAME apps_block_check_causal COMMAND ${_block} ${_small} --causal --seed 3)
add_test(NAME apps_block_check_post_causal COMMAND ${_block} ${_small} --post-ln --causal)
add_test(NAME apps_block_check_adaln COMMAND ${_block} --demo --size 3,5,48,6,96,8)
add_test(NAME apps_block_check_unfused COMMAND ${_block} ${_small} --unfused --post-ln)
add_test(NAME apps_block_check_f64 COMMAND ${_block} ${_small} --causal --precision f64)
add_test(NAME apps_block_demo COMMAND ${_block} --demo --time --runs 1)
set(_apps_tests apps_lnlstm_check_f32 apps_lnlstm_check_f64 apps_lnlstm_check_unfused
  apps_lnlstm_demo apps_block_check_pre
  apps_block_check_post apps_block_check_causal apps_block_check_post_causal
  apps_block_check_adaln apps_block_check_unfused apps_block_check_f64 apps_block_demo)

# The PyTorch comparison runs under a Python with numpy and torch: Debian's python3-torch is in
# /usr/bin/python3, and a python3 earlier on PATH (a pyenv, a venv) may not have it. Without
# one the tests still run and report themselves skipped (exit 77).
set(CLNORM_TORCH_PYTHON "" CACHE FILEPATH "Python with numpy and torch for the apps' comparison")
if(NOT CLNORM_TORCH_PYTHON)
  find_program(_clnorm_path_python3 python3)
  foreach(_py /usr/bin/python3 ${_clnorm_path_python3})
    if(EXISTS "${_py}")
      execute_process(COMMAND "${_py}" -c "import numpy, torch" RESULT_VARIABLE _rc
                      OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(CLNORM_TORCH_PYTHON "${_py}" CACHE FILEPATH
            "Python with numpy and torch for the apps' comparison" FORCE)
        break()
      endif()
    endif()
  endforeach()
endif()
if(CLNORM_TORCH_PYTHON)
  set(_py ${CLNORM_TORCH_PYTHON})
else()
  message(STATUS "tests: no Python with numpy and torch; the apps' torch comparisons will skip")
  set(_py python3)
endif()

set(_cmp ${CMAKE_CURRENT_LIST_DIR}/apps/compare_torch.py)
set(_work ${CMAKE_CURRENT_BINARY_DIR}/apps_work)
add_test(NAME apps_torch_selfcheck COMMAND ${_py} ${_cmp} selfcheck)
add_test(NAME apps_torch_lnlstm COMMAND ${_py} ${_cmp} lnlstm --app ${_lnlstm}
  --workdir ${_work}/lnlstm --h0c0)
# The issue's own yardstick: 1e-4 max abs after the 784 steps of sequential MNIST.
add_test(NAME apps_torch_lnlstm_784 COMMAND ${_py} ${_cmp} lnlstm --app ${_lnlstm}
  --workdir ${_work}/lnlstm_784 --T 784 --B 16 --I 1 --H 128 --seed 2)
add_test(NAME apps_torch_block_pre COMMAND ${_py} ${_cmp} block --app ${_block}
  --workdir ${_work}/block_pre)
add_test(NAME apps_torch_block_post COMMAND ${_py} ${_cmp} block --app ${_block}
  --workdir ${_work}/block_post --post-ln)
add_test(NAME apps_torch_block_causal COMMAND ${_py} ${_cmp} block --app ${_block}
  --workdir ${_work}/block_causal --causal --seed 2)
add_test(NAME apps_torch_block_post_causal COMMAND ${_py} ${_cmp} block --app ${_block}
  --workdir ${_work}/block_post_causal --post-ln --causal --seed 4)
add_test(NAME apps_torch_block_adaln COMMAND ${_py} ${_cmp} block --app ${_block}
  --workdir ${_work}/block_adaln --condition 6 --causal --seed 3)
add_test(NAME apps_torch_block_demo COMMAND ${_py} ${_cmp} block --app ${_block}
  --workdir ${_work}/block_demo --B 4 --T 256 --d 768 --heads 12 --f 3072 --condition 16)
add_test(NAME apps_errors COMMAND ${_py} ${_cmp} errors --lnlstm ${_lnlstm} --block ${_block}
  --workdir ${_work}/errors)
list(APPEND _apps_tests apps_torch_selfcheck apps_torch_lnlstm apps_torch_lnlstm_784
  apps_torch_block_pre apps_torch_block_post apps_torch_block_causal
  apps_torch_block_post_causal apps_torch_block_adaln apps_torch_block_demo apps_errors)

set_tests_properties(${_apps_tests} PROPERTIES LABELS apps TIMEOUT 600 SKIP_RETURN_CODE 77)
