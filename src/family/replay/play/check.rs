//! Before anything is sent: every relation the capture's statements use must exist in the
//! database replayed on, or the replay would be a run of errors. Each statement shape is
//! parsed (Parse only: nothing executes) and a missing relation stops the replay, named,
//! unless a statement of the capture creates it.

use super::Plan;
use stampede_base::error::Failure;
use stampede_wire::pg::PgConn;

/// undefined_table.
const UNDEFINED_TABLE: &str = "42P01";

pub async fn relations_exist(plan: &Plan) -> Result<(), Failure> {
    let mut conn = PgConn::connect(&plan.conn)
        .await
        .map_err(|e| Failure::run(format!("could not connect: {e}")))?;
    let mut checked = vec![false; plan.shapes.len()];
    for (text_id, text) in plan.file.texts.iter().enumerate() {
        let shape = plan.shape_of[text_id] as usize;
        if std::mem::replace(&mut checked[shape], true) {
            continue;
        }
        conn.queue_parse("", text)
            .map_err(|e| Failure::run(e.to_string()))?;
        conn.queue_sync();
        let reply = conn
            .round_trip(false)
            .await
            .map_err(|e| Failure::run(format!("checking the capture's relations: {e}")))?;
        let Some(error) = reply.error.filter(|e| e.code == UNDEFINED_TABLE) else {
            continue;
        };
        let relation = missing_relation(&error.message);
        if created_by_capture(plan, &relation) {
            continue;
        }
        conn.close().await;
        return Err(Failure::input(format!(
            "database \"{}\" has no relation \"{relation}\", which the capture's statements use (first: {}); restore the capture's starting data into it first (nothing was sent)",
            plan.conn.dbname,
            crate::family::replay::summary::one_line(text, 80)
        )));
    }
    conn.close().await;
    Ok(())
}

/// `relation "x" does not exist` → x.
fn missing_relation(message: &str) -> String {
    message.split('"').nth(1).unwrap_or(message).to_string()
}

/// Whether a CREATE of the capture names the relation (a table the workload makes itself).
fn created_by_capture(plan: &Plan, relation: &str) -> bool {
    let name = relation
        .rsplit('.')
        .next()
        .unwrap_or(relation)
        .to_ascii_lowercase();
    plan.file.texts.iter().any(|text| {
        let lower = text.to_ascii_lowercase();
        let creates = crate::family::replay::message::first_word(text) == "create"
            || lower.contains(" into ");
        creates && lower.contains(&name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relation_is_the_quoted_name() {
        assert_eq!(
            missing_relation("relation \"pgbench_accounts\" does not exist"),
            "pgbench_accounts"
        );
    }
}
