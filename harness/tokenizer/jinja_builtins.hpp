#pragma once
// What a chat template can call: Jinja2's filters and tests that chat templates use (with
// transformers' tojson override), Python's str/dict/list methods through attribute access, Jinja's
// attribute and item lookup with Undefined results, and the globals transformers adds
// (raise_exception, strftime_now) next to Jinja's range/namespace/dict.
#include <string>

#include "harness/tokenizer/jinja_value.hpp"

namespace encbench::tokenizer::jinja {

bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);
Value apply_filter(const std::string& name, const Value& subject, CallArgs& args);
bool apply_test(const std::string& name, const Value& subject, CallArgs& args);

// Jinja2's environment.getattr (x.name: Python attribute first, then item) and getitem (x[key]:
// item first, then attribute). Missing ones are Undefined; on an Undefined they raise.
Value get_attribute(const Value& target, const std::string& name);
Value get_item(const Value& target, const Value& key);
// x[start:stop:step] on a list or a string (by code point); null pointers for omitted parts.
Value get_slice(const Value& target, const Value* start, const Value* stop, const Value* step);

// A global function by name (range, namespace, dict, raise_exception, strftime_now), or Undefined.
Value global_function(const std::string& name);

// Python's `in`: substring, dict key, list element.
bool contains(const Value& container, const Value& item);

// Jinja2's sandbox refuses ranges over this many items (MAX_RANGE).
constexpr std::int64_t kMaxRange = 100000;

}  // namespace encbench::tokenizer::jinja
