# Command-line behaviour of the dawnrun executable: exit codes and messages for bad
# flags, bad configs, missing data, a missing device, and validate's parameter counts.
set(EXPECT ${CMAKE_SOURCE_DIR}/tests/expect.sh)
set(DR $<TARGET_FILE:dawnrun>)
set(CFG ${CMAKE_SOURCE_DIR}/configs)
function(dawnrun_cli_test name code regex)
  add_test(NAME cli_${name} COMMAND ${EXPECT} ${code} ${regex} ${ARGN})
  set_tests_properties(cli_${name} PROPERTIES ENVIRONMENT "DAWNRUN_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endfunction()

dawnrun_cli_test(no_args 2 "usage: dawnrun" ${DR})
dawnrun_cli_test(unknown_command 2 "unknown command 'trian'" ${DR} trian)
dawnrun_cli_test(train_no_config 2 "usage: dawnrun train" ${DR} train)
dawnrun_cli_test(train_bad_flag 2 "unknown flag '--sead'" ${DR} train ${CFG}/demo.cfg --sead 1)
dawnrun_cli_test(train_bad_seed 2 "--seed: expected an integer" ${DR} train ${CFG}/demo.cfg --seed x)
dawnrun_cli_test(train_bad_engine 2 "--engine: expected cpu, cuda or auto" ${DR} train ${CFG}/demo.cfg --engine gpu)
dawnrun_cli_test(set_without_equals 2 "--set needs key.path=value" ${DR} validate ${CFG}/demo.cfg --set train.epochs)
dawnrun_cli_test(missing_config 3 "no-such.cfg" ${DR} validate no-such.cfg)
dawnrun_cli_test(cpu_half_precision 3 "train.precision = \"fp16\": the cpu engine computes in fp32 only" ${DR} train ${CFG}/demo.cfg --engine cpu --set train.precision="fp16")
dawnrun_cli_test(auto_cpu_half_precision 3 "train.precision = \"bf16\": the cpu engine computes in fp32 only" ${DR} train ${CFG}/demo.cfg --engine auto --set train.precision="bf16")
dawnrun_cli_test(help 0 "exit codes" ${DR} help)
# dawnrun --help: one line per command (its flags: dawnrun COMMAND --help)
dawnrun_cli_test(help_flag 0 "^  help \\[COMMAND\\] +list the commands" ${DR} --help)
dawnrun_cli_test(version 0 "^dawnrun [0-9]" ${DR} version)
dawnrun_cli_test(validate_resnet9 0 "trainable parameters +6,573,120" ${DR} validate ${CFG}/resnet9-24ep.cfg)
dawnrun_cli_test(validate_resnet9_flops 0 "forward FLOPs/image +0\\.75[89]" ${DR} validate ${CFG}/resnet9-24ep.cfg)
dawnrun_cli_test(validate_dawn_net 0 "trainable parameters +5,205,834" ${DR} validate ${CFG}/page-post3/30ep-cutout.cfg)
dawnrun_cli_test(validate_set 0 "batch_size = 768" ${DR} validate ${CFG}/page-post3/30ep-cutout.cfg --set train.batch_size=768)
dawnrun_cli_test(cuda_without_device 6 "no CUDA device" ${DR} train ${CFG}/demo.cfg --engine cuda)
# selfcheck's table needs no device to be listed or chosen from
dawnrun_cli_test(selfcheck_list 0 "act_backward_acc/relu_8x64x16x16 +ops +maxrel" ${DR} selfcheck --list --only act)
dawnrun_cli_test(selfcheck_bad_only 2 "--only: 'nonsense' names no case" ${DR} selfcheck --only conv,nonsense)

# A data directory without CIFAR-10 files is a data error naming the file.
add_test(NAME cli_missing_data COMMAND ${EXPECT} 4 "data_batch_1.bin"
         ${DR} train ${CMAKE_SOURCE_DIR}/tests/e2e/tiny.cfg --engine cpu)
set_tests_properties(cli_missing_data PROPERTIES ENVIRONMENT "DAWNRUN_DATA=${CMAKE_BINARY_DIR}")

# The full CLI path: a short training run of the tiny network (needs the data).
add_test(NAME cli_train_tiny COMMAND ${EXPECT} 0 "final test acc 0\\.[2-9]"
         ${DR} train ${CMAKE_SOURCE_DIR}/tests/e2e/tiny.cfg --engine cpu --seed 3
         --set train.epochs=2)
set_tests_properties(cli_train_tiny PROPERTIES ENVIRONMENT "EXPECT_NEEDS_DATA=1"
                     SKIP_RETURN_CODE 77)

# A diverging loss (absurd learning rate) ends the run as diverged: exit 5, not a crash.
add_test(NAME cli_train_diverged COMMAND ${EXPECT} 5 "the loss diverged"
         ${DR} train ${CMAKE_SOURCE_DIR}/tests/e2e/tiny.cfg --engine cpu --set train.epochs=1
         --set "train.lr_schedule.values=(0.0, 1e9, 0.0)")
set_tests_properties(cli_train_diverged PROPERTIES ENVIRONMENT "EXPECT_NEEDS_DATA=1"
                     SKIP_RETURN_CODE 77)

# SIGINT and SIGTERM stop training at the next step: exit 130 and 143.
foreach(sig INT TERM)
  if(sig STREQUAL "INT")
    set(code 130)
  else()
    set(code 143)
  endif()
  add_test(NAME cli_train_sig${sig} COMMAND ${CMAKE_SOURCE_DIR}/tests/signal.sh ${sig} ${code}
           ${DR} train ${CMAKE_SOURCE_DIR}/tests/e2e/tiny.cfg --engine cpu --set train.epochs=50)
  set_tests_properties(cli_train_sig${sig} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()

# `dawnrun bench` stopped by SIGINT during its timed steps (stdout a file): the warm-up line
# and a stop line with the steps done are in the file, and the exit code is 130.
add_test(NAME cli_bench_signal COMMAND ${CMAKE_SOURCE_DIR}/tests/bench_signal.sh cpu ${DR})
set_tests_properties(cli_bench_signal PROPERTIES TIMEOUT 1200)

# Messages carry no source location of dawnrun's own unless DAWNRUN_DEBUG=1, and start on
# a line of their own when a progress line is drawn.
add_test(NAME cli_messages_errors COMMAND ${CMAKE_SOURCE_DIR}/tests/messages.sh errors
         ${DR} ${CMAKE_SOURCE_DIR})
add_test(NAME cli_messages_signal COMMAND ${CMAKE_SOURCE_DIR}/tests/messages.sh signal
         ${DR} ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_messages_signal PROPERTIES SKIP_RETURN_CODE 77)

# The command-line conventions of every command (-h/--help, unknown flags, --flag=value,
# --, the usage against the parser's flags), the man page and the bash completion: the
# committed docs/dawnrun.1 and scripts/dawnrun-completion.bash are what the executable
# generates from its command tables.
add_test(NAME cli_flags COMMAND ${CMAKE_SOURCE_DIR}/tests/cli_flags.sh ${DR} ${CMAKE_SOURCE_DIR})
add_test(NAME cli_man_page COMMAND ${CMAKE_SOURCE_DIR}/tests/cli_man.sh ${DR} ${CMAKE_SOURCE_DIR})
add_test(NAME cli_completion COMMAND ${CMAKE_SOURCE_DIR}/tests/cli_completion.sh ${DR}
         ${CMAKE_SOURCE_DIR})
# test_cli_parse (tests.cmake) also compiles the parser and the diff command's table.
target_sources(test_cli_parse PRIVATE ${CMAKE_SOURCE_DIR}/runner/cli/cli_flags.c
               ${CMAKE_SOURCE_DIR}/runner/cli/diff_args.c)
target_include_directories(test_cli_parse PRIVATE ${CMAKE_SOURCE_DIR})
