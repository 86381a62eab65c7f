#include "sim/program/program_file.h"

#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>

#include "sim/common/error.h"

namespace tessera::sim {

namespace {

constexpr char kMagic[8] = {'T', 'E', 'S', 'S', 'P', 'R', 'G', '1'};
constexpr std::uint64_t kMaxRecordBytes = std::uint64_t{1} << 34;  // 16 GiB: anything larger is damage

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_gzip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open file", path));
  std::array<unsigned char, 2> b{};
  in.read(reinterpret_cast<char*>(b.data()), 2);
  return in.gcount() == 2 && b[0] == 0x1f && b[1] == 0x8b;
}

// Records of a binary program, read one at a time.
class BinaryReader {
 public:
  explicit BinaryReader(const std::string& path) : path_(path), f_(gzopen(path.c_str(), "rb")) {
    if (!f_) throw Error(fmt::format("{}: cannot open file", path));
    char magic[sizeof kMagic];
    if (!read(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof kMagic) != 0)
      throw ProgramError(fmt::format("{}: not a tessera binary program (it does not start with {})", path,
                                     std::string(kMagic, sizeof kMagic)));
  }
  ~BinaryReader() { gzclose(f_); }
  BinaryReader(const BinaryReader&) = delete;
  BinaryReader& operator=(const BinaryReader&) = delete;

  // The next record, or false at the end of the file.
  bool next(Json& out) {
    unsigned char len[8];
    const int got = gzread(f_, len, sizeof len);
    if (got == 0 && gzeof(f_)) {
      // every record read, but the stream has no end (its last bytes, the gzip trailer with the
      // checksum, are missing): the file was cut short, and what it held is unchecked
      int err = Z_OK;
      gzerror(f_, &err);
      if (err == Z_BUF_ERROR) fail("the file is cut short: its compressed stream ends without the gzip trailer");
      return false;
    }
    if (got != static_cast<int>(sizeof len)) fail("the file ends inside a record's length");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = n << 8 | len[i];
    if (n > kMaxRecordBytes) fail(fmt::format("a record of {} bytes (the file is damaged)", n));
    buf_.resize(n);
    if (!read(buf_.data(), n)) fail("the file ends inside a record");
    try {
      out = Json::from_msgpack(buf_);
    } catch (const Json::exception& e) {
      fail(fmt::format("a record is not valid MessagePack: {}", e.what()));
    }
    ++records_;
    return true;
  }

 private:
  bool read(void* dst, std::uint64_t n) {
    auto* p = static_cast<char*>(dst);
    while (n > 0) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::uint64_t>(n, 1u << 30));
      const int got = gzread(f_, p, chunk);
      if (got <= 0) {
        int err = Z_OK;
        const char* msg = gzerror(f_, &err);
        if (err != Z_OK && err != Z_BUF_ERROR) fail(fmt::format("cannot decompress: {}", msg));
        return false;
      }
      p += got;
      n -= static_cast<unsigned>(got);
    }
    return true;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw ProgramError(fmt::format("{}: record {}: {}", path_, records_, what));
  }

  std::string path_;
  gzFile f_;
  std::vector<std::uint8_t> buf_;
  std::uint64_t records_ = 0;
};

// The first record of a binary program: the top level and the core ids.
std::vector<std::uint32_t> header_ids(const Json& header, const std::string& path) {
  if (!header.is_object() || header.size() != 2 || !header.contains("program") || !header.contains("core_ids") ||
      !header["core_ids"].is_array())
    throw ProgramError(fmt::format("{}: record 0: expected {{\"program\": ..., \"core_ids\": [...]}}", path));
  std::vector<std::uint32_t> ids;
  for (const auto& v : header["core_ids"]) {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > 0xffffffffu)
      throw ProgramError(fmt::format("{}: record 0: core_ids: {} is not a core id", path, v.dump()));
    ids.push_back(v.get<std::uint32_t>());
  }
  return ids;
}

// A binary program, record by record: on_header(top level, core_ids record, ids) once, then
// on_core(entry) for each listed core; a file that ends early or goes on is an error.
void read_binary(const std::string& path,
                 const std::function<void(const Json&, const Json&, const std::vector<std::uint32_t>&)>& on_header,
                 const std::function<void(const Json&)>& on_core) {
  BinaryReader in(path);
  Json header;
  if (!in.next(header)) throw ProgramError(fmt::format("{}: the file holds no program", path));
  const std::vector<std::uint32_t> ids = header_ids(header, path);
  on_header(header["program"], header["core_ids"], ids);
  Json entry;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!in.next(entry)) throw ProgramError(fmt::format("{}: the file ends after {} of its {} cores", path, i, ids.size()));
    on_core(entry);
  }
  if (in.next(entry)) throw ProgramError(fmt::format("{}: records after the last of its {} cores", path, ids.size()));
}

}  // namespace

ProgramFormat program_format_for(const std::string& path) {
  return ends_with(path, ".tpb") ? ProgramFormat::Binary : ProgramFormat::Json;
}

Program load_program(const std::string& path, const Config& cfg, const ProgramOptions& options) {
  if (!is_gzip(path)) return parse_program(read_json_file(path), path, cfg, options);
  std::optional<ProgramParser> parser;
  read_binary(
      path, [&](const Json& top, const Json& ids, const auto&) { parser.emplace(top, path, cfg, options, &ids); },
      [&](const Json& entry) { parser->add_core(entry); });
  return parser->finish();
}

struct ProgramWriter::Impl {
  std::string path;
  ProgramFormat format;
  std::ofstream json;
  gzFile gz = nullptr;
  bool first = true;
  std::vector<std::uint8_t> bytes;

  void write(const void* data, std::size_t n) {
    if (format == ProgramFormat::Json) {
      json.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
      if (!json) throw Error(fmt::format("{}: write failed", path));
      return;
    }
    const auto* p = static_cast<const char*>(data);
    while (n > 0) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30));
      if (gzwrite(gz, p, chunk) != static_cast<int>(chunk)) throw Error(fmt::format("{}: write failed", path));
      p += chunk;
      n -= chunk;
    }
  }
  void record(const Json& j) {
    bytes.clear();
    Json::to_msgpack(j, bytes);
    unsigned char len[8];
    std::uint64_t n = bytes.size();
    for (auto& b : len) { b = static_cast<unsigned char>(n & 0xff); n >>= 8; }
    write(len, sizeof len);
    write(bytes.data(), bytes.size());
  }
};

ProgramWriter::ProgramWriter(const std::string& path, ProgramFormat format) : p_(std::make_unique<Impl>()) {
  p_->path = path;
  p_->format = format;
  if (format == ProgramFormat::Json) {
    p_->json.open(path, std::ios::binary);
    if (!p_->json) throw Error(fmt::format("{}: cannot write file", path));
  } else {
    p_->gz = gzopen(path.c_str(), "wb6");
    if (!p_->gz) throw Error(fmt::format("{}: cannot write file", path));
    p_->write(kMagic, sizeof kMagic);
  }
}

ProgramWriter::~ProgramWriter() {
  if (p_->gz) gzclose(p_->gz);
}

void ProgramWriter::header(const Json& top, const std::vector<std::uint32_t>& core_ids) {
  if (p_->format == ProgramFormat::Binary) {
    p_->record(Json{{"program", top}, {"core_ids", core_ids}});
    return;
  }
  std::string s = top.dump();  // "{...}": the cores go in before the closing brace
  s.pop_back();
  s += s.size() > 1 ? ",\n\"cores\":[" : "\"cores\":[";
  p_->write(s.data(), s.size());
}

void ProgramWriter::core(const Json& entry) {
  if (p_->format == ProgramFormat::Binary) {
    p_->record(entry);
    return;
  }
  const std::string s = (p_->first ? "\n" : ",\n") + entry.dump();
  p_->first = false;
  p_->write(s.data(), s.size());
}

void ProgramWriter::close() {
  if (p_->format == ProgramFormat::Json) {
    p_->write("\n]}\n", 4);
    p_->json.close();
    if (!p_->json) throw Error(fmt::format("{}: write failed", p_->path));
    return;
  }
  const int rc = gzclose(p_->gz);
  p_->gz = nullptr;
  if (rc != Z_OK) throw Error(fmt::format("{}: write failed", p_->path));
}

void convert_program(const std::string& in, const std::string& out) {
  ProgramWriter w(out, program_format_for(out));
  if (is_gzip(in)) {
    read_binary(
        in, [&](const Json& top, const Json&, const std::vector<std::uint32_t>& ids) { w.header(top, ids); },
        [&](const Json& entry) { w.core(entry); });
  } else {
    Json doc = read_json_file(in);
    if (!doc.is_object() || !doc.contains("cores") || !doc["cores"].is_array())
      throw ProgramError(fmt::format("{}: expected a program: an object with a \"cores\" array", in));
    Json cores = std::move(doc["cores"]);
    doc.erase("cores");
    std::vector<std::uint32_t> ids;
    for (std::size_t i = 0; i < cores.size(); ++i) {
      const Json& c = cores[i];
      if (!c.is_object() || !c.contains("core") || !c["core"].is_number_unsigned() || c["core"].get<std::uint64_t>() > 0xffffffffu)
        throw ProgramError(fmt::format("{}: cores[{}]: expected {{\"core\": <core id>, \"items\": [...]}}", in, i));
      ids.push_back(c["core"].get<std::uint32_t>());
    }
    w.header(doc, ids);
    for (const auto& c : cores) w.core(c);
  }
  w.close();
}

}  // namespace tessera::sim
