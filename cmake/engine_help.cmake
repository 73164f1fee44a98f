# cmake -DENGINE=path/to/attnmt-engine -DOUTPUT=engine_help.cpp -P cmake/engine_help.cmake
# Records the engine's help texts for the front program (src/cli/recorded_help.h): runs the engine
# with `--help`, `help`, and `help CMD` and `CMD --help` for every command its --help lists, and
# writes them as the byte arrays of a C++ file, the engine's path (its argv[0]) replaced by a
# marker that the front replaces with its own argv[0].
set(marker "@ATTNMT_PROGRAM@")

function(record out_var)  # the engine's stdout for the arguments given; a failure stops the build
  execute_process(COMMAND "${ENGINE}" ${ARGN} OUTPUT_VARIABLE text ERROR_VARIABLE errors RESULT_VARIABLE status)
  if(NOT status EQUAL 0 OR text STREQUAL "")
    message(FATAL_ERROR "engine_help: `attnmt-engine ${ARGN}` exited with ${status}: ${errors}")
  endif()
  string(REPLACE "${ENGINE}" "${marker}" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

record(program_help --help)
# The commands: the first word of each line of the "Subcommands:" block, up to its blank line.
string(REGEX MATCH "\nSubcommands:\n(([^\n]+\n)+)" block "${program_help}")
string(REGEX MATCHALL "\n  [a-z][a-z0-9_-]*" commands "\n${CMAKE_MATCH_1}")
string(REGEX REPLACE "\n  " "" commands "${commands}")
if(NOT commands)
  message(FATAL_ERROR "engine_help: no commands in `attnmt-engine --help`")
endif()

set(asked "--help" "help")
foreach(command IN LISTS commands)
  list(APPEND asked "help ${command}" "${command} --help")
endforeach()

set(arrays "")
set(entries "")
set(n 0)
foreach(args IN LISTS asked)
  string(REPLACE " " ";" argv "${args}")
  record(text ${argv})
  # As bytes, so that no character of the text needs escaping.
  string(HEX "${text}" hex)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
  string(APPEND arrays "const char kText${n}[] = {${bytes}0};\n")
  list(LENGTH argv count)
  list(GET argv 0 first)
  if(count EQUAL 2)
    list(GET argv 1 second)
    string(APPEND entries "    {{\"${first}\", \"${second}\"}, kText${n}},\n")
  else()
    string(APPEND entries "    {{\"${first}\", nullptr}, kText${n}},\n")
  endif()
  math(EXPR n "${n} + 1")
endforeach()

file(WRITE "${OUTPUT}.tmp" "// Written by cmake/engine_help.cmake from attnmt-engine's output; not to be edited.
#include \"cli/recorded_help.h\"

namespace attnmt::cli {

namespace {
${arrays}}  // namespace

const char kRecordedProgram[] = \"${marker}\";
const RecordedHelpText kRecordedHelpTexts[] = {
${entries}};
const size_t kRecordedHelpTextCount = ${n};

}  // namespace attnmt::cli
")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
