#!/usr/bin/env python3
"""Measures the learning curves shipped in examples/curves/fashion-mnist-mlp.json: the MLP trained
for real on Fashion-MNIST by `strata run` (one worker, Adam, its default batch) for every
learning rate and layer widths below, the test accuracy after each epoch read back from the
results store (strata query --json). The file is in the strata-curves format (docs/search.md).

    tools/mlp_curves.py STRATA_BINARY OUTPUT.json [EPOCHS]

Each configuration trains with the same seed, so a rerun on the same machine and library gives
the same curves; another BLAS or core count may differ in the last digits.
"""
import json
import os
import platform
import subprocess
import sys
import tempfile

LEARNING_RATES = ["0.0001", "0.0003", "0.001", "0.003", "0.01"]
SIZES = ["784,32,10", "784,128,10", "784,256,10", "784,256,128,10"]


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    strata, output = sys.argv[1], sys.argv[2]
    epochs = int(sys.argv[3]) if len(sys.argv) == 4 else 10
    curves = []
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "curves.db")
        for sizes in SIZES:
            for lr in LEARNING_RATES:
                subprocess.run([strata, "run", "--model", "mlp", "--set", "sizes=" + sizes, "--set", "lr=" + lr,
                                "--epochs", str(epochs), "--no-pin", "--db", db],
                               check=True, stdout=subprocess.DEVNULL)
                rows = json.loads(subprocess.run([strata, "query", "--db", db, "--json"], check=True,
                                                 capture_output=True, text=True).stdout)["rows"]
                spec = {"sizes": sizes, "lr": lr}
                match = [r for r in rows if json.loads(r["spec"])["model"].get("sizes") == [int(s) for s in
                                                                                          sizes.split(",")]
                         and abs(json.loads(r["spec"])["optimizer"]["lr"] - float(lr)) < 1e-12]
                if len(match) != 1:
                    sys.exit("mlp_curves: expected one stored run for %s, found %d" % (spec, len(match)))
                accuracy = [round(e["test_accuracy"], 6) for e in json.loads(match[0]["accuracy"])]
                curves.append({"assignment": spec, "accuracy": accuracy})
                print("sizes=%s lr=%s: %s" % (sizes, lr, accuracy[-1]), file=sys.stderr)
    doc = {"format": "strata-curves", "schema_version": 1,
           "source": "strata run --model mlp --set sizes=S --set lr=L --epochs %d --no-pin (one worker, Adam, "
                     "seed 0) on Fashion-MNIST, test accuracy after each epoch; measured by tools/mlp_curves.py "
                     "on %s (%d cores)" % (epochs, platform.platform(), os.cpu_count()),
           "curves": curves}
    with open(output, "w") as f:
        f.write("{\"format\": \"strata-curves\", \"schema_version\": 1,\n \"source\": %s,\n \"curves\": [\n"
                % json.dumps(doc["source"]))
        f.write(",\n".join("  " + json.dumps(c) for c in curves))
        f.write("\n]}\n")


if __name__ == "__main__":
    main()
