// The build-route tuner behind `kiln tune`: enumerates candidate routes from a route expression
// (Space.h), builds each engine in this process (sharing the NVRTC compile cache), measures it
// in an isolated child (`kiln run`, one per GPU of --devices, with a timeout), checks its
// outputs against a reference under accuracy constraints, and records every result in the
// SQLite cache (Cache.h). The winner is the fastest candidate that built, ran and was accurate.
//
// Searches: fast (the base route, then each knob's other values one at a time), full (every
// combination; refused above maxCandidates), mixed (fast, then every combination of the knobs
// whose flips beat the base), nodes (one profiled sweep per per-node knob value, then the route of
// each node's fastest value: Space.h). The reference is --reference outputs, or else the fp32 default
// route's outputs on the same GPU and inputs (computed once, kept beside the cache). A candidate
// whose engine equals an earlier one's but for the recorded route is not measured again (knobs
// that change nothing in this model), and a winner must beat the base route outside the
// run-to-run spread (its p90 below the base's min), else the base route stays the winner.
#pragma once

#include "tuner/Accuracy.h"
#include "tuner/Cache.h"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace kiln::tuner {

struct TuneOptions {
  std::string model, shapes;
  std::string routeExpression;
  std::string search = "fast";  // fast | mixed | full | nodes
  std::string accuracy;         // constraints; empty: by each candidate's precision
  std::string cachePath;        // empty: defaultCachePath()
  std::string reference;        // .npz of reference outputs (and maybe inputs)
  std::string inputs;           // .npz of inputs; empty: the reference's, else random
  std::string output;           // write the winner's engine here
  std::string calib;            // calibration file for routes with int8 products
  std::string arch = "sm_90";
  std::vector<int> devices = {0};
  int maxCandidates = 64, warmup = 10, iterations = 50;
  // --shard K/N: only the candidates at plan positions i with i % N == K - 1 (fast, full and nodes
  // searches: a nodes search's sweeps; each shard writes its own cache, `kiln cache merge` joins
  // them). N = 1: all.
  int shard = 1, shards = 1;
  double timeoutSeconds = 300, timeBudgetSeconds = 0;  // 0: no budget
  bool dryRun = false, readCache = true;
  // --from-cache: measure nothing and need no GPU: each candidate's measurement comes from the
  // cache (of `environment`, or of the only environment the cache has for this model and
  // inputs), candidates it lacks are reported as not_cached, and the winner is chosen (and
  // built with `output`) as after measuring.
  bool fromCache = false;
  std::string environment;
  bool allowExternalOutside = false;  // the model's external data may lie outside its folder
  std::string kilnVersion;
  std::function<void(const std::string &)> log;           // progress lines
  std::function<void(const struct Progress &)> progress;  // after every candidate's result
};

// Where a tune stands, after each candidate (for a progress bar).
struct Progress {
  size_t done = 0, total = 0, failed = 0;  // failed: anything but ok
  double bestMs = 0;                       // 0: no accurate candidate yet
  std::string bestRoute;
  double etaSeconds = -1;  // -1: not known yet
};

struct CandidateResult {
  std::string route;
  Measurement m;
  bool fromCache = false;
  double buildSeconds = 0;
  // The earlier candidate whose engine was byte-identical (the recorded route aside): this one
  // was not measured and has its measurement. -1: measured (or from the cache) itself.
  int sameAs = -1;
  // tuneWeighted: the median at each weighted shape (m then holds the weighted means).
  std::vector<double> shapeMs;
};

struct TuneReport {
  std::string error;                 // non-empty: the tune could not run (bad model, expression, cache...)
  std::vector<std::string> planned;  // candidate routes of the plan (mixed: its fast phase)
  std::string plannedNote;           // what the count means
  std::vector<std::string> notes;    // what the route expression selected but the plan leaves out
  double estimatedSeconds = 0;
  std::string environment;
  std::vector<CandidateResult> results;
  int best = -1, base = -1;  // indices into results
  size_t duplicates = 0;     // candidates not measured: the same engine as an earlier one
  // The fastest accurate candidate when its min..p90 overlaps the base route's (a tie in the
  // run-to-run spread, not a win): best is then the base route. -1: none.
  int notSignificant = -1;
  bool interrupted = false;
  double seconds = 0;
  // The cache keys' model and input parts (filled once the tune ran past planning), e.g. for a
  // cache written elsewhere.
  std::string modelHash, inputsKey;
};

TuneReport tune(const TuneOptions &options, const std::atomic<bool> &stop);

// Several shapes, each with a weight (kiln tune --weigh-shapes, e.g. the batch sizes a server sees
// and how often): one tune per shapes (its own reference, inputs and cache keys; the time budget
// split evenly), then each route the first one measured scored by the weighted mean of its
// times (median, min and p90 alike) and accepted only if accurate at every shapes; the winner and
// the significance rule as tune()'s. The options' output is not written.
struct WeightedShapes {
  std::string shapes;  // as --shapes
  double weight = 1;
};
TuneReport tuneWeighted(const TuneOptions &options, const std::vector<WeightedShapes> &shapes,
                        const std::atomic<bool> &stop);

// Fills report.best, base and notSignificant from its results (the fastest accurate candidate;
// the base route when that one's p90 is not below the base's min), logging a tie.
void chooseWinner(TuneReport &report, const std::string &baseRoute,
                  const std::function<void(const std::string &)> &log);

}  // namespace kiln::tuner
