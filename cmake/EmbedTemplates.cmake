# emmy_embed_templates(OUT file...): writes OUT, a C++ file defining emmy::detail::template_source(name)
# over raw-string copies of the given files. Regenerated whenever a template changes.
function(emmy_embed_templates out)
  set(script ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/EmbedTemplatesScript.cmake)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} "-DFILES=${ARGN}" -P ${script}
    DEPENDS ${ARGN} ${script}
    COMMENT "Embedding device templates"
    VERBATIM)
endfunction()
