#pragma once
// Validation of the cost model on a whole model (docs/cost.md): the model is compiled with the
// cost model under test and simulated; every operator's predicted time is set beside its
// simulated time, per class (MAPE, R2), and end to end. Ranking, which plan selection depends
// on, is checked apart: for the costliest distinct operators of each class, candidate plans run
// alone on the simulator and Kendall's tau compares predicted with simulated order.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/cost/model.h"

namespace tessera::cost {

// One operator in the model, or one candidate plan of an operator run alone.
struct Row {
  std::string name, cls, plan;
  double predicted = 0, analytical = 0, simulated = 0;  // cycles
};

struct ClassSummary {
  std::size_t ops = 0;
  double mape = 0, r2 = 0, analytical_mape = 0;
  double kendall_tau = 0, analytical_tau = 0;
  std::size_t tau_ops = 0;
  bool calibrated = false;
};

struct Validation {
  std::vector<Row> ops;    // every operator of the compiled model
  std::vector<Row> ranks;  // the candidate plans run alone
  std::map<std::string, ClassSummary> classes;
  double predicted_cycles = 0, analytical_cycles = 0, simulated_cycles = 0;
};

struct ValidateOptions {
  std::size_t rank_ops_per_class = 3;  // distinct operators per class whose plans are ranked
  std::size_t plans_per_op = 6;        // candidate plans run per ranked operator
  std::uint64_t seed = 1;
  std::function<void(const std::string&)> progress;
};

Validation validate(const ir::Workload& w, const sim::Config& cfg, const compiler::CompileOptions& copt,
                    const ValidateOptions& o);

Json to_json(const Validation& v);
// A CSV field in double quotes (inner quotes doubled).
std::string csv_quote(const std::string& s);
// operator,class,plan,predicted_cycles,analytical_cycles,simulated_cycles
void write_csv(const std::string& path, const std::vector<Row>& rows);

}  // namespace tessera::cost
