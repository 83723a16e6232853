// Writes the hand-made test engine (TestEngine.h) to a file, for c_api_test and example.c:
//   make_test_engine OUT.kiln [--cubin FILE] [--no-ptx] [--sm N] [--cuda-graph] [--dynamic | --profiles]
// --cubin adds a cubin for the target (e.g. from `ptxas -arch=sm_90`) next to the PTX;
// --no-ptx drops the PTX (a cubin-only engine); --sm retargets the engine (e.g. 100, to check
// that an sm_90 GPU refuses it); --cuda-graph sets the runtime.cuda_graph knob; --dynamic writes
// the engine with a dynamic n (makeDynamicAxpbEngine), --profiles with two profiles
// (makeTwoProfileAxpbEngine).
#include "TestEngine.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT.kiln [--cubin FILE] [--no-ptx] [--sm N] [--cuda-graph]\n", argv[0]);
    return 2;
  }
  kiln::rt::EngineDesc desc = kiln::rt::test::makeAxpbEngine();
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--dynamic") == 0 || std::strcmp(argv[i], "--profiles") == 0) {
      bool graph = desc.cudaGraph;
      desc = argv[i][2] == 'd' ? kiln::rt::test::makeDynamicAxpbEngine() : kiln::rt::test::makeTwoProfileAxpbEngine();
      desc.cudaGraph = graph;
    } else if (std::strcmp(argv[i], "--no-ptx") == 0) {
      desc.modules[0].ptx.clear();
    } else if (std::strcmp(argv[i], "--cuda-graph") == 0) {
      desc.cudaGraph = true;
    } else if (std::strcmp(argv[i], "--cubin") == 0 && i + 1 < argc) {
      std::ifstream in(argv[++i], std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "cannot read %s\n", argv[i]);
        return 1;
      }
      desc.modules[0].cubin.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } else if (std::strcmp(argv[i], "--sm") == 0 && i + 1 < argc) {
      desc.sm = std::atoi(argv[++i]);
      desc.arch = "sm_" + std::to_string(desc.sm);
    } else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  std::string problem = kiln::rt::checkEngineDesc(desc);
  if (!problem.empty()) {
    std::fprintf(stderr, "invalid engine: %s\n", problem.c_str());
    return 1;
  }
  std::vector<uint8_t> bytes = kiln::rt::writeEngine(desc);
  std::FILE* f = std::fopen(argv[1], "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  std::printf("wrote %s (%zu bytes)\n", argv[1], bytes.size());
  return 0;
}
