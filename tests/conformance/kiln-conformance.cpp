// Runs the ONNX backend node tests (libonnx-testdata) on the CPU reference evaluator.
//
//   kiln-conformance [--data DIR] [--filter SUBSTR] [--report docs/conformance.md]
//                    [--expect tests/conformance/passing.txt] [--update-expect] [--jobs N]
//
// Each test runs in a forked child with a time limit, so a crash or hang in one kernel is that
// test's failure, not the suite's. With --expect, every test listed must still pass (exit 1
// otherwise): the list is the regression gate. ONNX's own tolerance is used: rtol 1e-3, atol 1e-7.
#include "compiler/eval/Evaluator.h"
#include "compiler/importer/Importer.h"
#include "compiler/importer/TensorProto.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include "onnx/onnx-ml.pb.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

enum class Status { Pass, Fail, Unsupported, Error };
const char *statusName(Status s) {
  switch (s) {
    case Status::Pass: return "pass";
    case Status::Fail: return "fail";
    case Status::Unsupported: return "unsupported";
    default: return "error";
  }
}

struct Result {
  std::string test, op;
  Status status = Status::Error;
  std::string detail;
};

bool exists(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

std::vector<std::string> listTests(const std::string &dir, const std::string &filter) {
  std::vector<std::string> r;
  DIR *d = ::opendir(dir.c_str());
  if (!d) return r;
  while (dirent *e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.rfind("test_", 0) == 0 && n.find(filter) != std::string::npos && exists(dir + "/" + n + "/model.onnx"))
      r.push_back(n);
  }
  ::closedir(d);
  std::sort(r.begin(), r.end());
  return r;
}

// The op a test exercises: its single node's type, or the types of a multi-node graph.
std::string opOfTest(const std::string &modelPath) {
  onnx::ModelProto m;
  if (!kiln::loadModelFile(modelPath, m).empty()) return "?";
  std::set<std::string> types;
  for (auto &n : m.graph().node()) types.insert(n.op_type());
  if (m.graph().node_size() == 1) return m.graph().node(0).op_type();
  std::string s;
  for (auto &t : types) s += (s.empty() ? "" : "+") + t;
  return s.size() > 40 ? "(multi-node)" : s;
}

std::string compare(const kiln::ops::Tensor &got, const kiln::ops::Tensor &want, int k) {
  std::string label = "output #" + std::to_string(k);
  if (got.dtype != want.dtype)
    return label + " dtype " + kiln::ops::dtypeName(got.dtype) + ", expected " + kiln::ops::dtypeName(want.dtype);
  if (got.shape != want.shape)
    return label + " shape " + kiln::ops::shapeString(got.shape) + ", expected " + kiln::ops::shapeString(want.shape);
  for (int64_t i = 0; i < want.size(); ++i) {
    if (want.isFloating()) {
      double g = got.f[i], w = want.f[i];
      if (std::isnan(w) && std::isnan(g)) continue;
      if (std::isinf(w) && g == w) continue;
      if (!(std::fabs(g - w) <= 1e-7 + 1e-3 * std::fabs(w))) {
        std::ostringstream os;
        os << label << "[" << i << "] = " << g << ", expected " << w;
        return os.str();
      }
    } else if (got.i[i] != want.i[i]) {
      return label + "[" + std::to_string(i) + "] = " + std::to_string(got.i[i]) + ", expected " +
             std::to_string(want.i[i]);
    }
  }
  return "";
}

// ONNX 1.12's test data stores bfloat16 tensors as uint16 bit patterns (numpy has no bf16).
void reinterpretBf16(kiln::ops::Tensor &t, int declared) {
  if (declared != static_cast<int>(kiln::ops::DType::BF16) || t.dtype != kiln::ops::DType::U16) return;
  std::vector<uint8_t> bytes = kiln::ops::tensorToBytes(t);
  t = kiln::ops::tensorFromBytes(kiln::ops::DType::BF16, t.shape, bytes.data(), bytes.size());
}

Result runOne(const std::string &dataDir, const std::string &test) {
  Result r{test, "", Status::Error, ""};
  std::string dir = dataDir + "/" + test;
  onnx::ModelProto proto;
  if (auto err = kiln::loadModelFile(dir + "/model.onnx", proto); !err.empty()) {
    r.detail = err;
    return r;
  }
  std::set<std::string> inits;
  for (auto &i : proto.graph().initializer()) inits.insert(i.name());
  std::vector<const onnx::ValueInfoProto *> graphInputs;
  for (auto &i : proto.graph().input())
    if (!inits.count(i.name())) graphInputs.push_back(&i);

  std::string set = dir + "/test_data_set_0";
  std::vector<kiln::ops::Tensor> inputs, want, got;
  for (size_t k = 0; k < graphInputs.size(); ++k) {
    kiln::ops::Tensor t;
    if (auto err = kiln::loadTensorFile(set + "/input_" + std::to_string(k) + ".pb", t); !err.empty()) {
      r.detail = err;
      r.status = Status::Unsupported;
      return r;
    }
    reinterpretBf16(t, graphInputs[k]->type().tensor_type().elem_type());
    inputs.push_back(std::move(t));
  }
  for (int k = 0; exists(set + "/output_" + std::to_string(k) + ".pb"); ++k) {
    kiln::ops::Tensor t;
    if (auto err = kiln::loadTensorFile(set + "/output_" + std::to_string(k) + ".pb", t); !err.empty()) {
      r.detail = err;
      r.status = Status::Unsupported;
      return r;
    }
    if (k < proto.graph().output_size()) reinterpretBf16(t, proto.graph().output(k).type().tensor_type().elem_type());
    want.push_back(std::move(t));
  }

  mlir::MLIRContext ctx;
  kiln::ImportResult imp = kiln::importModelFile(dir + "/model.onnx", ctx);
  bool needsConstants = !imp.error.empty() && kiln::ops::needsConstant(imp.error);
  for (const std::string &u : imp.unsupported) needsConstants = needsConstants || kiln::ops::needsConstant(u);
  if (needsConstants) {
    // kiln compiles static shapes: a test that feeds a shape, axes or scales tensor as a graph
    // input is imported with its inputs bound as build-time constants (as TensorRT does with
    // shape tensors) and then evaluated like any other.
    kiln::ImportOptions opts;
    for (size_t k = 0; k < graphInputs.size(); ++k) opts.constantInputs[graphInputs[k]->name()] = inputs[k];
    imp = kiln::importModelFile(dir + "/model.onnx", ctx, opts);
    inputs.clear();
    r.detail = "inputs bound as constants";
  }
  if (!imp.error.empty()) {
    r.status = Status::Unsupported;
    r.detail = "import: " + imp.error;
    return r;
  }
  if (!imp.unsupported.empty()) {
    r.status = Status::Unsupported;
    r.detail = imp.unsupported.front();
    return r;
  }
  auto f = (*imp.module).lookupSymbol<mlir::func::FuncOp>("main");
  if (auto err = kiln::evaluateFunction(f, inputs, got)) {
    r.status = Status::Fail;
    r.detail = "evaluate: " + *err;
    return r;
  }
  if (got.size() != want.size()) {
    r.status = Status::Fail;
    r.detail = "produced " + std::to_string(got.size()) + " outputs, expected " + std::to_string(want.size());
    return r;
  }
  for (size_t k = 0; k < want.size(); ++k)
    if (auto d = compare(got[k], want[k], k); !d.empty()) {
      r.status = Status::Fail;
      r.detail = d;
      return r;
    }
  r.status = Status::Pass;
  return r;
}

// Runs `test` in a child; the child writes "status\tdetail" to a pipe.
struct Child {
  pid_t pid;
  int fd;
  std::string test;
  std::chrono::steady_clock::time_point start;
};

Child spawn(const std::string &dataDir, const std::string &test) {
  int p[2];
  if (::pipe(p) != 0) {
    std::perror("pipe");
    std::exit(2);
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    ::alarm(60);  // a hung kernel dies here; the parent reports the signal
    Result r = runOne(dataDir, test);
    std::string msg = std::string(statusName(r.status)) + "\t" + r.detail;
    for (char &c : msg)
      if (c == '\n' || c == '|') c = ' ';
    if (::write(p[1], msg.data(), msg.size()) < 0) _exit(3);
    _exit(0);
  }
  ::close(p[1]);
  return {pid, p[0], test, std::chrono::steady_clock::now()};
}

Result reap(Child &c) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(c.fd, buf, sizeof buf)) > 0) out.append(buf, n);
  ::close(c.fd);
  int st = 0;
  ::waitpid(c.pid, &st, 0);
  Result r{c.test, "", Status::Error, ""};
  if (WIFSIGNALED(st)) {
    r.detail = std::string("crashed: ") + (WTERMSIG(st) == SIGALRM ? "timed out after 60 s" : strsignal(WTERMSIG(st)));
    return r;
  }
  size_t tab = out.find('\t');
  std::string s = out.substr(0, tab);
  r.detail = tab == std::string::npos ? "" : out.substr(tab + 1);
  r.status = s == "pass"          ? Status::Pass
             : s == "fail"        ? Status::Fail
             : s == "unsupported" ? Status::Unsupported
                                  : Status::Error;
  return r;
}

std::string mdEscape(std::string s) {
  if (s.size() > 160) s = s.substr(0, 157) + "...";
  std::string r;
  for (char c : s) r += c == '|' ? '/' : c;
  return r;
}

}  // namespace

int main(int argc, char **argv) {
  std::string dataDir = "/usr/share/libonnx-testdata/data/node", filter, report, expect;
  bool update = false;
  int jobs = 2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "kiln-conformance: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--data")
      dataDir = next();
    else if (a == "--filter")
      filter = next();
    else if (a == "--report")
      report = next();
    else if (a == "--expect")
      expect = next();
    else if (a == "--update-expect")
      update = true;
    else if (a == "--jobs")
      jobs = std::max(1, std::atoi(next().c_str()));
    else {
      std::cerr << "kiln-conformance: unknown argument " << a << "\n";
      return 2;
    }
  }
  std::vector<std::string> tests = listTests(dataDir, filter);
  if (tests.empty()) {
    std::cerr << "kiln-conformance: no tests under " << dataDir << " (is libonnx-testdata installed?)\n";
    return 2;
  }
  std::vector<Result> results;
  std::vector<Child> running;
  size_t next = 0;
  while (next < tests.size() || !running.empty()) {
    while (running.size() < static_cast<size_t>(jobs) && next < tests.size())
      running.push_back(spawn(dataDir, tests[next++]));
    Child c = running.front();
    running.erase(running.begin());
    results.push_back(reap(c));
  }
  std::sort(results.begin(), results.end(), [](const Result &a, const Result &b) { return a.test < b.test; });
  for (auto &r : results) r.op = opOfTest(dataDir + "/" + r.test + "/model.onnx");

  std::map<Status, int> totals;
  std::map<std::string, std::map<Status, int>> perOp;
  for (auto &r : results) {
    totals[r.status]++;
    perOp[r.op][r.status]++;
  }
  std::printf("ONNX node tests: %zu run, %d pass, %d fail, %d unsupported, %d error\n", results.size(),
              totals[Status::Pass], totals[Status::Fail], totals[Status::Unsupported], totals[Status::Error]);

  if (!report.empty()) {
    std::ofstream md(report);
    md << "# ONNX conformance of the CPU reference evaluator\n\n"
       << "Generated by `kiln-conformance --report` (see tests/conformance/) from the " << results.size()
       << " backend node tests of libonnx-testdata (onnx 1.12). Comparison: ONNX's "
       << "tolerance, |got − want| ≤ 1e-7 + 1e-3·|want|, exact for integers and bools.\n\n"
       << "**" << totals[Status::Pass] << " pass, " << totals[Status::Fail] << " fail, " << totals[Status::Unsupported]
       << " unsupported, " << totals[Status::Error] << " error.**\n\n"
       << "`unsupported`: the model uses an op, dtype or feature kiln does not import (string tensors, "
       << "sequences, training ops…). `fail`: imported and evaluated, wrong result or an evaluation "
       << "error. `error`: the test process crashed or timed out.\n\n"
       << "## Per op\n\n| op | pass | fail | unsupported | error |\n|---|---|---|---|---|\n";
    for (auto &[op, m] : perOp)
      md << "| " << mdEscape(op) << " | " << m[Status::Pass] << " | " << m[Status::Fail] << " | "
         << m[Status::Unsupported] << " | " << m[Status::Error] << " |\n";
    md << "\n## Per test\n\n| test | status | detail |\n|---|---|---|\n";
    for (auto &r : results)
      md << "| " << r.test << " | " << statusName(r.status) << " | " << mdEscape(r.detail) << " |\n";
  }

  int rc = 0;
  if (!expect.empty()) {
    std::set<std::string> passing;
    for (auto &r : results)
      if (r.status == Status::Pass) passing.insert(r.test);
    if (update) {
      std::ofstream out(expect);
      out << "# ONNX node tests that pass on the CPU reference evaluator (kiln-conformance --update-expect).\n";
      for (auto &t : passing) out << t << "\n";
      std::printf("wrote %zu passing tests to %s\n", passing.size(), expect.c_str());
    } else {
      std::ifstream in(expect);
      if (!in) {
        std::cerr << "kiln-conformance: cannot read " << expect << "\n";
        return 2;
      }
      int regressions = 0, listed = 0;
      std::set<std::string> ran;
      for (auto &r : results) ran.insert(r.test);
      for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        if (!filter.empty() && line.find(filter) == std::string::npos) continue;
        ++listed;
        if (!passing.count(line)) {
          auto it = std::find_if(results.begin(), results.end(), [&](const Result &r) { return r.test == line; });
          std::printf("REGRESSION %s: %s\n", line.c_str(),
                      it == results.end() ? "test not found"
                                          : (std::string(statusName(it->status)) + ": " + it->detail).c_str());
          ++regressions;
        }
      }
      std::printf("%d passed, %d failed\n", listed - regressions, regressions);
      if (regressions) rc = 1;
    }
  }
  return rc;
}
