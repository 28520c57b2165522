-- The starting data of examples/replay-missing-index.toml: a shop's orders, made by SQL rather
-- than dumped (a plain pg_dump file restores the same way). 200,000 orders of 20,000 customers.
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL);
INSERT INTO customers SELECT i, 'customer ' || i FROM generate_series(1, 20000) i;
CREATE TABLE orders (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer_id int NOT NULL REFERENCES customers,
    amount numeric(10, 2) NOT NULL,
    placed_at timestamptz NOT NULL
);
INSERT INTO orders (customer_id, amount, placed_at)
SELECT 1 + (i * 7919) % 20000, (i % 997) / 10.0, timestamptz '2026-01-01' + i * interval '1 minute'
FROM generate_series(1, 200000) i;
CREATE INDEX orders_customer_idx ON orders (customer_id);
