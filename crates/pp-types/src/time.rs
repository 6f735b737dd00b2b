//! Timestamps: milliseconds since the Unix epoch, shown as RFC 3339 UTC; and the
//! [`Clock`] that says what time it is, injected so tests can use [`ManualClock`]
//! instead of sleeping.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in time with millisecond precision; serialised as RFC 3339 UTC
/// (`2026-11-29T20:26:56.123Z`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The current time.
    pub fn now() -> Self {
        Self::from(SystemTime::now())
    }

    /// From milliseconds since the epoch.
    pub const fn from_millis(millis: i64) -> Self {
        Self(millis)
    }

    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// This time plus `by`, saturating at the end of time.
    pub fn saturating_add(self, by: Duration) -> Self {
        Self(self.0.saturating_add(millis_of(by)))
    }

    /// This time minus `by`, saturating at the beginning of time.
    pub fn saturating_sub(self, by: Duration) -> Self {
        Self(self.0.saturating_sub(millis_of(by)))
    }

    /// RFC 3339 UTC with milliseconds (`2026-11-29T20:26:56.123Z`).
    pub fn to_rfc3339(self) -> String {
        format!("{}.{:03}Z", self.date_time(), self.0.rem_euclid(1000))
    }

    /// RFC 3339 UTC to the second (`2026-11-29T20:26:56Z`), the second it falls in.
    pub fn to_rfc3339_seconds(self) -> String {
        format!("{}Z", self.date_time())
    }

    /// `YYYY-MM-DDTHH:MM:SS` of the second this time falls in.
    fn date_time(self) -> String {
        let seconds = self.0.div_euclid(1000);
        let (days, of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
        let (year, month, day) = civil_from_days(days);
        format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
            of_day / 3600,
            of_day % 3600 / 60,
            of_day % 60
        )
    }

    /// Parses the RFC 3339 UTC form produced by [`Timestamp::to_rfc3339`] (fraction
    /// optional, `Z` or `+00:00`).
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let text = text
            .strip_suffix('Z')
            .or_else(|| text.strip_suffix("+00:00"))?;
        let (date, time) = text.split_once('T')?;
        let mut date_parts = date.splitn(3, '-');
        let year: i64 = date_parts.next()?.parse().ok()?;
        let month: u32 = date_parts.next()?.parse().ok()?;
        let day: u32 = date_parts.next()?.parse().ok()?;
        let (clock, fraction) = time.split_once('.').unwrap_or((time, "0"));
        let mut clock_parts = clock.splitn(3, ':');
        let hour: i64 = clock_parts.next()?.parse().ok()?;
        let minute: i64 = clock_parts.next()?.parse().ok()?;
        let second: i64 = clock_parts.next()?.parse().ok()?;
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || hour > 23
            || minute > 59
            || second > 60
        {
            return None;
        }
        let digits: String = fraction.chars().take(3).collect();
        let millis: i64 = format!("{digits:0<3}").parse().ok()?;
        let days = days_from_civil(year, month, day);
        Some(Self(
            ((days * 86_400 + hour * 3600 + minute * 60 + second) * 1000) + millis,
        ))
    }
}

impl From<SystemTime> for Timestamp {
    fn from(time: SystemTime) -> Self {
        match time.duration_since(UNIX_EPOCH) {
            Ok(after) => Self(i64::try_from(after.as_millis()).unwrap_or(i64::MAX)),
            Err(before) => Self(-i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX)),
        }
    }
}

impl From<Timestamp> for SystemTime {
    fn from(time: Timestamp) -> Self {
        let magnitude = Duration::from_millis(time.0.unsigned_abs());
        if time.0 >= 0 {
            UNIX_EPOCH + magnitude
        } else {
            UNIX_EPOCH - magnitude
        }
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse_rfc3339(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("invalid RFC 3339 time `{text}`")))
    }
}

/// A duration in whole milliseconds, saturating.
fn millis_of(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// What time it is. Everything that stamps or compares times takes one, so tests can
/// pass a [`ManualClock`] and move time forward instead of sleeping; production code
/// passes [`SystemClock`].
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The operating system's wall clock ([`Timestamp::now`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that moves only when told to ([`ManualClock::set`], [`ManualClock::advance`]);
/// thread-safe, so one clock can be shared (in an `Arc`) by a store, a service and the
/// test driving them.
///
/// ```
/// use std::time::Duration;
/// use pp_types::{Clock, ManualClock, Timestamp};
///
/// let clock = ManualClock::new(Timestamp::from_millis(1_000));
/// clock.advance(Duration::from_secs(2));
/// assert_eq!(clock.now(), Timestamp::from_millis(3_000));
/// clock.set(Timestamp::from_millis(10));
/// assert_eq!(clock.now().as_millis(), 10);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    /// Milliseconds since the epoch; an atomic so `now` needs no lock.
    millis: AtomicI64,
}

impl ManualClock {
    /// A clock standing at `at`.
    pub fn new(at: Timestamp) -> Self {
        Self {
            millis: AtomicI64::new(at.as_millis()),
        }
    }

    /// Moves the clock to `at` (backwards too).
    pub fn set(&self, at: Timestamp) {
        self.millis.store(at.as_millis(), Ordering::SeqCst);
    }

    /// Moves the clock forward by `by` (whole milliseconds).
    pub fn advance(&self, by: Duration) {
        let by = millis_of(by);
        // `fetch_update` with a closure that always succeeds: saturating, never wraps.
        let _ = self
            .millis
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |millis| {
                Some(millis.saturating_add(by))
            });
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.millis.load(Ordering::SeqCst))
    }
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = year - i64::from(month <= 2);
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let month = i64::from(month);
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_rfc3339() {
        let cases = [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (1_795_984_016_123, "2026-11-29T20:26:56.123Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
        ];
        for (millis, text) in cases {
            let time = Timestamp::from_millis(millis);
            assert_eq!(time.to_rfc3339(), text);
            assert_eq!(Timestamp::parse_rfc3339(text), Some(time));
        }
        assert_eq!(
            Timestamp::parse_rfc3339("2026-11-29T20:26:56Z"),
            Some(Timestamp::from_millis(1_795_984_016_000))
        );
        assert_eq!(Timestamp::parse_rfc3339("2026-13-01T00:00:00Z"), None);
        assert_eq!(Timestamp::parse_rfc3339("yesterday"), None);
        assert_eq!(
            Timestamp::from_millis(-500).to_rfc3339_seconds(),
            "1969-12-31T23:59:59Z"
        );
    }

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let clock = std::sync::Arc::new(ManualClock::new(Timestamp::from_millis(5)));
        let shared: std::sync::Arc<dyn Clock> = clock.clone();
        assert_eq!(shared.now(), Timestamp::from_millis(5));
        clock.advance(Duration::from_millis(1500));
        assert_eq!(shared.now(), Timestamp::from_millis(1505));
        clock.set(Timestamp::from_millis(-3));
        assert_eq!(shared.now(), Timestamp::from_millis(-3));
        clock.set(Timestamp::from_millis(i64::MAX - 1));
        clock.advance(Duration::from_secs(1));
        assert_eq!(shared.now(), Timestamp::from_millis(i64::MAX));
        clock.set(Timestamp::from_millis(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let clock = clock.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        clock.advance(Duration::from_millis(1));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(
            shared.now(),
            Timestamp::from_millis(400),
            "no advance is lost"
        );
    }

    #[test]
    fn the_system_clock_is_the_wall_clock() {
        let before = Timestamp::now();
        let now = SystemClock.now();
        assert!(now >= before && now <= Timestamp::now());
        assert_eq!(
            Timestamp::from_millis(10).saturating_add(Duration::from_millis(5)),
            Timestamp::from_millis(15)
        );
        assert_eq!(
            Timestamp::from_millis(10).saturating_sub(Duration::from_secs(1)),
            Timestamp::from_millis(-990)
        );
    }

    #[test]
    fn round_trips_through_serde_and_system_time() {
        let now = Timestamp::now();
        let json = serde_json::to_string(&now).unwrap();
        assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), now);
        assert_eq!(Timestamp::from(SystemTime::from(now)), now);
    }
}
