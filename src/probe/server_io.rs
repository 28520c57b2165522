//! Bytes a local PostgreSQL server's processes made the storage layer read and write
//! (`/proc/<pid>/io`'s read_bytes and write_bytes): the postmaster, which holds the reaped
//! children's counts too, and every live child. Cumulative; nothing for a server whose pid
//! file or /proc entries cannot be read (another machine, another user without root).

use std::path::Path;

/// Bytes read and written so far by the server's processes.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ServerIo {
    pub read_bytes: u64,
    pub write_bytes: u64,
}

pub fn read(data_dir: &Path) -> Option<ServerIo> {
    read_tree(super::server_cpu::postmaster_pid(data_dir)?)
}

/// Bytes read and written so far by process `root` and its children (a PostgreSQL postmaster,
/// or a MariaDB server's single process).
pub fn read_tree(root: u32) -> Option<ServerIo> {
    let mut total = process_io(root)?;
    for child in stampede_base::sys::children_of(root) {
        // A child may end between the listing and the read: it is then in the postmaster's.
        if let Some(io) = process_io(child) {
            total.read_bytes += io.read_bytes;
            total.write_bytes += io.write_bytes;
        }
    }
    Some(total)
}

fn process_io(pid: u32) -> Option<ServerIo> {
    parse(&std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?)
}

fn parse(text: &str) -> Option<ServerIo> {
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|value| value.trim().parse().ok())
    };
    Some(ServerIo {
        read_bytes: field("read_bytes")?,
        write_bytes: field("write_bytes")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_storage_layer_s_bytes() {
        let text = "rchar: 100\nwchar: 50\nsyscr: 3\nsyscw: 2\nread_bytes: 8192\n\
                    write_bytes: 4096\ncancelled_write_bytes: 0\n";
        assert_eq!(
            parse(text),
            Some(ServerIo {
                read_bytes: 8192,
                write_bytes: 4096
            })
        );
        assert_eq!(parse("rchar: 1\n"), None);
    }
}
