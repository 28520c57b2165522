//! TPC-H's rows as dbgen writes them, from the `tpchgen` crate (a row-for-row port of dbgen):
//! a table cut into parts that generate independently, each part's rows as dbgen's `.tbl`
//! lines (`|` after every field), which COPY reads with `|` as its delimiter once the last one
//! becomes the line's end. TPC-H's text has no `|`, tab, backslash or newline inside a field.

use std::io::Write;

use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};

/// dbgen's rows per unit of scale factor (clause 4.2.5.1), by table; `lineitem` is counted in
/// orders, whose lines it holds (1 to 7 each, 4 on average).
pub fn base_rows(table: &str, scale_factor: f64) -> i64 {
    let per_unit = match table {
        "region" => return 5,
        "nation" => return 25,
        "supplier" => 10_000,
        "customer" => 150_000,
        "part" => 200_000,
        "partsupp" => 800_000,
        "orders" | "lineitem" => 1_500_000,
        other => unreachable!("not a TPC-H table: {other}"),
    };
    (per_unit as f64 * scale_factor) as i64
}

/// Why a scale factor cannot be built, if it cannot: below 0.01 dbgen's update sets hold no
/// order (they are a thousandth of the orders, counted in tens), above 100,000 its keys
/// overflow.
pub fn scale_factor_problem(scale_factor: f64) -> Option<&'static str> {
    (!(0.01..=100_000.0).contains(&scale_factor))
        .then_some("must be from 0.01 to 100000 (below 0.01 dbgen's update sets hold no order)")
}

/// How many parts a table is cut into: about half a million rows each, so the loader's
/// connections share the big tables and the last part to finish is short.
pub fn part_count(table: &str, scale_factor: f64) -> i32 {
    const ROWS_PER_PART: i64 = 500_000;
    let rows = match table {
        // Four lines per order on average.
        "lineitem" => base_rows(table, scale_factor) * 4,
        // A part's four suppliers: the generator is cut by parts.
        "partsupp" => base_rows(table, scale_factor),
        other => base_rows(other, scale_factor),
    };
    ((rows + ROWS_PER_PART - 1) / ROWS_PER_PART).clamp(1, i32::MAX as i64) as i32
}

/// How a row is written: as COPY reads it (the last `|` made the line's end), or as dbgen
/// writes its `.tbl` files (`|` after every field).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LineFormat {
    Copy,
    Tbl,
}

/// Writes part `part` (1-based) of `parts` of `table` as COPY text lines into `out`, calling
/// `flush` whenever `out` holds `chunk` bytes or more; returns the rows written.
pub fn write_part<E>(
    table: &str,
    scale_factor: f64,
    part: i32,
    parts: i32,
    out: &mut Vec<u8>,
    chunk: usize,
    flush: &mut dyn FnMut(&mut Vec<u8>) -> Result<(), E>,
) -> Result<u64, E> {
    let writer = Lines {
        format: LineFormat::Copy,
        chunk,
    };
    writer.part(table, scale_factor, part, parts, out, flush)
}

/// Rows written as lines of one format, flushed every `chunk` bytes.
pub struct Lines {
    pub format: LineFormat,
    pub chunk: usize,
}

impl Lines {
    /// Part `part` (1-based) of `parts` of `table` into `out`, calling `flush` whenever `out`
    /// holds `chunk` bytes or more; returns the rows written.
    pub fn part<E>(
        &self,
        table: &str,
        scale_factor: f64,
        part: i32,
        parts: i32,
        out: &mut Vec<u8>,
        flush: &mut dyn FnMut(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<u64, E> {
        let sf = scale_factor;
        match table {
            "region" => self.rows(RegionGenerator::new(sf, part, parts).iter(), out, flush),
            "nation" => self.rows(NationGenerator::new(sf, part, parts).iter(), out, flush),
            "supplier" => self.rows(SupplierGenerator::new(sf, part, parts).iter(), out, flush),
            "customer" => self.rows(CustomerGenerator::new(sf, part, parts).iter(), out, flush),
            "part" => self.rows(PartGenerator::new(sf, part, parts).iter(), out, flush),
            "partsupp" => self.rows(PartSuppGenerator::new(sf, part, parts).iter(), out, flush),
            "orders" => self.rows(OrderGenerator::new(sf, part, parts).iter(), out, flush),
            "lineitem" => self.rows(LineItemGenerator::new(sf, part, parts).iter(), out, flush),
            other => unreachable!("not a TPC-H table: {other}"),
        }
    }

    fn rows<R: std::fmt::Display, E>(
        &self,
        rows: impl Iterator<Item = R>,
        out: &mut Vec<u8>,
        flush: &mut dyn FnMut(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<u64, E> {
        let mut count = 0;
        for row in rows {
            push_line(out, &row, self.format);
            count += 1;
            if out.len() >= self.chunk {
                flush(out)?;
            }
        }
        Ok(count)
    }
}

/// A `.tbl` line, with its last `|` made the line's end for COPY.
pub fn push_line(out: &mut Vec<u8>, row: &dyn std::fmt::Display, format: LineFormat) {
    write!(out, "{row}").expect("writing to memory");
    match format {
        LineFormat::Copy => {
            let last = out.len() - 1;
            debug_assert_eq!(out[last], b'|');
            out[last] = b'\n';
        }
        LineFormat::Tbl => out.push(b'\n'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table_text(table: &str, sf: f64, part: i32, parts: i32) -> (u64, Vec<u8>) {
        let mut out = Vec::new();
        let mut all = Vec::new();
        let rows = write_part(table, sf, part, parts, &mut out, 1 << 16, &mut |chunk| {
            all.append(chunk);
            Ok::<(), ()>(())
        })
        .unwrap();
        all.append(&mut out);
        (rows, all)
    }

    #[test]
    fn rows_are_dbgen_lines_with_the_last_bar_made_the_line_end() {
        let (rows, text) = table_text("nation", 1.0, 1, 1);
        assert_eq!(rows, 25);
        let text = String::from_utf8(text).unwrap();
        assert!(text.starts_with(
            "0|ALGERIA|0| haggle. carefully final deposits detect slyly agai\n1|ARGENTINA|1|"
        ));
        let (_, lineitem) = table_text("lineitem", 1.0, 1, 10_000);
        let first = String::from_utf8(lineitem).unwrap();
        assert!(first.starts_with(
            "1|155190|7706|1|17|21168.23|0.04|0.02|N|O|1996-03-13|1996-02-12|1996-03-22|DELIVER IN PERSON|TRUCK|egular courts above the\n"
        ));
    }

    #[test]
    fn no_field_holds_what_copy_text_would_read_as_a_delimiter_or_an_escape() {
        for table in crate::family::tproch::schema::TABLES.iter().map(|t| t.name) {
            let (rows, text) = table_text(table, 0.01, 1, 1);
            let text = String::from_utf8(text).unwrap();
            let columns = crate::family::tproch::schema::TABLES
                .iter()
                .find(|t| t.name == table)
                .unwrap()
                .columns
                .split(", ")
                .count();
            assert_eq!(text.lines().count() as u64, rows, "{table}");
            for line in text.lines() {
                assert_eq!(line.split('|').count(), columns, "{table}: {line}");
                assert!(!line.contains('\\') && !line.contains('\t'), "{line}");
            }
        }
    }

    #[test]
    fn parts_add_up_to_dbgen_s_row_counts() {
        for (table, expected) in [
            ("supplier", 100),
            ("customer", 1_500),
            ("part", 2_000),
            ("partsupp", 8_000),
            ("orders", 15_000),
        ] {
            let total: u64 = (1..=3).map(|p| table_text(table, 0.01, p, 3).0).sum();
            assert_eq!(total, expected, "{table}");
        }
        // SF 0.01's lineitem as dbgen writes it: 60,175 lines.
        let lines: u64 = (1..=4).map(|p| table_text("lineitem", 0.01, p, 4).0).sum();
        assert_eq!(lines, 60_175);
    }

    /// sha256 of dbgen 2.x's `.tbl` files at SF 0.01 (`dbgen -s 0.01`, TPC-H's kit built
    /// from source).
    const DBGEN_SF_001: [(&str, &str); 8] = [
        (
            "customer",
            "6b690cce995cb715861ebf2c77aa02c61406e3a0ddcd3326d1ecfa969b9163f8",
        ),
        (
            "lineitem",
            "ee411d23efcd2943ef70489799e37dfc24543dbd03b461a88e16fd82a95765e4",
        ),
        (
            "nation",
            "66f96949939fa8fdf1c4ffed1e5f6c2842fe11a14b51fdc6ed1e17460031e8c5",
        ),
        (
            "orders",
            "07cc8b362fda6d0b503c4d6c5d228817548e0688a3b21b590c52bb47b7b79c0f",
        ),
        (
            "part",
            "896e14465325110dd9cf05a16972028a58be0010959262176ecd97f4db1702f8",
        ),
        (
            "partsupp",
            "5947b5ebab042b49148f82c1324ad122f7e0d98cfadcbef12da0a5e239e09e79",
        ),
        (
            "region",
            "6022658d673924389b54dcb70fa8c3d6da1b0d7afa3c1c017bab62a019df404f",
        ),
        (
            "supplier",
            "9dc1002ee774699a092ed83ba278caf466d62a15d7e35bb6ed9293475528734b",
        ),
    ];

    #[test]
    fn every_table_is_dbgen_s_byte_for_byte_once_the_bars_are_back() {
        use sha2::{Digest, Sha256};
        for (table, expected) in DBGEN_SF_001 {
            // Cut in three parts, as the loader may cut it: the parts join up to dbgen's file.
            // (nation and region are never cut: their generators ignore the part).
            let parts = if matches!(table, "nation" | "region") {
                1
            } else {
                3
            };
            let mut digest = Sha256::new();
            for part in 1..=parts {
                let (_, text) = table_text(table, 0.01, part, parts);
                for line in String::from_utf8(text).unwrap().lines() {
                    digest.update(format!("{line}|\n"));
                }
            }
            let hex: String = digest
                .finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(hex, expected, "{table}.tbl");
        }
    }

    #[test]
    fn big_tables_are_cut_into_half_million_row_parts() {
        assert_eq!(part_count("lineitem", 1.0), 12);
        assert_eq!(part_count("orders", 1.0), 3);
        assert_eq!(part_count("region", 1000.0), 1);
        assert_eq!(part_count("lineitem", 0.01), 1);
    }
}
