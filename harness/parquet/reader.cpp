#include "harness/parquet/reader.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "harness/core/error.hpp"
#include "harness/parquet/metadata.hpp"
#include "harness/parquet/pages.hpp"
#include "harness/parquet/thrift_compact.hpp"

namespace encbench::parquet {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::size_t kMaxFooterBytes = 64u << 20;  // a footer this large is not a dataset's
constexpr int kMaxSchemaDepth = 32;
constexpr std::int32_t kConvertedUtf8 = 0, kConvertedMap = 1, kConvertedMapKeyValue = 2, kConvertedList = 3,
                       kConvertedEnum = 4, kConvertedJson = 19;

// How a schema node's value sits in its parent's JSON.
enum class NodeRole { member, list_element, element_value };

struct SchemaNode {
  ParquetSchemaElement element;
  int parent = -1;
  std::vector<int> children;
  int def_level = 0, rep_level = 0;  // levels at which this node is defined / repeated
  NodeRole role = NodeRole::member;
  bool list_wrapper = false;         // a LIST-annotated group: an array
  bool element_passthrough = false;  // a list's repeated group whose one child is the element
  bool map = false;
};

struct LeafColumn {
  std::vector<int> path_nodes;  // below the root, the top-level field first
  std::string dotted;
  int max_def = 0, max_rep = 0;
  LeafValueType type;
  bool under_map = false;
};

}  // namespace

struct ParquetFile::Footer {
  ParquetFileMetadata meta;
  std::vector<SchemaNode> nodes;
  std::vector<LeafColumn> leaves;
  std::uint64_t data_end = 0;  // where the footer starts: column chunks end before it
};

namespace {

[[noreturn]] void fail(const fs::path& file, const std::string& what) {
  throw InvalidInput(file.string() + ": " + what);
}

std::string read_at(std::ifstream& in, std::uint64_t offset, std::size_t size, const fs::path& file) {
  std::string bytes(size, '\0');
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::size_t>(in.gcount()) != size)
    fail(file, "truncated: cannot read " + std::to_string(size) + " bytes at offset " + std::to_string(offset));
  return bytes;
}

// Builds the node tree from the flattened schema, depth first; returns the next element's index.
std::size_t build_node(std::vector<SchemaNode>& nodes, const std::vector<ParquetSchemaElement>& schema, std::size_t index,
                       int parent, int depth, const fs::path& file) {
  if (index >= schema.size()) fail(file, "corrupt footer: the schema ends inside a group");
  if (depth > kMaxSchemaDepth) fail(file, "corrupt footer: schema nested deeper than " + std::to_string(kMaxSchemaDepth));
  const int me = static_cast<int>(nodes.size());
  SchemaNode node;
  node.element = schema[index];
  node.parent = parent;
  const ParquetSchemaElement& e = node.element;
  if (parent >= 0) {
    const SchemaNode& p = nodes[static_cast<std::size_t>(parent)];
    node.def_level = p.def_level + (e.repetition != Repetition::required ? 1 : 0);
    node.rep_level = p.rep_level + (e.repetition == Repetition::repeated ? 1 : 0);
    node.map = p.map;
    if (p.list_wrapper) node.role = NodeRole::list_element;
    else if (p.element_passthrough) node.role = NodeRole::element_value;
  }
  const bool group = !e.type.has_value();
  node.list_wrapper = group && (e.converted_type == kConvertedList || e.logical_list);
  node.map |= group && (e.converted_type == kConvertedMap || e.converted_type == kConvertedMapKeyValue || e.logical_map);
  if (group && (e.num_children < 0 || static_cast<std::size_t>(e.num_children) > schema.size() - index - 1))
    fail(file, "corrupt footer: group '" + e.name + "' claims " + std::to_string(e.num_children) + " children");
  if (node.role == NodeRole::list_element) {
    const std::string& list_name = nodes[static_cast<std::size_t>(parent)].element.name;
    node.element_passthrough = group && e.num_children == 1 && e.name != "array" && e.name != list_name + "_tuple";
  }
  nodes.push_back(node);
  std::size_t next = index + 1;
  if (group) {
    for (std::int32_t c = 0; c < e.num_children; ++c) {
      nodes[static_cast<std::size_t>(me)].children.push_back(static_cast<int>(nodes.size()));
      next = build_node(nodes, schema, next, me, depth + 1, file);
    }
    const SchemaNode& built = nodes[static_cast<std::size_t>(me)];
    if (built.list_wrapper && (built.children.size() != 1 ||
                               nodes[static_cast<std::size_t>(built.children[0])].element.repetition != Repetition::repeated))
      fail(file, "column '" + e.name + "': a LIST group needs exactly one repeated child");
  }
  return next;
}

void collect_leaves(const std::vector<SchemaNode>& nodes, int index, std::vector<int>& path, std::vector<LeafColumn>& leaves) {
  const SchemaNode& n = nodes[static_cast<std::size_t>(index)];
  if (index != 0) path.push_back(index);
  if (n.element.type.has_value() && index != 0) {
    LeafColumn leaf;
    leaf.path_nodes = path;
    for (int p : path) leaf.dotted += (leaf.dotted.empty() ? "" : ".") + nodes[static_cast<std::size_t>(p)].element.name;
    leaf.max_def = n.def_level;
    leaf.max_rep = n.rep_level;
    leaf.type.physical = *n.element.type;
    leaf.type.type_length = n.element.type_length;
    const auto ct = n.element.converted_type;
    leaf.type.text = n.element.logical_string || ct == kConvertedUtf8 || ct == kConvertedJson || ct == kConvertedEnum;
    leaf.under_map = n.map;
    leaves.push_back(std::move(leaf));
  }
  for (int c : n.children) collect_leaves(nodes, c, path, leaves);
  if (index != 0) path.pop_back();
}

}  // namespace

namespace {

// A data page's levels and its values, ready to be walked.
class DecodedPage {
 public:
  std::vector<std::uint32_t> rep, def;
  std::size_t count = 0;  // level entries (values, nulls and empty lists)

  void set_values(std::string bytes, std::size_t offset, std::int32_t encoding, const std::vector<json>* dictionary,
                  std::size_t present, LeafValueType type) {
    buffer_ = std::move(bytes);
    const auto* data = reinterpret_cast<const std::uint8_t*>(buffer_.data()) + offset;
    const std::size_t size = buffer_.size() - offset;
    dictionary_ = nullptr;
    if (encoding == static_cast<std::int32_t>(Encoding::plain)) {
      plain_ = PlainValueReader(data, size, type);
      return;
    }
    if (encoding != static_cast<std::int32_t>(Encoding::plain_dictionary) && encoding != static_cast<std::int32_t>(Encoding::rle_dictionary))
      throw std::runtime_error(std::string("encoding ") + encoding_name(encoding) +
                               " is not supported (expected PLAIN, PLAIN_DICTIONARY or RLE_DICTIONARY)");
    if (dictionary == nullptr) throw std::runtime_error("a dictionary-encoded page without a dictionary page before it");
    if (size < 1) throw std::runtime_error("dictionary indices truncated");
    indices_ = decode_rle_hybrid(data + 1, size - 1, data[0], present);
    next_index_ = 0;
    dictionary_ = dictionary;
  }
  json next() {
    if (dictionary_ == nullptr) return plain_.next();
    const std::uint32_t i = indices_.at(next_index_++);
    if (i >= dictionary_->size()) throw std::runtime_error("dictionary index " + std::to_string(i) + " past the dictionary's " + std::to_string(dictionary_->size()));
    return (*dictionary_)[i];
  }
  void skip() {
    if (dictionary_ == nullptr) plain_.skip();
    else ++next_index_;
  }

 private:
  std::string buffer_;
  PlainValueReader plain_{nullptr, 0, {}};
  std::vector<std::uint32_t> indices_;
  std::size_t next_index_ = 0;
  const std::vector<json>* dictionary_ = nullptr;
};

std::uint32_t read_u32(const std::string& b, std::size_t pos) {
  if (b.size() < 4 || pos > b.size() - 4) throw std::runtime_error("levels length truncated");
  std::uint32_t v = 0;
  std::memcpy(&v, b.data() + pos, 4);
  return v;
}

std::size_t count_present(const DecodedPage& page, const LeafColumn& leaf) {
  if (leaf.max_def == 0) return page.count;
  return static_cast<std::size_t>(std::count(page.def.begin(), page.def.end(), static_cast<std::uint32_t>(leaf.max_def)));
}

// A v1 page: everything compressed; repetition then definition levels, each with a 4-byte length.
void decode_v1(DecodedPage& page, const ParquetPageHeader& h, const std::string& body, std::int32_t codec,
               const LeafColumn& leaf, const std::vector<json>* dictionary) {
  std::string bytes = decompress_page(codec, reinterpret_cast<const std::uint8_t*>(body.data()), body.size(),
                                      static_cast<std::size_t>(h.uncompressed_size));
  std::size_t pos = 0;
  const auto levels = [&](int max_level, std::vector<std::uint32_t>& out) {
    if (max_level == 0) return;
    const std::uint32_t length = read_u32(bytes, pos);
    if (length > bytes.size() - pos - 4) throw std::runtime_error("levels longer than the page");
    out = decode_rle_hybrid(reinterpret_cast<const std::uint8_t*>(bytes.data()) + pos + 4, length, bit_width_for(static_cast<std::uint32_t>(max_level)), page.count);
    pos += 4 + length;
  };
  levels(leaf.max_rep, page.rep);
  levels(leaf.max_def, page.def);
  page.set_values(std::move(bytes), pos, h.encoding, dictionary, count_present(page, leaf), leaf.type);
}

// A v2 page: the levels first and never compressed (no length prefixes), then the values.
void decode_v2(DecodedPage& page, const ParquetPageHeader& h, const std::string& body, std::int32_t codec,
               const LeafColumn& leaf, const std::vector<json>* dictionary) {
  const auto rep_bytes = static_cast<std::size_t>(h.repetition_levels_bytes), def_bytes = static_cast<std::size_t>(h.definition_levels_bytes);
  if (rep_bytes + def_bytes > body.size() || rep_bytes + def_bytes > static_cast<std::size_t>(h.uncompressed_size))
    throw std::runtime_error("v2 levels longer than the page");
  const auto* raw = reinterpret_cast<const std::uint8_t*>(body.data());
  if (leaf.max_rep > 0) page.rep = decode_rle_hybrid(raw, rep_bytes, bit_width_for(static_cast<std::uint32_t>(leaf.max_rep)), page.count);
  if (leaf.max_def > 0) page.def = decode_rle_hybrid(raw + rep_bytes, def_bytes, bit_width_for(static_cast<std::uint32_t>(leaf.max_def)), page.count);
  const std::size_t offset = rep_bytes + def_bytes;
  const std::size_t values_size = static_cast<std::size_t>(h.uncompressed_size) - offset;
  std::string values = h.is_compressed ? decompress_page(codec, raw + offset, body.size() - offset, values_size)
                                       : decompress_page(0, raw + offset, body.size() - offset, values_size);
  page.set_values(std::move(values), 0, h.encoding, dictionary, count_present(page, leaf), leaf.type);
}

// Puts one (repetition, definition, value) entry into the row's JSON for this leaf (Dremel's
// record assembly, one leaf at a time; leaves are merged per row afterwards).
void place_entry(json& row, const std::vector<SchemaNode>& nodes, const LeafColumn& leaf, std::uint32_t r, std::uint32_t d, json value) {
  json* loc = &row;
  for (std::size_t k = 0; k < leaf.path_nodes.size(); ++k) {
    const SchemaNode& n = nodes[static_cast<std::size_t>(leaf.path_nodes[k])];
    json* slot = loc;
    if (n.role == NodeRole::member) {
      if (slot->is_null()) *slot = json::object();
      if (!slot->is_object()) throw std::runtime_error("levels that do not fit the schema");
      slot = &(*slot)[n.element.name];
    }
    if (n.element.repetition == Repetition::repeated) {
      if (slot->is_null()) *slot = json::array();
      if (!slot->is_array()) throw std::runtime_error("levels that do not fit the schema");
      if (static_cast<std::uint32_t>(n.def_level) > d) return;  // an empty list
      if (static_cast<std::uint32_t>(n.rep_level) >= r) slot->push_back(nullptr);
      else if (slot->empty()) throw std::runtime_error("a repetition level continuing a list that has no element");
      slot = &slot->back();
    } else if (static_cast<std::uint32_t>(n.def_level) > d) {
      return;  // null here
    }
    if (k + 1 == leaf.path_nodes.size()) {
      *slot = std::move(value);
      return;
    }
    if (n.list_wrapper) {
      if (slot->is_null()) *slot = json::array();
    } else if (!n.element_passthrough && slot->is_null()) {
      *slot = json::object();
    }
    loc = slot;
  }
}

void deep_merge(json& into, json& from) {
  if (from.is_null()) return;
  if (into.is_null()) {
    into = std::move(from);
  } else if (into.is_object() && from.is_object()) {
    for (auto& item : from.items()) deep_merge(into[item.key()], item.value());
  } else if (into.is_array() && from.is_array()) {
    for (std::size_t i = 0; i < from.size(); ++i) {
      if (i < into.size()) deep_merge(into[i], from[i]);
      else into.push_back(std::move(from[i]));
    }
  }
}

}  // namespace

namespace {

// Reads the page header at `offset`: a small window first, widened while the header runs past it.
ParquetPageHeader read_page_header(std::ifstream& in, std::uint64_t offset, std::uint64_t remaining, const fs::path& file) {
  std::size_t window = static_cast<std::size_t>(std::min<std::uint64_t>(remaining, 1024));
  for (;;) {
    const std::string bytes = read_at(in, offset, window, file);
    try {
      return parse_page_header(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    } catch (const std::runtime_error& e) {
      if (window >= remaining) throw std::runtime_error(std::string("corrupt page header: ") + e.what());
      window = static_cast<std::size_t>(std::min<std::uint64_t>(remaining, static_cast<std::uint64_t>(window) * 16));
    }
  }
}

struct ChunkRange {
  std::uint64_t start = 0, size = 0;
};

ChunkRange chunk_range(const ParquetColumnChunk& chunk, std::uint64_t data_end) {
  if (chunk.external_file) throw std::runtime_error("the column chunk is in another file (ColumnChunk.file_path), not supported");
  std::int64_t start = chunk.data_page_offset;
  if (chunk.dictionary_page_offset && *chunk.dictionary_page_offset > 0 && *chunk.dictionary_page_offset < start)
    start = *chunk.dictionary_page_offset;
  if (start < 4 || chunk.total_compressed_size <= 0 || static_cast<std::uint64_t>(start) > data_end ||
      static_cast<std::uint64_t>(chunk.total_compressed_size) > data_end - static_cast<std::uint64_t>(start))
    throw std::runtime_error("the column chunk's offset " + std::to_string(start) + " and size " +
                             std::to_string(chunk.total_compressed_size) + " lie outside the file's data");
  return {static_cast<std::uint64_t>(start), static_cast<std::uint64_t>(chunk.total_compressed_size)};
}

// Walks one column chunk's entries; for each row (relative to the row group) that `wanted`
// holds, builds that leaf's part of the row into rows_out[row]. Returns the rows seen.
std::int64_t read_chunk(std::ifstream& in, const fs::path& file, std::uint64_t data_end, const ParquetColumnChunk& chunk,
                        const LeafColumn& leaf, const std::vector<SchemaNode>& nodes, const std::vector<std::int64_t>& wanted,
                        std::vector<json>& rows_out) {
  if (chunk.type != leaf.type.physical)
    throw std::runtime_error(std::string("the chunk's type ") + physical_type_name(chunk.type) + " differs from the schema's " +
                             physical_type_name(leaf.type.physical));
  const ChunkRange range = chunk_range(chunk, data_end);
  std::vector<json> dictionary;
  bool has_dictionary = false;
  std::int64_t values_seen = 0, row = -1;
  std::size_t want_index = 0;  // wanted[want_index] is the next wanted row at or after `row`
  json current;                 // the current wanted row's part
  const auto finish_row = [&] {
    if (row >= 0 && want_index < wanted.size() && wanted[want_index] == row) {
      deep_merge(rows_out[want_index], current);
      ++want_index;
    }
    current = json();
  };
  for (std::uint64_t pos = 0; pos < range.size && values_seen < chunk.num_values;) {
    const ParquetPageHeader h = read_page_header(in, range.start + pos, range.size - pos, file);
    const std::uint64_t body_size = static_cast<std::uint64_t>(h.compressed_size);
    if (h.header_bytes + body_size > range.size - pos) throw std::runtime_error("a page runs past its column chunk");
    if (body_size > kMaxPageBytes) throw std::runtime_error("a page of " + std::to_string(body_size) + " bytes");
    const std::string body = read_at(in, range.start + pos + h.header_bytes, static_cast<std::size_t>(body_size), file);
    pos += h.header_bytes + body_size;
    if (h.type == PageType::dictionary_page) {
      if (h.encoding != static_cast<std::int32_t>(Encoding::plain) && h.encoding != static_cast<std::int32_t>(Encoding::plain_dictionary))
        throw std::runtime_error(std::string("dictionary page encoding ") + encoding_name(h.encoding) + " (expected PLAIN)");
      const std::string bytes = decompress_page(chunk.codec, reinterpret_cast<const std::uint8_t*>(body.data()), body.size(),
                                                static_cast<std::size_t>(h.uncompressed_size));
      dictionary = decode_dictionary(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(),
                                     static_cast<std::size_t>(h.num_values), leaf.type);
      has_dictionary = true;
      continue;
    }
    if (h.type != PageType::data_page && h.type != PageType::data_page_v2) continue;  // index pages
    if (static_cast<std::size_t>(h.num_values) > kMaxPageValues) throw std::runtime_error("a page of " + std::to_string(h.num_values) + " values");
    DecodedPage page;
    page.count = static_cast<std::size_t>(h.num_values);
    if (h.type == PageType::data_page) decode_v1(page, h, body, chunk.codec, leaf, has_dictionary ? &dictionary : nullptr);
    else decode_v2(page, h, body, chunk.codec, leaf, has_dictionary ? &dictionary : nullptr);
    for (std::size_t i = 0; i < page.count; ++i) {
      const std::uint32_t r = page.rep.empty() ? 0 : page.rep[i];
      const std::uint32_t d = page.def.empty() ? static_cast<std::uint32_t>(leaf.max_def) : page.def[i];
      if (r > static_cast<std::uint32_t>(leaf.max_rep) || d > static_cast<std::uint32_t>(leaf.max_def))
        throw std::runtime_error("a level above the schema's maximum");
      if (r == 0) {
        finish_row();
        ++row;
        while (want_index < wanted.size() && wanted[want_index] < row) ++want_index;
      } else if (row < 0) {
        throw std::runtime_error("the first entry continues a row (repetition level > 0)");
      }
      const bool present = d == static_cast<std::uint32_t>(leaf.max_def);
      if (want_index < wanted.size() && wanted[want_index] == row) place_entry(current, nodes, leaf, r, d, present ? page.next() : json());
      else if (present) page.skip();
    }
    values_seen += h.num_values;
  }
  finish_row();
  if (values_seen != chunk.num_values)
    throw std::runtime_error("truncated: the column chunk holds " + std::to_string(values_seen) + " of its " + std::to_string(chunk.num_values) + " values");
  return row + 1;
}

}  // namespace

ParquetFile::ParquetFile(fs::path path) : path_(std::move(path)), footer_(std::make_unique<Footer>()) {
  std::ifstream in(path_, std::ios::binary);
  if (!in) fail(path_, "cannot read");
  std::error_code ec;
  const std::uint64_t size = fs::file_size(path_, ec);
  if (ec || size < 12) fail(path_, "truncated: " + std::to_string(size) + " bytes, not a parquet file (expected PAR1 ... footer PAR1)");
  const std::string head = read_at(in, 0, 4, path_), tail = read_at(in, size - 8, 8, path_);
  if (head != "PAR1" || tail.compare(4, 4, "PAR1") != 0)
    fail(path_, tail.compare(4, 4, "PARE") == 0 ? "an encrypted parquet file (not supported)"
                                                 : "not a parquet file or truncated (expected the magic PAR1 at both ends)");
  std::uint32_t footer_len = 0;
  std::memcpy(&footer_len, tail.data(), 4);
  if (footer_len == 0 || footer_len > size - 12 || footer_len > kMaxFooterBytes)
    fail(path_, "corrupt footer length " + std::to_string(footer_len) + " in a file of " + std::to_string(size) + " bytes");
  footer_->data_end = size - 8 - footer_len;
  const std::string footer = read_at(in, footer_->data_end, footer_len, path_);
  try {
    footer_->meta = parse_file_metadata(reinterpret_cast<const std::uint8_t*>(footer.data()), footer.size());
  } catch (const std::runtime_error& e) {
    fail(path_, std::string("corrupt footer: ") + e.what());
  }
  const ParquetFileMetadata& meta = footer_->meta;
  if (meta.schema.empty()) fail(path_, "corrupt footer: no schema");
  if (build_node(footer_->nodes, meta.schema, 0, -1, 0, path_) != meta.schema.size())
    fail(path_, "corrupt footer: schema elements left over after the root's children");
  std::vector<int> node_path;
  collect_leaves(footer_->nodes, 0, node_path, footer_->leaves);
  std::int64_t total = 0;
  for (const ParquetRowGroup& g : meta.row_groups) {
    if (g.num_rows < 0 || g.num_rows > (std::int64_t{1} << 40) || g.columns.size() != footer_->leaves.size())
      fail(path_, "corrupt footer: a row group with " + std::to_string(g.columns.size()) + " columns for " +
                      std::to_string(footer_->leaves.size()) + " leaves, or a bad row count");
    for (std::size_t c = 0; c < g.columns.size(); ++c) {
      std::string dotted;
      for (const auto& part : g.columns[c].path) dotted += (dotted.empty() ? "" : ".") + part;
      if (dotted != footer_->leaves[c].dotted)
        fail(path_, "corrupt footer: column chunk '" + dotted + "' where the schema has '" + footer_->leaves[c].dotted + "'");
    }
    total += g.num_rows;
  }
  if (total != meta.num_rows)
    fail(path_, "corrupt footer: the row groups hold " + std::to_string(total) + " rows, the file says " + std::to_string(meta.num_rows));
}

ParquetFile::~ParquetFile() = default;
ParquetFile::ParquetFile(ParquetFile&&) noexcept = default;
ParquetFile& ParquetFile::operator=(ParquetFile&&) noexcept = default;

std::int64_t ParquetFile::num_rows() const { return footer_->meta.num_rows; }
std::size_t ParquetFile::num_row_groups() const { return footer_->meta.row_groups.size(); }

std::vector<std::string> ParquetFile::column_names() const {
  std::vector<std::string> names;
  for (int c : footer_->nodes[0].children) names.push_back(footer_->nodes[static_cast<std::size_t>(c)].element.name);
  return names;
}

std::vector<ParquetLeafInfo> ParquetFile::leaves() const {
  std::vector<ParquetLeafInfo> out;
  for (const LeafColumn& l : footer_->leaves) out.push_back({l.dotted, l.type.physical, l.type.text});
  return out;
}

std::vector<json> ParquetFile::read_rows(const std::vector<std::int64_t>& rows, const std::vector<std::string>& columns) const {
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i] < 0 || rows[i] >= num_rows() || (i > 0 && rows[i] <= rows[i - 1]))
      throw std::logic_error("ParquetFile::read_rows: rows must be ascending, distinct and in range");
  std::vector<json> out(rows.size(), json::object());
  std::ifstream in(path_, std::ios::binary);
  if (!in) fail(path_, "cannot read");
  std::int64_t group_start = 0;
  for (const ParquetRowGroup& g : footer_->meta.row_groups) {
    const auto first = std::lower_bound(rows.begin(), rows.end(), group_start);
    const auto last = std::lower_bound(rows.begin(), rows.end(), group_start + g.num_rows);
    if (first != last) {
      std::vector<std::int64_t> wanted;
      for (auto it = first; it != last; ++it) wanted.push_back(*it - group_start);
      std::vector<json> part(wanted.size());
      for (std::size_t c = 0; c < footer_->leaves.size(); ++c) {
        const LeafColumn& leaf = footer_->leaves[c];
        const std::string& top = footer_->nodes[static_cast<std::size_t>(leaf.path_nodes.front())].element.name;
        if (std::find(columns.begin(), columns.end(), top) == columns.end()) continue;
        try {
          if (leaf.under_map) throw std::runtime_error("a MAP column (not supported; expected structs and lists)");
          const std::int64_t seen = read_chunk(in, path_, footer_->data_end, g.columns[c], leaf, footer_->nodes, wanted, part);
          if (seen != g.num_rows)
            throw std::runtime_error("the column chunk holds " + std::to_string(seen) + " rows, its row group " + std::to_string(g.num_rows));
        } catch (const InvalidInput&) {
          throw;
        } catch (const std::exception& e) {
          fail(path_, "column '" + leaf.dotted + "': " + e.what());
        }
      }
      for (std::size_t k = 0; k < wanted.size(); ++k) out[static_cast<std::size_t>(first - rows.begin()) + k] = std::move(part[k]);
    }
    group_start += g.num_rows;
  }
  return out;
}

}  // namespace encbench::parquet
