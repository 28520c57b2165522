"""Apache Otava's change points in a CSV that `stampede export --format otava` wrote.

Usage: otava_changes.py CSV COLUMN...
Writes an Otava configuration with one csv test over CSV (time column `time`, the attributes
stampede writes, each COLUMN a higher-is-better metric), runs `otava analyze --output json`
and prints, per change, `<invocation attribute>\t<metric>\t<forward change percent>`.
PYTHONPATH must hold apache-otava (./test installs it into STAMPEDE_PYTHON_PEERS).
"""
import json
import os
import subprocess
import sys
import tempfile


def main():
    csv_path, columns = sys.argv[1], sys.argv[2:]
    metrics = "".join(f'      "{c}":\n        direction: 1\n' for c in columns)
    config = (
        "tests:\n  stampede:\n    type: csv\n"
        f"    file: {csv_path}\n    time_column: time\n"
        "    attributes: [invocation, tags, kernel]\n"
        f"    metrics:\n{metrics}"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(config)
    try:
        env = dict(os.environ, OTAVA_CONFIG=f.name)
        out = subprocess.run(
            [sys.executable, "-m", "otava.main", "analyze", "stampede", "--output", "json"],
            env=env, check=True, capture_output=True, text=True,
        ).stdout
    finally:
        os.unlink(f.name)
    for point in json.loads(out)["stampede"]:
        for change in point["changes"]:
            print(f'{point["attributes"]["invocation"]}\t{change["metric"]}\t'
                  f'{change["forward_change_percent"]}')


main()
