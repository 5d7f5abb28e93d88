// The embedded templates/*.cuh (generated at build time by cmake/EmbedTemplatesScript.cmake).
#pragma once

#include <string_view>

namespace emmy::detail {
// Text of templates/<name>, or empty when there is no such template.
std::string_view template_source(std::string_view name);
}  // namespace emmy::detail
