# cmake -DSOURCE_DIR=... -P check_no_outside_pointers.cmake
# The repository stands alone: no text in it (README, comments, scripts, CMake) may send the reader
# to a file outside it. The bracketed letters keep this script from matching itself.
set(patterns "[.][.]/[s]hared" "DESIG[N][.]md" "STYL[E][.]md" "(^|[^a-z_])[s]hared/" "/wor[k]/")
file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR}
     ${SOURCE_DIR}/*.cpp ${SOURCE_DIR}/*.hpp ${SOURCE_DIR}/*.cuh ${SOURCE_DIR}/*.cmake
     ${SOURCE_DIR}/*.txt ${SOURCE_DIR}/*.sh ${SOURCE_DIR}/*.md ${SOURCE_DIR}/*.in
     ${SOURCE_DIR}/*.py ${SOURCE_DIR}/*.json)
set(found "")
foreach(file IN LISTS files)
    # Build trees and other checkouts inside the source directory are not the repository.
    if(file MATCHES "^(build[^/]*|\\.git|\\.deps|shared)/")
        continue()
    endif()
    file(STRINGS ${SOURCE_DIR}/${file} lines)
    foreach(line IN LISTS lines)
        foreach(pattern IN LISTS patterns)
            if(line MATCHES "${pattern}")
                string(APPEND found "\n  ${file}: ${line}")
                break()
            endif()
        endforeach()
    endforeach()
endforeach()
if(found)
    message(FATAL_ERROR "Text pointing outside the repository:${found}")
endif()
list(LENGTH files count)
message(STATUS "${count} files checked: none points outside the repository")
