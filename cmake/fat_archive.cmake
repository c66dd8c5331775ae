# cmake -DAR=<ar> -DOUT=<archive> -DLIBS=<a.a|b.a|...> -DDIR=<build dir> -P fat_archive.cmake
# Merges static libraries into one archive with an ar MRI script. ADDLIB keeps every member,
# also two objects of the same name (ggml-cpu has two quants.c.o), which extracting with `ar x`
# would overwrite. MRI scripts cannot quote paths, so they are written relative to DIR.
string(REPLACE "|" ";" libs "${LIBS}")
file(RELATIVE_PATH out_rel "${DIR}" "${OUT}")
get_filename_component(out_dir "${OUT}" DIRECTORY)
file(MAKE_DIRECTORY "${out_dir}")
file(REMOVE "${OUT}")
set(script "CREATE ${out_rel}.tmp\n")
foreach(lib ${libs})
  file(RELATIVE_PATH rel "${DIR}" "${lib}")
  if(rel MATCHES "[ +,;()]")
    message(FATAL_ERROR "fat_archive: ${rel}: a path an ar MRI script cannot hold")
  endif()
  string(APPEND script "ADDLIB ${rel}\n")
endforeach()
string(APPEND script "SAVE\nEND\n")
file(WRITE "${OUT}.mri" "${script}")
execute_process(COMMAND "${AR}" -M INPUT_FILE "${OUT}.mri" WORKING_DIRECTORY "${DIR}"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fat_archive: ${AR} -M failed (${rc}) on ${OUT}.mri")
endif()
# The symbol index, so the linker finds members in one pass.
execute_process(COMMAND "${AR}" s "${OUT}.tmp" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fat_archive: ${AR} s failed (${rc}) on ${OUT}.tmp")
endif()
file(RENAME "${OUT}.tmp" "${OUT}")
