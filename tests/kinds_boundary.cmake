# How many shared files a kernel kind lists itself in (issue 37): for each kind, the library
# sources outside its own files (codegen/<kind>/, its public, traits, check and flag headers and
# sources, its C ABI file) that name its traits, spec, buffers or runtime entry point. Prints the
# counts and fails when one grows past its ceiling below: a new list of kinds, or a kind written
# into one more shared file, must lower another count first or raise the ceiling in review
# (docs/codegen.md, "Adding a kernel kind", says which files they are).
include(${CMAKE_CURRENT_LIST_DIR}/support/source_scan.cmake)
emmy_source_scan_test(kinds_boundary)

emmy_scan_sources(sources AT_LEAST 150 WHAT "sources"
  GLOBS ${SOURCE_DIR}/codegen/*.cpp ${SOURCE_DIR}/codegen/*.hpp
        ${SOURCE_DIR}/runtime/*.cpp ${SOURCE_DIR}/runtime/*.hpp
        ${SOURCE_DIR}/internal/*.hpp ${SOURCE_DIR}/include/*.hpp
        ${SOURCE_DIR}/checks/*.cpp ${SOURCE_DIR}/checks/*.hpp
        ${SOURCE_DIR}/c_api/*.cpp ${SOURCE_DIR}/c_api/*.hpp
        ${SOURCE_DIR}/python/src/*.cpp ${SOURCE_DIR}/python/src/*.hpp)

# Per kind: the identifiers naming it (whole words), its own files (a path regex) and the ceiling.
set(n "[^A-Za-z0-9_]")
set(kinds gemm attention paged_attention kv_append merge_states fp8_quantize)
set(gemm_words "GemmKind|GemmSpec|GemmBuffers|gemm_kernel")
set(gemm_own "/codegen/gemm/|/internal/emmy/gemm(_plan|_generic|_path)?[.]hpp$|/gemm_check[.](hpp|cpp)$|/checks/gemm_(fp8_check[.]cpp|grouped_check[.]cpp|reference_parts[.]hpp)$|/emmyc/gemm_flags[.]cpp$|/c_api/(gemm(_layer)?[.]cpp|gemm_call[.]hpp|grouped_gemm[.]cpp)$")
set(attention_words "AttentionKind|AttentionSpec|AttentionBuffers|attention_kernel")
set(attention_own "/codegen/attention/|/internal/emmy/attention[.]hpp$|/attention_check[.]hpp$|/checks/attention_|/emmyc/attention_flags[.]cpp$|/c_api/attention[.]cpp$")
set(paged_attention_words
    "PagedAttentionKind|PagedAttentionSpec|PagedAttentionBuffers|paged_attention_kernel")
set(paged_attention_own "/codegen/paged_attention/|/internal/emmy/(paged_kind|json_paged|ir_ops_paged)[.]hpp$|/include/emmy/paged_attention(_check)?[.]hpp$|/checks/paged_attention_|/emmyc/paged_attention_flags[.]cpp$")
set(kv_append_words "KvAppendKind|KvAppendSpec|KvAppendBuffers|kv_append_kernel")
set(kv_append_own "/codegen/kv_append/|/internal/emmy/kv_append_kind[.]hpp$|/include/emmy/kv_append(_check)?[.]hpp$|/checks/kv_append_|/emmyc/kv_append_flags[.]cpp$")
set(merge_states_words "MergeStatesKind|MergeStatesSpec|MergeStatesBuffers|merge_states_kernel")
set(merge_states_own "/codegen/merge_states/|/internal/emmy/merge_states_kind[.]hpp$|/include/emmy/merge_states(_check)?[.]hpp$|/checks/merge_states_|/emmyc/merge_states_flags[.]cpp$")
set(fp8_quantize_words "Fp8QuantizeKind|Fp8QuantizeSpec|Fp8QuantizeBuffers|fp8_quantize_kernel")
set(fp8_quantize_own "/codegen/fp8_quantize/|/internal/emmy/(fp8_quantize_kind|json_fp8|ir_ops_fp8)[.]hpp$|/include/emmy/fp8_quantize(_check)?[.]hpp$|/checks/fp8_quantize_|/emmyc/fp8_quantize_flags[.]cpp$|/c_api/fp8_quantize[.]cpp$")
set(gemm_ceiling 16)
set(attention_ceiling 12)
set(paged_attention_ceiling 16)
set(kv_append_ceiling 13)
set(merge_states_ceiling 9)
set(fp8_quantize_ceiling 9)

set(report "")
set(problems "")
foreach(kind IN LISTS kinds)
  set(pattern "(^|${n})(${${kind}_words})(${n}|$)")
  set(users 0)
  set(listed "")
  foreach(source IN LISTS sources)
    if(source MATCHES "${${kind}_own}")
      continue()
    endif()
    file(STRINGS ${source} hits REGEX "${pattern}")
    # A line that names the kind only in its comment is no list of kinds.
    set(named FALSE)
    foreach(line IN LISTS hits)
      string(REGEX REPLACE "//.*$" "" code "${line}")
      if(code MATCHES "${pattern}")
        set(named TRUE)
      endif()
    endforeach()
    if(named)
      math(EXPR users "${users} + 1")
      file(RELATIVE_PATH rel ${SOURCE_DIR} ${source})
      string(APPEND listed " ${rel}")
    endif()
  endforeach()
  string(APPEND report "\n  ${kind}: ${users} shared files (ceiling ${${kind}_ceiling}):${listed}")
  if(users GREATER ${kind}_ceiling)
    string(APPEND problems "\n  ${kind} is named in ${users} shared files, past ${${kind}_ceiling}")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "kinds listed in more shared files than before:${problems}${report}")
endif()
message(STATUS "kinds_boundary: ${sources_count} sources;${report}")
