#!/usr/bin/env python3
"""HammerDB's and stampede's like statements side by side: CPU per execution, the median over
each tool's runs, from the statement log of `bench/tpcc_server_cost.py --hammerdb-cli
--statement-cpu --statement-log FILE` (each run's statements under a `round R TOOL N vu` line:
procedure, executions, CPU us per execution, text).

The two tools' procedures write the same statement a little differently (HammerDB's capitals,
stampede's `ORDER BY`s and extra counters), so each statement is named by its procedure and a
pattern both texts match.

Usage: bench/tpcc_statement_compare.py FILE
"""
import re
import statistics
import sys
from collections import defaultdict

SHAPES = [
    ("neword", "customer and warehouse", r"SELECT c_discount"),
    ("neword", "district d_next_o_id", r"UPDATE district SET d_next_o_id"),
    ("neword", "orders INSERT", r"(?i)INSERT INTO orders"),
    ("neword", "new_order INSERT", r"(?i)INSERT INTO new_order"),
    ("neword", "the items' prices", r"array_agg ?\( ?i_price"),
    ("neword", "stock UPDATE", r"WITH stock_update"),
    ("neword", "order_line INSERT", r"INSERT INTO order_line"),
    ("payment", "warehouse UPDATE", r"UPDATE warehouse"),
    ("payment", "district d_ytd", r"UPDATE district SET d_ytd"),
    ("payment", "count by name", r"SELECT count\(c_(last|id)\) FROM customer"),
    ("payment", "by-name cursor", r"SELECT c_(first|id), c_(middle|first), c_(id|middle), c_street_1"),
    ("payment", "customer by id", r"SELECT c_(first|last), c_(middle|first), c_(last|middle), c_street_1"),
    ("payment", "customer UPDATE, good credit", r"UPDATE customer SET c_balance = \w+ - p_h_amount"
                                                r"(, c_ytd_payment = \S+ \+ p_h_amount, c_payment_cnt = \S+ \+ \$\d+)? WHERE"),
    ("payment", "customer UPDATE, bad credit", r"UPDATE customer SET c_balance = .*c_data ="),
    ("payment", "history INSERT", r"INSERT INTO history"),
    ("ostat", "count by name", r"SELECT count\(c_id\) FROM customer"),
    ("ostat", "by-name cursor", r"SELECT c_balance, c_first, c_middle, c_id"),
    ("ostat", "customer by id", r"SELECT c_balance, c_first, c_middle, c_last"),
    ("ostat", "latest order", r"SELECT o_id, o_carrier_id"),
    ("ostat", "order lines", r"SELECT ol_i_id"),
    ("delivery", "new_order DELETE", r"DELETE FROM new_order"),
    ("delivery", "orders UPDATE", r"UPDATE orders SET o_carrier_id"),
    ("delivery", "order_line UPDATE", r"UPDATE order_line SET ol_delivery_d"),
    ("delivery", "customer UPDATE", r"UPDATE customer SET c_balance = (COALESCE|c_balance \+)"),
    ("slev", "count of low stock", r"(?i)SELECT COUNT\(DISTINCT"),
]


def read_runs(path):
    """{(tool, vu): [{(procedure, shape): [executions, CPU us]} per run]}"""
    runs = defaultdict(list)
    run = None
    for number, line in enumerate(open(path), 1):
        header = re.match(r"round \d+ (\w+) (\d+) vu", line)
        if header:
            run = defaultdict(lambda: [0, 0.0])
            runs[(header.group(1), int(header.group(2)))].append(run)
            continue
        try:
            procedure, executions, cpu_us, text = line[:9].strip(), int(line[10:19]), float(line[20:29]), line[30:]
        except ValueError:
            sys.exit(f"{path}:{number}: not a statement line of a --statement-log")
        if run is None:
            sys.exit(f"{path}:{number}: a statement before the first `round R TOOL N vu` line")
        for owner, shape, pattern in SHAPES:
            if procedure == owner and re.search(pattern, text):
                run[(owner, shape)][0] += executions
                run[(owner, shape)][1] += executions * cpu_us
                break
    return runs


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    runs = read_runs(sys.argv[1])
    for vu in sorted({vu for _, vu in runs}):
        print(f"\n{vu} virtual user(s): CPU us per execution, median of the runs")
        print(f"{'':40} {'hammerdb':>9} {'stampede':>9} {'ratio':>6}")
        for owner, shape, _ in SHAPES:
            medians = []
            for tool in ("hammerdb", "stampede"):
                values = [run[(owner, shape)][1] / run[(owner, shape)][0]
                          for run in runs.get((tool, vu), []) if run[(owner, shape)][0]]
                medians.append(statistics.median(values) if values else float("nan"))
            ratio = medians[1] / medians[0] if medians[0] else float("nan")
            print(f"{owner + ': ' + shape:40} {medians[0]:9.1f} {medians[1]:9.1f} {ratio:6.2f}")


if __name__ == "__main__":
    main()
