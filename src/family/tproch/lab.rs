//! TPROC-H as a lab workload: each query is a variant (`q1` … `q22`, all 22 by default), so
//! each is a cell of its own whose query times the lab compares between targets with paired
//! intervals and whose plans the report's Why panel compares; `queryset` runs the 22 in stream
//! 0's order as one unit. `clients` sessions run the variant's query over and over on the
//! driver for the run's duration, every session with the same text (TPC-H's qualification
//! values, or HammerDB's draws from `seed`), so that every target answers the same question.
//! Query 15's view is named after the session (`revenue:client_id`).
//!
//! `options = { scale_factor = 0.1, seed = 7 }`: the scale factor when it is not the lab's
//! whole-number `scale`; the seed of HammerDB's parameter draws instead of the qualification
//! values. The degree of parallelism, `jit` or `io_method` are the targets' settings.

use super::load::Build;
use super::params::{self, Parameters};
use super::queries;
use super::session::Dialect;
use super::streams;
use crate::driver::plan::{Protocol, RunLimit, RunPlan, WeightedScript};
use crate::family::api::{FamilyWorkload, LabWorkloadKind, Measurement, RunObserver, RunRequest};
use crate::family::common::measure::{self as lab_run, warmup_and_measure};
use crate::family::common::options::{self, OptionsError};
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_script::prng::PgPrng;
use stampede_script::{parse_script, VarTable};

/// TPROC-H's queries, sent as HammerDB sends them: literals over the simple protocol.
pub const KINDS: &[LabWorkloadKind] =
    &[
        LabWorkloadKind::new("tproch", |options| Ok(Box::new(TprochLab::new(options)?)))
            .simple_protocol_only(),
    ];

/// The name of the variant that runs all 22 queries as one unit.
const QUERY_SET: &str = "queryset";

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TprochOptions {
    scale_factor: Option<f64>,
    seed: Option<u64>,
}

pub struct TprochLab {
    scale_factor: Option<f64>,
    seed: Option<u64>,
}

/// A variant: one query, or the query set in stream 0's order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Variant {
    Query(usize),
    QuerySet,
}

impl TprochLab {
    fn new(options: &toml::Table) -> Result<TprochLab, OptionsError> {
        let parsed: TprochOptions = options::parse("tproch", options)?;
        if let Some(sf) = parsed.scale_factor {
            if let Some(problem) = super::data::scale_factor_problem(sf) {
                return Err(OptionsError::at(
                    "tproch",
                    "scale_factor",
                    format!("scale_factor = {sf}: {problem}"),
                ));
            }
        }
        Ok(TprochLab {
            scale_factor: parsed.scale_factor,
            seed: parsed.seed,
        })
    }

    fn scale_factor(&self, scale: i64) -> f64 {
        self.scale_factor.unwrap_or(scale as f64)
    }

    /// Every query's parameters: the qualification values, or HammerDB's draws from the seed.
    fn parameters(&self, scale_factor: f64) -> Vec<Parameters> {
        match self.seed {
            None => (1..=22).map(params::qualification).collect(),
            Some(seed) => {
                let mut random = PgPrng::seeded(seed);
                (1..=22)
                    .map(|q| params::draw(q, scale_factor, &mut random))
                    .collect()
            }
        }
    }

    /// The script a variant's sessions run: its query (or the 22) with the parameters filled
    /// in, each statement ended as the driver's script language wants.
    fn script_text(&self, variant: Variant, dialect: Dialect, scale_factor: f64) -> String {
        let parameters = self.parameters(scale_factor);
        let query = |number: usize| {
            let text = parameters[number - 1].substitute(queries::text(dialect, number));
            let text = text.replace("{stream}", ":client_id");
            text.split(';')
                .map(|statement| format!("{};\n", statement.trim()))
                .collect::<String>()
        };
        match variant {
            Variant::Query(number) => query(number),
            Variant::QuerySet => streams::order(0).into_iter().map(query).collect(),
        }
    }
}

impl FamilyWorkload for TprochLab {
    type Variant = Variant;

    fn variant(&self, name: &str) -> Result<Variant, Failure> {
        if name == QUERY_SET {
            return Ok(Variant::QuerySet);
        }
        match name.strip_prefix('q').and_then(|n| n.parse::<usize>().ok()) {
            Some(number) if (1..=22).contains(&number) => Ok(Variant::Query(number)),
            _ => Err(Failure::input(format!(
                "workload \"tproch\": unknown query \"{name}\"; the variants are q1 to q22 and {QUERY_SET}"
            ))),
        }
    }

    fn default_variants(&self) -> Vec<String> {
        (1..=22).map(|q| format!("q{q}")).collect()
    }

    fn load(&self, conn: &Endpoint, scale: i64, note: &mut dyn FnMut(&str)) -> Result<(), Failure> {
        let scale_factor = self.scale_factor(scale);
        note(&format!("building TPROC-H at scale factor {scale_factor}"));
        let build = Build {
            endpoint: conn.clone(),
            scale_factor,
            connections: stampede_base::cpu::cores(),
        };
        super::build::build(&build, &|_| {})
    }

    fn writes(&self, _variant: &Variant) -> bool {
        false
    }

    fn group(&self, _variant: &Variant) -> String {
        "read".into()
    }

    fn run(
        &self,
        variant: &Variant,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, Failure> {
        let dialect = Dialect::of(request.conn);
        let text = self.script_text(*variant, dialect, self.scale_factor(request.scale));
        let name = match variant {
            Variant::Query(number) => format!("q{number}"),
            Variant::QuerySet => QUERY_SET.to_string(),
        };
        let seed = lab_run::seed();
        warmup_and_measure(request, observer, &|seconds| {
            let mut variables = VarTable::default();
            let script = parse_script(&name, &name, &text, &mut variables)
                .map_err(|e| Failure::input(format!("internal script {name}: {e}")))?;
            Ok(RunPlan::for_workload(
                request.conn,
                request.clients,
                RunLimit::Duration(std::time::Duration::from_secs(seconds)),
                Protocol::Simple,
                vec![WeightedScript { script, weight: 1 }],
                variables,
                seed,
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab(options: &str) -> TprochLab {
        TprochLab::new(&toml::from_str(options).unwrap()).unwrap()
    }

    #[test]
    fn variants_are_the_22_queries_and_the_query_set() {
        let lab = lab("");
        assert_eq!(lab.variant("q6").unwrap(), Variant::Query(6));
        assert_eq!(lab.variant("queryset").unwrap(), Variant::QuerySet);
        assert_eq!(
            lab.variant("q23").unwrap_err().message(),
            "workload \"tproch\": unknown query \"q23\"; the variants are q1 to q22 and queryset"
        );
        assert_eq!(FamilyWorkload::default_variants(&lab).len(), 22);
    }

    #[test]
    fn every_script_parses_with_its_view_per_session() {
        for options in ["", "seed = 3"] {
            let lab = lab(options);
            for dialect in [Dialect::Postgres, Dialect::Mysql] {
                for variant in (1..=22).map(Variant::Query).chain([Variant::QuerySet]) {
                    let text = lab.script_text(variant, dialect, 1.0);
                    let mut variables = VarTable::default();
                    parse_script("t", "t", &text, &mut variables)
                        .unwrap_or_else(|e| panic!("{variant:?} {dialect:?}: {e}\n{text}"));
                }
            }
            let q15 = lab.script_text(Variant::Query(15), Dialect::Postgres, 1.0);
            assert_eq!(q15.matches("revenue:client_id").count(), 4, "{q15}");
        }
        let set = lab("").script_text(Variant::QuerySet, Dialect::Postgres, 1.0);
        assert!(
            set.starts_with("select 100.00 * sum(case when p_type like 'PROMO%'"),
            "Q14 first"
        );
    }

    #[test]
    fn a_bad_scale_factor_is_refused() {
        let error = TprochLab::new(&toml::from_str("scale_factor = 0").unwrap())
            .err()
            .unwrap();
        assert!(
            error
                .to_string()
                .contains("scale_factor = 0: must be from 0.01 to 100000"),
            "{error}"
        );
    }
}
