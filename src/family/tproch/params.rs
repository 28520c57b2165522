//! Substitution parameters: HammerDB's draws for each query (`pgolap.tcl`'s sub_query, with
//! TPC-H's value lists from `tpchcommon`), TPC-H's qualification values (clause 2.4, the
//! "Validation" line of each query: the answers TPC-H publishes are for these), and the
//! substitution of `:n` markers.

use stampede_script::prng::PgPrng;

const REGIONS: [&str; 5] = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];
const SEGMENTS: [&str; 5] = [
    "AUTOMOBILE",
    "BUILDING",
    "FURNITURE",
    "HOUSEHOLD",
    "MACHINERY",
];
/// TPC-H's nations in dbgen's order, each with its region's index in `REGIONS`.
const NATIONS: [(&str, usize); 25] = [
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
];
const TYPE_SIZES: [&str; 6] = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"];
const TYPE_FINISHES: [&str; 5] = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"];
const TYPE_MATERIALS: [&str; 5] = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"];
const CONTAINER_SIZES: [&str; 5] = ["SM", "LG", "MED", "JUMBO", "WRAP"];
const CONTAINER_KINDS: [&str; 8] = ["CASE", "BOX", "BAG", "JAR", "PACK", "PKG", "CAN", "DRUM"];
const SHIP_MODES: [&str; 7] = ["REG AIR", "AIR", "RAIL", "TRUCK", "MAIL", "FOB", "SHIP"];
const Q13_WORDS_1: [&str; 4] = ["special", "pending", "unusual", "express"];
const Q13_WORDS_2: [&str; 4] = ["packages", "requests", "accounts", "deposits"];
const COLORS: [&str; 92] = [
    "almond",
    "antique",
    "aquamarine",
    "azure",
    "beige",
    "bisque",
    "black",
    "blanched",
    "blue",
    "blush",
    "brown",
    "burlywood",
    "burnished",
    "chartreuse",
    "chiffon",
    "chocolate",
    "coral",
    "cornflower",
    "cornsilk",
    "cream",
    "cyan",
    "dark",
    "deep",
    "dim",
    "dodger",
    "drab",
    "firebrick",
    "floral",
    "forest",
    "frosted",
    "gainsboro",
    "ghost",
    "goldenrod",
    "green",
    "grey",
    "honeydew",
    "hot",
    "indian",
    "ivory",
    "khaki",
    "lace",
    "lavender",
    "lawn",
    "lemon",
    "light",
    "lime",
    "linen",
    "magenta",
    "maroon",
    "medium",
    "metallic",
    "midnight",
    "mint",
    "misty",
    "moccasin",
    "navajo",
    "navy",
    "olive",
    "orange",
    "orchid",
    "pale",
    "papaya",
    "peach",
    "peru",
    "pink",
    "plum",
    "powder",
    "puff",
    "purple",
    "red",
    "rose",
    "rosy",
    "royal",
    "saddle",
    "salmon",
    "sandy",
    "seashell",
    "sienna",
    "sky",
    "slate",
    "smoke",
    "snow",
    "spring",
    "steel",
    "tan",
    "thistle",
    "tomato",
    "turquoise",
    "violet",
    "wheat",
    "white",
    "yellow",
];

/// A query's parameters, `values[n - 1]` for the marker `:n`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Parameters {
    pub values: Vec<String>,
}

impl Parameters {
    fn of(values: &[&str]) -> Parameters {
        Parameters {
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    /// Replaces every `:n` marker of `text` (the longest run of digits after the colon) with
    /// its value.
    pub fn substitute(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 64);
        let mut rest = text;
        while let Some(colon) = rest.find(':') {
            out.push_str(&rest[..colon]);
            let after = &rest[colon + 1..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            match after[..digits].parse::<usize>() {
                Ok(n) if n >= 1 && n <= self.values.len() => out.push_str(&self.values[n - 1]),
                _ => {
                    out.push(':');
                    out.push_str(&after[..digits]);
                }
            }
            rest = &after[digits..];
        }
        out.push_str(rest);
        out
    }
}

/// HammerDB's draw of query `number`'s parameters.
pub fn draw(number: usize, scale_factor: f64, random: &mut PgPrng) -> Parameters {
    let values: Vec<String> = match number {
        1 => vec![uniform(random, 60, 120)],
        2 => vec![
            uniform(random, 1, 50),
            pick_type(random).2.to_string(),
            pick_from(random, &REGIONS).to_string(),
        ],
        3 => vec![
            pick_from(random, &SEGMENTS).to_string(),
            format!("1995-03-{:02}", random.int_in_range(1, 31)),
        ],
        4 | 15 => vec![first_of_month(random, 58)],
        5 => vec![pick_from(random, &REGIONS).to_string(), new_year(random)],
        6 => vec![
            new_year(random),
            format!("0.0{}", random.int_in_range(2, 9)),
            uniform(random, 24, 25),
        ],
        7 => {
            let (first, second) = two_different(random, &NATIONS.map(|(name, _)| name));
            vec![first.to_string(), second.to_string()]
        }
        8 => {
            let (nation, region) = NATIONS[random.int_in_range(0, 24) as usize];
            let (size, finish, material) = pick_type(random);
            vec![
                nation.to_string(),
                REGIONS[region].to_string(),
                format!("{size} {finish} {material}"),
            ]
        }
        9 => vec![pick_from(random, &COLORS).to_string()],
        10 => vec![first_of_month(random, 24)],
        11 => vec![
            pick_from(random, &NATIONS.map(|(name, _)| name)).to_string(),
            format!("{:.10}", 0.0001 / scale_factor),
        ],
        12 => {
            let (first, second) = two_different(random, &SHIP_MODES);
            vec![first.to_string(), second.to_string(), new_year(random)]
        }
        13 => vec![
            pick_from(random, &Q13_WORDS_1).to_string(),
            pick_from(random, &Q13_WORDS_2).to_string(),
        ],
        14 => vec![first_of_month(random, 60)],
        16 => {
            let brand = brand(random);
            let (size, finish, _) = pick_type(random);
            let mut values = vec![brand, format!("{size} {finish}")];
            values.extend(distinct(random, 8, 1, 50));
            values
        }
        17 => vec![brand(random), container(random)],
        18 => vec![uniform(random, 312, 315)],
        19 => vec![
            brand(random),
            brand(random),
            brand(random),
            uniform(random, 1, 10),
            uniform(random, 10, 20),
            uniform(random, 20, 30),
        ],
        20 => vec![
            pick_from(random, &COLORS).to_string(),
            new_year(random),
            pick_from(random, &NATIONS.map(|(name, _)| name)).to_string(),
        ],
        21 => vec![pick_from(random, &NATIONS.map(|(name, _)| name)).to_string()],
        22 => distinct(random, 7, 10, 34),
        other => unreachable!("TPC-H has no query {other}"),
    };
    Parameters { values }
}

/// TPC-H's qualification values for query `number` (clause 2.4.n.4, "Validation").
pub fn qualification(number: usize) -> Parameters {
    Parameters::of(match number {
        1 => &["90"],
        2 => &["15", "BRASS", "EUROPE"],
        3 => &["BUILDING", "1995-03-15"],
        4 => &["1993-07-01"],
        5 => &["ASIA", "1994-01-01"],
        6 => &["1994-01-01", "0.06", "24"],
        7 => &["FRANCE", "GERMANY"],
        8 => &["BRAZIL", "AMERICA", "ECONOMY ANODIZED STEEL"],
        9 => &["green"],
        10 => &["1993-10-01"],
        11 => &["GERMANY", "0.0001"],
        12 => &["MAIL", "SHIP", "1994-01-01"],
        13 => &["special", "requests"],
        14 => &["1995-09-01"],
        15 => &["1996-01-01"],
        16 => &[
            "Brand#45",
            "MEDIUM POLISHED",
            "49",
            "14",
            "23",
            "45",
            "19",
            "3",
            "36",
            "9",
        ],
        17 => &["Brand#23", "MED BOX"],
        18 => &["300"],
        19 => &["Brand#12", "Brand#23", "Brand#34", "1", "10", "20"],
        20 => &["forest", "1994-01-01", "CANADA"],
        21 => &["SAUDI ARABIA"],
        22 => &["13", "31", "23", "29", "30", "18", "17"],
        other => unreachable!("TPC-H has no query {other}"),
    })
}

fn uniform(random: &mut PgPrng, low: i64, high: i64) -> String {
    random.int_in_range(low, high).to_string()
}

fn pick_from<'a>(random: &mut PgPrng, list: &[&'a str]) -> &'a str {
    list[random.int_in_range(0, list.len() as i64 - 1) as usize]
}

/// A part type from TPC-H's 150 (size, finish, material), uniformly.
fn pick_type(random: &mut PgPrng) -> (&'static str, &'static str, &'static str) {
    (
        pick_from(random, &TYPE_SIZES),
        pick_from(random, &TYPE_FINISHES),
        pick_from(random, &TYPE_MATERIALS),
    )
}

fn container(random: &mut PgPrng) -> String {
    let size = pick_from(random, &CONTAINER_SIZES);
    format!("{size} {}", pick_from(random, &CONTAINER_KINDS))
}

/// `Brand#MN`, M and N each 1..=5.
fn brand(random: &mut PgPrng) -> String {
    let m = random.int_in_range(1, 5);
    format!("Brand#{m}{}", random.int_in_range(1, 5))
}

/// January 1st of 1993..=1997.
fn new_year(random: &mut PgPrng) -> String {
    format!("19{}-01-01", random.int_in_range(93, 97))
}

/// The first of a month, `months` months from January 1993 on at most (HammerDB's
/// RandomNumber 1 months: month index 1 is February 1993).
fn first_of_month(random: &mut PgPrng, months: i64) -> String {
    let index = random.int_in_range(1, months);
    format!("19{}-{:02}-01", 93 + index / 12, index % 12 + 1)
}

fn two_different<'a>(random: &mut PgPrng, list: &[&'a str]) -> (&'a str, &'a str) {
    let first = pick_from(random, list);
    let mut second = first;
    while second == first {
        second = pick_from(random, list);
    }
    (first, second)
}

/// `count` different integers in `low..=high`.
fn distinct(random: &mut PgPrng, count: usize, low: i64, high: i64) -> Vec<String> {
    let mut drawn: Vec<i64> = Vec::with_capacity(count);
    while drawn.len() < count {
        let value = random.int_in_range(low, high);
        if !drawn.contains(&value) {
            drawn.push(value);
        }
    }
    drawn.iter().map(i64::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::tproch::queries;
    use crate::family::tproch::session::Dialect;

    #[test]
    fn markers_take_their_whole_number_and_other_colons_stay() {
        let params = qualification(16);
        let text = params.substitute("p_brand <> ':1' and p_size in (:3, :10) and x::text");
        assert_eq!(
            text,
            "p_brand <> 'Brand#45' and p_size in (49, 9) and x::text"
        );
    }

    #[test]
    fn every_query_s_markers_are_all_filled_by_its_draw_and_by_the_qualification_values() {
        let mut random = PgPrng::seeded(7);
        for number in 1..=22 {
            let dialects = [Dialect::Postgres, Dialect::Mysql];
            for (params, dialect) in [draw(number, 1.0, &mut random), qualification(number)]
                .into_iter()
                .flat_map(|p| dialects.map(|d| (p.clone(), d)))
            {
                let text = params.substitute(queries::text(dialect, number));
                let left = text
                    .match_indices(':')
                    .filter(|(at, _)| text[at + 1..].starts_with(|c: char| c.is_ascii_digit()))
                    .count();
                assert_eq!(left, 0, "Q{number}: {text}");
            }
        }
    }

    #[test]
    fn draws_stay_in_hammerdb_s_ranges() {
        let mut random = PgPrng::seeded(1);
        for _ in 0..500 {
            let q1: i64 = draw(1, 1.0, &mut random).values[0].parse().unwrap();
            assert!((60..=120).contains(&q1));
            let q4 = &draw(4, 1.0, &mut random).values[0];
            assert!(
                q4.as_str() >= "1993-02-01" && q4.as_str() <= "1997-11-01",
                "{q4}"
            );
            let q8 = draw(8, 1.0, &mut random);
            let region = NATIONS.iter().find(|(n, _)| *n == q8.values[0]).unwrap().1;
            assert_eq!(q8.values[1], REGIONS[region]);
            let q22 = draw(22, 1.0, &mut random).values;
            let mut unique = q22.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), 7);
        }
        assert_eq!(draw(11, 10.0, &mut random).values[1], "0.0000100000");
    }
}
