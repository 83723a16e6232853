// `kiln cache {list,show,export,import,merge,gc} [--cache db]`: the tuner's SQLite cache.
//   list                 one line per measurement
//   show MODEL_HASH      the measurements of one model (a prefix is enough)
//   export FILE          every row as JSON lines (to move results between machines)
//   import FILE          rows from an export (a row for an existing key replaces it)
//   merge OTHER.db       rows of another cache this one lacks
//   gc                   delete rows measured by another kiln version
#include "tools/kiln/Commands.h"
#include "tuner/Cache.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace kiln::cli {

Runner addCacheCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("cache", "Inspect and move the tuning cache");
  auto path = std::make_shared<std::string>();
  auto action = std::make_shared<std::string>(), arg = std::make_shared<std::string>();
  cmd->add_option("action", *action, "list | show | export | import | merge | gc")
      ->required()
      ->check(CLI::IsMember({"list", "show", "export", "import", "merge", "gc"}));
  cmd->add_option("arg", *arg, "MODEL_HASH (show), FILE (export/import), OTHER.db (merge)");
  cmd->add_option("--cache", *path, "Cache file (default $XDG_DATA_HOME/kiln/tune-cache.db)");
  return [=]() -> int {
    if (!*cmd) return -1;
    std::string err;
    if ((*action == "export" || *action == "import" || *action == "merge") && arg->empty()) {
      std::cerr << "kiln: error: cache " << *action << " needs a file\n";
      return 2;
    }
    auto cache = tuner::Cache::open(path->empty() ? tuner::defaultCachePath() : *path, err);
    if (!cache) {
      std::cerr << "kiln: error: " << err << "\n";
      return 2;
    }
    std::vector<tuner::CacheRow> rows;
    if (*action == "list" || *action == "show" || *action == "export") {
      if (!cache->rows(rows, err, *action == "show" ? *arg : "")) {
        std::cerr << "kiln: error: " << err << "\n";
        return 2;
      }
      if (*action == "export") {
        std::ofstream f(*arg);
        f << tuner::rowsToJsonLines(rows);
        if (!f) {
          std::cerr << "kiln: error: cannot write '" << *arg << "'\n";
          return 2;
        }
        std::printf("exported %zu measurements to %s\n", rows.size(), arg->c_str());
        return 0;
      }
      std::printf("%s: %zu measurements\n", cache->path().c_str(), rows.size());
      for (auto &r : rows) {
        std::printf("%s %-12s %9.3f ms  %s\n", r.key.modelHash.substr(0, 12).c_str(), r.m.status.c_str(), r.m.medianMs,
                    r.key.route.empty() ? "(default route)" : r.key.route.c_str());
        if (*action == "show") {
          std::printf("    shapes '%s', measured %s, %lld runs, p90 %.3f ms\n    env %s\n", r.key.shapes.c_str(), r.m.created.c_str(),
                      (long long)r.m.runs, r.m.p90Ms, r.key.environment.c_str());
          if (!r.m.reason.empty()) std::printf("    reason: %s\n", r.m.reason.c_str());
          if (!r.m.metrics.empty()) std::printf("    accuracy: %s\n", r.m.metrics.c_str());
        }
      }
      return 0;
    }
    if (*action == "import") {
      std::ifstream f(*arg);
      std::stringstream ss;
      ss << f.rdbuf();
      if (!f || !tuner::rowsFromJsonLines(ss.str(), rows, err)) {
        std::cerr << "kiln: error: " << *arg << ": " << (err.empty() ? "cannot read" : err) << "\n";
        return 2;
      }
      for (auto &r : rows)
        if (!cache->store(r.key, r.m, err)) {
          std::cerr << "kiln: error: " << err << "\n";
          return 2;
        }
      std::printf("imported %zu measurements\n", rows.size());
      return 0;
    }
    int64_t n = 0;
    bool ok = *action == "merge" ? cache->merge(*arg, n, err) : cache->gc(KILN_VERSION, n, err);
    if (!ok) {
      std::cerr << "kiln: error: " << err << "\n";
      return 2;
    }
    std::printf(*action == "merge" ? "merged %lld measurements\n" : "deleted %lld measurements of other kiln versions\n", (long long)n);
    return 0;
  };
}

}  // namespace kiln::cli
