//! `stampede tproch generate`: dbgen's `.tbl` files written by the loader's parallel pieces,
//! without a server. A table cut into parts is written in files named as dbgen's `-C` names its
//! chunks (`lineitem.tbl.1`, `lineitem.tbl.2`, …); joined in order they are dbgen's file byte
//! for byte (the unit tests of `data.rs` hold dbgen's digests).

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::data::{self, LineFormat, Lines};
use super::load::{in_parallel, Piece};
use super::schema::TABLES;
use stampede_base::error::Failure;

const CHUNK_BYTES: usize = 1 << 20;

/// The file a piece goes to.
fn file_name(piece: Piece) -> String {
    match piece.parts {
        1 => format!("{}.tbl", piece.table),
        _ => format!("{}.tbl.{}", piece.table, piece.part),
    }
}

/// Every file a generation at `scale_factor` writes.
pub fn files(scale_factor: f64) -> Vec<String> {
    TABLES
        .iter()
        .flat_map(|t| {
            let parts = data::part_count(t.name, scale_factor);
            (1..=parts).map(move |part| {
                file_name(Piece {
                    table: t.name,
                    part,
                    parts,
                })
            })
        })
        .collect()
}

/// Writes the files into `dir` over `threads` threads; returns the rows and bytes written.
pub fn write(
    dir: &Path,
    scale_factor: f64,
    threads: usize,
    say: &(dyn Fn(String) + Sync),
) -> Result<(u64, u64), Failure> {
    let (rows, bytes) = (AtomicU64::new(0), AtomicU64::new(0));
    let lines = Lines {
        format: LineFormat::Tbl,
        chunk: CHUNK_BYTES,
    };
    in_parallel(
        scale_factor,
        threads,
        say,
        || Ok(()),
        |_, piece| {
            let path = dir.join(file_name(piece));
            let mut file = std::fs::File::create(&path)
                .map_err(|e| Failure::run(format!("cannot write {}: {e}", path.display())))?;
            let mut flush = |out: &mut Vec<u8>| -> Result<(), Failure> {
                file.write_all(out)
                    .map_err(|e| Failure::run(format!("cannot write {}: {e}", path.display())))?;
                bytes.fetch_add(out.len() as u64, Ordering::Relaxed);
                out.clear();
                Ok(())
            };
            let mut out = Vec::with_capacity(CHUNK_BYTES + 4096);
            let written = lines
                .part(
                    piece.table,
                    scale_factor,
                    piece.part,
                    piece.parts,
                    &mut out,
                    &mut flush,
                )
                .and_then(|written| flush(&mut out).map(|()| written))?;
            rows.fetch_add(written, Ordering::Relaxed);
            Ok(written)
        },
    )?;
    Ok((rows.into_inner(), bytes.into_inner()))
}
