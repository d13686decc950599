#include "harness/parquet/metadata.hpp"

#include <stdexcept>

#include "harness/parquet/thrift_compact.hpp"

namespace encbench::parquet {

const char* codec_name(std::int32_t codec) {
  static const char* const kNames[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
  return codec >= 0 && codec < 8 ? kNames[codec] : "unknown";
}

const char* encoding_name(std::int32_t encoding) {
  static const char* const kNames[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED", "DELTA_BINARY_PACKED",
                                       "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
  return encoding >= 0 && encoding < 10 ? kNames[encoding] : "unknown";
}

const char* physical_type_name(std::int32_t type) {
  static const char* const kNames[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  return type >= 0 && type < 8 ? kNames[type] : "unknown";
}

namespace {

void expect(ThriftType got, ThriftType want, const char* field) {
  const bool both_bool = (got == ThriftType::bool_true || got == ThriftType::bool_false) &&
                         (want == ThriftType::bool_true || want == ThriftType::bool_false);
  if (got != want && !both_bool) throw std::runtime_error(std::string("footer field ") + field + " has the wrong thrift type");
}

// Reads a list<struct> field, one element at a time through read_one.
template <class ReadOne>
void read_struct_list(ThriftCompactReader& in, ThriftType type, const char* field, ReadOne&& read_one) {
  expect(type, ThriftType::list, field);
  const ThriftListHeader list = in.read_list_header();
  if (list.element_type != ThriftType::structure) throw std::runtime_error(std::string(field) + " is not a list of structs");
  for (std::size_t i = 0; i < list.size; ++i) read_one();
}

ParquetSchemaElement read_schema_element(ThriftCompactReader& in) {
  ParquetSchemaElement e;
  in.read_struct([&](std::int16_t id, ThriftType t) {
    switch (id) {
      case 1: expect(t, ThriftType::i32, "SchemaElement.type"); e.type = in.read_i32(); break;
      case 2: expect(t, ThriftType::i32, "SchemaElement.type_length"); e.type_length = in.read_i32(); break;
      case 3: {
        expect(t, ThriftType::i32, "SchemaElement.repetition_type");
        const std::int32_t r = in.read_i32();
        if (r < 0 || r > 2) throw std::runtime_error("schema: repetition_type " + std::to_string(r));
        e.repetition = static_cast<Repetition>(r);
        break;
      }
      case 4: expect(t, ThriftType::binary, "SchemaElement.name"); e.name = in.read_binary(); break;
      case 5: expect(t, ThriftType::i32, "SchemaElement.num_children"); e.num_children = in.read_i32(); break;
      case 6: expect(t, ThriftType::i32, "SchemaElement.converted_type"); e.converted_type = in.read_i32(); break;
      case 10:  // LogicalType: a union, the set field's id names the type
        expect(t, ThriftType::structure, "SchemaElement.logicalType");
        in.read_struct([&](std::int16_t kind, ThriftType kt) {
          e.logical_string |= kind == 1;
          e.logical_map |= kind == 2;
          e.logical_list |= kind == 3;
          in.skip(kt);
        });
        break;
      default: in.skip(t);
    }
  });
  return e;
}

ParquetColumnChunk read_column_chunk(ThriftCompactReader& in) {
  ParquetColumnChunk c;
  bool has_meta = false;
  in.read_struct([&](std::int16_t id, ThriftType t) {
    if (id == 1) {
      in.skip(t);
      c.external_file = true;
    } else if (id == 3) {
      expect(t, ThriftType::structure, "ColumnChunk.meta_data");
      has_meta = true;
      in.read_struct([&](std::int16_t mid, ThriftType mt) {
        switch (mid) {
          case 1: expect(mt, ThriftType::i32, "ColumnMetaData.type"); c.type = in.read_i32(); break;
          case 3: {
            expect(mt, ThriftType::list, "ColumnMetaData.path_in_schema");
            const ThriftListHeader list = in.read_list_header();
            if (list.element_type != ThriftType::binary) throw std::runtime_error("path_in_schema is not a list of strings");
            for (std::size_t i = 0; i < list.size; ++i) c.path.push_back(in.read_binary());
            break;
          }
          case 4: expect(mt, ThriftType::i32, "ColumnMetaData.codec"); c.codec = in.read_i32(); break;
          case 5: expect(mt, ThriftType::i64, "ColumnMetaData.num_values"); c.num_values = in.read_i64(); break;
          case 7: expect(mt, ThriftType::i64, "ColumnMetaData.total_compressed_size"); c.total_compressed_size = in.read_i64(); break;
          case 9: expect(mt, ThriftType::i64, "ColumnMetaData.data_page_offset"); c.data_page_offset = in.read_i64(); break;
          case 11: expect(mt, ThriftType::i64, "ColumnMetaData.dictionary_page_offset"); c.dictionary_page_offset = in.read_i64(); break;
          default: in.skip(mt);
        }
      });
    } else {
      in.skip(t);
    }
  });
  if (!has_meta) throw std::runtime_error("a column chunk without meta_data");
  return c;
}

ParquetRowGroup read_row_group(ThriftCompactReader& in) {
  ParquetRowGroup g;
  in.read_struct([&](std::int16_t id, ThriftType t) {
    if (id == 1) read_struct_list(in, t, "RowGroup.columns", [&] { g.columns.push_back(read_column_chunk(in)); });
    else if (id == 3) { expect(t, ThriftType::i64, "RowGroup.num_rows"); g.num_rows = in.read_i64(); }
    else in.skip(t);
  });
  return g;
}

}  // namespace

ParquetFileMetadata parse_file_metadata(const std::uint8_t* data, std::size_t size) {
  ThriftCompactReader in(data, size);
  ParquetFileMetadata meta;
  in.read_struct([&](std::int16_t id, ThriftType t) {
    if (id == 2) read_struct_list(in, t, "FileMetaData.schema", [&] { meta.schema.push_back(read_schema_element(in)); });
    else if (id == 3) { expect(t, ThriftType::i64, "FileMetaData.num_rows"); meta.num_rows = in.read_i64(); }
    else if (id == 4) read_struct_list(in, t, "FileMetaData.row_groups", [&] { meta.row_groups.push_back(read_row_group(in)); });
    else in.skip(t);
  });
  return meta;
}

ParquetPageHeader parse_page_header(const std::uint8_t* data, std::size_t size) {
  ThriftCompactReader in(data, size);
  ParquetPageHeader h;
  bool has_type = false;
  in.read_struct([&](std::int16_t id, ThriftType t) {
    switch (id) {
      case 1: {
        expect(t, ThriftType::i32, "PageHeader.type");
        const std::int32_t type = in.read_i32();
        if (type < 0 || type > 3) throw std::runtime_error("page type " + std::to_string(type));
        h.type = static_cast<PageType>(type);
        has_type = true;
        break;
      }
      case 2: expect(t, ThriftType::i32, "PageHeader.uncompressed_page_size"); h.uncompressed_size = in.read_i32(); break;
      case 3: expect(t, ThriftType::i32, "PageHeader.compressed_page_size"); h.compressed_size = in.read_i32(); break;
      case 5:  // DataPageHeader
      case 7:  // DictionaryPageHeader
        expect(t, ThriftType::structure, "PageHeader.data_page_header");
        in.read_struct([&](std::int16_t fid, ThriftType ft) {
          if (fid == 1) { expect(ft, ThriftType::i32, "num_values"); h.num_values = in.read_i32(); }
          else if (fid == 2) { expect(ft, ThriftType::i32, "encoding"); h.encoding = in.read_i32(); }
          else in.skip(ft);
        });
        break;
      case 8:  // DataPageHeaderV2
        expect(t, ThriftType::structure, "PageHeader.data_page_header_v2");
        in.read_struct([&](std::int16_t fid, ThriftType ft) {
          switch (fid) {
            case 1: expect(ft, ThriftType::i32, "num_values"); h.num_values = in.read_i32(); break;
            case 3: expect(ft, ThriftType::i32, "num_rows"); h.num_rows = in.read_i32(); break;
            case 4: expect(ft, ThriftType::i32, "encoding"); h.encoding = in.read_i32(); break;
            case 5: expect(ft, ThriftType::i32, "definition_levels_byte_length"); h.definition_levels_bytes = in.read_i32(); break;
            case 6: expect(ft, ThriftType::i32, "repetition_levels_byte_length"); h.repetition_levels_bytes = in.read_i32(); break;
            case 7: expect(ft, ThriftType::bool_true, "is_compressed"); h.is_compressed = in.read_bool(ft); break;
            default: in.skip(ft);
          }
        });
        break;
      default: in.skip(t);
    }
  });
  if (!has_type) throw std::runtime_error("a page header without its type");
  if (h.uncompressed_size < 0 || h.compressed_size < 0 || h.num_values < 0 || h.num_rows < 0 ||
      h.definition_levels_bytes < 0 || h.repetition_levels_bytes < 0)
    throw std::runtime_error("a page header with a negative size or count");
  h.header_bytes = in.consumed();
  return h;
}

}  // namespace encbench::parquet
