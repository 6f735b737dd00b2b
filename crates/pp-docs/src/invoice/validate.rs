//! The checks every record goes through in the parent, whether its values were
//! extracted or corrected: [`validate`] returns the [`Finding`]s.

use pp_types::Clock;
use serde::{Deserialize, Serialize};

use super::{InvoiceKind, InvoiceRecord, Money, tax_id, words};

pp_types::wire_enum! {
    /// What a check found wrong.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum FindingCode {
        /// `amount + tax ≠ total` (more than 0.01 apart).
        TotalMismatch => "total_mismatch",
        /// The lines' amounts (or taxes) do not add up to the invoice's.
        ItemsSumMismatch => "items_sum_mismatch",
        /// The total in words (大写) is not the total in figures (小写).
        WordsMismatch => "words_mismatch",
        /// A tax id fails the GB 32100 check character or is not a tax id.
        BadTaxId => "bad_tax_id",
        /// The number (or code) has the wrong shape for the invoice's kind.
        BadNumberFormat => "bad_number_format",
        /// Issued after today.
        FutureDate => "future_date",
        /// The same invoice (code + number) appears in more than one file of the folder.
        DuplicateNumber => "duplicate_number",
        /// Fields the rules could not read.
        MissingFields => "missing_fields",
    }
}

/// One thing wrong with an invoice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// What kind of problem.
    pub code: FindingCode,
    /// What exactly, for the person and the model.
    pub message: String,
}

impl Finding {
    fn new(code: FindingCode, message: String) -> Self {
        Self { code, message }
    }
}

/// The tolerance between sums, in cents.
const TOLERANCE: i64 = 1;

/// The fields a record of its kind must have that it lacks.
pub fn missing_fields(record: &InvoiceRecord) -> Vec<&'static str> {
    let mut missing = Vec::new();
    let mut need = |present: bool, name: &'static str| {
        if !present {
            missing.push(name);
        }
    };
    need(record.number.is_some(), "number");
    if matches!(
        record.kind,
        InvoiceKind::SpecialVat | InvoiceKind::OrdinaryVat
    ) {
        need(record.code.is_some(), "code");
    }
    need(record.issue_date.is_some(), "issue_date");
    need(record.buyer_name.is_some(), "buyer_name");
    if matches!(
        record.kind,
        InvoiceKind::SpecialVat | InvoiceKind::FullyDigital
    ) {
        need(record.buyer_tax_id.is_some(), "buyer_tax_id");
    }
    need(record.seller_name.is_some(), "seller_name");
    need(record.seller_tax_id.is_some(), "seller_tax_id");
    need(!record.items.is_empty(), "items");
    need(record.amount.is_some(), "amount");
    need(record.tax.is_some(), "tax");
    need(record.total.is_some(), "total");
    need(record.total_in_words.is_some(), "total_in_words");
    missing
}

/// Checks one record; `today` is an ISO date (`YYYY-MM-DD`). Duplicates across a folder
/// are found by [`super::folder::summarize`], not here.
pub fn validate(record: &InvoiceRecord, today: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    let missing = missing_fields(record);
    if !missing.is_empty() {
        findings.push(Finding::new(
            FindingCode::MissingFields,
            format!(
                "could not read: {}; read them in `layout_text` and call again with \
                 `corrections`",
                missing.join(", ")
            ),
        ));
    }
    if let (Some(amount), Some(tax), Some(total)) = (record.amount, record.tax, record.total) {
        let sum = Money(amount.cents() + tax.cents());
        if (sum.cents() - total.cents()).abs() > TOLERANCE {
            findings.push(Finding::new(
                FindingCode::TotalMismatch,
                format!("amount {amount} + tax {tax} = {sum}, but the total says {total}"),
            ));
        }
    }
    check_items(record, &mut findings);
    if let (Some(printed), Some(total)) = (&record.total_in_words, record.total) {
        match words::parse_words(printed) {
            Some(value) if value == total => {}
            Some(value) => findings.push(Finding::new(
                FindingCode::WordsMismatch,
                format!(
                    "the total in words `{printed}` is {value}, but in figures it is {total}{}",
                    words::to_words(total)
                        .map(|expected| format!(" ({expected})"))
                        .unwrap_or_default()
                ),
            )),
            None => findings.push(Finding::new(
                FindingCode::WordsMismatch,
                format!("the total in words `{printed}` is not an amount in capital numerals"),
            )),
        }
    }
    for (field, value) in [
        ("buyer_tax_id", &record.buyer_tax_id),
        ("seller_tax_id", &record.seller_tax_id),
    ] {
        if let Some(problem) = value.as_deref().and_then(tax_id::problem) {
            findings.push(Finding::new(
                FindingCode::BadTaxId,
                format!("{field}: {problem}"),
            ));
        }
    }
    if let Some(problem) = number_problem(record) {
        findings.push(Finding::new(FindingCode::BadNumberFormat, problem));
    }
    if let Some(date) = &record.issue_date
        && date.as_str() > today
    {
        findings.push(Finding::new(
            FindingCode::FutureDate,
            format!("issued on {date}, after today ({today})"),
        ));
    }
    findings
}

fn check_items(record: &InvoiceRecord, findings: &mut Vec<Finding>) {
    if record.items.is_empty() {
        return;
    }
    let sums = |pick: fn(&super::InvoiceItem) -> Option<Money>| -> Option<Money> {
        record
            .items
            .iter()
            .map(pick)
            .try_fold(0i64, |sum, value| Some(sum + value?.cents()))
            .map(Money)
    };
    for (what, sum, stated) in [
        ("amounts", sums(|item| item.amount), record.amount),
        ("taxes", sums(|item| item.tax), record.tax),
    ] {
        if let (Some(sum), Some(stated)) = (sum, stated)
            && (sum.cents() - stated.cents()).abs() > TOLERANCE
        {
            findings.push(Finding::new(
                FindingCode::ItemsSumMismatch,
                format!(
                    "the lines' {what} add up to {sum}, but the invoice states {stated} \
                     ({} line(s))",
                    record.items.len()
                ),
            ));
        }
    }
}

fn all_digits(text: &str, lengths: &[usize]) -> bool {
    lengths.contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit())
}

fn number_problem(record: &InvoiceRecord) -> Option<String> {
    let number = record.number.as_deref();
    match record.kind {
        InvoiceKind::FullyDigital => {
            let number = number?;
            if !all_digits(number, &[20]) {
                return Some(format!(
                    "number `{number}`: a fully digital invoice (数电票) has a 20-digit number"
                ));
            }
            record.code.as_deref().map(|code| {
                format!("code `{code}`: a fully digital invoice (数电票) has no invoice code")
            })
        }
        InvoiceKind::SpecialVat | InvoiceKind::OrdinaryVat => {
            let mut problems = Vec::new();
            if let Some(number) = number
                && !all_digits(number, &[8])
            {
                problems.push(format!(
                    "number `{number}`: a legacy VAT invoice has an 8-digit number"
                ));
            }
            if let Some(code) = record.code.as_deref()
                && !all_digits(code, &[10, 12])
            {
                problems.push(format!(
                    "code `{code}`: a legacy VAT invoice code has 10 or 12 digits"
                ));
            }
            (!problems.is_empty()).then(|| problems.join("; "))
        }
        InvoiceKind::Other => None,
    }
}

/// Today's date in UTC on `clock`, ISO `YYYY-MM-DD` (the day [`validate`] compares an
/// issue date with; a test passes a [`pp_types::ManualClock`]).
pub fn today_utc(clock: &dyn Clock) -> String {
    let seconds = clock.now().as_millis().div_euclid(1000);
    civil_date(seconds.div_euclid(86_400))
}

/// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's algorithm).
pub fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invoice::InvoiceItem;

    fn good() -> InvoiceRecord {
        InvoiceRecord {
            kind: InvoiceKind::FullyDigital,
            number: Some("24442000000123456789".to_owned()),
            issue_date: Some("2024-05-12".to_owned()),
            buyer_name: Some("买方".to_owned()),
            buyer_tax_id: Some("91110000600037341L".to_owned()),
            seller_name: Some("卖方".to_owned()),
            seller_tax_id: Some("91350100M000100Y43".to_owned()),
            items: vec![InvoiceItem {
                name: "*服务*咨询".to_owned(),
                amount: Some(Money(100_000)),
                tax: Some(Money(13_000)),
                ..InvoiceItem::default()
            }],
            amount: Some(Money(100_000)),
            tax: Some(Money(13_000)),
            total: Some(Money(113_000)),
            total_in_words: Some("壹仟壹佰叁拾圆整".to_owned()),
            ..InvoiceRecord::default()
        }
    }

    fn codes(record: &InvoiceRecord) -> Vec<FindingCode> {
        validate(record, "2025-01-01")
            .into_iter()
            .map(|finding| finding.code)
            .collect()
    }

    #[test]
    fn a_good_record_has_no_findings() {
        assert_eq!(validate(&good(), "2025-01-01"), Vec::new());
    }

    #[test]
    fn each_rule_fires_on_its_own() {
        let mut record = good();
        record.total = Some(Money(113_002));
        record.total_in_words = Some("壹仟壹佰叁拾圆零贰分".to_owned());
        assert_eq!(codes(&record), vec![FindingCode::TotalMismatch]);
        let mut record = good();
        record.total = Some(Money(113_001));
        record.total_in_words = Some("壹仟壹佰叁拾圆零壹分".to_owned());
        assert_eq!(codes(&record), Vec::new(), "one cent is tolerated");

        let mut record = good();
        record.items[0].amount = Some(Money(90_000));
        assert_eq!(codes(&record), vec![FindingCode::ItemsSumMismatch]);

        let mut record = good();
        record.total_in_words = Some("壹仟壹佰叁拾壹圆整".to_owned());
        assert_eq!(codes(&record), vec![FindingCode::WordsMismatch]);

        let mut record = good();
        record.seller_tax_id = Some("91350100M000100Y44".to_owned());
        assert_eq!(codes(&record), vec![FindingCode::BadTaxId]);

        let mut record = good();
        record.number = Some("2444200000012345".to_owned());
        assert_eq!(codes(&record), vec![FindingCode::BadNumberFormat]);

        let mut record = good();
        record.kind = InvoiceKind::SpecialVat;
        record.code = Some("4400231130".to_owned());
        record.number = Some("01234567".to_owned());
        assert_eq!(codes(&record), Vec::new());
        record.code = Some("44002311".to_owned());
        assert_eq!(codes(&record), vec![FindingCode::BadNumberFormat]);

        let mut record = good();
        record.issue_date = Some("2025-01-02".to_owned());
        assert_eq!(codes(&record), vec![FindingCode::FutureDate]);

        let mut record = good();
        record.seller_name = None;
        let findings = validate(&record, "2025-01-01");
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].code, FindingCode::MissingFields);
        assert!(findings[0].message.contains("seller_name"));
    }

    #[test]
    fn civil_dates_are_right() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(19_723), "2024-01-01");
        assert_eq!(civil_date(19_782), "2024-02-29");
        let clock = pp_types::ManualClock::new(pp_types::Timestamp::from_millis(
            19_782 * 86_400_000 + 86_399_999,
        ));
        assert_eq!(today_utc(&clock), "2024-02-29");
        assert_eq!(today_utc(&pp_types::SystemClock).len(), 10);
    }
}
