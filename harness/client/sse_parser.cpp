#include "harness/client/sse_parser.hpp"

namespace encbench::client {

bool SseParser::feed(std::string_view bytes, const EventSink& sink) {
  if (failed()) return false;
  std::size_t i = 0;
  const std::size_t n = bytes.size();
  while (i < n) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (bytes[i] == '\n') {
        ++i;
        continue;
      }
    }
    // Find the next line terminator in this piece.
    std::size_t j = i;
    while (j < n && bytes[j] != '\n' && bytes[j] != '\r') ++j;
    if (j == n) {
      if (line_.size() + (n - i) > max_line_bytes_) {
        error_ = "SSE line longer than " + std::to_string(max_line_bytes_) + " bytes";
        return false;
      }
      line_.append(bytes.substr(i));
      return true;
    }
    if (bytes[j] == '\r') skip_lf_ = true;
    if (line_.empty()) {
      process_line(bytes.substr(i, j - i), sink);
    } else {
      line_.append(bytes.substr(i, j - i));
      process_line(line_, sink);
      line_.clear();
    }
    if (failed()) return false;
    i = j + 1;
  }
  return true;
}

void SseParser::process_line(std::string_view line, const EventSink& sink) {
  if (line.empty()) {
    dispatch(sink, true);
    return;
  }
  if (line.front() == ':') {
    ++comment_lines_;
    return;
  }
  std::string_view field = line, value;
  if (auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    // The same bound for a whole event as for one line: many short data: lines must not
    // grow the pending event without limit either.
    if (pending_.data.size() + value.size() + 1 > max_line_bytes_) {
      error_ = "SSE event longer than " + std::to_string(max_line_bytes_) + " bytes";
      return;
    }
    if (pending_.has_data) pending_.data.push_back('\n');
    pending_.data.append(value);
    pending_.has_data = true;
    pending_any_field_ = true;
  } else if (field == "event") {
    pending_.event_type.assign(value);
    pending_any_field_ = true;
  }
  // id:, retry: and unknown fields carry nothing the benchmark uses.
}

void SseParser::dispatch(const EventSink& sink, bool terminated) {
  if (pending_any_field_ && (pending_.has_data || !pending_.event_type.empty())) {
    pending_.terminated = terminated;
    SseEvent out = std::move(pending_);
    pending_ = SseEvent{};
    pending_any_field_ = false;
    sink(std::move(out));
    return;
  }
  pending_ = SseEvent{};
  pending_any_field_ = false;
}

void SseParser::finish(const EventSink& sink) {
  if (failed()) return;
  if (!line_.empty()) {
    std::string last;
    last.swap(line_);
    process_line(last, sink);
  }
  if (failed()) return;
  dispatch(sink, false);
}

}  // namespace encbench::client
