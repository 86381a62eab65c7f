#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "sim/traffic/traffic.h"

namespace tessera::cli {

struct TrafficArgs {
  std::string config, model, pattern = "uniform", unit = "packets";
  std::vector<std::string> rate_texts;  // --rate as given (comma-separated, repeatable)
  std::vector<double> rates;            // parsed from it by traffic_cmd
  std::uint32_t sweep = 0;
  sim::TrafficSpec spec;
  bool hotspot_fraction_given = false;  // --hotspot-fraction given (it applies to --pattern hotspot only)
  std::string out, csv, plot;
};

void add_traffic_options(CLI::App* cmd, TrafficArgs& a);
// A config file with its mesh's level of detail set to `model` ("packet" or "flit"; empty: as
// the file says).
sim::Config load_config_at_level(const std::string& path, const std::string& model);
// `tessera traffic`: synthetic traffic at one rate or a sweep; a table, the results JSON, a CSV
// and a latency-throughput plot (docs/traffic.md).
int traffic_cmd(TrafficArgs a);

}  // namespace tessera::cli
