#pragma once
// Sweep specs (docs/sweep.md): a base config, axes over config fields (JSON pointers) and command
// options, expanded into points, each one run of a tessera subcommand.
#include <cstddef>
#include <string>
#include <vector>

#include "sim/common/json_reader.h"

namespace tessera::sweep {

// One swept quantity: a config field (`pointer`) or a command-line option (`option`).
struct Axis {
  std::string name;     // column name in results; a filter variable when the values are numbers
  std::string pointer;  // JSON pointer into the base config, or empty; a "*" segment: every element
  std::string option;   // command-line option ("--batch"), or empty
  std::vector<Json> values;
  std::vector<std::string> labels;  // what results record for each value (default: the value itself)
  std::string zip;      // axes sharing a zip group vary together (equal lengths); empty: cartesian
};

// The least address space a point can start in (the binary's libraries and thread stacks).
inline constexpr double kMinPointMemoryGb = 1.0;

struct Limits {
  double time_s = 3600;    // wall clock per point
  double memory_gb = 0;    // address space per point; 0: a share of this machine (see spec.cpp)
};

struct Spec {
  std::string path;         // the spec file
  std::string command;      // tessera subcommand run per point
  std::string config_path;  // base config, resolved against the spec's directory
  Json base_config;
  std::vector<Axis> axes;
  std::vector<std::string> args;  // fixed arguments after the swept ones
  std::string filter;             // muparser expression over numeric axes; empty: every point
  Limits limits;
};

// A point: one combination of axis values.
struct Point {
  std::size_t index = 0;     // position in the expansion (cartesian order, last axis fastest)
  Json values;               // axis name -> value
  Json config;               // the base config with the point's fields set
  std::vector<std::string> options;  // swept options and fixed args, in order
  std::string key;           // identity: config, command, options and tessera build (hex)
};

// Reads a spec (JSON, or YAML for .yaml/.yml). Errors name the file and the field.
Spec load_spec(const std::string& path);
Spec parse_spec(const Json& json, const std::string& path);

// All points that pass the filter, in expansion order. `build_id` identifies the tessera binary
// (points of another build are other points).
std::vector<Point> expand(const Spec& spec, const std::string& build_id);

// The subcommands a sweep can run: each takes --config and writes a results JSON with --out.
const std::vector<std::string>& sweep_commands();

}  // namespace tessera::sweep
