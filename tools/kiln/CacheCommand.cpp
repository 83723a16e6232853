// `kiln cache {list,show,export,import,merge,gc} [--cache db] [--json]`: the tuner's SQLite cache.
//   list                 one line per measurement
//   show MODEL_HASH      the measurements of one model (a prefix is enough)
//   export FILE          every row as JSON lines (to move results between machines)
//   import FILE          rows from an export (a row for an existing key replaces it)
//   merge OTHER.db       rows of another cache this one lacks
//   gc                   delete rows measured by another kiln version
// list, show and export read an existing cache without changing it; import creates one; merge
// and gc need one. import and merge are one transaction each: concurrent imports and tunes
// sharing the file never lose a row.
#include "compiler/support/Files.h"
#include "compiler/support/Text.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelLoading.h"
#include "tuner/Cache.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <iostream>

namespace kiln::cli {

using support::printable;

Runner addCacheCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("cache", "Inspect and move the tuning cache");
  auto path = std::make_shared<std::string>();
  auto action = std::make_shared<std::string>(), arg = std::make_shared<std::string>();
  cmd->add_option("action", *action, "list | show | export | import | merge | gc | prune")
      ->required()
      ->check(CLI::IsMember({"list", "show", "export", "import", "merge", "gc", "prune"}));
  cmd->add_option("arg", *arg, "MODEL_HASH (show), FILE (export/import), OTHER.db (merge)");
  cmd->add_option("--cache", *path, "Cache file (default $XDG_DATA_HOME/kiln/tune-cache.db)");
  auto json = std::make_shared<bool>(false), byEnv = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "list, show: print a JSON document (each measurement as export writes it)");
  cmd->add_flag("--env", *byEnv,
                "list: one line per environment (GPU, driver, kiln version...) the measurements were made in");
  auto olderThan = std::make_shared<double>(-1);
  auto envName = std::make_shared<std::string>();
  cmd->add_option("--older-than", *olderThan, "prune: the measurements made more than this many days ago")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--environment", *envName, "prune: the measurements of this environment (as list --env prints it)");
  return [=]() -> int {
    if (!*cmd) return -1;
    std::string err;
    const std::string &a = *action;
    auto fail = [&](const std::string &msg) {
      std::cerr << "kiln: error: cache " << a << ": " << msg << "\n";
      return 2;
    };
    if ((a == "export" || a == "import" || a == "merge" || a == "show") && arg->empty())
      return fail(a == "show" ? "needs a model hash (prefix)" : "needs a file");
    if (a == "prune" && *olderThan < 0 && envName->empty())
      return fail("needs --older-than DAYS and/or --environment ENV (cache gc drops other kiln versions)");
    if (a != "prune" && (*olderThan >= 0 || !envName->empty()))
      return fail("--older-than and --environment are prune's");
    std::string db = path->empty() ? tuner::defaultCachePath(err) : *path;
    if (db.empty()) return fail(err);
    // An import's file is read before the cache is touched: a bad file changes nothing.
    std::vector<tuner::CacheRow> rows;
    if (a == "import") {
      std::string text;
      if (!support::readFile(*arg, text, err, "export file", uint64_t(1) << 32)) return fail(err);
      if (!tuner::rowsFromJsonLines(text, rows, err)) return fail(*arg + ": " + err);
    }
    using Open = tuner::Cache::Open;
    Open mode = a == "import"                               ? Open::Create
                : a == "merge" || a == "gc" || a == "prune" ? Open::Existing
                                                            : Open::ReadOnly;
    auto cache = tuner::Cache::open(db, err, mode);
    if (!cache) return fail(err);
    if (a == "import") {
      if (!cache->storeAll(rows, err)) return fail(err);
      std::printf("imported %zu measurements\n", rows.size());
      return 0;
    }
    if (a == "list" || a == "show" || a == "export") {
      if (!cache->rows(rows, err, a == "show" ? *arg : "")) return fail(err);
      if (a == "export") {
        // The cache's own files are inputs: exporting onto them would destroy it.
        if (!support::writeFileAtomically(*arg, tuner::rowsToJsonLines(rows), err, {db, db + "-wal", db + "-shm"}))
          return fail(err);
        std::printf("exported %zu measurements to %s\n", rows.size(), printable(*arg).c_str());
        return 0;
      }
      if (*byEnv) {  // per environment: how many, the newest
        std::map<std::string, std::pair<int64_t, std::string>> envs;
        for (const tuner::CacheRow &r : rows) {
          auto &[count, newest] = envs[r.key.environment];
          ++count, newest = std::max(newest, r.m.created);
        }
        if (*json) {
          nlohmann::json list = nlohmann::json::array();
          for (auto &[env, cn] : envs)
            list.push_back({{"environment", env}, {"count", cn.first}, {"newest", cn.second}});
          std::cout << jsonText({{"cache", cache->path()}, {"environments", list}}) << "\n";
          return 0;
        }
        std::printf("%s: %zu measurements in %zu environment%s\n", printable(cache->path()).c_str(), rows.size(),
                    envs.size(), envs.size() == 1 ? "" : "s");
        for (auto &[env, cn] : envs)
          std::printf("%6lld  newest %s  %s\n", (long long)cn.first, support::printableLine(cn.second).c_str(),
                      support::printableLine(env).c_str());
        return 0;
      }
      if (*json) {
        nlohmann::json list = nlohmann::json::array();
        for (const tuner::CacheRow &r : rows) list.push_back(tuner::rowToJson(r));
        std::cout << nlohmann::json{{"cache", cache->path()}, {"count", rows.size()}, {"measurements", list}}.dump(2)
                  << "\n";
        return 0;
      }
      std::printf("%s: %zu measurements\n", printable(cache->path()).c_str(), rows.size());
      for (auto &r : rows) {
        std::printf("%s %-12s %9.3f ms  %s\n", printable(r.key.modelHash.substr(0, 12)).c_str(),
                    support::printableLine(r.m.status).c_str(), r.m.medianMs,
                    r.key.route.empty() ? "(default route)" : support::printableLine(r.key.route).c_str());
        if (a == "show") {
          std::printf("    shapes '%s', measured %s, %lld runs, p90 %.3f ms\n    env %s\n",
                      support::printableLine(r.key.shapes).c_str(), support::printableLine(r.m.created).c_str(),
                      (long long)r.m.runs, r.m.p90Ms, support::printableLine(r.key.environment).c_str());
          if (!r.m.reason.empty()) std::printf("    reason: %s\n", support::printableLine(r.m.reason).c_str());
          if (!r.m.metrics.empty()) std::printf("    accuracy: %s\n", support::printableLine(r.m.metrics).c_str());
        }
      }
      return 0;
    }
    int64_t n = 0;
    if (a == "prune") {
      std::string before;
      if (*olderThan >= 0) {
        char buf[32];
        // (at most 100,000 days back: far past any measurement, and time_t arithmetic stays defined)
        std::time_t t = std::time(nullptr) - std::time_t(std::min(*olderThan, 1e5) * 86400);
        const std::tm *utc = std::gmtime(&t);
        if (!utc || !std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", utc)) return fail("--older-than: bad time");
        before = buf;
      }
      if (!cache->prune(before, *envName, n, err)) return fail(err);
      std::printf("deleted %lld measurements\n", (long long)n);
      return 0;
    }
    bool ok = a == "merge" ? cache->merge(*arg, n, err) : cache->gc(KILN_VERSION, n, err);
    if (!ok) return fail(err);
    std::printf(a == "merge" ? "merged %lld measurements\n" : "deleted %lld measurements of other kiln versions\n",
                (long long)n);
    return 0;
  };
}

}  // namespace kiln::cli
