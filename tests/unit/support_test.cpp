// compiler/support: the one writer of output files (checks, atomic replacement, clean-up on
// failure and on signals), the reader of input files, terminal-safe text and bounded patterns.
#include "compiler/support/Files.h"
#include "compiler/support/Pattern.h"
#include "compiler/support/Text.h"

#include "tests/unit/TempDirTest.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace kiln::support;

namespace {

class FilesTest : public TempDirTest {
 protected:
  std::string contents(const std::string &name) const {
    std::ifstream in(path(name));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // The names in the folder (to find leftover temporaries).
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (auto &e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

TEST_F(FilesTest, WritesAndReplacesKeepingTheMode) {
  std::string error;
  ASSERT_TRUE(writeFileAtomically(path("out"), std::string("first"), error)) << error;
  EXPECT_EQ(contents("out"), "first");
  ASSERT_EQ(::chmod(path("out").c_str(), 0600), 0);
  ASSERT_TRUE(writeFileAtomically(path("out"), std::string("second"), error)) << error;
  EXPECT_EQ(contents("out"), "second");
  struct stat st {};
  ASSERT_EQ(::stat(path("out").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(listing(), std::vector<std::string>{"out"});
}

TEST_F(FilesTest, RefusesDevicesFifosFoldersAndInputs) {
  std::string error;
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  fs::create_directory(path("folder"));
  std::ofstream(path("model.onnx")) << "model";
  fs::create_hard_link(path("model.onnx"), path("hard.onnx"));
  fs::create_symlink("model.onnx", path("soft.onnx"));
  struct Case {
    std::string out, message;
  } cases[] = {
      {"/dev/null", "it is a character device (kiln replaces regular files only)"},
      {path("fifo"), "it is a FIFO"},
      {path("folder"), "it is a directory"},
      {path("model.onnx"), "it is the input '" + path("model.onnx") + "' of this command"},
      {path("hard.onnx"), "(the same file)"},
      {path("soft.onnx"), "(the same file)"},
  };
  for (const Case &c : cases) {
    AtomicFile f;
    EXPECT_FALSE(f.open(c.out, error, {path("model.onnx")})) << c.out;
    EXPECT_NE(error.find("will not write '" + c.out + "'"), std::string::npos) << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
  }
  EXPECT_EQ(contents("model.onnx"), "model");
  EXPECT_EQ(fileKind("/dev/null"), "a character device");
  // An output that does not exist yet, or an input that does not: fine.
  EXPECT_EQ(checkOutputPath(path("new"), {path("model.onnx"), "", path("missing")}), "");
}

// A write that fails (here: the file-size limit, as a full disk would) leaves the destination as
// it was and no temporary behind.
TEST_F(FilesTest, AFailedWriteChangesNothing) {
  std::ofstream(path("out")) << "old";
  pid_t kid = fork();
  if (kid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {4096, 4096};
    setrlimit(RLIMIT_FSIZE, &lim);
    std::string error, big(1 << 20, 'x');
    AtomicFile f;
    bool ok = f.open(path("out"), error) && (f.write(big), true) && f.commit(error);
    _exit(!ok && error.find("File too large") != std::string::npos ? 0 : 1);
  }
  int status = 0;
  waitpid(kid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(contents("out"), "old");
  EXPECT_EQ(listing(), std::vector<std::string>{"out"});
}

// Ctrl-C or a kill while the file is written removes the temporary (a 283 MB *.tmp.PID was left
// behind) and leaves the destination alone; the signal still ends the process.
TEST_F(FilesTest, ASignalRemovesTheTemporary) {
  for (int sig : {SIGINT, SIGTERM}) {
    std::ofstream(path("out")) << "old";
    pid_t kid = fork();
    if (kid == 0) {
      std::string error;
      AtomicFile f;
      if (!f.open(path("out"), error)) _exit(3);
      f.write(std::string(1 << 16, 'x'));
      raise(sig);
      _exit(4);  // (not reached)
    }
    int status = 0;
    waitpid(kid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
    EXPECT_EQ(contents("out"), "old");
    EXPECT_EQ(listing(), std::vector<std::string>{"out"});
  }
}

// A program's own handler (kiln tune's Ctrl-C) is left in place; the destructor cleans up.
TEST_F(FilesTest, AProgramsOwnHandlerStays) {
  static volatile sig_atomic_t caught = 0;
  auto previous = std::signal(SIGINT, [](int) { caught = 1; });
  {
    std::string error;
    AtomicFile f;
    ASSERT_TRUE(f.open(path("out"), error)) << error;
    raise(SIGINT);
    EXPECT_EQ(caught, 1);
  }
  std::signal(SIGINT, previous);
  EXPECT_TRUE(listing().empty());
}

TEST_F(FilesTest, ReadsRegularFilesOnly) {
  std::string out, error;
  std::ofstream(path("f")) << "hello";
  ASSERT_TRUE(readFile(path("f"), out, error)) << error;
  EXPECT_EQ(out, "hello");
  EXPECT_FALSE(readFile(path("f"), out, error, "model file", 4));
  EXPECT_NE(error.find("cannot read model file '" + path("f") + "': it has 5 bytes, more than the limit of 4"),
            std::string::npos)
      << error;
  EXPECT_FALSE(readFile(dir_.string(), out, error, "engine file"));
  EXPECT_NE(error.find("it is a directory, not a regular file"), std::string::npos) << error;
  EXPECT_FALSE(readFile("/dev/zero", out, error));
  EXPECT_NE(error.find("it is a character device"), std::string::npos) << error;
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(readFile(path("fifo"), out, error));  // no writer: must not block
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_NE(error.find("it is a FIFO"), std::string::npos) << error;
  EXPECT_FALSE(readFile(path("missing"), out, error));
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;
}

TEST(Text, EscapesControlCharactersOnly) {
  EXPECT_EQ(printable("plain /model/conv1:0"), "plain /model/conv1:0");
  EXPECT_EQ(printable("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(printable("bell\x07 del\x7f"), "bell\\x07 del\\x7f");
  EXPECT_EQ(printable("gr\xC3\xB6\xC3\x9F"
                      "e \xE2\x86\x92"),
            "gr\xC3\xB6\xC3\x9F"
            "e \xE2\x86\x92");  // UTF-8 stays
  EXPECT_EQ(printable("c1 \xC2\x9B"
                      "31m"),
            "c1 \\xc2\\x9b31m");                           // CSI as a C1 character
  EXPECT_EQ(printable("bad \xFF\xC3"), "bad \\xff\\xc3");  // not UTF-8
  EXPECT_EQ(printable("two\nlines\tx"), "two\nlines\tx");
  EXPECT_EQ(printableLine("two\nlines\tx"), "two\\nlines\\tx");
}

TEST(Text, PrintableBufEscapesWholeLines) {
  std::ostringstream sink;
  {
    PrintableBuf buf(sink.rdbuf());
    std::ostream os(&buf);
    os << "name '"
       << "\xC3";  // a UTF-8 character split between two writes
    os.flush();
    EXPECT_EQ(sink.str(), "");  // (held until the line is complete)
    os << "\xB6\x1b[31m'\n"
       << "tail";
    os.flush();
    EXPECT_EQ(sink.str(), "name '\xC3\xB6\\x1b[31m'\n");
    buf.flushAll();
  }
  EXPECT_EQ(sink.str(), "name '\xC3\xB6\\x1b[31m'\ntail");
}

TEST(Pattern, LinearTimeAndBounded) {
  Pattern p;
  std::string error;
  ASSERT_TRUE(p.compile("gemm\\.tile=(128x128|64x128)", error)) << error;
  EXPECT_TRUE(p.fullMatch("gemm.tile=64x128", error));
  EXPECT_FALSE(p.fullMatch("xgemm.tile=64x128", error));
  // Catastrophic for a backtracking engine: instant here.
  ASSERT_TRUE(p.compile("(.*a){12}b", error)) << error;
  auto t0 = std::chrono::steady_clock::now();
  error.clear();
  EXPECT_FALSE(p.fullMatch(std::string(4000, 'a'), error));
  EXPECT_TRUE(error.empty());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  // A subject longer than the limit is an error, not a miss.
  EXPECT_FALSE(p.fullMatch(std::string(Pattern::kMaxSubjectBytes + 1, 'a'), error));
  EXPECT_NE(error.find("a name of 4097 bytes is longer than the 4096"), std::string::npos) << error;
  EXPECT_FALSE(p.compile(std::string(50000, '(') + "x" + std::string(50000, ')'), error));
  EXPECT_NE(error.find("regular expression of 100001 bytes is longer than the limit of 4096"), std::string::npos)
      << error;
  EXPECT_FALSE(p.compile("gemm\\.tile=(", error));
  EXPECT_NE(error.find("invalid regular expression"), std::string::npos) << error;
  EXPECT_FALSE(p.valid());
}

}  // namespace
