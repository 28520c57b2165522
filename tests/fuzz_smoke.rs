//! A bounded fuzz run of every parser that reads untrusted input, on the stable toolchain, in
//! every CI run: the lab spec parser, the libpq connection-string parser (key=value and URIs),
//! the pgbench script parser and evaluator, and the MySQL and PostgreSQL reply parsers (bytes
//! from a server).
//! Each starts from a few valid inputs and mutates them (bit flips, insertions of the format's
//! own tokens, deletions, duplications, splices) for a fixed number of executions with a fixed
//! seed, so a failure reproduces; any panic fails the test and prints the input. The longer,
//! coverage-guided runs are the cargo-fuzz targets in fuzz/ (`cargo +nightly fuzz run …`).
//! The execution counts go to the terminal even when the test harness captures output.

use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};

use stampede_wire::mysql::fuzz_reply;
use stampede_wire::pg::fuzz_reply as fuzz_pg_reply;

/// Executions per target: well under a second each in a release build.
const EXECUTIONS: usize = 1_000_000;

/// xorshift64*: the mutations' random source, seeded per target.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// One to four mutations of `input`: flip a bit, insert a token or a random byte, delete or
/// duplicate a range, or splice in part of another seed.
fn mutate(input: &[u8], seeds: &[&[u8]], tokens: &[&[u8]], random: &mut Random) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + random.below(4) {
        let at = random.below(out.len() + 1);
        match random.below(6) {
            0 if !out.is_empty() => {
                let i = random.below(out.len());
                out[i] ^= 1 << random.below(8);
            }
            1 => {
                let token = tokens[random.below(tokens.len())];
                out.splice(at..at, token.iter().copied());
            }
            2 => out.insert(at, random.next() as u8),
            3 if !out.is_empty() => {
                let end = (at + 1 + random.below(8)).min(out.len());
                out.drain(at.min(end)..end);
            }
            4 if at < out.len() => {
                let end = (at + 1 + random.below(16)).min(out.len());
                let copy = out[at..end].to_vec();
                out.splice(at..at, copy);
            }
            _ => {
                let other = seeds[random.below(seeds.len())];
                let from = random.below(other.len());
                let end = (from + random.below(32)).min(other.len());
                out.splice(at..at, other[from..end].iter().copied());
            }
        }
    }
    out
}

/// Feeds `EXECUTIONS` inputs (the seeds, then mutants of the seeds and of earlier mutants) to
/// `target`, which says whether the input reached the parser (text targets skip bytes that
/// are not UTF-8); a panic fails the test naming the input.
fn fuzz(name: &str, seed: u64, seeds: &[&[u8]], tokens: &[&[u8]], target: impl Fn(&[u8]) -> bool) {
    let started = std::time::Instant::now();
    let mut parsed = 0;
    let mut random = Random(seed);
    let mut pool: Vec<Vec<u8>> = seeds.iter().map(|s| s.to_vec()).collect();
    for execution in 0..EXECUTIONS {
        let input = if execution < seeds.len() {
            seeds[execution].to_vec()
        } else {
            let parent = &pool[random.below(pool.len())];
            mutate(parent, seeds, tokens, &mut random)
        };
        let reached = match catch_unwind(AssertUnwindSafe(|| target(&input))) {
            Ok(reached) => reached,
            Err(_) => panic!(
                "{name}: execution {execution} panicked on {:?}",
                String::from_utf8_lossy(&input)
            ),
        };
        parsed += usize::from(reached);
        // Keep some mutants that reached the parser as parents, so that mutations pile up;
        // bounded in size and count.
        if reached && input.len() < 4096 && random.below(8) == 0 {
            if pool.len() < 512 {
                pool.push(input);
            } else {
                let slot = random.below(pool.len());
                pool[slot] = input;
            }
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "fuzz smoke: {name}: {EXECUTIONS} executions ({parsed} reached the parser) in {:.2} s, no panic",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn the_lab_spec_parser_never_panics() {
    let spec: &[u8] = br#"name = "nightly"
runs = "auto"
precision = "3%"
max_runs = 15
budget = "2h"
duration = "10s"
warmup = "1s"
stall_timeout = "90s"
seed = 7

[[target]]
name = "pg16"
postgres = "16"
cpus = "0-1"
settings = { shared_buffers = "1GB", fsync = false }

[[target]]
name = "built"
postgres = { source = "postgresql-15.18.tar.bz2", cflags = "-O2", configure = ["--enable-debug"] }

[[workload]]
name = "pgbench"
scripts = ["select-only", "tpcb-like"]
scale = [10, "fits-in-memory"]
clients = [1, 4]
protocol = "prepared"
"#;
    let fixed: &[u8] = b"name = \"t\"\nruns = 2\nduration = \"3s\"\n[[target]]\nname = \"a\"\nmariadb = \"system\"\n[[workload]]\nname = \"sysbench\"\nscripts = [\"oltp_read_only\"]\nclients = [1]\n";
    let tokens: &[&[u8]] = &[
        b"\n",
        b"\"",
        b"=",
        b"[[target]]\n",
        b"[[workload]]\n",
        b"{",
        b"}",
        b"[",
        b"]",
        b",",
        b"runs = \"auto\"\n",
        b"precision = \"-2%\"",
        b"max_runs = 1",
        b"\"0%\"",
        b"\"1h30m\"",
        b"99999999999999999999",
        b"-1",
        b"\xff",
        b"'",
        b"#",
        b"scale = [\"in-memory\"]",
    ];
    let dir = std::env::temp_dir().join(format!("stampede-fuzz-spec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("lab.toml");
    fuzz(
        "lab spec",
        0x5eed_0001,
        &[spec, fixed],
        tokens,
        on_text(|text| {
            if let Err(error) = stampede::lab::spec::parse(&path, text) {
                let _ = error.to_string();
            }
        }),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_connection_string_parser_never_panics() {
    let seeds: &[&[u8]] = &[
        b"host=localhost port=5432 user=u dbname=d application_name='a b' options='-c x=1'",
        b"postgresql://user:se%20cret@db.example.com:6543/bench?sslmode=verify-full&sslrootcert=/x&application_name=x",
        b"postgres://[::1]:5432/d?connect_timeout=10&hostaddr=127.0.0.1",
        b"host=/var/run/postgresql hostaddr=10.0.0.5 sslmode=require password='it''s \\' fine'",
    ];
    let tokens: &[&[u8]] = &[
        b"=",
        b"'",
        b"\\",
        b" ",
        b"postgresql://",
        b"%",
        b"%zz",
        b"?",
        b"&",
        b"@",
        b":",
        b"/",
        b"[",
        b"]",
        b"port=",
        b"hostaddr=",
        b"sslmode=",
        b"connect_timeout=",
        b"999999",
    ];
    fuzz(
        "conninfo",
        0x5eed_0002,
        seeds,
        tokens,
        on_text(|text| {
            let _ = stampede_conn::conninfo::parse(text);
        }),
    );
}

/// A target for a parser of text: inputs that are not UTF-8 never reach it (false).
fn on_text(parse: impl Fn(&str)) -> impl Fn(&[u8]) -> bool {
    move |input| match std::str::from_utf8(input) {
        Ok(text) => {
            parse(text);
            true
        }
        Err(_) => false,
    }
}

#[test]
fn the_script_parser_and_evaluator_never_panic() {
    let seeds: &[&[u8]] = &[
        b"\\set aid random(1, 100000 * :scale)\n\\set bid random_zipfian(1, 10, 1.07)\nBEGIN;\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\nEND;\n",
        b"\\if :client_id % 2 = 0\n\\set x greatest(1, least(5, abs(-3))) + pow(2.0, 3) / 0\n\\elif true\n\\sleep 1 ms\n\\else\n\\setshell y echo 1\n\\endif\nSELECT :x \\gset p_\n",
        b"\\set d case when 1 < 2 then 'a' else hash_fnv1a(5, 7) end\n\\startpipeline\nSELECT 1;\n\\endpipeline\n",
    ];
    let tokens: &[&[u8]] = &[
        b"\\set ",
        b"\\if ",
        b"\\endif\n",
        b":",
        b"(",
        b")",
        b",",
        b"random(",
        b"9223372036854775807",
        b"-",
        b"*",
        b"/",
        b"%",
        b"'",
        b"\n",
        b";",
        b"\\gset",
        b"case ",
        b" end",
        b"1e308",
    ];
    fuzz(
        "pgbench script",
        0x5eed_0003,
        seeds,
        tokens,
        on_text(stampede_script::fuzzing::parse_and_evaluate),
    );
}

#[test]
fn the_mysql_reply_parser_never_panics() {
    // A framing byte (the target's first), then packets: 3-byte little-endian length,
    // sequence number, payload.
    let ok: &[u8] = b"\x00\x07\x00\x00\x01\x00\x01\x00\x02\x00\x00\x00";
    let err: &[u8] = b"\x00\x17\x00\x00\x01\xff\x48\x04#HY000No tables used";
    let rows: &[u8] = b"\x00\x01\x00\x00\x01\x01\
        \x17\x00\x00\x02\x03def\x00\x00\x00\x01a\x00\x0c\x3f\x00\x0b\x00\x00\x00\x03\x00\x00\x00\x00\x00\
        \x05\x00\x00\x03\xfe\x00\x00\x02\x00\
        \x02\x00\x00\x04\x011\
        \x05\x00\x00\x05\xfe\x00\x00\x02\x00";
    let tokens: &[&[u8]] = &[
        b"\x00",
        b"\xfe",
        b"\xff",
        b"\xfb",
        b"\xfc\xff\xff",
        b"\xfd\xff\xff\xff",
        b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff",
        b"\xff\xff\xff\x01",
    ];
    fuzz(
        "mysql reply",
        0x5eed_0004,
        &[ok, err, rows],
        tokens,
        |input| {
            fuzz_reply(input);
            !input.is_empty()
        },
    );
}

/// One PostgreSQL backend message: type byte, length (itself included), body.
fn pg_message(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut message = vec![tag];
    message.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    message.extend_from_slice(body);
    message
}

#[test]
fn the_postgres_reply_parser_never_panics() {
    let field = b"abalance\0\0\0\x40\x01\0\x03\0\0\0\x17\0\x04\xff\xff\xff\xff\0\0";
    let row_description = pg_message(b'T', &[b"\0\x01".as_slice(), field].concat());
    let data_row = pg_message(b'D', b"\0\x02\0\0\0\x041234\xff\xff\xff\xff");
    let complete = pg_message(b'C', b"SELECT 1\0");
    let ready = pg_message(b'Z', b"I");
    let error = pg_message(
        b'E',
        b"SERROR\0VERROR\0C40001\0Mcould not serialize access\0Dthe detail\0P12\0\0",
    );
    let copy_out = pg_message(b'H', b"\0\0\x01\0\0");
    let notice = pg_message(b'N', b"SWARNING\0Mbe careful\0\0");
    let rows = [
        &[1u8][..],
        &row_description,
        &data_row,
        &data_row,
        &complete,
        &ready,
    ]
    .concat();
    let failed = [&[0x80u8][..], &error, &pg_message(b'Z', b"E")].concat();
    let copied = [
        &[0x41u8][..],
        &copy_out,
        &pg_message(b'd', b"1\t2\n"),
        &complete,
        &ready,
    ]
    .concat();
    let noticed = [&[0u8][..], &notice, &pg_message(b'I', b""), &ready].concat();
    let tokens: &[&[u8]] = &[
        b"\0\0\0\x04",
        b"\xff\xff\xff\xff",
        b"\x7f\xff\xff\xff",
        b"\0\0",
        b"\xff\xff",
        b"Z\0\0\0\x05I",
        b"D\0\0\0\x06\0\x01",
        b"T\0\0\0\x06\0\x01",
    ];
    fuzz(
        "postgres reply",
        0x5eed_0005,
        &[&rows, &failed, &copied, &noticed],
        tokens,
        |input| {
            fuzz_pg_reply(input);
            !input.is_empty()
        },
    );
}
