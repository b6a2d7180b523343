# Test of cmake/git_revision.cmake (the build-time git revision): in a scratch repository, the
# header holds the commit and dirty state, follows a new commit and a dirty tree, and is not
# rewritten (same mtime) when nothing changed, so an unchanged build recompiles nothing.
#   cmake -DSCRIPT=<cmake/git_revision.cmake> -DWORK=<scratch dir> -P git_revision_test.cmake
find_program(GIT git REQUIRED)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/repo")
set(repo "${WORK}/repo")
# Never find the enclosing checkout (the build tree usually lies inside one).
set(ENV{GIT_CEILING_DIRECTORIES} "${WORK}")
set(out "${WORK}/gen/rev.hpp")
function(git)
  execute_process(COMMAND ${GIT} -c user.name=t -c user.email=t@t ${ARGN}
                  WORKING_DIRECTORY ${repo} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "git ${ARGN}: ${err}")
  endif()
endfunction()
function(run_script)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${repo} -DOUT=${out} -DGIT=${GIT} -P ${SCRIPT}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "git_revision.cmake failed (${rc})")
  endif()
endfunction()
function(expect rev dirty)
  file(READ "${out}" text)
  if(NOT text MATCHES "#define SHARDCAL_GIT_REVISION \"${rev}\"\n#define SHARDCAL_GIT_DIRTY ${dirty}\n")
    message(FATAL_ERROR "expected revision ${rev} dirty ${dirty}, header is:\n${text}")
  endif()
endfunction()
function(head var)
  execute_process(COMMAND ${GIT} rev-parse --short=12 HEAD WORKING_DIRECTORY ${repo}
                  OUTPUT_VARIABLE h OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(${var} ${h} PARENT_SCOPE)
endfunction()

# Not a git checkout: "unknown", -1.
run_script()
expect("unknown" -1)

git(init -q)
file(WRITE "${repo}/a.txt" "one\n")
git(add a.txt)
git(commit -q -m one)
head(h1)
run_script()
expect("${h1}" 0)

# No change: the header is left alone.
file(TIMESTAMP "${out}" t1 "%s%f" UTC)
execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)  # mtime granularity, not synchronisation
run_script()
file(TIMESTAMP "${out}" t2 "%s%f" UTC)
if(NOT t1 STREQUAL t2)
  message(FATAL_ERROR "header rewritten although the revision did not change (${t1} -> ${t2})")
endif()

# A modified tracked file: dirty. An untracked file alone does not count.
file(WRITE "${repo}/a.txt" "two\n")
run_script()
expect("${h1}" 1)
git(checkout -q -- a.txt)
file(WRITE "${repo}/untracked.txt" "x\n")
run_script()
expect("${h1}" 0)

# A new commit: the new revision.
file(WRITE "${repo}/a.txt" "three\n")
git(commit -q -a -m three)
head(h2)
if(h1 STREQUAL h2)
  message(FATAL_ERROR "test setup: commits did not differ")
endif()
run_script()
expect("${h2}" 0)
message(STATUS "git_revision.cmake: ok (${h1} -> ${h2})")
