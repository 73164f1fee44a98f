# cmake -DSOURCE_DIR=... -DOUTPUT=git_commit.cpp -P cmake/git_commit.cmake
# Writes the commit the sources are at (`attnmt --version`: "attnmt 0.1.0 (git 5c33c01a2b3c)",
# ", modified" when tracked files differ from it) as a C++ file, rewritten only when that changes,
# so that a build after a commit relinks the programs and nothing more. Outside a git clone (a
# release tarball) the commit is empty and --version prints the version alone.
set(commit "")
find_program(GIT git)
if(GIT)
  execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-parse --show-toplevel OUTPUT_VARIABLE top
                  RESULT_VARIABLE status OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  # Only this project's own clone: a tarball unpacked inside another repository has no commit.
  if(status EQUAL 0 AND EXISTS "${top}/src/cli/program.cpp")
    file(REAL_PATH "${top}" top)
    file(REAL_PATH "${SOURCE_DIR}" source)
    if(top STREQUAL source)
      execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-parse --short=12 HEAD OUTPUT_VARIABLE commit
                      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                      OUTPUT_VARIABLE changes ERROR_QUIET)
      if(commit AND changes)
        string(APPEND commit ", modified")
      endif()
    endif()
  endif()
endif()
set(text "// Written by cmake/git_commit.cmake.\nnamespace attnmt::cli {\nextern const char* const kGitCommit;\nconst char* const kGitCommit = \"${commit}\";\n}  // namespace attnmt::cli\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
