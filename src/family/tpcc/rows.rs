//! The seam between the loader's rows and the way a table receives them: the loader writes
//! each row's values through `RowWriter` (PostgreSQL's binary COPY, or a MySQL/MariaDB
//! multi-row INSERT's literals) into a `TableSink` that sends them in chunks, one table at a
//! time per connection. Static dispatch: the generator is compiled once per engine.

use stampede_base::error::Failure;

/// One row's values, in the table's column order.
pub(in crate::family::tpcc) trait RowWriter {
    fn int2(&mut self, value: i64);
    fn int4(&mut self, value: i64);
    /// `unscaled` × 10^-scale (scale at most 4), e.g. (1234, 2) for 12.34.
    fn numeric(&mut self, unscaled: i64, scale: u32);
    fn text(&mut self, value: &str);
    /// A text value of `length` ASCII letters and digits that `fill` writes in place.
    fn text_with(&mut self, length: usize, fill: impl FnOnce(&mut [u8]));
    /// A timestamp at `unix_us` microseconds since the Unix epoch.
    fn timestamptz(&mut self, unix_us: i64);
    fn null(&mut self);
}

/// One connection's way into the tables.
pub(in crate::family::tpcc) trait TableSink {
    type Rows: RowWriter;
    /// Starts writing `table`'s rows.
    async fn start(&mut self, table: &'static str) -> Result<(), Failure>;
    /// Starts a row of `columns` values, to be written into the returned writer.
    fn row(&mut self, columns: i16) -> &mut Self::Rows;
    /// Counts the row just written; sends the rows once they fill a chunk.
    async fn sent_row(&mut self) -> Result<(), Failure>;
    /// Sends what is left of the table started last; the rows written to it.
    async fn finish(&mut self) -> Result<u64, Failure>;
}
