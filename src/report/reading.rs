//! How to read a comparison's table, said under it: that the ratio is paired by round (the
//! geometric mean of the rounds' own ratios, which need not be the quotient of the two
//! medians beside it), a round whose ratio lies far from the others', and for an undecided
//! cell the rounds that would decide it at the noise measured and how to get them.

use super::comparison::CellComparison;

/// The notes for one target's cells against the base, in table order.
pub fn notes(cells: &[CellComparison]) -> Vec<String> {
    let mut out = Vec::new();
    if cells.iter().any(|c| c.pairs.is_some()) {
        out.push(
            "ratio: paired by round — the geometric mean of each round's other / base (\"median ratio\": the rounds' median); base and other are each side's median over its runs, whose quotient can differ".into(),
        );
    }
    out.extend(cells.iter().filter_map(outlier_rounds));
    out.extend(cells.iter().filter_map(what_would_decide));
    out
}

/// "2,100× in round 4 lies far from the other rounds' ratios (…): it moves the geometric mean".
fn outlier_rounds(cell: &CellComparison) -> Option<String> {
    if cell.outlier_rounds.is_empty() {
        return None;
    }
    let ratios: Vec<String> = cell
        .round_ratios
        .iter()
        .map(|(round, ratio)| format!("{}: {ratio:.3}", round + 1))
        .collect();
    let flagged: Vec<String> = cell
        .outlier_rounds
        .iter()
        .map(|round| (round + 1).to_string())
        .collect();
    Some(format!(
        "{} {}: round {} is an outlier among the rounds' ratios ({}); it moves the ratio {:.3} while their median is {:.3} — the Noise section names its likely cause, and `--exclude-run ID` leaves a run out",
        cell.cell.workload,
        cell.cell_text(),
        flagged.join(", "),
        ratios.join(", "),
        cell.ratio,
        cell.median_round_ratio().unwrap_or(cell.ratio)
    ))
}

/// For an inconclusive paired cell: the rounds its noise needs, and the two ways to get them.
fn what_would_decide(cell: &CellComparison) -> Option<String> {
    if cell.verdict != "inconclusive" || cell.pairs.is_none() {
        return None;
    }
    let rounds = cell.pairs.unwrap_or(0);
    let noise = cell
        .log_ratio_sd
        .map(|sd| {
            format!(
                " (the rounds' ratios vary by ±{:.1}%)",
                (sd.exp() - 1.0) * 100.0
            )
        })
        .unwrap_or_default();
    let need = match cell.rounds_to_decide {
        Some(n) => format!("about {n} rounds would decide it at this noise{noise}: give runs = {n}, or"),
        None => format!("more than 1,000 rounds would be needed at this noise{noise}: quiet the machine, or give"),
    };
    Some(format!(
        "{} {} is inconclusive after {rounds} rounds; {need} runs = \"auto\" to repeat rounds until each cell's interval reaches a precision; `stampede lab calibrate SPEC` measures what this lab can detect",
        cell.cell.workload,
        cell.cell_text(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::comparison::CellKey;

    fn paired(verdict: &str, round_ratios: &[f64]) -> CellComparison {
        CellComparison {
            cell: CellKey {
                workload: "pgbench".into(),
                family: "read".into(),
                script: "select-only".into(),
                scale: "10".into(),
                clients: 4,
            },
            base_runs: round_ratios.len(),
            other_runs: round_ratios.len(),
            base_median: 863.8,
            other_median: 826.8,
            ratio: 1.184,
            ci_low: Some(0.8),
            ci_high: Some(1.7),
            p_value: 0.3,
            verdict: verdict.into(),
            runs_needed: None,
            pairs: Some(round_ratios.len()),
            precision: Some(0.4),
            log_ratio_sd: Some(0.25),
            stopped: None,
            rounds: None,
            round_ratios: round_ratios
                .iter()
                .enumerate()
                .map(|(i, r)| (i as u32, *r))
                .collect(),
            outlier_rounds: Vec::new(),
            rounds_to_decide: Some(23),
        }
    }

    #[test]
    fn an_undecided_cell_says_the_rounds_that_would_decide_it_and_how() {
        let notes = notes(&[paired("inconclusive", &[0.95, 0.96, 2.2, 0.97, 0.96])]);
        assert!(notes[0].starts_with("ratio: paired by round"), "{notes:?}");
        assert_eq!(
            notes[1],
            "pgbench select-only scale 10 × 4 clients is inconclusive after 5 rounds; about 23 rounds would decide it at this noise (the rounds' ratios vary by ±28.4%): give runs = 23, or runs = \"auto\" to repeat rounds until each cell's interval reaches a precision; `stampede lab calibrate SPEC` measures what this lab can detect"
        );
        let decided = notes_of("faster");
        assert_eq!(decided.len(), 1, "{decided:?}");
    }

    fn notes_of(verdict: &str) -> Vec<String> {
        notes(&[paired(verdict, &[1.0, 1.1, 1.2])])
    }

    #[test]
    fn an_outlier_round_is_named_with_the_rounds_median_beside_the_mean() {
        let mut cell = paired("inconclusive", &[0.95, 0.96, 2.2, 0.97, 0.96]);
        cell.outlier_rounds = vec![2];
        let notes = notes(&[cell]);
        assert!(
            notes[1].starts_with("pgbench select-only scale 10 × 4 clients: round 3 is an outlier among the rounds' ratios (1: 0.950, 2: 0.960, 3: 2.200, 4: 0.970, 5: 0.960); it moves the ratio 1.184 while their median is 0.960"),
            "{notes:?}"
        );
    }
}
