# cmake -DOUT=file.inc -DFILES="a.json;b.json" -P EmbedVariants.cmake : the variant data files as
# {family, text} initializers (family = file name without .json), for runtime/kernel_registry.cpp.
set(body "")
foreach (f IN LISTS FILES)
    get_filename_component(family "${f}" NAME_WE)
    file(READ "${f}" content)
    string(APPEND body "{\"${family}\", R\"__bf__(${content})__bf__\"},\n")
endforeach ()
file(WRITE "${OUT}" "${body}")
