# lit configuration for kiln's IR tests. Importer tests run `kiln import` on text-format ONNX;
# pass tests run `kiln-opt` on kiln IR. Both check the output with FileCheck.
import os
import lit.formats

config.name = "kiln"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".onnxtxt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_bin_dir, "..", "tests", "lit-out")
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.substitutions.append(("%kiln-opt", os.path.join(config.kiln_bin_dir, "kiln-opt")))
config.substitutions.append(("%kiln", os.path.join(config.kiln_bin_dir, "kiln")))
config.substitutions.append(("FileCheck", config.filecheck))
config.substitutions.append(("%models", os.path.join(config.kiln_source_dir, "models")))
config.environment["PATH"] = os.path.dirname(config.filecheck) + os.pathsep + os.environ.get("PATH", "")
