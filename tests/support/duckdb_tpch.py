"""TPC-H's queries on DuckDB, the independent engine of tests/tproch_duckdb.rs.

Loads dbgen's .tbl files from a directory into tables of TPC-H's own types (clause 1.4:
DECIMAL(15,2), DATE, CHAR/VARCHAR), optionally with PS_SUPPLYCOST rounded to a whole number
as HammerDB's MariaDB schema stores it, then runs the statements it reads as JSON on stdin
([[query number, [statement, ...]], ...]) and prints, as JSON, each query's rows of its last
SELECT: every value as text, numbers in full, dates as YYYY-MM-DD.

    PYTHONPATH=<duckdb> python3 duckdb_tpch.py TBL_DIR [--supplycost-int] < queries.json
"""
import json
import sys

import duckdb

TABLES = {
    "region": "r_regionkey INTEGER, r_name CHAR(25), r_comment VARCHAR(152)",
    "nation": "n_nationkey INTEGER, n_name CHAR(25), n_regionkey INTEGER, n_comment VARCHAR(152)",
    "supplier": "s_suppkey INTEGER, s_name CHAR(25), s_address VARCHAR(40), s_nationkey INTEGER,"
    " s_phone CHAR(15), s_acctbal DECIMAL(15,2), s_comment VARCHAR(101)",
    "customer": "c_custkey INTEGER, c_name VARCHAR(25), c_address VARCHAR(40), c_nationkey INTEGER,"
    " c_phone CHAR(15), c_acctbal DECIMAL(15,2), c_mktsegment CHAR(10), c_comment VARCHAR(117)",
    "part": "p_partkey INTEGER, p_name VARCHAR(55), p_mfgr CHAR(25), p_brand CHAR(10),"
    " p_type VARCHAR(25), p_size INTEGER, p_container CHAR(10), p_retailprice DECIMAL(15,2),"
    " p_comment VARCHAR(23)",
    "partsupp": "ps_partkey INTEGER, ps_suppkey INTEGER, ps_availqty INTEGER,"
    " ps_supplycost DECIMAL(15,2), ps_comment VARCHAR(199)",
    "orders": "o_orderkey BIGINT, o_custkey INTEGER, o_orderstatus CHAR(1),"
    " o_totalprice DECIMAL(15,2), o_orderdate DATE, o_orderpriority CHAR(15), o_clerk CHAR(15),"
    " o_shippriority INTEGER, o_comment VARCHAR(79)",
    "lineitem": "l_orderkey BIGINT, l_partkey INTEGER, l_suppkey INTEGER, l_linenumber INTEGER,"
    " l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2),"
    " l_tax DECIMAL(15,2), l_returnflag CHAR(1), l_linestatus CHAR(1), l_shipdate DATE,"
    " l_commitdate DATE, l_receiptdate DATE, l_shipinstruct CHAR(25), l_shipmode CHAR(10),"
    " l_comment VARCHAR(44)",
}


def text(value):
    if value is None:
        return None
    if hasattr(value, "isoformat"):
        return value.isoformat()[:10]
    return str(value)


def main():
    directory = sys.argv[1]
    supplycost_int = "--supplycost-int" in sys.argv[2:]
    con = duckdb.connect()
    for name, columns in TABLES.items():
        con.execute(f"CREATE TABLE {name} ({columns})")
        names = [c.strip().split()[0] for c in columns.split(",") if c.strip()[0].isalpha()]
        con.execute(
            f"INSERT INTO {name} SELECT * FROM read_csv('{directory}/{name}.tbl', delim='|',"
            f" header=false, quote='', escape='', columns={{"
            + ", ".join(f"'{n}': 'VARCHAR'" for n in names)
            + "})"
        )
    if supplycost_int:
        con.execute("UPDATE partsupp SET ps_supplycost = round(ps_supplycost)")
    answers = []
    for number, statements in json.load(sys.stdin):
        rows = []
        for statement in statements:
            result = con.execute(statement)
            if statement.lstrip().lower().startswith("select"):
                rows = [[text(v) for v in row] for row in result.fetchall()]
        answers.append([number, rows])
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
