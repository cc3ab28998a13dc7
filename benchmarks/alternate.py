"""Wall times of shell commands run by turns: `alternate.py ROUNDS CMD [CMD ...]`.

Each round runs every command once, in order, so a machine that slows down or speeds up
affects all of them alike; prints each command's median and 10th percentile, and its ratio
to the first command's median.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    rounds, commands = int(sys.argv[1]), sys.argv[2:]
    times: dict[str, list[float]] = {command: [] for command in commands}
    for command in commands:  # warm the file cache
        subprocess.run(command, shell=True, capture_output=True, check=False)
    for _ in range(rounds):
        for command in commands:
            started = time.perf_counter()
            subprocess.run(command, shell=True, capture_output=True, check=False)
            times[command].append(time.perf_counter() - started)
    base = statistics.median(times[commands[0]])
    for command in commands:
        median = statistics.median(times[command])
        p10 = sorted(times[command])[rounds // 10]
        print(f"{median * 1000:7.0f} ms  p10 {p10 * 1000:5.0f}  x{median / base:.2f}  {command}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
