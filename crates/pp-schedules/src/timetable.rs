//! When a schedule fires: a 5-field cron expression (or an `@` alias) read in an IANA time
//! zone, parsed by croner; times in and out are [`Timestamp`]s.
//!
//! Daylight saving follows croner (the Open Cron Pattern Specification): a fixed-time job
//! whose time falls in the hour skipped in spring fires at the first instant after the
//! gap (02:30 in `Europe/Berlin` on the last Sunday of March fires at 03:00 CEST); a
//! fixed-time job whose time happens twice in autumn fires once, on the first pass. Jobs
//! with a wildcard or a step in the minute or hour field fire on the wall clock's every
//! match, so an hourly job fires 23 times on the spring day and 25 on the autumn day.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::{Cron, Direction};
use pp_types::Timestamp;

use crate::error::SchedulerError;

/// The aliases accepted in place of five fields, and what they stand for.
pub const ALIASES: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

/// The five fields, in order, as errors name them.
pub const FIELDS: [&str; 5] = ["minute", "hour", "day_of_month", "month", "day_of_week"];

/// What an error names when the expression as a whole is at fault (field count, unknown
/// alias, no future occurrence).
pub const WHOLE_EXPRESSION: &str = "expression";

/// At most this many missed occurrences are counted (a job every minute that missed a
/// year stops counting here: the history says "at least").
pub const MISSED_COUNT_LIMIT: u64 = 100_000;

/// A parsed cron expression in its time zone.
#[derive(Debug, Clone)]
pub struct Timetable {
    cron: Cron,
    zone: Tz,
}

/// What is due at a tick: the occurrence to fire, how many before it were missed, and the
/// one to fire after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    /// The latest occurrence at or before now: the one that fires.
    pub occurrence: Timestamp,
    /// Occurrences from the stored next one up to (not including) `occurrence`: missed
    /// while no scheduler ran, and not fired (capped at [`MISSED_COUNT_LIMIT`]).
    pub missed: u64,
    /// The first occurrence after now.
    pub next: Option<Timestamp>,
}

impl Timetable {
    /// Parses `expression` (five fields, or one of [`ALIASES`]; croner's extensions such
    /// as `L`, `W`, `#` and names like `MON`/`JAN` are accepted) in `time_zone` (an IANA
    /// name such as `Europe/Berlin`, or `UTC`).
    ///
    /// [`SchedulerError::InvalidCron`] names the field ([`FIELDS`], or
    /// [`WHOLE_EXPRESSION`]) and the token at fault, also for an expression that never
    /// fires (`0 0 30 2 *`); [`SchedulerError::UnknownTimeZone`].
    pub fn parse(expression: &str, time_zone: &str) -> Result<Self, SchedulerError> {
        let zone: Tz = time_zone
            .parse()
            .map_err(|_| SchedulerError::UnknownTimeZone {
                zone: time_zone.to_owned(),
            })?;
        let fields = expand(expression)?;
        let cron = parser()
            .parse(&fields.join(" "))
            .map_err(|error| locate(&fields, &error.to_string()))?;
        let timetable = Self { cron, zone };
        // Croner searches up to the year 5000; an expression with no date (30 February)
        // fails here rather than at its first tick.
        let probe = DateTime::<Utc>::UNIX_EPOCH.with_timezone(&zone);
        if timetable.cron.find_next_occurrence(&probe, false).is_err() {
            return Err(SchedulerError::InvalidCron {
                field: WHOLE_EXPRESSION,
                token: expression.trim().to_owned(),
                reason: "it matches no date".into(),
            });
        }
        Ok(timetable)
    }

    /// The time zone.
    pub fn zone(&self) -> Tz {
        self.zone
    }

    /// The first occurrence strictly after `after`; `None` if there is none (before the
    /// year 5000).
    pub fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let start = self.local(after)?;
        let next = self.cron.find_next_occurrence(&start, false).ok()?;
        Some(Timestamp::from_millis(next.timestamp_millis()))
    }

    /// The next `count` occurrences after `after`, for people ("fires next at …").
    pub fn upcoming(&self, after: Timestamp, count: usize) -> Vec<Timestamp> {
        let Some(start) = self.local(after) else {
            return Vec::new();
        };
        self.cron
            .iter_after(start)
            .take(count)
            .map(|time| Timestamp::from_millis(time.timestamp_millis()))
            .collect()
    }

    /// What fires at `now` when the stored next occurrence is `next` (at or before
    /// `now`): the latest occurrence up to `now` fires once, the ones between are counted
    /// as missed. `None` when `next` is after `now` (nothing is due).
    pub fn due(&self, next: Timestamp, now: Timestamp) -> Option<Due> {
        if next > now {
            return None;
        }
        let (start, end) = (self.local(next)?, self.local(now)?);
        let mut latest = None;
        let mut missed = 0;
        for time in self.cron.iter_from(start, Direction::Forward) {
            if time > end {
                break;
            }
            if latest.is_some() {
                missed += 1;
            }
            latest = Some(Timestamp::from_millis(time.timestamp_millis()));
            if missed >= MISSED_COUNT_LIMIT {
                // Stop counting; fire the latest due occurrence all the same.
                latest = self
                    .cron
                    .find_previous_occurrence(&end, true)
                    .ok()
                    .map(|time| Timestamp::from_millis(time.timestamp_millis()))
                    .or(latest);
                break;
            }
        }
        // The stored next time is always an occurrence; should it not be, it fires as is.
        let occurrence = latest.unwrap_or(next);
        Some(Due {
            occurrence,
            missed,
            next: self.next_after(now.max(occurrence)),
        })
    }

    fn local(&self, at: Timestamp) -> Option<DateTime<Tz>> {
        DateTime::from_timestamp_millis(at.as_millis()).map(|utc| utc.with_timezone(&self.zone))
    }
}

/// The machine's IANA time zone (the default for new schedules), or `UTC` when it
/// cannot be told or is not one chrono-tz knows.
pub fn machine_time_zone() -> String {
    iana_time_zone::get_timezone()
        .ok()
        .filter(|zone| zone.parse::<Tz>().is_ok())
        .unwrap_or_else(|| "UTC".to_owned())
}

/// Five fields, with aliases expanded. Croner would take six or seven (seconds, years)
/// and knows no `@midnight`; neither is what a schedule means here.
fn expand(expression: &str) -> Result<Vec<String>, SchedulerError> {
    let trimmed = expression.trim();
    if trimmed.starts_with('@') {
        let Some((_, fields)) = ALIASES
            .iter()
            .find(|(alias, _)| alias.eq_ignore_ascii_case(trimmed))
        else {
            return Err(SchedulerError::InvalidCron {
                field: WHOLE_EXPRESSION,
                token: trimmed.to_owned(),
                reason: format!(
                    "unknown alias; use five fields or one of {}",
                    ALIASES.map(|(alias, _)| alias).join(", ")
                ),
            });
        };
        return Ok(fields.split(' ').map(str::to_owned).collect());
    }
    let fields: Vec<String> = trimmed.split_whitespace().map(str::to_owned).collect();
    if fields.len() != FIELDS.len() {
        return Err(SchedulerError::InvalidCron {
            field: WHOLE_EXPRESSION,
            token: trimmed.to_owned(),
            reason: format!(
                "{} fields; a cron expression has five: minute hour day-of-month month \
                 day-of-week",
                fields.len()
            ),
        });
    }
    Ok(fields)
}

/// Croner's parser for five fields: no seconds, no years, POSIX weekdays (0 or 7 is
/// Sunday, 1 is Monday), day-of-month OR day-of-week when both are restricted (Vixie
/// cron).
fn parser() -> CronParser {
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
}

/// Finds the field and token croner refused: each field alone (the others `*`), then
/// each comma-separated part of the first failing field alone.
fn locate(fields: &[String], reason: &str) -> SchedulerError {
    let alone = |index: usize, value: &str| {
        let mut probe = vec!["*"; FIELDS.len()];
        probe[index] = value;
        parser().parse(&probe.join(" ")).is_err()
    };
    for (index, (field, name)) in fields.iter().zip(FIELDS).enumerate() {
        if !alone(index, field) {
            continue;
        }
        let token = field
            .split(',')
            .find(|part| alone(index, part))
            .unwrap_or(field);
        let detail = parser()
            .parse(&{
                let mut probe = vec!["*"; FIELDS.len()];
                probe[index] = token;
                probe.join(" ")
            })
            .err()
            .map_or_else(|| reason.to_owned(), |error| error.to_string());
        return SchedulerError::InvalidCron {
            field: name,
            token: token.to_owned(),
            reason: detail,
        };
    }
    SchedulerError::InvalidCron {
        field: WHOLE_EXPRESSION,
        token: fields.join(" "),
        reason: reason.to_owned(),
    }
}
