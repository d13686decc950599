#pragma once
// What the response handler reads from one JSON payload (an SSE `data:` line or a non-stream
// body), and two ways to get it.
//
// Parsing dominated the client's cost per request: a DOM parse (nlohmann) of every stream event
// was about 60 % of the loop's instructions (callgrind, docs/client.md). chunk_fields_fast() is a
// one-pass validating scanner that keeps only these fields; it answers only when it is sure (valid
// JSON of the shapes streams carry) and otherwise defers to chunk_fields_reference() (the DOM),
// so every answer is the reference's. Tests check the two agree over generated and mutated
// payloads.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace encbench::client {

struct ChunkFields {
  bool is_object = false;              // the payload is a JSON object
  bool has_choices = false;            // "choices" is a non-empty array
  std::string text;                    // choices[0]: delta.content | message.content | text ("" if none)
  bool has_usage = false;              // "usage" is a non-empty object
  std::optional<std::int64_t> usage_completion_tokens;  // integers only
  std::optional<std::int64_t> usage_prompt_tokens;
  bool has_error = false;              // "error" present and not null
  std::string error_message;           // error.message if a string, the error if a string, else its JSON

  bool operator==(const ChunkFields&) const = default;
};

// nlohmann's DOM. nullopt: not JSON.
std::optional<ChunkFields> chunk_fields_reference(std::string_view payload);

// The fast scanner. nullopt: "not sure" (invalid JSON, an error object, deep nesting, integers of
// 19+ digits, lone surrogates); the caller then asks the reference.
std::optional<ChunkFields> chunk_fields_fast(std::string_view payload);

// The fast scanner, else the reference.
std::optional<ChunkFields> parse_chunk_fields(std::string_view payload);

}  // namespace encbench::client
