// Summary entry points of the C ABI: the tables as text or JSON, returned in
// library-allocated strings the caller frees with pk_string_free().
#include <cstdlib>
#include <cstring>
#include <string>

#include "capi_guard.h"
#include "result_handle.h"
#include "summary/json_writer.h"
#include "summary/summary.h"
#include "summary/text_renderer.h"

using profkit::guarded;
using profkit::require;

// The engine's option enums carry the C ABI's values unchanged: the options
// cross from the ABI as plain ints, so the two lists must never drift apart.
static_assert(static_cast<int>(profkit::SortKey::kGpuMin) == PK_SORT_GPU_MIN &&
              static_cast<int>(profkit::SortKey::kCpuSelf) == PK_SORT_CPU_SELF &&
              profkit::kSortKeyCount == PK_SORT_CPU_SELF + 1);
static_assert(static_cast<int>(profkit::SummaryView::kUserDefined) == PK_VIEW_USER_DEFINED &&
              profkit::kSummaryViewCount == PK_SUMMARY_VIEW_COUNT);
static_assert(static_cast<int>(profkit::TimeUnit::kNanoseconds) == PK_TIME_UNIT_NS &&
              profkit::kTimeUnitCount == PK_TIME_UNIT_NS + 1);

namespace {

pk_summary_options defaults() {
  pk_summary_options o{};
  o.struct_size = sizeof o;
  o.sorted_by = PK_SORT_CPU_TOTAL;
  o.op_detail = 1;
  o.thread_sep = 0;
  o.time_unit = PK_TIME_UNIT_MS;
  o.views = 0;
  o.row_limit = 0;
  o.group_by_input_shape = 0;
  o.group_by_stack_n = 0;
  return o;
}

// The caller's options over the defaults, reading only the fields its
// struct_size covers (an older caller's struct is shorter).
profkit::SummaryOptions read_options(const pk_summary_options* options, const char* function) {
  using O = pk_summary_options;
  const O given = options == nullptr
                      ? defaults()
                      : profkit::read_versioned(
                            *options, defaults(), function, "pk_summary_options",
                            {PK_FIELD_END(O, struct_size), PK_FIELD_END(O, sorted_by), PK_FIELD_END(O, op_detail),
                             PK_FIELD_END(O, thread_sep), PK_FIELD_END(O, time_unit), PK_FIELD_END(O, views),
                             PK_FIELD_END(O, row_limit), PK_FIELD_END(O, group_by_input_shape),
                             // 1.21's sizeof: its struct's padding ends where group_by_stack_n begins.
                             offsetof(O, group_by_stack_n), PK_FIELD_END(O, group_by_stack_n)});
  return profkit::make_summary_options(given.sorted_by, given.op_detail != 0, given.thread_sep != 0, given.time_unit,
                                       given.views, given.row_limit, given.group_by_input_shape != 0,
                                       given.group_by_stack_n);
}

void hand_out(const std::string& text, char** out, size_t* out_length) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy == nullptr) throw std::bad_alloc();
  std::memcpy(copy, text.c_str(), text.size() + 1);
  *out = copy;
  if (out_length != nullptr) *out_length = text.size();
}

template <class Render>
pk_status summarize(const char* function, const pk_result* r, const pk_summary_options* options, char** out,
                    size_t* out_length, Render render) {
  return guarded(function, [&] {
    require(out, function, "out");
    *out = nullptr;
    if (out_length != nullptr) *out_length = 0;
    if (r == nullptr || r->impl == nullptr) {
      throw profkit::Error(PK_ERR_INVALID_ARGUMENT,
                           std::string(function) +
                               ": the result is NULL; pass the pk_result that pk_collect or pk_result_load returned");
    }
    const profkit::SummaryOptions o = read_options(options, function);
    hand_out(render(profkit::compute_summary(*r->impl, o)), out, out_length);
  });
}

}  // namespace

extern "C" {

PK_API void pk_summary_options_init(pk_summary_options* options) noexcept {
  if (options == nullptr || options->struct_size < sizeof(size_t)) return;
  const pk_summary_options d = defaults();
  const size_t n = options->struct_size < sizeof d ? options->struct_size : sizeof d;
  std::memcpy(reinterpret_cast<char*>(options) + sizeof(size_t), reinterpret_cast<const char*>(&d) + sizeof(size_t),
              n - sizeof(size_t));
}

PK_API pk_status pk_result_summary_text(const pk_result* r, const pk_summary_options* options, char** out_text,
                                        size_t* out_length) noexcept {
  return summarize("pk_result_summary_text", r, options, out_text, out_length,
                   [](const profkit::Summary& s) { return profkit::render_summary_text(s); });
}

PK_API pk_status pk_result_summary_json(const pk_result* r, const pk_summary_options* options, char** out_json,
                                        size_t* out_length) noexcept {
  return summarize("pk_result_summary_json", r, options, out_json, out_length,
                   [](const profkit::Summary& s) { return profkit::render_summary_json(s); });
}

PK_API void pk_string_free(char* text) noexcept { std::free(text); }

}  // extern "C"
