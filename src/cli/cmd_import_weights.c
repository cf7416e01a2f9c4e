/* cmd_import_weights.c: attnsweep import-weights CHECKPOINT -o OUT.h5: hands over to
 * analysis/import_weights.py (numpy + h5py; no deep-learning framework), which reads the
 * safetensors checkpoint and writes the triples file of docs/matrices.md (docs/weights.md).
 * Exit codes are the script's: 0 done, 2 bad input (the tensor named), 3 I/O failure. */
#include "cli.h"

int as_cmd_import_weights(int argc, char **argv) {
  return as_cli_exec_script("import-weights", "import_weights.py", argc, argv);
}
