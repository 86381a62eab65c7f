#pragma once
// Program files in two forms, one document model (docs/program.md):
//
// - JSON, the reference: small hand-written programs, and what the documentation shows.
// - Binary (`.tpb`): the same document as a gzip stream (zlib) of records, each a 64-bit
//   little-endian length and a MessagePack encoding (nlohmann::json's): first
//   {"program": <the top level without "cores">, "core_ids": [...]}, then one record per core,
//   {"core": id, "items": [...]}, in the order core_ids lists them. MessagePack because it is
//   the JSON data model itself, so the binary form converts losslessly both ways and is checked
//   by the same code with the same errors; gzip because a program's items repeat their keys and
//   peers, which it removes, and zlib is everywhere. A reader holds one core's record at a time.
//
// The format of a file is told by its first bytes (gzip's magic), not by its name; writers pick
// by extension: `.tpb` is binary, anything else JSON.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/common/json_reader.h"
#include "sim/config/config.h"
#include "sim/program/program.h"

namespace tessera::sim {

enum class ProgramFormat { Json, Binary };

// By extension, for writing: ".tpb" is binary, anything else JSON.
ProgramFormat program_format_for(const std::string& path);

// Reads, validates and converts a program file of either form (told by its content).
Program load_program(const std::string& path, const Config& config, const ProgramOptions& options = {});

// Writes a program one core at a time: header() once (the top level without "cores"), then
// core() for every core in the order listed, then close(). Errors name the file.
class ProgramWriter {
 public:
  ProgramWriter(const std::string& path, ProgramFormat format);
  ~ProgramWriter();
  void header(const Json& top_level, const std::vector<std::uint32_t>& core_ids);
  void core(const Json& entry);
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

// Copies a program file into the other form (or the same), core by core when the input is
// binary. Checks the document's shape (a top level with an array of core entries), not its
// contents: validation needs a config (`tessera program check`).
void convert_program(const std::string& in, const std::string& out);

}  // namespace tessera::sim
