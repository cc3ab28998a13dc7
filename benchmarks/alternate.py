"""Wall times of shell commands run by turns: `alternate ROUNDS CMD [CMD ...]`.

Each round runs every command once, in order, so a machine that slows down or speeds up
affects all of them alike; prints each command's median and 10th percentile, and its ratio
to the first command's median.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("rounds", type=int, help="how many times each command runs")
    parser.add_argument("commands", nargs="+", metavar="CMD", help="a shell command")
    args = parser.parse_args(argv)
    rounds, commands = args.rounds, args.commands
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


if __name__ == "__main__":
    main()
